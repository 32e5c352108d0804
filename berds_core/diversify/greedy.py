"""The greedy loop the coverage re-ranker, xQuAD and PM-2 share: checked inputs, then one pick per position.

Each method scores the candidates still available (:class:`Greedy`: ``objective()``) and learns what its
pick serves (``take(i)``); :func:`greedy_rank` does the rest, the same for all: relevance is the retriever
score divided by the maximum, the probabilities are clipped to [0, 1], ``k`` is capped at the number of
candidates, an objective tie goes to the more relevant candidate, then to the lower original rank.
"""
from __future__ import annotations

import numpy as np

from .mmr import normalize_scores


def greedy_inputs(cand_scores, probs, k: int, weights=None):
    """Checked inputs of the greedy re-rankers (coverage, xQuAD, PM-2): relevance (score / max,
    ``mmr.normalize_scores``), the (candidates x m) probabilities clipped to [0, 1], k capped at the
    number of candidates, and the perspective weights (uniform by default)."""
    rel = normalize_scores(cand_scores)
    P = np.clip(np.asarray(probs, dtype=np.float64), 0.0, 1.0)
    n = rel.shape[0]
    if P.ndim != 2 or P.shape[0] != n:
        raise ValueError(f"expected a {n} x m probability matrix, got {P.shape}")
    m = P.shape[1]
    w = (np.full(m, 1.0 / m) if m else np.zeros(0)) if weights is None else np.asarray(weights, dtype=np.float64)
    return rel, P, min(int(k), n), w


class Greedy:
    """One method's side of the greedy loop: built from the checked inputs (relevance, probabilities,
    weights), it scores the candidates (``objective``) and records what a pick serves (``take``)."""

    def __init__(self, rel: np.ndarray, P: np.ndarray, w: np.ndarray):
        self.rel, self.P, self.w = rel, P, w

    def objective(self) -> np.ndarray:
        raise NotImplementedError

    def take(self, i: int) -> None:
        raise NotImplementedError


def greedy_rank(method, cand_scores, probs, k: int, weights=None, first: int = 0) -> list[int]:
    """Indices (into the candidates, best first) of the ``k`` picks, in order: ``method(rel, P, w)`` makes
    the :class:`Greedy` that scores them. ``first``: the first candidates stay on top in their order (their picks are taken
    as made). No perspective at all: the retriever's order."""
    rel, P, k, w = greedy_inputs(cand_scores, probs, k, weights)
    if k <= 0:
        return []
    if P.shape[1] == 0:
        return list(range(k))
    state = method(rel, P, w)
    available = np.ones(P.shape[0], dtype=bool)
    order: list[int] = []
    for i in range(min(int(first), k)):
        order.append(i)
        available[i] = False
        state.take(i)
    # secondary key: relevance (tiny), so exact ties in the objective go to relevance;
    # np.argmax then resolves remaining ties by lowest index (original rank).
    for _ in range(k - len(order)):
        obj = state.objective()
        obj[~available] = -np.inf
        tied = np.flatnonzero(available & (obj >= obj.max() - 1e-12))
        i = int(tied[np.argmax(rel[tied])]) if tied.size > 1 else int(tied[0])
        order.append(i)
        available[i] = False
        state.take(i)
    return order
