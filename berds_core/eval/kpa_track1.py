"""The Key Point Analysis 2021 shared task, track 1 (key point matching): its predictions file and its mAP.

Predictions: ``{arg_id: {key_point_id: score}}``. The score, as the task's scorer
(``track_1_kp_matching.py``) computes it, reproduced step for step:

1. each argument keeps its best key point (the highest score among key points of the key points file; an
   argument without one gets a dummy key point of score 0 and label 0);
2. its label is the gold label of that pair; a pair the labels file does not have (an "undecided" pair)
   counts 0 for **strict** and 1 for **relaxed**;
3. per (topic, stance), the ``int(n * 0.5)`` arguments of highest score are kept (a dummy's score is then set
   to 0.99), and the average precision of their labels by score is taken
   (``sklearn.metrics.average_precision_score``);
4. mAP is the mean over (topic, stance). A (topic, stance) with a single argument keeps none and is left out
   (counted in ``groups_skipped``; the task's scorer fails on it).
"""
from __future__ import annotations

import numpy as np

TOP_PERCENTILE = 0.5
DUMMY = "dummy_id"


def best_key_points(predictions: dict, key_point_ids) -> dict[str, tuple[str, float]]:
    """arg_id -> (key point id, score) of its highest-scoring known key point (the first of equal scores, as
    Python's ``max`` over the predictions' order)."""
    known = set(key_point_ids)
    out = {}
    for arg_id, kps in predictions.items():
        valid = {k: float(v) for k, v in kps.items() if k in known}
        if valid:
            out[arg_id] = max(valid.items(), key=lambda x: x[1])
    return out


def _ap(labels: np.ndarray, scores: np.ndarray, is_dummy: np.ndarray) -> float:
    from sklearn.metrics import average_precision_score

    top = int(len(scores) * TOP_PERCENTILE)
    # pandas' sort_values(ascending=False) (quicksort): equal scores rarely matter; a stable order is used here
    order = np.argsort(-scores, kind="stable")[:top]
    s = scores[order].copy()
    s[is_dummy[order]] = 0.99  # as the task's scorer: a dummy may not raise the precision
    return float(average_precision_score(y_true=labels[order], y_score=s))


def track1_map(predictions: dict, arguments: dict, key_point_ids, labels: dict) -> dict:
    """``{"map_strict", "map_relaxed", "groups", "arguments", "undecided"}``.

    ``arguments``: arg_id -> ``{"topic", "stance"}`` (every argument of the split, in file order);
    ``labels``: (arg_id, key_point_id) -> 0/1 (the labelled pairs)."""
    best = best_key_points(predictions, key_point_ids)
    groups: dict[tuple, list] = {}
    undecided = 0
    for a, arg in arguments.items():
        k, score = best.get(a, (DUMMY, 0.0))
        lab = 0 if k == DUMMY else labels.get((a, k))
        undecided += lab is None
        groups.setdefault((arg["topic"], arg["stance"]), []).append((score, lab, k == DUMMY))
    strict, relaxed, skipped = [], [], []
    for key in sorted(groups):
        if int(len(groups[key]) * TOP_PERCENTILE) == 0:  # one argument keeps none (the task's scorer would fail)
            skipped.append(key)
            continue
        rows = groups[key]
        s = np.array([r[0] for r in rows], float)
        d = np.array([r[2] for r in rows], bool)
        strict.append(_ap(np.array([0 if r[1] is None else r[1] for r in rows]), s, d))
        relaxed.append(_ap(np.array([1 if r[1] is None else r[1] for r in rows]), s, d))
    groups = {k: v for k, v in groups.items() if k not in skipped}
    if not groups:
        raise ValueError("no (topic, stance) has two or more arguments: track 1's mAP is not defined")
    return {"map_strict": float(np.mean(strict)), "map_relaxed": float(np.mean(relaxed)), "groups": len(groups),
            "groups_skipped": len(skipped),
            "arguments": len(arguments), "undecided": undecided,
            "per_group": {f"{t} ({'pro' if st == 1 else 'con'})": {"strict": a, "relaxed": b}
                          for (t, st), a, b in zip(sorted(groups), strict, relaxed)}}
