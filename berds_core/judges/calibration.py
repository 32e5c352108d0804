"""What a judge's probability means: calibration error, reliability bins, the F1 threshold and the band of
thresholds the judge cannot tell apart (its "unsure" zone), and the three-way verdicts the pages draw.

A probability shown to a person is calibrated out of fold (``scripts/train_judge.py`` fits and reports it);
these functions are the measures and the rule, pure numpy:

- :func:`ece`: expected calibration error over equal-width bins (Guo et al., 2017): the share-weighted mean
  of ``|mean(y) - mean(p)|`` per bin;
- :func:`reliability`: per bin, the mean probability, the observed rate and the count (the reliability plot);
- :func:`best_f1_threshold`: the threshold that maximises F1 of the positive class on ``(y, p)``;
- :func:`threshold_band`: the thresholds the data cannot tell apart: :func:`best_f1_threshold` on bootstrap
  resamples of the *questions* (the unit the data varies by), their ``lo``-``hi`` percentiles;
- :func:`verdicts`: ``+1`` supports, ``-1`` does not, ``0`` unsure (the probability inside the band).
"""
from __future__ import annotations

import numpy as np

YES, UNSURE, NO = 1, 0, -1


def ece(y, p, bins: int = 10) -> float:
    """Expected calibration error of probabilities ``p`` for 0/1 outcomes ``y`` (equal-width bins)."""
    y, p = np.asarray(y, float), np.asarray(p, float)
    if not len(y):
        return 0.0
    b = np.minimum((p * bins).astype(int), bins - 1)
    return float(sum((b == k).mean() * abs(y[b == k].mean() - p[b == k].mean()) for k in range(bins) if (b == k).any()))


def reliability(y, p, bins: int = 10) -> list[dict]:
    """Per non-empty bin: ``{lo, hi, n, mean_p, rate}`` (a reliability plot's points)."""
    y, p = np.asarray(y, float), np.asarray(p, float)
    b = np.minimum((p * bins).astype(int), bins - 1)
    return [{"lo": k / bins, "hi": (k + 1) / bins, "n": int((b == k).sum()), "mean_p": float(p[b == k].mean()),
             "rate": float(y[b == k].mean())} for k in range(bins) if (b == k).any()]


def f1_at(y, p, t: float) -> float:
    y, d = np.asarray(y, bool), np.asarray(p, float) >= t
    tp = int((y & d).sum())
    return 2 * tp / (int(y.sum()) + int(d.sum())) if tp else 0.0


def best_f1_threshold(y, p) -> float:
    """The threshold (one of the probabilities, rounded to 1e-4) with the best F1; ties: the highest.

    Every candidate at once (sorted counts, O(n log n)): for ``t``, the pairs at or above it and the positives
    among them; F1 = 2 TP / (positives + decided), as :func:`f1_at` computes it for one threshold."""
    p, y = np.asarray(p, float), np.asarray(y, bool)
    cands = np.unique(np.round(p, 4))
    if not len(cands):
        return 0.5
    decided = len(p) - np.searchsorted(np.sort(p), cands, side="left")
    tp = int(y.sum()) - np.searchsorted(np.sort(p[y]), cands, side="left")
    with np.errstate(divide="ignore", invalid="ignore"):
        scores = np.where(tp > 0, 2 * tp / (int(y.sum()) + decided), 0.0)
    return float(cands[scores == scores.max()].max())


def threshold_band(y, p, groups, *, n_boot: int = 200, lo: float = 10, hi: float = 90, seed: int = 0
                   ) -> tuple[float, float]:
    """``(lo, hi)`` percentiles of the F1 threshold over bootstrap resamples of the groups (questions).

    A probability between them is one the judge cannot tell apart from its threshold: which side of the
    threshold it falls depends on which questions the threshold happened to be chosen on."""
    y, p, groups = np.asarray(y), np.asarray(p, float), np.asarray(groups)
    names = np.unique(groups)
    idx = {g: np.flatnonzero(groups == g) for g in names}
    rng = np.random.default_rng(seed)
    ts = []
    for _ in range(n_boot):
        rows = np.concatenate([idx[g] for g in rng.choice(names, size=len(names), replace=True)])
        if y[rows].any():
            ts.append(best_f1_threshold(y[rows], p[rows]))
    if not ts:
        t = best_f1_threshold(y, p)
        return t, t
    return float(np.percentile(ts, lo)), float(np.percentile(ts, hi))


def verdicts(probs, band: tuple[float, float] | None, threshold: float) -> np.ndarray:
    """``+1`` (supports), ``0`` (unsure: inside ``band``), ``-1`` (does not); without a band, the threshold
    decides every pair."""
    p = np.asarray(probs, float)
    out = np.where(p >= threshold, YES, NO).astype(np.int8)
    if band is not None:
        lo, hi = band
        out[(p >= lo) & (p < hi)] = UNSURE
        out[p >= hi] = YES
    return out


__all__ = ["apply_calibration", "ece", "reliability", "f1_at", "best_f1_threshold", "threshold_band", "verdicts", "YES", "UNSURE", "NO"]


def head_probability(h: dict, x) -> np.ndarray:
    """The logistic head ``h`` (``mean``, ``scale``, ``coef``: scalars for one feature, lists for several;
    ``intercept``) applied to features ``x`` (a vector, or one column per feature)."""
    x = np.asarray(x, np.float64)
    if np.ndim(h["coef"]) == 0:
        z = (x - h["mean"]) / h["scale"] * h["coef"] + h["intercept"]
    else:
        X = x[:, None] if x.ndim == 1 else x
        z = ((X - np.asarray(h["mean"])) / np.asarray(h["scale"])) @ np.asarray(h["coef"]) + h["intercept"]
    return 1.0 / (1.0 + np.exp(-z))


def apply_calibration(c: dict, p: np.ndarray) -> np.ndarray:
    """The calibration map ``c`` (``none`` | ``platt`` | ``isotonic``) applied to head probabilities."""
    p = np.asarray(p, dtype=np.float64)
    if c["kind"] == "platt":
        q = np.clip(p, 1e-6, 1 - 1e-6)
        return 1.0 / (1.0 + np.exp(-(c["a"] * np.log(q / (1 - q)) + c["b"])))
    if c["kind"] == "isotonic":
        return np.interp(p, np.asarray(c["x"]), np.asarray(c["y"]))
    return p
