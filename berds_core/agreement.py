"""Agreement: humans against the judge, and humans against each other.

Pure functions over 0/1 arrays (``human`` = reference, ``pred`` = the judge or
a second annotator), plus :func:`agreement_report` that reads an annotation
:class:`~berds_core.store.Store` and builds the ``berds agreement`` report.

- Cohen's kappa: ``κ = (p_o − p_e) / (1 − p_e)``, ``p_o`` the observed share of
  agreement, ``p_e = Σ_c p_h(c)·p_j(c)`` the agreement expected from the two
  marginals. NaN when ``p_e = 1`` (both raters constant and equal).
- F1 of the positive class: ``2·TP / (2·TP + FP + FN)`` (0 when no positives anywhere).
- Positive rate: share of ``pred`` that is 1 (the paper's Table 4 column).
- Krippendorff's alpha (nominal) through the ``krippendorff`` package:
  ``α = 1 − D_o / D_e`` over all pairs labelled by at least two annotators.
- Bootstrap 95% intervals: percentile intervals over ``n_boot`` resamples of
  the observations (vectorised: one index matrix, counts by summation).
"""
from __future__ import annotations

from collections import defaultdict
from itertools import combinations
from typing import Iterable, Mapping

import numpy as np

METRICS = ("kappa", "accuracy", "precision", "recall", "f1", "positive_rate")


def _arr(x) -> np.ndarray:
    a = np.asarray(x, dtype=np.int64).ravel()
    if a.size and not np.isin(a, (0, 1)).all():
        raise ValueError("labels must be 0 or 1")
    return a


def confusion_matrix(human, pred) -> list[list[int]]:
    """``[[TN, FP], [FN, TP]]``: rows are the human label (0, 1), columns the prediction."""
    h, p = _arr(human), _arr(pred)
    if h.shape != p.shape:
        raise ValueError("human and pred must have the same length")
    tp = int(np.sum(h & p))
    fp = int(np.sum((1 - h) & p))
    fn = int(np.sum(h & (1 - p)))
    tn = int(h.size - tp - fp - fn)
    return [[tn, fp], [fn, tp]]


def _from_counts(tp, fp, fn, tn) -> dict[str, np.ndarray]:
    """All metrics from confusion counts (scalars or arrays, vectorised)."""
    tp, fp, fn, tn = (np.asarray(v, dtype=float) for v in (tp, fp, fn, tn))
    n = tp + fp + fn + tn
    with np.errstate(divide="ignore", invalid="ignore"):
        po = (tp + tn) / n
        h1, p1 = (tp + fn) / n, (tp + fp) / n
        pe = h1 * p1 + (1 - h1) * (1 - p1)
        kappa = np.where(pe < 1, (po - pe) / (1 - pe), np.nan)
        precision = np.where(tp + fp > 0, tp / (tp + fp), 0.0)
        recall = np.where(tp + fn > 0, tp / (tp + fn), 0.0)
        f1 = np.where(2 * tp + fp + fn > 0, 2 * tp / (2 * tp + fp + fn), 0.0)
    return {"kappa": kappa, "accuracy": po, "precision": precision, "recall": recall, "f1": f1,
            "positive_rate": p1, "human_positive_rate": h1}


def cohen_kappa(a, b) -> float:
    """Cohen's kappa between two 0/1 raters (see module docstring); NaN if undefined or empty."""
    (tn, fp), (fn, tp) = confusion_matrix(a, b)
    if tn + fp + fn + tp == 0:
        return float("nan")
    return float(_from_counts(tp, fp, fn, tn)["kappa"])


def f1_score(human, pred) -> float:
    (tn, fp), (fn, tp) = confusion_matrix(human, pred)
    return float(_from_counts(tp, fp, fn, tn)["f1"])


def binary_scores(human, pred) -> dict:
    """``n``, kappa, accuracy, precision, recall, F1 (positive class), positive rates."""
    (tn, fp), (fn, tp) = confusion_matrix(human, pred)
    n = tn + fp + fn + tp
    if n == 0:
        return {"n": 0, **{k: None for k in METRICS}, "human_positive_rate": None}
    out = {k: _clean(v) for k, v in _from_counts(tp, fp, fn, tn).items()}
    return {"n": int(n), **out}


def _clean(v) -> float | None:
    v = float(v)
    return None if np.isnan(v) else v


def bootstrap_ci(human, pred, *, n_boot: int = 1000, seed: int = 0, level: float = 0.95) -> dict[str, list]:
    """Percentile bootstrap intervals ``{metric: [lo, hi]}`` for every metric of :func:`binary_scores`.

    Resamples the observation indices ``n_boot`` times with replacement;
    replicates where a metric is undefined (kappa with one constant class) are
    left out of that metric's percentiles.
    """
    h, p = _arr(human), _arr(pred)
    if h.size == 0 or n_boot < 1:
        return {k: [None, None] for k in METRICS}
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, h.size, size=(n_boot, h.size))
    hb, pb = h[idx], p[idx]
    tp = (hb & pb).sum(1)
    fp = ((1 - hb) & pb).sum(1)
    fn = (hb & (1 - pb)).sum(1)
    tn = h.size - tp - fp - fn
    reps = _from_counts(tp, fp, fn, tn)
    q = [(1 - level) / 2 * 100, (1 + level) / 2 * 100]
    out = {}
    for k in METRICS:
        v = reps[k][~np.isnan(reps[k])]
        out[k] = [float(x) for x in np.percentile(v, q)] if v.size else [None, None]
    return out


def scores_with_ci(human, pred, *, n_boot: int = 1000, seed: int = 0) -> dict:
    s = binary_scores(human, pred)
    s["ci95"] = bootstrap_ci(human, pred, n_boot=n_boot, seed=seed)
    s["confusion"] = confusion_matrix(human, pred)
    return s


def calibration_bins(probs, human, n_bins: int = 10) -> list[dict]:
    """Judge probability bins vs the human positive rate.

    Equal-width bins over [0, 1] (the last one closed); empty bins are left out.
    Each: ``lo``, ``hi``, ``n``, ``mean_prob``, ``human_rate``.
    """
    pr = np.asarray(probs, dtype=float).ravel()
    h = _arr(human)
    if pr.shape != h.shape:
        raise ValueError("probs and human must have the same length")
    edges = np.linspace(0.0, 1.0, n_bins + 1)
    which = np.clip(np.searchsorted(edges, pr, side="right") - 1, 0, n_bins - 1)
    out = []
    for b in range(n_bins):
        m = which == b
        if m.any():
            out.append({"lo": float(edges[b]), "hi": float(edges[b + 1]), "n": int(m.sum()),
                        "mean_prob": float(pr[m].mean()), "human_rate": float(h[m].mean())})
    return out


def krippendorff_alpha(ratings: Mapping[str, Mapping[str, int]]) -> float | None:
    """Nominal Krippendorff's alpha over ``{annotator: {unit: label}}`` (missing = not rated).

    Only units rated by at least two annotators carry information; None when
    there are none, or alpha is undefined (a single value everywhere).
    """
    import krippendorff

    annotators = sorted(ratings)
    units = sorted({u for r in ratings.values() for u in r})
    units = [u for u in units if sum(u in ratings[a] for a in annotators) >= 2]
    if len(annotators) < 2 or not units:
        return None
    data = np.full((len(annotators), len(units)), np.nan)
    for i, a in enumerate(annotators):
        for j, u in enumerate(units):
            if u in ratings[a]:
                data[i, j] = ratings[a][u]
    if len(np.unique(data[~np.isnan(data)])) < 2:
        return None
    return float(krippendorff.alpha(reliability_data=data, level_of_measurement="nominal"))


def inter_annotator(ratings: Mapping[str, Mapping[str, int]], *, n_boot: int = 1000, seed: int = 0) -> dict:
    """Cohen's kappa on the shared pairs of every annotator pair, and Krippendorff's alpha."""
    pairs = {}
    for a, b in combinations(sorted(ratings), 2):
        shared = sorted(set(ratings[a]) & set(ratings[b]))
        if not shared:
            continue
        x = [ratings[a][u] for u in shared]
        y = [ratings[b][u] for u in shared]
        s = binary_scores(x, y)
        pairs[f"{a}|{b}"] = {"a": a, "b": b, "n": len(shared), "kappa": s["kappa"], "agreement": s["accuracy"],
                             "ci95": bootstrap_ci(x, y, n_boot=n_boot, seed=seed)["kappa"]}
    units = sum(1 for u in {u for r in ratings.values() for u in r} if sum(u in r for r in ratings.values()) >= 2)
    return {"pairs": pairs, "alpha": krippendorff_alpha(ratings), "alpha_units": units,
            "annotators": sorted(ratings)}


def human_vs_judge(observations: Iterable[tuple[str, str, int]], judge: Mapping[str, tuple],
                   subsets: Mapping[str, str | None] | None = None, *, n_boot: int = 1000, seed: int = 0,
                   n_bins: int = 10) -> dict:
    """Scores of the judge against human labels, pooled and per annotator and per subset.

    ``observations``: ``(annotator, pair_id, label)``; each is one comparison
    (pooled = every human decision counts once). ``judge``: ``{pair_id: (prob
    or None, label)}``; observations of pairs the judge has no answer for are
    counted in ``missing_judge`` and left out.
    """
    obs = [(a, p, int(l)) for a, p, l in observations]
    have = [(a, p, l) for a, p, l in obs if p in judge]
    h = [l for _, _, l in have]
    j = [int(judge[p][1]) for _, p, _ in have]
    report = scores_with_ci(h, j, n_boot=n_boot, seed=seed)
    report["missing_judge"] = len(obs) - len(have)
    per_ann = defaultdict(list)
    per_sub = defaultdict(list)
    for i, (a, p, _) in enumerate(have):
        per_ann[a].append(i)
        per_sub[(subsets or {}).get(p) or "(none)"].append(i)
    h_arr, j_arr = np.asarray(h, dtype=int), np.asarray(j, dtype=int)
    report["annotators"] = {a: scores_with_ci(h_arr[ix], j_arr[ix], n_boot=n_boot, seed=seed)
                            for a, ix in sorted(per_ann.items())}
    report["subsets"] = {s: scores_with_ci(h_arr[ix], j_arr[ix], n_boot=n_boot, seed=seed)
                         for s, ix in sorted(per_sub.items())}
    with_prob = [(judge[p][0], l) for _, p, l in have if judge[p][0] is not None]
    report["calibration"] = calibration_bins([x for x, _ in with_prob], [y for _, y in with_prob], n_bins) if with_prob else []
    return report


def agreement_report(store, judge_name: str | None, *, n_boot: int = 1000, seed: int = 0) -> dict:
    """The ``berds agreement`` report from an annotation store.

    Keys: ``n``, ``kappa``, ``accuracy``, ``f1``, ``positive_rate`` (pooled human
    vs judge), ``ci95``, ``confusion``, ``annotators`` (per annotator),
    ``subsets``, ``calibration``, ``gold`` (judge vs adjudicated labels), ``iaa``.
    Skips are not labels and are left out everywhere.
    """
    labels = store.labels(include_skips=False)
    ratings: dict[str, dict[str, int]] = defaultdict(dict)
    for lab in labels:
        ratings[lab.annotator][lab.pair_id] = int(lab.label)
    subsets = {p.pair_id: p.subset for p in store.pairs()}
    out: dict = {"judge": judge_name}
    if judge_name:
        preds = store.judge_preds(judge_name)
        hj = human_vs_judge([(l.annotator, l.pair_id, l.label) for l in labels], preds, subsets,
                            n_boot=n_boot, seed=seed)
        out.update(hj)
        gold = store.gold()
        gp = [(g, int(preds[p][1])) for p, g in gold.items() if p in preds]
        out["gold"] = scores_with_ci([g for g, _ in gp], [x for _, x in gp], n_boot=n_boot, seed=seed) if gp else None
    else:
        out.update({"n": 0, "kappa": None, "accuracy": None, "f1": None, "positive_rate": None, "annotators": {}})
    out["iaa"] = inter_annotator(ratings, n_boot=n_boot, seed=seed)
    return out


def disagreements(store, judge_name: str | None = None) -> list[dict]:
    """Pairs where two humans differ, or a human and the judge differ.

    Each: ``pair_id``, ``labels`` ({annotator: 0/1}), ``judge`` (0/1 or None),
    ``gold`` (adjudicated or None), ``kind`` (``humans``, ``judge`` or both).
    """
    by_pair: dict[str, dict[str, int]] = defaultdict(dict)
    for lab in store.labels(include_skips=False):
        by_pair[lab.pair_id][lab.annotator] = int(lab.label)
    preds = store.judge_preds(judge_name) if judge_name else {}
    gold = store.gold()
    out = []
    for pid, labs in by_pair.items():
        vals = set(labs.values())
        j = int(preds[pid][1]) if pid in preds else None
        kinds = []
        if len(vals) > 1:
            kinds.append("humans")
        if j is not None and any(v != j for v in vals):
            kinds.append("judge")
        if kinds:
            out.append({"pair_id": pid, "labels": labs, "judge": j, "gold": gold.get(pid), "kind": "+".join(kinds)})
    return out
