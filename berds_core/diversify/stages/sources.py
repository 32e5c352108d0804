"""The source stages: they make the candidates and come first. ``union`` (the dense and the BM25 top
``depth`` together, scored by dense cosine) and ``qe`` (one search per perspective, merged round-robin)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from ...records import Hits
from ..candidates import candidate_pool
from ..query_expansion import QE_SOURCES, expand_and_merge
from .base import Stage, param, register
from .context import Candidates


@dataclass(frozen=True)
class Source(Stage):
    """A stage that makes the candidates (``candidates(query, depth)``); it comes first."""

    makes_candidates: ClassVar[bool] = True


@register
@dataclass(frozen=True)
class Union(Source):
    name: ClassVar[str] = "union"
    help: ClassVar[str] = "candidates: the dense and the BM25 top depth together, scored by dense cosine"

    def candidates(self, q, depth):
        return Candidates(candidate_pool(q.text, q.corpus, q.retriever, depth, "union", q.using.other_retriever))


@register
@dataclass(frozen=True)
class QueryExpansion(Source):
    name: ClassVar[str] = "qe"
    help: ClassVar[str] = "query expansion: one search per perspective, merged round-robin (top k)"
    source: str = param("dataset", tuple(QE_SOURCES), "where the perspectives come from")

    def candidates(self, q, depth):
        return Candidates(expand_and_merge(q.text, q.perspectives(self.source), q.retriever, q.k), Hits.empty())
