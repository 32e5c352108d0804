"""A configuration's figures and how they are told: the :class:`Report` that ``berds_core.experiment.score``
returns summarises and renders itself (as ranx's ``Report`` does), so no face scores or summarises a run.

A Report holds each question's scores (``per_question``: ``mrecall@k``, ``precision@k``, ``precision@1`` and,
after :func:`with_diversity`, the TREC diversity measures ``alpha_ndcg@k``, ``err_ia@k``, ``p_ia@k``,
``strecall@k``). :func:`summarize` is the one summariser: means over all questions, per subset and macro (the
mean of the subset means, every subset weighing the same), each with a seeded percentile-bootstrap interval
(over questions; stratified by subset for the macro mean; the measures of one cutoff share their resamples).
It renders three ways:

- :meth:`Report.to_dict` / :meth:`Report.to_json`: what ``berds evaluate`` prints;
- :meth:`Report.to_table`: the rows the Evaluate page draws (each subset, then :data:`HEADLINE`, the mean over
  questions, and :data:`MACRO`), each measure as ``{"mean", "lo", "hi"}``;
- :func:`significance` / :meth:`Report.against`: paired tests against a baseline report
  (``berds_core.eval.significance``).
"""
from __future__ import annotations

import dataclasses
import json
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Sequence

import numpy as np

from .diversity import DEFAULT_ALPHA, pooled_diversity, supported_ks
from .evaluation import bootstrap_means
from ..runs import run_depth
from .measures import Measure, family_of
from .significance import compare

HEADLINE = "all questions"  # the table's row of the mean over questions (the Evaluate page's headline and chart)
MACRO = "macro"  # the table's row of the mean of the subset means (every subset weighs the same)
N_BOOT = 1000  # bootstrap resamples of the intervals (``berds evaluate --bootstrap``'s default)
DIVERSITY_NOTE = "ndeval via ir_measures (pyndeval); perspectives are subtopics"


# --- the summariser ------------------------------------------------------

def _columns(per_q: dict[str, np.ndarray], k: int) -> dict[str, str]:
    """Reported name -> per-question key at ``k``: the three BERDS measures (``mrecall``,
    ``precision``, ``precision_at_1``), then every other measure of ``per_q`` at cutoff ``k``
    (e.g. the ndeval measures), under its family's key."""
    mr, p = family_of("mrecall"), family_of("precision")
    cols = {"mrecall": Measure(mr, k).key, "precision": Measure(p, k).key, "precision_at_1": Measure(p, 1).key}
    for key in per_q:
        m = Measure.parse(key)
        if m.cutoff == k and m.family not in (mr, p):
            cols[m.family.key] = key
    return cols


def _at(per_q: dict[str, np.ndarray], k: int, idx=None) -> dict:
    def mean(name):
        v = per_q[name] if idx is None else per_q[name][idx]
        return float(v.mean()) if v.size else None

    return {name: mean(key) for name, key in _columns(per_q, k).items()}


def _interval(cols: np.ndarray, columns: dict, groups, n_boot: int, seed: int, level: float) -> dict:
    reps = bootstrap_means(cols, groups=groups, n_boot=n_boot, seed=seed)
    q = np.quantile(reps, [(1 - level) / 2, 1 - (1 - level) / 2], axis=0)
    return {m: [float(q[0, j]), float(q[1, j])] for j, m in enumerate(columns)}


def summarize(per_q: dict[str, np.ndarray], subsets: Sequence, ks: Sequence[int], *, n_boot: int = N_BOOT,
              seed: int = 0, level: float = 0.95) -> dict:
    """Means of per-question scores for every k over all questions, per subset, macro over subsets, with
    intervals.

    ``per_q``: measure key (``Measure.key``) -> one value per question; ``subsets``: each question's subset.
    Returns ``{"n", "at": {k: {mrecall, precision, precision_at_1, <family>...}}, "subsets": {name: {"n", "at",
    "ci"}}, "macro": {k: {...}}, "ci": {k: {measure: [lo, hi]}}, "macro_ci": {...}, "level", "n_boot", "seed"}``:
    at each k the three BERDS measures and every other measure of ``per_q`` at that cutoff, under its family's
    key; ``ci`` resamples all questions, ``macro_ci`` within each subset (stratified), a subset's ``ci`` its own
    questions.
    """
    n = len(subsets)
    ks = list(dict.fromkeys(int(k) for k in ks))
    subsets = [str(s) if s is not None else "all" for s in subsets]
    per_q = {key: np.asarray(v, dtype=float) for key, v in per_q.items()}
    for key, v in per_q.items():
        if v.shape != (n,):
            raise ValueError(f"measure {key}: expected one value per question ({n})")
    out: dict = {"n": n, "at": {}, "subsets": {}, "macro": {}, "ci": {}, "macro_ci": {},
                 "level": level, "n_boot": n_boot, "seed": seed}
    if n == 0:
        return out
    names = list(OrderedDict.fromkeys(subsets))
    idx_of = {s: np.flatnonzero(np.asarray(subsets) == s) for s in names}
    for s in names:
        out["subsets"][s] = {"n": int(idx_of[s].size), "at": {str(k): _at(per_q, k, idx_of[s]) for k in ks}, "ci": {}}
    for k in ks:
        key = str(k)
        out["at"][key] = _at(per_q, k)
        columns = _columns(per_q, k)
        out["macro"][key] = {m: float(np.mean([out["subsets"][s]["at"][key][m] for s in names]))
                             for m in columns}
        cols = np.stack([per_q[c] for c in columns.values()], axis=1)
        out["ci"][key] = _interval(cols, columns, None, n_boot, seed, level)
        out["macro_ci"][key] = _interval(cols, columns, subsets, n_boot, seed, level)
        for s in names:
            out["subsets"][s]["ci"][key] = _interval(cols[idx_of[s]], columns, None, n_boot, seed, level)
    return out


def _cell(summary_at: dict, summary_ci: dict, key: str, ks: list[int], per_q: dict) -> dict:
    """``{"mean", "lo", "hi"}`` of the measure ``key`` in one group of a summary (at the first k that reports it)."""
    for k in ks:
        for name, col in _columns(per_q, k).items():
            if col == key:
                lo, hi = summary_ci[str(k)][name]
                return {"mean": summary_at[str(k)][name], "lo": lo, "hi": hi}
    raise KeyError(f"{key}: not a measure of this report (cutoffs {', '.join(map(str, ks))})")


# --- the report ----------------------------------------------------------

@dataclass
class Report:
    """A configuration's figures: ``policy`` (``threshold``, ``confident`` or ``gold``), ``labels`` (``gold`` or
    the judge's name), per question its ``ids``, ``subsets``, label ``matrices`` and ``per_question`` scores
    (``mrecall@k``, ``precision@k``, ``precision@1``, and the diversity measures after :func:`with_diversity`);
    ``unsure``: pairs the threshold counts that the confident policy does not (over the run as scored);
    ``entries``: the run lines as scored (``berds_core.experiment.policy_entries``); ``diversity``: how the
    diversity measures were scored; ``missing_gold``: the questions without gold labels and what was done with
    them; ``significance``: the paired tests of :meth:`against`."""

    policy: str
    labels: str
    ids: list
    subsets: list
    matrices: list
    per_question: dict = field(default_factory=dict)
    unsure: int = 0
    entries: list = field(default_factory=list, repr=False)
    diversity: dict | None = None
    missing_gold: dict | None = None
    significance: dict | None = None

    @property
    def ks(self) -> list[int]:
        """The cutoffs scored (those of ``mrecall@k``, in the order they were asked for)."""
        mr = family_of("mrecall")
        return [m.cutoff for m in map(Measure.parse, self.per_question) if m.family == mr]

    def mean(self, key: str) -> float | None:
        v = np.asarray(self.per_question[key], dtype=float)
        return float(v.mean()) if v.size else None

    def as_dict(self) -> dict:
        """The report as JSON: the policy, the labels, the means and each question's scores."""
        return {"policy": self.policy, "labels": self.labels, "unsure": self.unsure, "n": len(self.ids),
                "means": {k: self.mean(k) for k in self.per_question},
                "per_question": [{"id": q, **{k: float(v[i]) for k, v in self.per_question.items()}}
                                 for i, q in enumerate(self.ids)]}

    def only(self, ids: Sequence) -> "Report":
        """The report of the questions ``ids`` (in that order): for tests on the questions several reports share."""
        pos = {q: i for i, q in enumerate(self.ids)}
        idx = [pos[q] for q in ids]
        return dataclasses.replace(
            self, ids=[self.ids[i] for i in idx], subsets=[self.subsets[i] for i in idx],
            matrices=[self.matrices[i] for i in idx], entries=[self.entries[i] for i in idx] if self.entries else [],
            per_question={k: np.asarray(v, dtype=float)[idx] for k, v in self.per_question.items()})

    def summary(self, *, n_boot: int = N_BOOT, seed: int = 0, level: float = 0.95) -> dict:
        """:func:`summarize` of this report's measures at its cutoffs."""
        return summarize(self.per_question, self.subsets, self.ks, n_boot=n_boot, seed=seed, level=level)

    def to_table(self, keys: Sequence[str], *, n_boot: int = N_BOOT, seed: int = 0) -> list[dict]:
        """The rows the Evaluate page draws: each subset (first-seen order), then :data:`HEADLINE` (the mean over
        questions) and :data:`MACRO` (the mean of the subset means); per row ``subset``, ``n`` and each measure
        of ``keys`` as ``{"mean", "lo", "hi"}`` (95% bootstrap intervals)."""
        s = self.summary(n_boot=n_boot, seed=seed)
        ks = self.ks
        groups = [(name, g["n"], g["at"], g["ci"]) for name, g in s["subsets"].items()]
        groups += [(HEADLINE, s["n"], s["at"], s["ci"]), (MACRO, s["n"], s["macro"], s["macro_ci"])]
        return [{"subset": name, "n": n, **{key: _cell(at, ci, key, ks, self.per_question) for key in keys}}
                for name, n, at, ci in groups]

    def to_dict(self, k: int = 5, *, measures: Sequence[str] | None = None, per_question: bool = False,
                bootstrap: int = N_BOOT, seed: int = 0) -> dict:
        """What ``berds evaluate`` prints: the measures at ``k`` on top, every cutoff under ``at``, ``subsets``,
        ``macro``, ``run_depth``, the diversity block, the intervals (none with ``bootstrap`` 0), ``measures``
        (the means of ``measures``, limiting ``per_question`` to them) and the significance of :meth:`against`."""
        summ = self.summary(n_boot=max(bootstrap, 1), seed=seed)
        top = summ["at"][str(k)]
        out = {"n": summ["n"], "mrecall": top["mrecall"], "precision": top["precision"],
               "precision_at_1": top["precision_at_1"], "k": k, "policy": self.policy, "at": summ["at"],
               "subsets": {s: {"n": g["n"], "at": g["at"]} for s, g in summ["subsets"].items()},
               "macro": summ["macro"], "run_depth": run_depth(self.entries)}
        out.update({name: top[name] for name in top if name not in out})  # the ndeval measures at k (k <= 20)
        if self.diversity is not None:
            out["diversity"] = self.diversity
        if self.policy == "confident":
            out["unsure"] = self.unsure  # pairs the threshold counts that the confident policy does not
        if self.missing_gold is not None:
            out["missing_gold"] = self.missing_gold
        if bootstrap:
            out.update(ci=summ["ci"], macro_ci=summ["macro_ci"], bootstrap={"n": bootstrap, "seed": seed})
        keys = list(measures) if measures else None  # None: every measure
        per_q = self.per_question
        if keys:
            out["measures"] = {key: float(per_q[key].mean()) if per_q[key].size else None for key in keys}
        if per_question:
            out["per_question"] = [{"id": q, **{name: float(v[i]) for name, v in per_q.items()
                                                if keys is None or name in keys}}
                                   for i, q in enumerate(self.ids)]
        if self.significance is not None:
            sig = self.significance
            out["significance"] = sig
            if len(sig["comparisons"]) == 1 and sig["pairs"] == "baseline":  # the single-run block of earlier versions
                (c,) = sig["comparisons"]
                out["compare"] = {"run": c["a"], "run2": c["b"], "direction": "run2 - run",
                                  "metrics": {m: {**row, "p_value": row["p_permutation"]}
                                              for m, row in c["metrics"].items()}}
        return out

    def to_json(self, **kw) -> str:
        """:meth:`to_dict` as one JSON line (the keywords are :meth:`to_dict`'s)."""
        return json.dumps(self.to_dict(**kw), ensure_ascii=False)

    def against(self, name: str, others: dict, *, metrics: Sequence[str] | None = None, **options) -> "Report":
        """This report, named ``name``, with the paired tests of ``others`` (name -> Report of the same questions)
        against it, or between every pair with ``pairs="all"``: :func:`significance` (pooled over questions)."""
        sig = significance({name: self, **others}, name, metrics=metrics, **options)
        sig["scope"] = "pooled over questions"
        return dataclasses.replace(self, significance=sig)


# --- across reports ------------------------------------------------------

def significance(reports: dict, baseline: str, *, metrics: Sequence[str] | None = None, **options) -> dict:
    """Paired tests of every report (name -> :class:`Report`, the same questions in the same order) against
    ``baseline``, per measure of ``metrics`` (default: every measure they share), corrected per measure across
    the comparisons: ``berds_core.eval.significance.compare`` (``options``: its ``pairs``, ``correction``,
    ``test``, ``n_resamples``, ``n_boot``, ``seed``)."""
    return compare({name: r.per_question for name, r in reports.items()}, baseline=baseline, metrics=metrics,
                   **options)


def with_diversity(reports: Sequence[Report], *, gold=None, ks: Sequence[int] | None = None,
                   alpha: float = DEFAULT_ALPHA) -> list[Report]:
    """The reports with the TREC diversity measures (``berds_core.eval.diversity``) at ``ks`` (those <= 20;
    default the reports' own cutoffs) added to their per-question scores, every report scored on the shared
    pool of their judged passages (one report: its own; with ``gold``, every gold-labelled passage too).
    ValueError: a gold label naming a perspective its question lacks."""
    div_ks = supported_ks(reports[0].ks if ks is None else ks)
    judge = None if gold is not None else reports[0].labels
    qrels, divs = pooled_diversity([r.entries for r in reports], gold=gold, judge=judge, ks=div_ks, alpha=alpha)
    info = {"measures": DIVERSITY_NOTE, "alpha": alpha, "ks": div_ks, "qrels_lines": len(qrels),
            "pool": "shared: union of the judged passages of all compared runs" if len(reports) > 1
            else "this run's judged passages" + (" and every gold-labelled passage" if gold else "")}
    return [dataclasses.replace(r, per_question={**r.per_question, **d}, diversity=info)
            for r, d in zip(reports, divs)]


__all__ = ["HEADLINE", "MACRO", "N_BOOT", "Report", "significance", "summarize", "with_diversity"]
