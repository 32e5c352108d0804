"""Paired significance tests between configurations over questions, with multiple-comparison correction.

For each metric and each pair of runs (every run against a baseline, or all
pairs) on the same questions, with per-question scores ``a`` (baseline) and
``b`` and differences ``d = b − a``:

- **randomisation test** (Fisher's paired randomisation / sign-flip test, the
  test Smucker et al. 2007 recommend for IR): under the null the two labels of
  each question are exchangeable, so every sign pattern of ``d`` is equally
  likely; ``p = P(|mean(s·d)| >= |mean(d)|)``. Computed by
  ``scipy.stats.permutation_test(permutation_type="samples")``: exact (all 2^n
  sign patterns) when 2^n <= ``n_resamples``, else ``n_resamples`` seeded random
  patterns (p = (hits + 1) / (n_resamples + 1) per tail, two-sided = twice the
  smaller tail, which equals the |·| form because the sign-flip null is symmetric).
- **paired t-test**: ``scipy.stats.ttest_rel`` (what ``ranx.statistical_tests.
  paired_student_t_test`` calls); with all differences equal, p = 1 when they
  are 0 and 0 otherwise.
- **effect sizes**: the mean difference with a percentile-bootstrap interval
  (questions resampled jointly, stratified by subset when given, as
  ``evaluation.bootstrap_means`` does) and Cohen's d_z = mean(d) / sd(d) (the
  paired standardised effect, over all questions) with its bootstrap interval.
- **subsets**: with ``groups``, ``a``, ``b``, the difference, its interval and
  the randomisation statistic are macro averages (every subset weighs the
  same, as ``berds evaluate`` reports ``macro``); the t-test and d_z pool the
  questions. Without groups, everything pools the questions.
- **correction** across the comparisons of one metric (the family is "this
  metric, these k comparisons"): Holm (default) or Bonferroni, applied here to
  the raw p-values (neither scipy nor ranx ships them; ranx only offers Tukey's
  HSD, which treats the runs as independent samples).

Why not ranx's Fisher test: ``ranx.statistical_tests.fisher_randomization_test``
is a numba ``parallel=True`` kernel whose worker threads do not see its
``random_seed``, so the same call gives a different p-value each time
(measured: 0.0578, 0.0565, 0.0554 for one input with seed 42, 10,000
permutations). A report must not change between two runs of the same command.

Stars: ``***`` p < 0.001, ``**`` p < 0.01, ``*`` p < 0.05 (corrected p).
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from itertools import combinations
from typing import Sequence

import numpy as np
from .evaluation import group_index, bootstrap_means, paired_arrays

CORRECTIONS = ("holm", "bonferroni", "none")
TESTS = ("permutation", "t")
DEFAULT_RESAMPLES = 10000


def _pair(a, b) -> tuple[np.ndarray, np.ndarray]:
    return paired_arrays(a, b)


def question_weights(groups: Sequence | None, n: int) -> np.ndarray:
    """Weights whose weighted sum is the macro mean (mean over subsets of each subset's mean)."""
    w = np.empty(n)
    parts = group_index(groups, n)
    for idx in parts:
        w[idx] = 1.0 / (len(parts) * idx.size)
    return w


def permutation_p(a, b, *, groups: Sequence | None = None, n_resamples: int = DEFAULT_RESAMPLES,
                  seed: int = 0) -> float:
    """Two-sided paired randomisation (sign-flip) test of mean(b − a) = 0 (exact when 2^n <= n_resamples).

    With ``groups`` the statistic is the macro mean difference (each subset weighs the same).
    """
    from scipy.stats import permutation_test

    a, b = _pair(a, b)
    d = b - a
    if not np.any(d) or d.size < 2:  # one question: both sign patterns are as extreme as the observed one
        return 1.0
    w = question_weights(groups, d.size)

    def statistic(x, y, axis=-1):
        return np.sum(w * (x - y), axis=axis)

    res = permutation_test((b, a), statistic, permutation_type="samples", vectorized=True,
                           n_resamples=int(n_resamples), alternative="two-sided",
                           rng=np.random.default_rng(seed), batch=1000)
    return float(min(1.0, res.pvalue))


def t_test_p(a, b) -> float:
    """Two-sided paired t-test p-value (scipy ``ttest_rel``)."""
    from scipy.stats import ttest_rel

    a, b = _pair(a, b)
    d = b - a
    if a.size < 2:
        return 1.0
    scale = max(1.0, float(np.abs(d).max()))
    if np.ptp(d) <= 1e-12 * scale:  # no variance (up to rounding): t is 0 (all ties) or infinite
        return 1.0 if abs(float(d.mean())) <= 1e-12 * scale else 0.0
    return float(ttest_rel(b, a, alternative="two-sided").pvalue)


def adjust(pvalues: Sequence[float], method: str = "holm") -> list[float]:
    """Family-wise corrected p-values: ``holm`` (step-down), ``bonferroni`` or ``none``."""
    p = np.asarray(pvalues, dtype=float)
    m = p.size
    if method == "none" or m == 0:
        return p.tolist()
    if method == "bonferroni":
        return np.minimum(1.0, p * m).tolist()
    if method == "holm":
        order = np.argsort(p, kind="stable")
        stepped = np.maximum.accumulate((m - np.arange(m)) * p[order])
        out = np.empty(m)
        out[order] = np.minimum(1.0, stepped)
        return out.tolist()
    raise ValueError(f"unknown correction {method!r}; choose from {', '.join(CORRECTIONS)}")


def stars(p: float | None) -> str:
    if p is None or not np.isfinite(p):
        return ""
    return "***" if p < 0.001 else "**" if p < 0.01 else "*" if p < 0.05 else ""


def effect_sizes(a, b, *, groups: Sequence | None = None, n_boot: int = 1000, seed: int = 0,
                 level: float = 0.95) -> dict:
    """Mean difference b − a (macro over ``groups`` when given) with its stratified percentile-bootstrap
    interval, and Cohen's d_z = mean(d) / sd(d) over all questions with its bootstrap interval."""
    a, b = _pair(a, b)
    d = b - a
    n = d.size
    q = [(1 - level) / 2, 1 - (1 - level) / 2]
    lo, hi = np.quantile(bootstrap_means(d, groups=groups, n_boot=n_boot, seed=seed), q)
    sample = d[np.random.default_rng(seed).integers(0, n, size=(n_boot, n))]
    sd = float(d.std(ddof=1)) if n > 1 else 0.0
    dz_ci = None
    if n > 1:
        sds = sample.std(axis=1, ddof=1)
        ok = sds > 0
        if ok.any():
            dz_ci = [float(x) for x in np.quantile(sample.mean(axis=1)[ok] / sds[ok], q)]
    return {"diff": float(np.sum(question_weights(groups, n) * d)), "ci": [float(lo), float(hi)],
            "d_z": float(d.mean() / sd) if sd > 0 else None, "d_z_ci": dz_ci}


def paired_test(a, b, *, groups: Sequence | None = None, n_resamples: int = DEFAULT_RESAMPLES,
                n_boot: int = 1000, seed: int = 0, level: float = 0.95) -> dict:
    """Both tests and the effect sizes for one metric and one pair (uncorrected p-values)."""
    a, b = _pair(a, b)
    d = b - a
    w = question_weights(groups, a.size)
    return {"n": int(a.size), "a": float(np.sum(w * a)), "b": float(np.sum(w * b)),
            **effect_sizes(a, b, groups=groups, n_boot=n_boot, seed=seed, level=level),
            "p_permutation": permutation_p(a, b, groups=groups, n_resamples=n_resamples, seed=seed),
            "p_t": t_test_p(a, b),
            "wins": int((d > 0).sum()), "losses": int((d < 0).sum()), "ties": int((d == 0).sum())}


@dataclass(frozen=True)
class TestOptions:
    """How runs are compared (each a ``berds evaluate`` flag): ``test`` (which p-value the corrected ``p`` and
    the stars use: ``permutation`` or ``t``), the multiple-comparison ``correction``, the randomisation test's
    ``n_resamples``, the bootstrap's ``n_boot``, ``seed`` and confidence ``level``."""

    __test__ = False  # a settings object, not a pytest class

    test: str = "permutation"
    correction: str = "holm"
    n_resamples: int = DEFAULT_RESAMPLES
    n_boot: int = 1000
    seed: int = 0
    level: float = 0.95


def compare(per_q: dict[str, dict[str, np.ndarray]], *, baseline: str | None = None, pairs: str = "baseline",
            metrics: Sequence[str] | None = None, groups: Sequence | None = None,
            options: TestOptions | None = None, **fields) -> dict:
    """Paired tests between several runs, corrected per metric across the comparisons.

    ``per_q``: run name -> metric -> per-question scores (same questions, same
    order, in every run). ``pairs``: ``baseline`` (every other run against
    ``baseline``, default the first run) or ``all`` (every pair, the earlier
    run as ``a``). ``options``: :class:`TestOptions` (or its fields as keywords); both raw p-values and
    both corrected ones are reported. Differences are ``b − a``.
    """
    o = replace(options or TestOptions(), **fields)
    correction, test, n_resamples, n_boot, seed, level = o.correction, o.test, o.n_resamples, o.n_boot, o.seed, o.level
    if correction not in CORRECTIONS:
        raise ValueError(f"unknown correction {correction!r}; choose from {', '.join(CORRECTIONS)}")
    if test not in TESTS:
        raise ValueError(f"unknown test {test!r}; choose from {', '.join(TESTS)}")
    names = list(per_q)
    if len(names) < 2:
        raise ValueError("comparing needs at least two runs")
    baseline = names[0] if baseline is None else baseline
    if baseline not in per_q:
        raise ValueError(f"unknown baseline {baseline!r}")
    if pairs == "baseline":
        plan = [(baseline, n) for n in names if n != baseline]
    elif pairs == "all":
        plan = list(combinations(names, 2))
    else:
        raise ValueError("pairs must be 'baseline' or 'all'")
    metrics = list(metrics) if metrics is not None else [m for m in per_q[names[0]] if all(m in per_q[n] for n in names)]
    comparisons = [{"a": a, "b": b, "direction": "b - a", "metrics": {}} for a, b in plan]
    for m in metrics:
        rows = [paired_test(per_q[a][m], per_q[b][m], groups=groups, n_resamples=n_resamples, n_boot=n_boot,
                            seed=seed, level=level) for a, b in plan]
        for key in ("p_permutation", "p_t"):
            for row, adj in zip(rows, adjust([r[key] for r in rows], correction)):
                row[key + "_adj"] = adj
        for cmp, row in zip(comparisons, rows):
            row["p"] = row["p_permutation_adj" if test == "permutation" else "p_t_adj"]
            row["stars"] = stars(row["p"])
            cmp["metrics"][m] = row
    return {"baseline": baseline if pairs == "baseline" else None, "pairs": pairs, "test": test,
            "correction": correction, "family": f"per metric, across {len(plan)} comparison(s)",
            "n_resamples": int(n_resamples), "n_boot": int(n_boot), "seed": int(seed), "level": level,
            "comparisons": comparisons}
