"""A caching stage in front of a retriever: each query searched once, ``depth`` deep.

:class:`SharedSearch` wraps a retriever and serves every shallower request from the one deep list (BM25
and exact dense top-k lists are prefixes of deeper ones). The Playground's columns, the re-ranker's
candidates and the missing-perspective look-up all search the same question: one search (one query
encoding) serves them all. It is a retriever itself (``search(queries, k)``, and every other attribute of
the wrapped one), so a pipeline runs over it unchanged. ``clear()`` forgets the lists (a benchmark calls
it to time a new question honestly).
"""
from __future__ import annotations

from ..records import Hits

DEFAULT_DEPTH = 100  # the depth the app's re-rankers read


class SharedSearch:
    """``retriever`` with each query's hits kept ``depth`` deep (at most ``max_queries`` queries)."""

    def __init__(self, retriever, depth: int = DEFAULT_DEPTH, max_queries: int = 2048):
        self._r = retriever
        self._depth = depth
        self._max = max_queries
        self._lists: dict[str, tuple[Hits, bool]] = {}

    def __getattr__(self, name):  # name, embedder_name, ... of the wrapped retriever
        return getattr(self._r, name)

    def clear(self) -> None:
        self._lists.clear()

    def search(self, queries: list[str], k: int) -> list[Hits]:
        depth = max(int(k), self._depth)

        def served(q):  # a stored list serves k when it is at least k deep or holds every hit
            got = self._lists.get(q)
            return got is not None and (len(got[0]) >= k or got[1])

        have = {q: self._lists[q] for q in queries if served(q)}
        todo = list(dict.fromkeys(q for q in queries if q not in have))
        if todo:
            if len(self._lists) + len(todo) > self._max:
                self._lists.clear()
            for q, hits in zip(todo, self._r.search(todo, depth)):
                hits = Hits.of(hits)  # the wrapped retriever's Hits, kept as they are
                have[q] = self._lists[q] = (hits, len(hits) < depth)  # fewer hits than asked: the whole list
        return [have[q][0].top(k) for q in queries]
