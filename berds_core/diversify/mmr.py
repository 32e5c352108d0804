"""Maximal Marginal Relevance (Carbonell & Goldstein 1998), as BERDS uses it.

    next = argmax_{d in C \\ S}  lam * Sim1(d, q) - (1 - lam) * max_{d' in S} Sim2(d, d')

``Sim1`` is the retriever score divided by the maximum score over the
candidates; ``Sim2`` is the cosine similarity of passage embeddings from a
separate embedder. With nothing selected yet the penalty term is 0, so the
first pick is the best-scored candidate.

Ties are broken deterministically: among equal objective values the
candidate with the lowest original rank (smallest index) wins.

The kernel is vectorised: the candidates' similarity matrix is computed once
and a running vector ``max_sim[i] = max_{d' in S} Sim2(i, d')`` is updated
with one ``np.maximum`` per pick, so each of the k steps is O(n) numpy work
and there is no Python loop over candidates.
"""
from __future__ import annotations

import numpy as np


def normalize_scores(scores) -> np.ndarray:
    """Sim1: retriever scores divided by their maximum.

    Scores that are all <= 0 (some retrievers return negative distances) or
    all equal cannot be divided by the maximum without reversing or erasing
    the order; they are min-max scaled to [0, 1] instead (all equal -> all 1).
    """
    s = np.asarray(scores, dtype=np.float64)
    if s.size == 0:
        return s
    top = s.max()
    if top > 0 and s.min() >= 0:
        return s / top
    span = top - s.min()
    if span <= 0:
        return np.ones_like(s)
    return (s - s.min()) / span


def cosine_matrix(emb) -> np.ndarray:
    """Pairwise cosine similarities of the rows of ``emb`` (zero rows give 0)."""
    e = np.asarray(emb, dtype=np.float64)
    norms = np.linalg.norm(e, axis=1, keepdims=True)
    e = e / np.where(norms > 0, norms, 1.0)
    return e @ e.T


def mmr(cand_scores, cand_emb, k: int, lam: float = 0.75, *, sim: np.ndarray | None = None) -> list[int]:
    """Indices (into the candidate list) of the ``k`` passages MMR selects, in order.

    ``cand_scores``: retriever scores of the candidates, in rank order.
    ``cand_emb``: one embedding row per candidate (ignored when ``sim``, a
    precomputed candidate x candidate similarity matrix, is given).
    ``lam`` in [0, 1]: 1 is the original ranking, 0 pure novelty.
    """
    if not 0.0 <= lam <= 1.0:
        raise ValueError(f"lambda must be in [0, 1], got {lam}")
    rel = normalize_scores(cand_scores)
    n = rel.shape[0]
    k = min(int(k), n)
    if k <= 0:
        return []
    S = cosine_matrix(cand_emb) if sim is None else np.asarray(sim, dtype=np.float64)
    if S.shape != (n, n):
        raise ValueError(f"expected {n} embeddings / a {n}x{n} similarity matrix, got {S.shape}")
    gain = lam * rel
    max_sim = np.full(n, -np.inf)
    available = np.ones(n, dtype=bool)
    order: list[int] = []
    for step in range(k):
        if step == 0:
            obj = gain.copy()
        else:
            obj = gain - (1.0 - lam) * max_sim
        obj[~available] = -np.inf
        i = int(np.argmax(obj))  # first maximum = lowest original rank
        order.append(i)
        available[i] = False
        np.maximum(max_sim, S[i], out=max_sim)
    return order


def mmr_reference(cand_scores, cand_emb, k: int, lam: float = 0.75) -> list[int]:
    """A straightforward pure-Python MMR (the textbook double loop).

    Same semantics and tie-breaking as :func:`mmr`; kept as the baseline the
    benchmark measures the vectorised kernel against, and as a test oracle.
    """
    scores = [float(s) for s in cand_scores]
    rel = list(normalize_scores(scores))
    vecs = [list(map(float, v)) for v in cand_emb]

    def cos(a, b):
        na = sum(x * x for x in a) ** 0.5
        nb = sum(x * x for x in b) ** 0.5
        if na == 0 or nb == 0:
            return 0.0
        return sum(x * y for x, y in zip(a, b)) / (na * nb)

    selected: list[int] = []
    k = min(int(k), len(scores))
    while len(selected) < k:
        best, best_val = None, None
        for i in range(len(scores)):
            if i in selected:
                continue
            penalty = max((cos(vecs[i], vecs[j]) for j in selected), default=0.0)
            val = lam * rel[i] - (1 - lam) * penalty
            if best_val is None or val > best_val:
                best, best_val = i, val
        selected.append(best)
    return selected
