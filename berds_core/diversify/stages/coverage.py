"""The ``coverage`` stage: the perspective-coverage re-ranker (the kernel: :mod:`berds_core.diversify.coverage`)
with P(candidate supports perspective) from the judge, the stance model, the side reader on stored vectors,
or embedding similarity to the perspectives."""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from ...datasets.sides import yes_no_sides
from ...specs import SpecError
from ...stance import passage_string
from ..candidates import candidate_pool, is_dense
from ..coverage import coverage_rerank, similarity_probs, stance_probs
from ..index_sides import index_side_probs
from ..query_expansion import QE_SOURCES
from ..vectors import encode, passage_embeddings
from .base import Stage, keep_order, param, register
from .context import Candidates, Query
from .probabilities import blend_relevance, judge_probs, stance_matrix

COVERAGE_PROBS = ("auto", "judge", "model", "index", "stance", "similarity")


@register
@dataclass(frozen=True)
class Coverage(Stage):
    name: ClassVar[str] = "coverage"
    help: ClassVar[str] = "perspective-coverage re-ranker: greedy expected coverage of the perspectives"
    probs: str = param("auto", COVERAGE_PROBS, "where P(candidate supports perspective) comes from")
    alpha: float = param(0.5, float, "weight of relevance", 0.0, 1.0)
    source: str = param("dataset", tuple(QE_SOURCES), "where the perspectives come from")
    keep: int = param(0, int, "the first keep candidates stay on top in the retriever's order", 0)
    mix: float = param(1.0, float, "probs=model/index: relevance = mix * score + (1 - mix) * P(on the question)",
                       0.0, 1.0)
    temperature: float | None = param(None, float, "of the stance / similarity softmax", 0.0)
    tokens: int | None = param(None, int, "probs=model: word pieces the stance model reads per (question, "
                               "candidate) pair (default: its trained length)", 16, 512)
    read: int | None = param(None, int, "probs=model: the stance model reads only the first read candidates and "
                             "re-ranks them; the rest follow in the order they came (default: all)", 1)

    def __post_init__(self):
        super().__post_init__()
        if self.read is not None and self.probs != "model":
            raise SpecError(f"{self.name}: read is for probs=model (the stance model's reads), got probs={self.probs}")

    def reads_stored_vectors_only(self):
        return self.probs == "index"

    def models(self):
        return frozenset({"model": ("stance_model",), "index": ("side_reader",)}.get(self.probs, ()))

    def rerank(self, q, c):
        u, rows, scores, k = q.using, c.rows, c.scores, q.k
        if self.probs == "model":
            n = len(rows) if self.read is None else min(self.read, len(rows))
            P = stance_matrix(q.text, q.corpus, rows[:n], u.stance_model, self.tokens)
            head = coverage_rerank(blend_relevance(scores[:n], P, self.mix), P[:, :2], min(k, n), self.alpha,
                                   keep=self.keep)
            return (head + list(range(n, len(rows))))[:k]
        if self.probs == "index":  # the side reader on the stored passage vectors (no network per candidate)
            P = index_side_probs(q.text, q.corpus, rows, u.embedder, q.retriever, u.side_reader)
            if P is None:
                return keep_order(q, c)
            return coverage_rerank(blend_relevance(scores, P, self.mix), P[:, :2], k, self.alpha, keep=self.keep)
        offline_sides = u.perspectives is None and self.source == "offline"
        if offline_sides and self.probs in ("auto", "stance"):
            persp = [p for p in q.sides if p]  # the stance pair; facets are not needed
        else:
            persp = q.perspectives(self.source)
        mode = self.probs
        if mode == "auto":
            mode = "judge" if u.judge is not None else ("stance" if offline_sides or len(persp) == 2 else "similarity")
        if not persp:
            return keep_order(q, c)
        if mode == "judge":
            if u.judge is None:
                raise ValueError("coverage probs=judge needs a judge")
            P = judge_probs(u.judge, q.corpus, rows, persp)
        elif mode == "stance" and len(persp) >= 2:  # the first two perspectives as a contrasting pair
            pe = encode(u.embedder, persp[:2])
            P = stance_probs(passage_embeddings(q.corpus, rows, u.embedder, q.retriever), pe[0], pe[1],
                             self.temperature or 0.01)
        else:  # similarity (or stance with a single perspective)
            P = similarity_probs(passage_embeddings(q.corpus, rows, u.embedder, q.retriever),
                                 encode(u.embedder, persp), self.temperature or 0.05)
        return coverage_rerank(scores, P, k, self.alpha, keep=self.keep)

    def prefetch(self, batch):
        u, questions = batch.using, batch.questions
        if (self.probs in ("auto", "stance") and self.source == "offline" and u.judge is None
                and u.embedder is None and u.perspectives is None):
            # the offline yes/no sides of every question in one encoder call (the loop reads them from memory)
            encode(None, [s for q in questions for s in yes_no_sides(q.question) if s])
        if self.probs == "index" and u.embedder is None and u.perspectives is None:
            encode(None, [t for q in questions for t in yes_no_sides(q.question) if t])  # one encoder call
        if self.probs != "model":
            return
        ahead = self.read is not None and batch.k is not None and all(s.reads_stored_vectors_only() for s in batch.prior)
        if self.read is not None and batch.before and not ahead:
            return  # which candidates it reads is known only after the stages before it: read per question
        # every (question, candidate) pair in one batched, cached pass of the stance model
        if batch.pool == "union" and not is_dense(batch.retriever) and hasattr(u.other_retriever, "text_encoder"):
            u.other_retriever.text_encoder.embed([q.question for q in questions])
        pairs = []
        for q in questions:
            c = Candidates(candidate_pool(q.question, batch.corpus, batch.retriever, batch.depth, batch.pool,
                                          u.other_retriever))
            if self.read is not None and batch.prior:  # vector operations: run them here to know what it reads
                query = Query(q, batch.corpus, batch.retriever, batch.k, max(batch.depth, batch.k), u)
                for stage in batch.prior:
                    c = c.after(stage.rerank(query, c))
            pairs += [(q.question, passage_string(batch.corpus[int(r)])) for r in c.rows[:self.read]]
        u.stance_model.encode(pairs, progress=batch.progress, max_length=self.tokens)
