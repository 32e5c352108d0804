"""The ``mmr`` stage: maximal marginal relevance over the candidates' stored vectors (the kernel:
:mod:`berds_core.diversify.mmr`)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from ..mmr import mmr
from ..vectors import passage_embeddings
from .base import Stage, param, register

MMR_LAMBDA = 0.75


@register
@dataclass(frozen=True)
class MMR(Stage):
    name: ClassVar[str] = "mmr"
    help: ClassVar[str] = "maximal marginal relevance (Carbonell & Goldstein) over the candidates"
    lam: float = param(MMR_LAMBDA, float, "relevance weight (1 = the retriever's order)", 0.0, 1.0)

    def rerank(self, q, c):
        emb = passage_embeddings(q.corpus, c.rows, q.using.embedder, q.retriever)
        return mmr(c.scores, emb, q.k, self.lam)

    def reads_stored_vectors_only(self):
        return True
