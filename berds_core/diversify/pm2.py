"""PM-2 (Dang & Croft, SIGIR 2012): diversity by proportionality, seats allotted like a Sainte-Laguë election.

Each aspect a has a weight v_a (its share of the result list; uniform by
default) and s_a seats taken so far. For every position:

    qt_a = v_a / (2 s_a + 1)                       (quotient; a* = argmax qt_a, ties: first aspect)
    d*   = argmax_{d in R \\ S}  λ qt_{a*} P(d | a*) + (1 − λ) Σ_{a ≠ a*} qt_a P(d | a)
    s_a += P(d* | a) / Σ_b P(d* | b)               (the seat is shared by the aspects d* serves)

``P(d | a)``: see :mod:`berds_core.diversify.aspects`. PM-2 has no relevance
term of its own: relevance enters through P(d | a) and the candidate set R
(the question's top candidates); remaining ties go to the more relevant
candidate, then to the lower original rank. A passage that serves no aspect
takes no seat. λ = 1 serves only the aspect whose turn it is.

``DEFAULT_LAMBDA`` = 0.0: chosen like xQuAD's (procon.json, BM25, offline
aspects, MRecall@5 then Precision@5; out-of-fold folds chose 0, 0, 0, 0.3, 0).
λ = 0 still diversifies: each position serves the aspects whose turn it is not,
weighted by their quotients. With dense MiniLM every fold chose 1.
"""
from __future__ import annotations

from functools import partial

import numpy as np

from .greedy import Greedy, greedy_rank

DEFAULT_LAMBDA = 0.0


class _Seats(Greedy):
    """PM-2's objective: the quotients of the aspects' seats, the one whose turn it is weighted by λ."""

    def __init__(self, rel, P, v, lam: float):
        super().__init__(rel, P, v)
        self.lam, self.seats = lam, np.zeros(P.shape[1])

    def objective(self):
        qt = self.w / (2.0 * self.seats + 1.0)
        a = int(np.argmax(qt))
        others = qt.copy()
        others[a] = 0.0
        return self.lam * qt[a] * self.P[:, a] + (1.0 - self.lam) * (self.P @ others)

    def take(self, i):
        total = self.P[i].sum()
        if total > 0:
            self.seats += self.P[i] / total


def pm2(cand_scores, aspect_probs, k: int, lam: float = DEFAULT_LAMBDA, weights=None) -> list[int]:
    """Indices (into the candidates) of the ``k`` picks, in order."""
    if not 0.0 <= lam <= 1.0:
        raise ValueError(f"lambda must be in [0, 1], got {lam}")
    return greedy_rank(partial(_Seats, lam=lam), cand_scores, aspect_probs, k, weights)
