"""What every retriever is: the protocol its callers read, and the base class of the ones that search a corpus.

A retriever has ``name`` (what runs and caches call it: ``bm25``, ``dense:<model>[+<index>][+<encoding>]``),
``embedder_name`` (dense: its model's key; else None), ``cache_hit`` (its index was found, not built),
``cache_path`` (where its index lives; None: in memory only), ``build_seconds`` (building or opening it) and
``search(queries, k) -> [[(row, score), ...], ...]``: for each query at most ``k`` corpus rows, best first.

:class:`SearchBase` holds what the retrievers share: those attributes' defaults and the search preamble
(no queries: no lists; ``k`` past the corpus: every passage; ``k`` below 1: an empty list per query), so a
retriever writes only ``_search(queries, k)`` with ``1 <= k <= len(corpus)``.
"""
from __future__ import annotations

from pathlib import Path
from typing import Protocol, runtime_checkable


@runtime_checkable
class Retriever(Protocol):
    name: str
    embedder_name: str | None
    cache_hit: bool
    cache_path: Path | None
    build_seconds: float

    def search(self, queries: list[str], k: int) -> list[list[tuple[int, float]]]: ...


class SearchBase:
    """Base of the retrievers over a ``corpus``: subclasses set ``name`` and write ``_search``."""

    name = "retriever"
    embedder_name: str | None = None
    cache_hit = False
    cache_path: Path | None = None
    build_seconds = 0.0
    corpus = ()

    def search(self, queries: list[str], k: int) -> list[list[tuple[int, float]]]:
        queries = list(queries)
        if not queries:
            return []
        k = min(int(k), len(self.corpus))
        if k < 1:
            return [[] for _ in queries]
        return self._search(queries, k)

    def _search(self, queries: list[str], k: int) -> list[list[tuple[int, float]]]:
        raise NotImplementedError
