"""How each use turns the model's logits into its decision, and how those rules are fitted (pure numpy).

The same functions serve the product (``StanceModel``) and the cross-validation
that chooses each use's rule (``scripts/train_stance.py``), so the figures
reported are the product's decisions.

- ``support_share``: P(support) / (P(support) + P(oppose)), the stance of a
  pair given that it is on topic (discovery's T2);
- **consistency** (optional per use, chosen by cross-validation): a statement
  and its negation must get opposite stances, so the pair is also read with
  the negated target and the two readings are averaged (support of the
  statement with oppose of its negation);
- a **temperature** per use (calibration, least log-loss of the allowed classes);
- a **threshold** per use (T2 accuracy, judge F1).
"""
from __future__ import annotations

import numpy as np

SUPPORT, OPPOSE, UNRELATED = 0, 1, 2
T_GRID = np.round(np.exp(np.linspace(np.log(0.25), np.log(4.0), 41)), 4)
THRESHOLDS = np.round(np.arange(0.02, 0.981, 0.01), 2)


def softmax(z) -> np.ndarray:
    z = np.asarray(z, np.float64)
    z = z - z.max(axis=-1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=-1, keepdims=True)


def support_share(P: np.ndarray) -> np.ndarray:
    """P(support) / (P(support) + P(oppose)) per row of ``[support, oppose, unrelated]`` probabilities."""
    P = np.asarray(P, np.float64)
    return P[:, SUPPORT] / np.clip(P[:, SUPPORT] + P[:, OPPOSE], 1e-12, None)


def stance_scores(Z, Zn, temperature: float, consistency: bool) -> np.ndarray:
    """Discovery's P(support | on topic) from the logits with the claim (``Z``) and, with
    ``consistency``, with its negation (``Zn``, whose oppose share counts as support)."""
    s = support_share(softmax(np.asarray(Z) / temperature))
    if consistency:
        s = (s + (1.0 - support_share(softmax(np.asarray(Zn) / temperature)))) / 2.0
    return s


def judge_scores(Z, Zn, temperature: float, consistency: bool) -> np.ndarray:
    """The judge's P(the text supports the perspective): P(support) with the perspective (``Z``),
    averaged with P(oppose) with its negation (``Zn``) under ``consistency``."""
    p = softmax(np.asarray(Z) / temperature)[:, SUPPORT]
    if consistency:
        p = (p + softmax(np.asarray(Zn) / temperature)[:, OPPOSE]) / 2.0
    return p


def allowed_mask(allowed, n_classes: int = 3) -> np.ndarray:
    M = np.zeros((len(allowed), n_classes), bool)
    for i, a in enumerate(allowed):
        M[i, list(a)] = True
    return M


def fit_temperature(Z, allowed) -> float:
    """The temperature (grid 0.25-4, log-spaced) with the least log-loss of the allowed classes."""
    Z = np.asarray(Z, np.float64)
    if len(Z) == 0:
        return 1.0
    M = allowed_mask(allowed, Z.shape[1])

    def nll(T):
        return -np.mean(np.log(np.clip((softmax(Z / T) * M).sum(1), 1e-12, None)))

    return float(min(T_GRID, key=nll))


def f1_at(y, p, t) -> float:
    y = np.asarray(y).astype(bool)
    pred = np.asarray(p) >= t
    tp = int((pred & y).sum())
    fp = int((pred & ~y).sum())
    fn = int((~pred & y).sum())
    prec = tp / (tp + fp) if tp + fp else 0.0
    rec = tp / (tp + fn) if tp + fn else 0.0
    return 2 * prec * rec / (prec + rec) if prec + rec else 0.0


def accuracy_at(y, p, t) -> float:
    return float(np.mean((np.asarray(p) >= t) == np.asarray(y).astype(bool)))


def best_threshold(y, p, metric) -> float:
    """The threshold of ``THRESHOLDS`` with the best ``metric(y, p, t)`` (ties: the one nearest 0.5)."""
    return float(max(THRESHOLDS, key=lambda t: (metric(y, p, t), -abs(t - 0.5))))


def choose_rule(scores_for, y, metric) -> tuple[float, bool, float]:
    """(best ``metric``, consistency, threshold) over reading the pair alone (``scores_for(False)``) or with
    its negation (``scores_for(True)``), each at its best threshold; ties go to the cheaper single reading."""
    best = None
    for cons in (False, True):
        p = scores_for(cons)
        t = best_threshold(y, p, metric)
        score = metric(y, p, t)
        if best is None or score > best[0] + 1e-12:
            best = (float(score), cons, t)
    return best
