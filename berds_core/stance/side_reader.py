"""A side reader on stored embeddings: which side of a question a passage argues, read from the one MiniLM
vector per passage the dense index already holds, so reading costs a few vector operations per candidate.

The stance model (:mod:`.model`) is a cross-encoder: it reads every (question, passage) pair through the
network, which is why the ``diverse`` preset can afford only dense's top 6. This reader never runs a network
at query time. It is a small learned head (``weights/side_reader_v1.npz``, trained by
``scripts/train_side_reader.py`` on the stance model's training examples, ``docs/diversity.md``):

- **passage side** (question-independent, computed once per passage and cached): ``z = tanh(p V + c)``, a
  ``rank``-dim reading of the passage's stored unit embedding ``p``;
- **question side** (once per question): ``a = tanh(y U + d)``, ``b = tanh(n U + d)`` from the embeddings of
  the question's yes- and no-side statements (``datasets.sides.yes_no_sides``);
- **per candidate**: ``h = relu([z*a, z*b, z] W1 + b1)``, logits ``h W2 + b2``, softmax: P(yes side),
  P(no side), P(off the question) -- the stance model's ``sides`` columns.

Every product is computed one row at a time in float64 (``np.dot`` of a vector and a matrix), so a passage's
probabilities do not depend on how many candidates are read with it.
"""
from __future__ import annotations

import json
import threading
from pathlib import Path

import numpy as np

WEIGHTS = Path(__file__).with_name("weights") / "side_reader_v1.npz"
ARRAYS = ("V", "c", "U", "d", "W1", "b1", "W2", "b2")


def _rows(X, W, b) -> np.ndarray:
    """``X W + b`` row by row (float64): each row's result is independent of the others in ``X``."""
    X = np.asarray(X, dtype=np.float64)
    out = np.empty((X.shape[0], W.shape[1]), dtype=np.float64)
    for i in range(X.shape[0]):
        out[i] = np.dot(X[i], W) + b
    return out


class SideReader:
    """The learned head of a weights file (``arrays``: V, c, U, d, W1, b1, W2, b2; ``meta``: JSON)."""

    def __init__(self, weights: str | Path | None = None, arrays: dict | None = None, meta: dict | None = None):
        if arrays is None:
            path = Path(weights or WEIGHTS)
            try:
                with np.load(path, allow_pickle=False) as z:
                    arrays = {k: np.asarray(z[k], dtype=np.float64) for k in ARRAYS}
                    meta = json.loads(str(z["meta"]))
            except FileNotFoundError:
                raise FileNotFoundError(f"{path}: side reader weights not found "
                                        "(scripts/train_side_reader.py writes them)") from None
            except KeyError as e:
                raise ValueError(f"{path}: not a side reader weights file (missing {e})") from None
            self.path = path
        else:
            self.path = None
        self.arrays = {k: np.asarray(arrays[k], dtype=np.float64) for k in ARRAYS}
        self.meta = dict(meta or {})
        V, U, W1, W2 = (self.arrays[k] for k in ("V", "U", "W1", "W2"))
        self.dim, self.rank = V.shape
        if U.shape != V.shape or W1.shape[0] != 3 * self.rank or W2.shape != (W1.shape[1], 3):
            raise ValueError(f"{self.path or 'arrays'}: inconsistent side reader shapes "
                             f"V {V.shape}, U {U.shape}, W1 {W1.shape}, W2 {W2.shape}")
        self.key = str(self.meta.get("signature") or self.meta.get("version") or "side-reader")
        # the passage readings this reader made, kept per corpus and vectors by diversify.index_sides (a page's
        # sessions share the reader, so two threads may open and evict at once: the lock)
        self.readings: dict = {}
        self.readings_lock = threading.Lock()

    def passage_side(self, P) -> np.ndarray:
        """``(n, rank)``: the question-independent reading of passage embeddings ``P`` (n x dim)."""
        P = np.asarray(P, dtype=np.float64).reshape(-1, self.dim)
        return np.tanh(_rows(P, self.arrays["V"], self.arrays["c"]))

    def question_side(self, yes_emb, no_emb) -> np.ndarray:
        """``(2, rank)``: the reading of the question's yes- and no-side statement embeddings."""
        S = np.vstack([np.asarray(yes_emb, dtype=np.float64).reshape(1, -1),
                       np.asarray(no_emb, dtype=np.float64).reshape(1, -1)])
        if S.shape[1] != self.dim:
            raise ValueError(f"side statement embeddings of dimension {S.shape[1]}; this reader reads {self.dim}")
        return np.tanh(_rows(S, self.arrays["U"], self.arrays["d"]))

    def probs_from(self, Z, Q) -> np.ndarray:
        """``(n, 3)`` [P(yes side), P(no side), P(off)] of passage readings ``Z`` (n x rank) against the
        question reading ``Q`` (2 x rank)."""
        Z = np.asarray(Z, dtype=np.float64).reshape(-1, self.rank)
        if not len(Z):
            return np.zeros((0, 3))
        F = np.hstack([Z * Q[0], Z * Q[1], Z])
        H = np.maximum(_rows(F, self.arrays["W1"], self.arrays["b1"]), 0.0)
        L = _rows(H, self.arrays["W2"], self.arrays["b2"])
        L -= L.max(axis=1, keepdims=True)
        E = np.exp(L)
        return E / E.sum(axis=1, keepdims=True)

    def probs(self, passage_emb, yes_emb, no_emb) -> np.ndarray:
        """``(n, 3)`` [P(yes side), P(no side), P(off)] of passages (their stored embeddings) for a question
        (its side statements' embeddings)."""
        return self.probs_from(self.passage_side(passage_emb), self.question_side(yes_emb, no_emb))


_SHARED: dict[str, SideReader] = {}


def get_side_reader(weights: str | Path | None = None) -> SideReader:
    """The shipped reader (or that of ``weights``), loaded once per process."""
    key = str(Path(weights or WEIGHTS).resolve())
    if key not in _SHARED:
        _SHARED[key] = SideReader(weights)
    return _SHARED[key]
