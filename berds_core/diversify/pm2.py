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

import numpy as np

from .coverage import greedy_inputs

DEFAULT_LAMBDA = 0.0


def pm2(cand_scores, aspect_probs, k: int, lam: float = DEFAULT_LAMBDA, weights=None) -> list[int]:
    """Indices (into the candidates) of the ``k`` picks, in order."""
    if not 0.0 <= lam <= 1.0:
        raise ValueError(f"lambda must be in [0, 1], got {lam}")
    rel, P, k, v = greedy_inputs(cand_scores, aspect_probs, k, weights)
    if k <= 0:
        return []
    if P.shape[1] == 0:
        return list(range(k))
    n, m = P.shape
    seats = np.zeros(m)
    available = np.ones(n, dtype=bool)
    order: list[int] = []
    for _ in range(k):
        qt = v / (2.0 * seats + 1.0)
        a = int(np.argmax(qt))
        others = qt.copy()
        others[a] = 0.0
        obj = lam * qt[a] * P[:, a] + (1.0 - lam) * (P @ others)
        obj[~available] = -np.inf
        tied = np.flatnonzero(available & (obj >= obj.max() - 1e-12))
        i = int(tied[np.argmax(rel[tied])]) if tied.size > 1 else int(tied[0])
        order.append(i)
        available[i] = False
        total = P[i].sum()
        if total > 0:
            seats += P[i] / total
    return order
