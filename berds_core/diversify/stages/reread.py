"""The ``reread`` stage: the candidates re-read by the sentence encoder, ranked by its cosine to the question.

The second stage of ``static%N>>reread`` (:mod:`berds_core.embeddings.static`): a static first stage finds
``N`` candidates fast, the run's embedder (``Using.embedder``; None: the packaged MiniLM, the dense retriever's
encoder) encodes only them and the question, and ranks them by the exact inner product
(:func:`berds_core.retrieval.exact.scores`: the same figure whatever the batch). The candidates' vectors go
through the one embedding store, so a passage is encoded once, by whichever stage or retriever meets it first.
Ties keep the first stage's order.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from ...records import Hits
from ...retrieval.exact import scores as exact_scores
from ..vectors import encode, passage_embeddings
from .base import Stage, register


@register
@dataclass(frozen=True)
class Reread(Stage):
    name: ClassVar[str] = "reread"
    help: ClassVar[str] = ("re-read by the encoder: the candidates ranked by the sentence encoder's cosine to the "
                           "question (the second stage of static%N>>reread)")

    def rerank(self, q, c):
        if len(c) == 0:
            return Hits.empty()
        emb = passage_embeddings(q.corpus, c.rows, q.using.embedder, q.retriever)
        qv = encode(q.using.embedder, [q.text])[0]
        s = exact_scores(np.asarray(emb, dtype=np.float32), np.asarray(qv, dtype=np.float32))
        order = np.argsort(-s, kind="stable")[:q.k]
        return Hits(c.rows[order], s[order])

    def reads_stored_vectors_only(self):
        return True

    def prefetch(self, batch) -> None:
        """Every question's candidates encoded in one call (and the questions in another) ahead of the loop."""
        if batch.prior or batch.pool != "retriever" or not batch.questions:
            return  # candidates another stage makes or reorders: read in the loop
        texts = [q.question for q in batch.questions]
        found = batch.retriever.search(texts, batch.depth)
        rows = sorted({int(r) for hits in found for r in Hits.of(hits).rows})
        passage_embeddings(batch.corpus, rows, batch.using.embedder, batch.retriever)
        encode(batch.using.embedder, texts)
