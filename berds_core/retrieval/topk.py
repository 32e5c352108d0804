"""Top-k selection with one total order, so a ranking never depends on how an index is split.

Hits are ordered by score, highest first, and equal scores by row, lowest
first. Under one total order the top-k of a whole score vector equals the
top-k of the union of each part's top-k, so a search split into shards
(``berds_core.distributed``: one shard per node) and merged with
:func:`merge_topk` gives exactly the ranking of one index over all rows.
BM25 scores tie often (every passage without a query word scores 0), so
BM25 selects with :func:`top_k` in one process too; ``np.argpartition``
alone leaves the order of ties, and which tied rows make the cut, to chance.
"""
from __future__ import annotations

import numpy as np


def top_k(scores: np.ndarray, k: int, offset: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """(rows, scores) of the ``k`` best of a 1-d score vector: score descending, then row ascending.

    ``offset`` is added to the rows (a shard's first row). Linear time: one
    partition, then only the kept rows are sorted.
    """
    scores = np.asarray(scores)
    n = len(scores)
    k = min(int(k), n)
    if k <= 0:
        return np.zeros(0, np.int64), np.zeros(0, scores.dtype)
    if k < n:
        kth = np.partition(scores, n - k)[n - k]  # the k-th largest score
        above = np.flatnonzero(scores > kth)
        tied = np.flatnonzero(scores == kth)[: k - len(above)]  # lowest rows first among the ties at the cut
        rows = np.concatenate([above, tied])
    else:
        rows = np.arange(n)
    order = np.lexsort((rows, -scores[rows].astype(np.float64)))
    rows = rows[order]
    return rows.astype(np.int64) + int(offset), scores[rows]


def merge_topk(parts, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Merge per-shard ``(rows, scores)`` (global rows) into the overall top-``k``, in the same order as
    :func:`top_k` over all rows would give."""
    parts = [(np.asarray(r, np.int64), np.asarray(s)) for r, s in parts if len(r)]
    if not parts:
        return np.zeros(0, np.int64), np.zeros(0, np.float32)
    rows = np.concatenate([r for r, _ in parts])
    scores = np.concatenate([s for _, s in parts])
    order = np.lexsort((rows, -scores.astype(np.float64)))[: int(k)]
    return rows[order], scores[order]
