"""Retrieval-diversity metrics on boolean label matrices (passages x perspectives).

One metric, one function, pure; the kernels take a single question's matrix.
"""
from __future__ import annotations

import numpy as np


def mrecall_at_k(labels: np.ndarray, k: int) -> float:
    """MRecall@k (Min et al. 2021, as BERDS uses it).

    With m perspectives and the top-k passages: if m > k the question scores 1
    when at least k distinct perspectives are covered, otherwise 1 when all m
    are covered. ``labels[i, j]`` is True when passage i supports perspective j.
    """
    labels = np.asarray(labels, dtype=bool)
    m = labels.shape[1]
    covered = int(labels[:k].any(axis=0).sum())
    return float(covered >= (k if m > k else m))


def precision_at_k(labels: np.ndarray, k: int) -> float:
    """Precision@k: share of the top-k slots holding a passage that supports any perspective.

    The denominator is k: a run with fewer than k passages is not rewarded.
    """
    labels = np.asarray(labels, dtype=bool)
    return float(labels[:k].any(axis=1).sum()) / k


def passages_to_cover(labels: np.ndarray) -> int | None:
    """Smallest n such that the top n passages cover every perspective (None if never)."""
    labels = np.asarray(labels, dtype=bool)
    m = labels.shape[1]
    if labels.shape[0] == 0:
        return None
    covered = np.logical_or.accumulate(labels, axis=0).sum(axis=1)
    hit = np.nonzero(covered >= m)[0]
    return int(hit[0]) + 1 if hit.size else None


def evaluate_matrices(matrices: list[np.ndarray], k: int) -> dict:
    """Mean MRecall@k, Precision@k and Precision@1 over questions."""
    n = len(matrices)
    if n == 0:
        return {"n": 0, "mrecall": None, "precision": None, "precision_at_1": None}
    return {
        "n": n,
        "mrecall": float(np.mean([mrecall_at_k(L, k) for L in matrices])),
        "precision": float(np.mean([precision_at_k(L, k) for L in matrices])),
        "precision_at_1": float(np.mean([precision_at_k(L, 1) for L in matrices])),
    }
