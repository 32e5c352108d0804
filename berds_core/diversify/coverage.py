"""A perspective-aware re-ranker: greedy expected coverage over the top candidates.

Given for each candidate i its relevance ``rel[i]`` (retriever score / max)
and the probability ``P[i, j]`` that it supports perspective j (from a judge,
or from embedding similarity to generated/offline perspectives), pick

    next = argmax_i  alpha * rel[i] + (1 - alpha) * sum_j w_j * P[i, j] * U[j]

where ``U[j] = prod_{s selected} (1 - P[s, j])`` is the probability that
perspective j is still uncovered, and ``w_j`` sum to 1 (uniform by default).
The second term is the expected number of newly covered perspectives
(weighted), i.e. a greedy maximiser of expected coverage, which is
submodular, so greedy is within 1 - 1/e of the best set. Ties go to the
more relevant candidate, then to the lower original rank.
"""
from __future__ import annotations

import numpy as np

from .mmr import cosine_matrix, normalize_scores


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


def coverage_rerank(cand_scores, probs, k: int, alpha: float = 0.5, weights=None, keep: int = 0) -> list[int]:
    """Indices (into the candidates, best first) of the ``k`` picks, in order. Vectorised per step.

    ``keep``: the retriever's first ``keep`` candidates stay on top, in their order (what they cover
    counts as covered); the greedy fills the ranks below them."""
    if not 0.0 <= alpha <= 1.0:
        raise ValueError(f"alpha must be in [0, 1], got {alpha}")
    if int(keep) < 0:
        raise ValueError(f"keep must be >= 0, got {keep}")
    rel, P, k, w = greedy_inputs(cand_scores, probs, k, weights)
    if k <= 0:
        return []
    if P.shape[1] == 0:
        return list(range(k))
    n, m = P.shape
    uncovered = np.ones(m)
    available = np.ones(n, dtype=bool)
    order: list[int] = []
    for i in range(min(int(keep), k)):
        order.append(i)
        available[i] = False
        uncovered *= 1.0 - P[i]
    # secondary key: relevance (tiny), so exact ties in the objective go to relevance;
    # np.argmax then resolves remaining ties by lowest index (original rank).
    for _ in range(k - len(order)):
        obj = alpha * rel + (1.0 - alpha) * (P @ (w * uncovered))
        obj[~available] = -np.inf
        best = obj.max()
        tied = np.flatnonzero(available & (obj >= best - 1e-12))
        i = int(tied[np.argmax(rel[tied])]) if tied.size > 1 else int(tied[0])
        order.append(i)
        available[i] = False
        uncovered *= 1.0 - P[i]
    return order


def similarity_probs(cand_emb, persp_emb, temperature: float = 0.05) -> np.ndarray:
    """P[i, j] from embeddings: softmax over perspectives of cosine / temperature.

    A soft assignment of each candidate to the perspective it is closest to;
    used when no judge is given. Rows sum to 1.
    """
    C = np.asarray(cand_emb, dtype=np.float64)
    Pm = np.asarray(persp_emb, dtype=np.float64)
    if Pm.shape[0] == 0:
        return np.zeros((C.shape[0], 0))
    sims = cosine_matrix(np.vstack([C, Pm]))[: C.shape[0], C.shape[0]:]
    z = sims / max(temperature, 1e-6)
    z -= z.max(axis=1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=1, keepdims=True)


def stance_probs(cand_emb, yes_emb, no_emb, temperature: float = 0.01) -> np.ndarray:
    """P[i] = (yes, no) for a contrasting pair of statements, e.g. a question's two sides.

    A statement and its negation embed almost alike, so the raw similarities
    say little; their *difference* ``d_i = cos(c_i, yes) - cos(c_i, no)``,
    centred on its median over the candidates, orders the candidates by
    leaning. ``p_yes = sigmoid((d_i - median d) / temperature)``, ``p_no = 1 - p_yes``.
    The centring makes the split relative to this question's candidate pool.
    """
    C = np.asarray(cand_emb, dtype=np.float64)
    if C.shape[0] == 0:
        return np.zeros((0, 2))
    sims = cosine_matrix(np.vstack([C, np.asarray(yes_emb, dtype=np.float64).reshape(1, -1),
                                    np.asarray(no_emb, dtype=np.float64).reshape(1, -1)]))
    d = sims[: C.shape[0], -2] - sims[: C.shape[0], -1]
    z = np.clip((d - np.median(d)) / max(temperature, 1e-6), -50, 50)
    p = 1.0 / (1.0 + np.exp(-z))
    return np.stack([p, 1.0 - p], axis=1)
