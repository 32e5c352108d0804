"""What every retriever is: the protocol its callers read, and the base class of the ones that search a corpus.

A retriever has ``name`` (what runs and caches call it: ``bm25``, ``dense:<model>[+<index>][+<encoding>]``),
``embedder_name`` (dense: its model's key; else None), ``cache_hit`` (its index was found, not built),
``cache_path`` (where its index lives; None: in memory only), ``build_seconds`` (building or opening it) and
``search(queries, k) -> [Hits, ...]``: for each query at most ``k`` corpus rows and their scores, best first
(:class:`berds_core.records.Hits`, the one form a ranking keeps up to the run file).

:class:`SearchBase` holds what the retrievers share: those attributes' defaults and the search preamble
(no queries: no lists; ``k`` past the corpus: every passage; ``k`` below 1: an empty ``Hits`` per query), so a
retriever writes only ``_search(queries, k)`` with ``1 <= k <= len(corpus)``. :class:`IndexOptions` is how
an index is built or opened, one object from the caller to the retriever.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Protocol, runtime_checkable

from ..records import Hits


@runtime_checkable
class Retriever(Protocol):
    name: str
    embedder_name: str | None
    cache_hit: bool
    cache_path: Path | None
    build_seconds: float

    def search(self, queries: list[str], k: int) -> list[Hits]: ...


class SearchBase:
    """Base of the retrievers over a ``corpus``: subclasses set ``name`` and write ``_search``."""

    name = "retriever"
    embedder_name: str | None = None
    cache_hit = False
    cache_path: Path | None = None
    build_seconds = 0.0
    corpus = ()

    def search(self, queries: list[str], k: int) -> list[Hits]:
        queries = list(queries)
        if not queries:
            return []
        k = min(int(k), len(self.corpus))
        if k < 1:
            return [Hits.empty() for _ in queries]
        return self._search(queries, k)

    def _search(self, queries: list[str], k: int) -> list[Hits]:
        raise NotImplementedError


@dataclass(frozen=True)
class IndexOptions:
    """How a retriever's index is built or opened.

    ``model``: dense, a sentence-transformers hub id or local path (None: all-MiniLM-L6-v2); a prebuilt
    folder's query encoder (``dpr:<model>`` for DPR). ``index``: dense, ``flat`` (exact), ``hnsw``,
    ``ivfpq`` or a FAISS factory string, sized for ``memory_budget`` bytes (:mod:`.index_plan`).
    ``device``, ``encoding`` (``fp32|bf16|int8``; None: auto): the encoder's. ``engine``: bm25's ``auto``,
    ``bm25s`` or ``tantivy``. ``index_dir``: the folder an index is built in (bm25: a tantivy index;
    dense: the index folder) instead of the cache, or the folder ``index`` opens. ``nprobe``: IVF lists
    searched per query. ``cache``: keep the index in ``cache_dir("indexes")``. ``progress``: progress
    bars; ``on_progress(done, total)`` (dense) as passages are encoded, for a bar in the app.
    """

    model: str | None = None
    index: str = "flat"
    device: str | None = None
    encoding: str | None = None
    engine: str = "auto"
    memory_budget: int | None = None
    index_dir: str | Path | None = None
    nprobe: int | None = None
    cache: bool = True
    progress: bool = True
    on_progress: Callable[[int, int], None] | None = None


def dense_name(embedder_name: str) -> str:
    """The head of a dense retriever's name: ``dense:<model key>``, or a static model's own ``static:<name>``
    (``embeddings.static_folder.static_name``); the index kind and the precision follow it."""
    return embedder_name if str(embedder_name).startswith("static:") else f"dense:{embedder_name}"
