"""Reciprocal rank fusion (Cormack, Clarke & Buettcher 2009), as ``ranx.fuse(method="rrf")`` computes it.

    rrf(d) = sum over the ranked lists L containing d of 1 / (k + rank_L(d)),   rank 1-based, k = 60

A pure kernel over small lists (a claim's BM25 and dense top-50): no Run
objects, no JIT start-up. ``tests/test_discovery.py`` checks it against ranx.
"""
from __future__ import annotations

from typing import Hashable, Sequence


def rrf_fuse(lists: Sequence[Sequence[Hashable]], k: int = 60) -> list[tuple[Hashable, float]]:
    """Items of ranked ``lists`` (best first) fused by RRF: ``[(item, score)]``, best first.

    Ties are broken by the best rank an item reached, then by the order of
    the lists (deterministic).
    """
    if k < 0:
        raise ValueError("k must be >= 0")
    score: dict = {}
    best: dict = {}
    for li, lst in enumerate(lists):
        for rank, item in enumerate(lst, 1):
            score[item] = score.get(item, 0.0) + 1.0 / (k + rank)
            key = (rank, li)
            if item not in best or key < best[item]:
                best[item] = key
    return sorted(score.items(), key=lambda kv: (-kv[1], best[kv[0]]))
