"""The evaluation suite over label matrices: per-question scores, bootstrap
intervals, paired comparison of two runs, union coverage over several runs
(BERDS Table 6) and passages needed to cover every perspective (Table 17). The
means per subset, over all questions and macro are summarised once, by
``berds_core.eval.report`` (the Report ``berds_core.experiment.score`` returns).

Everything here is pure: inputs are boolean label matrices (passages x
perspectives, rank order; see ``berds_core.runs.label_matrix``) or arrays of
per-question scores. The per-question kernels are ``berds_core.eval.measures``.

Conventions:

- ``scores(matrices, ks)`` gives per-question arrays keyed by the measures'
  printed form (``Measure.key``: ``mrecall@k``, ``precision@k`` and ``precision@1``;
  see ``berds_core.eval.measures`` for the names).
- Macro average: the mean over subsets of each subset's mean (every subset
  weighs the same, as BERDS reports its average column).
- Bootstrap: percentile intervals from ``n_boot`` resamples of questions
  with a seeded ``numpy`` generator, so the same call gives the same interval.
  With subsets given, questions are resampled within each subset (stratified)
  and the macro average is what is resampled.
"""
from __future__ import annotations

from collections import OrderedDict
from typing import Sequence

import numpy as np

from .measures import Measure, label_measures, mrecall_at_k, passages_to_cover

DEFAULT_KS = (5, 10)


# --- per-question scores -------------------------------------------------

def scores(matrices: Sequence[np.ndarray], ks: Sequence[int] = DEFAULT_KS,
           measures: Sequence[Measure] | None = None) -> dict[str, np.ndarray]:
    """Per-question values of label-matrix ``measures`` keyed by ``Measure.key``; by default
    ``label_measures(ks)``: ``mrecall@k``, ``precision@k`` for each k, and ``precision@1``."""
    chosen = label_measures(ks) if measures is None else measures
    return {m.key: np.array([m.score(L) for L in matrices], dtype=float) for m in chosen}


# --- bootstrap -----------------------------------------------------------

def group_index(groups: Sequence | None, n: int) -> list[np.ndarray]:
    if groups is None:
        return [np.arange(n)]
    groups = np.asarray([str(g) for g in groups])
    return [np.flatnonzero(groups == g) for g in OrderedDict.fromkeys(groups)]


def bootstrap_means(values, *, groups: Sequence | None = None, n_boot: int = 1000,
                    seed: int = 0) -> np.ndarray:
    """``n_boot`` bootstrap replicates of the mean (macro mean over ``groups`` when given).

    ``values`` may be 1-D (questions) or 2-D (questions x metrics): the same
    resampled questions are used for every column, so paired statistics stay paired.
    """
    v = np.asarray(values, dtype=float)
    squeeze = v.ndim == 1
    if squeeze:
        v = v[:, None]
    n = v.shape[0]
    if n == 0:
        raise ValueError("no questions to bootstrap")
    rng = np.random.default_rng(seed)
    parts = []
    for idx in group_index(groups, n):
        draw = idx[rng.integers(0, idx.size, size=(n_boot, idx.size))]  # (B, n_g)
        parts.append(v[draw].mean(axis=1))  # (B, cols)
    reps = np.mean(parts, axis=0)
    return reps[:, 0] if squeeze else reps


def bootstrap_ci(values, *, groups: Sequence | None = None, n_boot: int = 1000, seed: int = 0,
                 level: float = 0.95) -> tuple[float, float]:
    """Percentile bootstrap interval of the mean (macro mean when ``groups`` given)."""
    reps = bootstrap_means(values, groups=groups, n_boot=n_boot, seed=seed)
    lo, hi = np.quantile(reps, [(1 - level) / 2, 1 - (1 - level) / 2])
    return float(lo), float(hi)


# --- paired comparison ---------------------------------------------------

def paired_arrays(a, b) -> tuple[np.ndarray, np.ndarray]:
    """Two per-question score arrays of one run pair as floats; ValueError unless 1-D, same length, non-empty."""
    a = np.asarray(a, dtype=float)
    b = np.asarray(b, dtype=float)
    if a.shape != b.shape or a.ndim != 1:
        raise ValueError("paired comparison needs two 1-D arrays of the same length")
    if a.size == 0:
        raise ValueError("no questions to compare")
    return a, b


def paired_comparison(a, b, *, n_boot: int = 1000, seed: int = 0, level: float = 0.95,
                      groups: Sequence | None = None) -> dict:
    """Compare per-question scores of two runs on the same questions: ``b - a``.

    Returns the means, the difference of means, its percentile bootstrap
    interval (questions resampled jointly, so the pairing is kept), and a
    two-sided sign-flip randomisation p-value (``n_boot`` seeded flips).
    """
    a, b = paired_arrays(a, b)
    d = b - a
    reps = bootstrap_means(d, groups=groups, n_boot=n_boot, seed=seed)
    lo, hi = np.quantile(reps, [(1 - level) / 2, 1 - (1 - level) / 2])
    rng = np.random.default_rng(seed + 1)
    signs = rng.choice(np.array([-1.0, 1.0]), size=(n_boot, d.size))
    null = np.abs((signs * d).mean(axis=1))
    observed = abs(d.mean())
    p = (1 + int((null >= observed - 1e-12).sum())) / (n_boot + 1)
    return {"n": int(a.size), "a": float(a.mean()), "b": float(b.mean()), "diff": float(d.mean()),
            "ci": [float(lo), float(hi)], "p_value": float(p), "wins": int((d > 0).sum()),
            "losses": int((d < 0).sum()), "ties": int((d == 0).sum())}


def compare_runs(mats_a: Sequence[np.ndarray], mats_b: Sequence[np.ndarray], *,
                 ks: Sequence[int] = DEFAULT_KS, n_boot: int = 1000, seed: int = 0,
                 level: float = 0.95) -> dict:
    """:func:`paired_comparison` for every measure of :func:`scores` (``mrecall@k``, ``precision@k``, ``precision@1``)."""
    if len(mats_a) != len(mats_b):
        raise ValueError("the two runs must score the same questions")
    sa, sb = scores(mats_a, ks), scores(mats_b, ks)
    return {name: paired_comparison(sa[name], sb[name], n_boot=n_boot, seed=seed, level=level)
            for name in sa}


# --- coverage ------------------------------------------------------------

def union_matrix(ranked: Sequence[tuple[Sequence[str], np.ndarray]], n: int) -> tuple[list[str], np.ndarray]:
    """The union of the top ``n`` passages of several rankings of one question.

    ``ranked``: ``(passage_ids, labels)`` per run. Passages are unique by id,
    in first-seen order (run by run); a passage's labels are OR-ed over runs.
    """
    ids: list[str] = []
    pos: dict[str, int] = {}
    rows: list[np.ndarray] = []
    m = None
    for pids, L in ranked:
        L = np.asarray(L, dtype=bool)
        m = L.shape[1] if m is None else m
        if L.shape[1] != m:
            raise ValueError("runs disagree on the number of perspectives")
        for pid, row in zip(list(pids)[:n], L[:n]):
            if pid in pos:
                rows[pos[pid]] = rows[pos[pid]] | row
            else:
                pos[pid] = len(ids)
                ids.append(pid)
                rows.append(row.copy())
    if m is None:
        return [], np.zeros((0, 0), dtype=bool)
    return ids, (np.vstack(rows) if rows else np.zeros((0, m), dtype=bool))


def union_coverage(runs: Sequence[Sequence[tuple[Sequence[str], np.ndarray]]], n: int) -> dict:
    """MRecall over the union of the top ``n`` of several runs (BERDS Table 6).

    ``runs[r][q]`` is ``(passage_ids, labels)`` of question q in run r (same
    questions, same order). Per question, the union U of the runs' top ``n``
    is scored with MRecall at the nominal budget K = n x (number of runs):
    1 when U covers all m perspectives, or at least K of them when m > K (the
    m > k rule). Duplicates across runs shrink U but not K, so runs that
    return the same passages gain nothing. ``covered_share`` is the mean share
    of perspectives U covers. Each run alone at depth ``n`` is reported too.
    """
    if not runs:
        raise ValueError("no runs")
    nq = len(runs[0])
    if any(len(r) != nq for r in runs):
        raise ValueError("every run must have the same questions")
    mr, share, size = [], [], []
    for q in range(nq):
        _, U = union_matrix([r[q] for r in runs], n)
        m = U.shape[1]
        budget = n * len(runs)
        mr.append(float(U.any(axis=0).sum() >= min(m, budget)) if m else 0.0)
        share.append(float(U.any(axis=0).sum()) / m if m else 0.0)
        size.append(U.shape[0])
    single = [float(np.mean([mrecall_at_k(np.asarray(L, bool), n) for _, L in r])) for r in runs]
    return {"n_questions": nq, "depth": int(n), "runs": len(runs), "mrecall_union": float(np.mean(mr)),
            "covered_share": float(np.mean(share)), "mean_union_size": float(np.mean(size)),
            "mrecall_single": single, "per_question": mr}


def passages_needed(matrices: Sequence[np.ndarray]) -> dict:
    """How many top passages it takes to cover every perspective (BERDS Table 17).

    Per question ``measures.passages_to_cover`` (None when the run never covers
    all perspectives). Summary over the questions that are covered, plus the
    share covered within the run's depth.
    """
    vals = [passages_to_cover(L) for L in matrices]
    got = np.array([v for v in vals if v is not None], dtype=float)
    n = len(vals)
    return {"n": n, "covered": int(got.size), "covered_share": float(got.size / n) if n else None,
            "mean": float(got.mean()) if got.size else None,
            "median": float(np.median(got)) if got.size else None,
            "max": int(got.max()) if got.size else None, "per_question": vals}
