"""Small heads over frozen MiniLM embeddings, and the clustering of equivalent perspectives.

Every feature reads the pool index's stored sentence embeddings (one per pool
sentence, see :class:`~berds_core.discovery.pool.PoolIndex`) and the claim's
embedding from the same encoder; nothing is encoded twice.

- relevance (``REL_FEATURES``): the claim-perspective cosine, its z-score and
  gap to the best among the claim's candidates, the RRF score, BM25's and
  dense's reciprocal ranks and BM25's score relative to the best;
- equivalence of two perspectives (``pair_features``): cosine, content-stem
  Jaccard and overlap, length difference, ``[a * b, |a - b|]``.

Each head is a standardised logistic regression (:class:`LinearHead`) fitted
by ``scripts/train_discovery.py`` on PERSPECTRUM train-A; the weights ship in
``weights/discovery_heads_v2.npz``. (Stance is not a head here: it is the
studio's stance model, ``berds_core.stance``.) ``cluster_labels`` groups perspectives by
agglomerative clustering (scipy) of the equivalence probabilities.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

REL_FEATURES = ["cos", "cos_z", "cos_gap", "rrf60", "bm25_rr", "dense_rr", "bm25_rel"]


def relevance_features(cands, emb: np.ndarray) -> np.ndarray:
    """(n, len(REL_FEATURES)) for one claim's :class:`~.pool.ClaimCandidates` (``emb``: the pool's embeddings)."""
    if len(cands) == 0:
        return np.zeros((0, len(REL_FEATURES)))
    cos = np.asarray(emb[cands.rows], dtype=np.float64) @ np.asarray(cands.claim_emb, dtype=np.float64)
    z = (cos - cos.mean()) / (cos.std() + 1e-6)
    bmax = cands.bm25_score.max() if len(cands) else 0.0
    return np.column_stack([cos, z, cos - cos.max(), cands.rrf * 60.0, 1.0 / cands.bm25_rank,
                            1.0 / cands.dense_rank, cands.bm25_score / max(bmax, 1e-9)])


_WORD = re.compile(r"[A-Za-z0-9']+")


@lru_cache(maxsize=1)
def _stemmer_and_stopwords():
    import Stemmer
    from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

    return Stemmer.Stemmer("english"), frozenset(ENGLISH_STOP_WORDS) | {"s", "t", "does", "do", "should",
                                                                         "would", "could"}


def content_stems(text: str) -> set[str]:
    """Snowball stems of the content words (English stop words and one-letter words left out)."""
    stem, stop = _stemmer_and_stopwords()
    words = [w.lower() for w in _WORD.findall(text)]
    return set(stem.stemWords([w for w in words if w not in stop and len(w) > 1]))


def _stems(text: str) -> frozenset:
    return frozenset(content_stems(text))


def pair_features(Ea: np.ndarray, Eb: np.ndarray, texts_a: list[str], texts_b: list[str]) -> np.ndarray:
    """(n, 4 + 2 * dim) features of perspective pairs (row i of ``Ea`` with row i of ``Eb``)."""
    Ea = np.asarray(Ea, dtype=np.float64)
    Eb = np.asarray(Eb, dtype=np.float64)
    memo: dict[str, frozenset] = {}

    def stems(t):
        if t not in memo:
            memo[t] = _stems(t)
        return memo[t]

    lex = []
    for ta, tb in zip(texts_a, texts_b):
        sa, sb = stems(ta), stems(tb)
        inter = len(sa & sb)
        lex.append((inter / max(1, len(sa | sb)), inter / max(1, min(len(sa), len(sb))),
                    abs(len(ta.split()) - len(tb.split())) / 10.0))
    lex = np.array(lex, dtype=np.float64).reshape(len(texts_a), 3)
    return np.hstack([np.sum(Ea * Eb, axis=1, keepdims=True), lex, Ea * Eb, np.abs(Ea - Eb)])


@dataclass
class LinearHead:
    """A standardised logistic regression: ``sigmoid(((X - mean) / scale) @ coef + intercept)``."""

    mean: np.ndarray
    scale: np.ndarray
    coef: np.ndarray
    intercept: float

    def proba(self, X: np.ndarray) -> np.ndarray:
        X = np.asarray(X, dtype=np.float64)
        if X.shape[0] == 0:
            return np.zeros(0)
        z = ((X - self.mean) / self.scale) @ self.coef + self.intercept
        return 1.0 / (1.0 + np.exp(-np.clip(z, -50, 50)))

    def to_arrays(self, prefix: str) -> dict:
        return {f"{prefix}_mean": self.mean.astype(np.float64), f"{prefix}_scale": self.scale.astype(np.float64),
                f"{prefix}_coef": self.coef.astype(np.float64),
                f"{prefix}_intercept": np.array(self.intercept, dtype=np.float64)}

    @classmethod
    def from_arrays(cls, z, prefix: str) -> "LinearHead":
        return cls(np.asarray(z[f"{prefix}_mean"], np.float64), np.asarray(z[f"{prefix}_scale"], np.float64),
                   np.asarray(z[f"{prefix}_coef"], np.float64), float(z[f"{prefix}_intercept"]))


def fit_head(X: np.ndarray, y: np.ndarray, C: float = 1.0) -> LinearHead:
    """Fit a :class:`LinearHead` (scikit-learn's standardiser and logistic regression)."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.preprocessing import StandardScaler

    sc = StandardScaler().fit(X)
    scale = np.where(sc.scale_ > 1e-8, sc.scale_, 1.0)  # constant features stay as they are
    m = LogisticRegression(C=C, max_iter=5000).fit((X - sc.mean_) / scale, y)
    return LinearHead(sc.mean_.astype(np.float64), scale.astype(np.float64), m.coef_[0].astype(np.float64),
                      float(m.intercept_[0]))


def equivalence_matrix(head: LinearHead, E: np.ndarray, texts: list[str]) -> np.ndarray:
    """(n, n) symmetric P(same perspective) for ``n`` perspectives (embeddings ``E``); diagonal 1."""
    n = len(texts)
    P = np.eye(n)
    if n < 2:
        return P
    i, j = np.triu_indices(n, 1)
    p = head.proba(pair_features(E[i], E[j], [texts[a] for a in i], [texts[b] for b in j]))
    P[i, j] = p
    P[j, i] = p
    return P


def cluster_labels(P: np.ndarray, threshold: float, method: str = "complete") -> np.ndarray:
    """Cluster ids (0, 1, ... in order of first member) from a P(same) matrix.

    Agglomerative clustering on distance ``1 - P`` (scipy ``linkage``; ``complete``:
    every pair in a cluster has P >= threshold; ``average``: the mean does);
    clusters are cut where the distance exceeds ``1 - threshold``.
    """
    n = P.shape[0]
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    if n == 1:
        return np.zeros(1, dtype=np.int64)
    from scipy.cluster.hierarchy import fcluster, linkage
    from scipy.spatial.distance import squareform

    D = 1.0 - np.clip((P + P.T) / 2.0, 0.0, 1.0)
    np.fill_diagonal(D, 0.0)
    raw = fcluster(linkage(squareform(D, checks=False), method=method), t=1.0 - threshold + 1e-12,
                   criterion="distance")
    remap: dict[int, int] = {}
    return np.array([remap.setdefault(int(c), len(remap)) for c in raw], dtype=np.int64)
