"""The ``rvr`` stage: retrieve, verify, retrieve again (the pieces that need no model:
:mod:`berds_core.diversify.rvr`). A reader (the stance model, or the side reader on the index's stored
vectors) reads which side the top candidates argue; a missing side's statement (or the question's
perspectives of that side, ``queries=dataset``) is searched, its passages verified and moved up. Its ranking
brings passages of its own: ``rerank`` returns a ``Hits``."""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from ...datasets.sides import yes_no_sides
from ...stance import passage_string
from ..candidates import candidate_pool
from ..index_sides import index_side_probs
from ..rvr import RVR_SOURCES, missing_sides, retrieve_verify, second_round_order, side_of
from ..vectors import encode
from .base import Stage, param, register
from .probabilities import stance_matrix

RVR_READERS = ("model", "index")


@register
@dataclass(frozen=True)
class RetrieveVerifyRetrieve(Stage):
    name: ClassVar[str] = "rvr"
    help: ClassVar[str] = ("retrieve, verify, retrieve again: the stance model reads which side the top candidates "
                           "argue; a missing side's statement is searched, its passages verified and moved up")
    # defaults: the setting bench/diversity.py's question-grouped CV chose on all 744 development questions
    # (docs/diversity.md, "The rvr stage"); an opt-in stage: out of fold it does not beat the preset
    read: int = param(5, int, "the first round's top candidates the stance model reads", 1, 100)
    keep: int = param(0, int, "the first round's best that stay on top", 0)
    add: int = param(2, int, "verified passages placed after them per missing side", 1, 20)
    depth: int = param(5, int, "the second round's search depth per missing side", 1, 1000)
    threshold: float = param(0.55, float, "P(side) a passage needs to count as arguing it", 0.0, 1.0)
    tokens: int | None = param(64, int, "word pieces the stance model reads per (question, passage) pair", 16, 512)
    queries: str = param("sides", RVR_SOURCES, "second-round queries: the question's side statements, or the "
                         "dataset's generated perspectives of the missing side (their side read by the stance "
                         "model; a side with none searches its statement)")
    reader: str = param("model", RVR_READERS, "who reads the sides: the stance model (a network per pair, "
                        "tokens), or the side reader on the index's stored vectors (no network per candidate)")

    def models(self):
        return frozenset({"stance_model" if self.reader == "model" else "side_reader"})

    def read_probs(self, q, rows) -> np.ndarray:
        """``(len(rows), 3)`` [yes, no, off] of corpus rows for the question, by the stage's reader."""
        if not len(rows):
            return np.zeros((0, 3))
        if self.reader == "index":
            P = index_side_probs(q.text, q.corpus, rows, q.using.embedder, q.retriever, q.using.side_reader)
            return np.tile([0.0, 0.0, 1.0], (len(rows), 1)) if P is None else P
        return stance_matrix(q.text, q.corpus, rows, q.using.stance_model, self.tokens)

    def side_queries(self, q) -> dict[int, list[str]]:
        """Side (0 yes, 1 no) -> the second round's queries: its statement; with ``queries=dataset`` the
        question's generated perspectives that the reader reads as arguing that side, where it has any."""
        out = {s: [t] for s, t in enumerate(q.sides) if t}
        persp = [t for t in q.perspectives("dataset") if t and t.strip()] if self.queries == "dataset" else []
        if not persp:
            return out
        if self.reader == "index":  # the perspectives' embeddings read like passages' vectors
            sides = q.sides
            E = encode(q.using.embedder, [*sides, *persp]) if all(sides) else None
            P = q.using.side_reader.probs(E[2:], E[0], E[1]) if E is not None else np.zeros((len(persp), 3))
        else:
            model = q.using.stance_model
            P = model.sides(q.text, persp, max_length=self.tokens) if self.tokens else model.sides(q.text, persp)
        found: dict[int, list[str]] = {}
        for t, pr in zip(persp, np.asarray(P, dtype=np.float64)):
            s = side_of(pr, self.threshold)
            if s is not None:
                found.setdefault(s, []).append(t)
        out.update(found)
        return out

    def rerank(self, q, c):
        """The merged ranking (``rvr.retrieve_verify``): every candidate, with the verified passages of a
        missing side placed after the first ``keep``; the candidates themselves when nothing is missing."""
        queries = self.side_queries(q) if len(c) else {}
        if not queries:
            return c.hits
        return retrieve_verify(c.hits, lambda rows: self.read_probs(q, rows),
                               lambda s: [h for t in queries.get(s, []) for h in q.retriever.search([t], self.depth)[0]],
                               lambda r: q.corpus[int(r)].id, read=self.read, keep=self.keep, add=self.add,
                               threshold=self.threshold)

    def prefetch(self, batch):
        """The stance model on every question's first-round reads, then on its second-round passages, each in
        one batched pass (the loop then reads them from memory), and every side statement in one encoder call.
        Behind another re-ranker the first round is that stage's, known only in the loop: only the side
        statements are batched."""
        u, corpus, questions = batch.using, batch.corpus, batch.questions
        sides = {q.question: yes_no_sides(q.question) for q in questions}
        statements = [s for pair in sides.values() if all(pair) for s in pair]
        if hasattr(batch.retriever, "text_encoder") and statements:
            batch.retriever.text_encoder.embed(statements)
        if batch.before or self.reader == "index":  # the side reader reads in the loop: vector operations
            return
        model = u.stance_model
        if not hasattr(model, "encode"):  # a reader without the batched pass (a stub): the loop reads as it goes
            return
        first = {}
        for q in questions:
            if all(sides[q.question]):
                rows = candidate_pool(q.question, corpus, batch.retriever, batch.depth, batch.pool,
                                      u.other_retriever).rows
                first[q.question] = [int(r) for r in rows[:self.read]]
        model.encode([(t, passage_string(corpus[r])) for t, rows in first.items() for r in rows],
                     progress=batch.progress, max_length=self.tokens)
        more = []
        if self.queries != "sides":  # the queries depend on the question's perspectives: the loop reads them
            return
        for t, rows in first.items():
            if not rows:
                continue
            for s in missing_sides(stance_matrix(t, corpus, rows, model, self.tokens), self.threshold):
                hits = second_round_order(batch.retriever.search([sides[t][s]], self.depth)[0], lambda r: corpus[r].id)
                more += [(t, passage_string(corpus[r])) for r, _ in hits if r not in rows]
        model.encode(list(dict.fromkeys(more)), progress=batch.progress, max_length=self.tokens)
