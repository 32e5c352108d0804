"""Bootstrap summaries of per-question scores, per subset, over all questions and macro-averaged (what the
Evaluate page shows).

``summarize`` takes judged label matrices, ``summarize_scores`` per-question scores; both give 95%
percentile-bootstrap intervals with the same seed as ``berds evaluate``. The headline (:data:`HEADLINE`) is the
mean over questions, as ``berds evaluate``'s ``at`` and ``ci`` and the README give it.
"""
from __future__ import annotations

import numpy as np
from ..eval.evaluation import bootstrap_ci, scores

HEADLINE = "all questions"  # the row of the mean over questions (the page's headline and chart)
MACRO = "macro"  # the row of the mean of the subset means (every subset weighs the same)
METRIC_KEYS = ("mrecall@5", "mrecall@10", "precision@5", "precision@10", "precision@1")


def summarize(matrices: list, subsets: list[str], *, n_boot: int = 1000, seed: int = 0,
              extra: dict | None = None) -> dict:
    """Per-subset and macro means of MRecall/Precision at k = 5, 10 and Precision@1, with
    95% percentile-bootstrap intervals (``berds_core.eval.evaluation``, same seed as ``berds evaluate``).

    ``extra``: more per-question arrays (e.g. ``alpha_ndcg@5`` from ``diversity_metrics``),
    summarised the same way. Returns ``{subset: {"n", metric: {"mean", "lo", "hi"}}, ...,
    "all questions": {...}, "macro": {...}}``: the mean over questions (its interval a bootstrap over
    questions, as ``berds evaluate``'s ``ci``) and the mean of the subset means (a stratified bootstrap).
    """
    per_q = {key: v for key, v in scores(matrices, (5, 10)).items() if key in METRIC_KEYS}
    return summarize_scores({**per_q, **(extra or {})}, subsets, n_boot=n_boot, seed=seed)


def summarize_scores(per_q: dict, subsets: list[str], *, n_boot: int = 1000, seed: int = 0) -> dict:
    """:func:`summarize` over per-question scores ``{metric: array}`` (one value per question)."""
    groups = np.asarray([str(g) for g in subsets])
    names = list(dict.fromkeys(groups.tolist()))
    out = {}
    for g in names:
        idx = np.flatnonzero(groups == g)
        row = {"n": int(idx.size)}
        for key, vals in per_q.items():
            v = np.asarray(vals, dtype=float)[idx]
            lo, hi = bootstrap_ci(v, n_boot=n_boot, seed=seed)
            row[key] = {"mean": float(v.mean()), "lo": lo, "hi": hi}
        out[g] = row
    every, macro = {"n": len(groups)}, {"n": len(groups)}
    for key, vals in per_q.items():
        v = np.asarray(vals, dtype=float)
        lo, hi = bootstrap_ci(v, n_boot=n_boot, seed=seed)
        every[key] = {"mean": float(v.mean()), "lo": lo, "hi": hi}
        lo, hi = bootstrap_ci(v, groups=groups.tolist(), n_boot=n_boot, seed=seed)
        macro[key] = {"mean": float(np.mean([out[g][key]["mean"] for g in names])), "lo": lo, "hi": hi}
    out[HEADLINE], out[MACRO] = every, macro
    return out
