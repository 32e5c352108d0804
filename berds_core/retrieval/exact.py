"""Exact inner-product scores that are the same float32 on every CPU, whatever the chunk, batch or threads.

A float32 matrix product (NumPy's OpenBLAS, FAISS) sums each dot product in an
order its kernel picks: AVX2 or AVX-512 code, where a row falls in a block of
the product, how many threads share it. Two identical vectors then score a
last bit apart by their position, and a search split into shards (``--ray``)
or run with another thread count ranks ties and writes digits differently
(issue 63, seen on an AVX2-only CPU). Here a score is the dot product of the
float32 vectors summed in float64 and rounded once to float32: each product of
two float32 numbers is exact in float64, float64's summation error (~1e-16)
is some 10^8 times below float32's step, so the rounding gives the same
float32 whatever the order of the sum (the only exception: a true value
within ~1e-16 of a float32 rounding midpoint, a chance of about one in 10^8
per score). Rankings use these scores, equal scores by row
(:mod:`berds_core.retrieval.topk`), and run files get them.

Speed stays float32's: the float32 product (BLAS or FAISS) picks the
candidates, every row whose float32 score lies within twice the float32
error bound of the k-th best (:func:`slack`: ``(d + 2) * 2^-23 * |q| *
max|x|``, as a dot product of ``d`` terms is off by at most ``d * 2^-24 *
|q| * |x|`` in any summation order), and only those are scored in float64.
"""
from __future__ import annotations

import numpy as np

from .topk import top_k

_U = 2.0 ** -24  # float32's unit roundoff


def scores(x: np.ndarray, q: np.ndarray) -> np.ndarray:
    """The float32 scores of the rows of ``x`` against one query ``q``: summed in float64, rounded once."""
    x = np.asarray(x, dtype=np.float64)
    if not len(x):
        return np.zeros(0, np.float32)
    return (x @ np.asarray(q, dtype=np.float64)).astype(np.float32)


def max_norm(x: np.ndarray) -> float:
    """The largest row norm of ``x`` (an upper bound: float32's error on it is allowed for)."""
    if not len(x):
        return 0.0
    return float(np.sqrt(np.einsum("ij,ij->i", x, x, dtype=np.float64).max())) * (1 + 1e-6)


def slack(q: np.ndarray, dim: int, xmax: float) -> np.ndarray:
    """Per query of ``q`` (2-d): how far below the k-th best float32 score a row of the exact top-k may score
    in float32 (twice the float32 error bound of a ``dim``-term dot product, and a float32 step)."""
    qn = np.sqrt(np.einsum("ij,ij->i", q, q, dtype=np.float64))
    return 2 * (dim + 2) * _U * qn * xmax


def top_k_exact(q: np.ndarray, x: np.ndarray, k: int, offset: int = 0, *, xmax: float | None = None
                ) -> list[tuple[np.ndarray, np.ndarray]]:
    """Per query of ``q``, ``(rows, scores)`` of the ``k`` best rows of ``x`` by exact score (:func:`scores`),
    score descending then row ascending; ``offset`` is added to the rows (a chunk's first row)."""
    q = np.ascontiguousarray(q, dtype=np.float32)
    x = np.asarray(x)
    n, k = len(x), min(int(k), len(x))
    if k <= 0:
        return [(np.zeros(0, np.int64), np.zeros(0, np.float32)) for _ in range(len(q))]
    s32 = q @ x.T
    tol = slack(q, x.shape[1], max_norm(x) if xmax is None else xmax)
    out = []
    for i in range(len(q)):
        kth = np.partition(s32[i], n - k)[n - k] if k < n else -np.inf
        cand = np.flatnonzero(s32[i] >= kth - tol[i])  # ascending rows
        rows, sc = top_k(scores(x[cand], q[i]), k)
        out.append((cand[rows] + int(offset), sc))
    return out


def settle(search, q: np.ndarray, x: np.ndarray, k: int, *, xmax: float | None = None
           ) -> tuple[np.ndarray, np.ndarray]:
    """The exact top-``k`` (scores, rows) per query from a float32 search (``search(kk)`` -> FAISS's
    ``(scores, rows)`` of the ``kk`` best, rows -1 when none): ``kk`` grows until every query's last found
    score lies below its candidate threshold, then the candidates are scored exactly (rows of ``x``)."""
    q = np.ascontiguousarray(q, dtype=np.float32)
    n = len(x)
    k = min(int(k), n)
    tol = slack(q, x.shape[1], max_norm(x) if xmax is None else xmax)
    kk = min(n, 2 * k + 8)
    while True:
        s32, r32 = search(kk)
        if kk >= n or bool(np.all(s32[:, kk - 1] < s32[:, k - 1] - tol)):
            break
        kk = min(n, 4 * kk)
    best_s = np.full((len(q), k), -np.inf, dtype=np.float32)
    best_r = np.full((len(q), k), -1, dtype=np.int64)
    for i in range(len(q)):
        keep = (r32[i] >= 0) & (s32[i] >= s32[i, k - 1] - tol[i])
        cand = np.sort(r32[i][keep]).astype(np.int64)
        rows, sc = top_k(scores(x[cand], q[i]), k)
        best_r[i, :len(rows)], best_s[i, :len(rows)] = cand[rows], sc
    return best_s, best_r
