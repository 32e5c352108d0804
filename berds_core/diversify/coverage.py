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

from functools import partial

import numpy as np

from .greedy import Greedy, greedy_rank
from .mmr import cosine_matrix


class _Coverage(Greedy):
    """The expected coverage objective: ``alpha * rel + (1 - alpha) * sum_j w_j P[i, j] U[j]``."""

    def __init__(self, rel, P, w, alpha: float):
        super().__init__(rel, P, w)
        self.alpha, self.uncovered = alpha, np.ones(P.shape[1])

    def objective(self):
        return self.alpha * self.rel + (1.0 - self.alpha) * (self.P @ (self.w * self.uncovered))

    def take(self, i):
        self.uncovered *= 1.0 - self.P[i]


def coverage_rerank(cand_scores, probs, k: int, alpha: float = 0.5, weights=None, keep: int = 0) -> list[int]:
    """Indices (into the candidates, best first) of the ``k`` picks, in order. Vectorised per step.

    ``keep``: the retriever's first ``keep`` candidates stay on top, in their order (what they cover
    counts as covered); the greedy fills the ranks below them."""
    if not 0.0 <= alpha <= 1.0:
        raise ValueError(f"alpha must be in [0, 1], got {alpha}")
    if int(keep) < 0:
        raise ValueError(f"keep must be >= 0, got {keep}")
    return greedy_rank(partial(_Coverage, alpha=alpha), cand_scores, probs, k, weights, first=keep)


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
