"""Fitting a judge's head, calibration map, threshold and band: the recipe ``scripts/train_judge.py`` chose the
shipped judges with, and the one ``berds agreement --fit`` refits a lab's judge with (:mod:`berds_core.lab.judge_fit`).

- :func:`fit_head`: a logistic head on one feature (scalars stored) or several (one column each), standardised;
- :func:`fit_calibration`: a map of head probabilities, ``none`` | ``platt`` (logistic on the logit) |
  ``isotonic`` (:func:`berds_core.judges.calibration.apply_calibration` applies it);
- :func:`choose_calibration`: the kind with the lowest out-of-fold log loss over question-grouped folds (the
  map's own outputs fitted on the other folds; ties: the kind listed first), and its map on all rows.

sklearn does the fitting; every map is plain numbers (JSON), so a judge file says all it decides with.
"""
from __future__ import annotations

import numpy as np

from .calibration import apply_calibration

CALIBRATIONS = ("none", "platt", "isotonic")


def fit_head(x, y) -> dict:
    """A logistic head on one feature (``x`` a vector: scalars stored, as v4's weights) or several (columns)."""
    from sklearn.linear_model import LogisticRegression

    x = np.asarray(x, float)
    X = x[:, None] if x.ndim == 1 else x
    mu, sd = X.mean(0), X.std(0)
    sd = np.where(sd > 0, sd, 1.0)
    m = LogisticRegression(C=1.0, max_iter=2000).fit((X - mu) / sd, y)
    if x.ndim == 1:
        return {"mean": float(mu[0]), "scale": float(sd[0]), "coef": float(m.coef_[0, 0]),
                "intercept": float(m.intercept_[0])}
    return {"mean": mu.tolist(), "scale": sd.tolist(), "coef": m.coef_[0].tolist(), "intercept": float(m.intercept_[0])}


def logit(p) -> np.ndarray:
    p = np.clip(np.asarray(p, float), 1e-6, 1 - 1e-6)
    return np.log(p / (1 - p))


def fit_calibration(kind: str, p, y, weights=None) -> dict:
    """The calibration map ``kind`` fitted on head probabilities ``p`` and 0/1 outcomes ``y`` (optionally
    weighted: a sample's inverse inclusion probability)."""
    if kind == "none":
        return {"kind": "none"}
    if kind == "platt":
        from sklearn.linear_model import LogisticRegression

        # Newton steps on one feature: converged (lbfgs stopped ~1e-3 short) and 3x faster on 16,000 rows
        m = LogisticRegression(C=1e6, max_iter=2000, solver="newton-cholesky").fit(logit(p)[:, None], y,
                                                                                   sample_weight=weights)
        return {"kind": "platt", "a": float(m.coef_[0, 0]), "b": float(m.intercept_[0])}
    if kind != "isotonic":
        raise ValueError(f"calibration {kind!r}: one of {', '.join(CALIBRATIONS)}")
    from sklearn.isotonic import IsotonicRegression

    iso = IsotonicRegression(out_of_bounds="clip", y_min=0.0, y_max=1.0).fit(p, y, sample_weight=weights)
    return {"kind": "isotonic", "x": iso.X_thresholds_.tolist(), "y": iso.y_thresholds_.tolist()}


def log_loss(y, p, weights=None) -> float:
    p = np.clip(np.asarray(p, float), 1e-6, 1 - 1e-6)
    y = np.asarray(y, float)
    return float(np.average(-(y * np.log(p) + (1 - y) * np.log(1 - p)), weights=weights))


def choose_calibration(p, y, folds, kinds=CALIBRATIONS, weights=None) -> tuple[str, dict, float]:
    """``(kind, map fitted on all rows, its out-of-fold log loss)``: the kind whose map, fitted on the other
    folds, predicts each fold best (ties: the kind listed first)."""
    p, y, folds = np.asarray(p, float), np.asarray(y), np.asarray(folds)
    best = None
    for kind in kinds:
        oof = np.zeros(len(y))
        try:
            for k in np.unique(folds):
                m = folds == k
                w = None if weights is None else np.asarray(weights)[~m]
                oof[m] = apply_calibration(fit_calibration(kind, p[~m], y[~m], w), p[m])
        except ValueError:  # a map that cannot be fitted on some fold (one class only there): not a candidate
            continue
        ll = log_loss(y, oof, weights)
        if best is None or ll < best[0] - 1e-9:
            best = (ll, kind)
    if best is None or len(np.unique(y)) < 2:  # nothing fits: the probabilities as they are
        return "none", {"kind": "none"}, float("nan") if best is None else best[0]
    return best[1], fit_calibration(best[1], p, y, weights), best[0]


__all__ = ["CALIBRATIONS", "fit_head", "fit_calibration", "choose_calibration", "log_loss", "logit"]
