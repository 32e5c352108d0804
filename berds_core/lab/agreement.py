"""Agreement: humans against the judge, and humans against each other.

Pure functions over 0/1 arrays (``human`` = reference, ``pred`` = the judge or
a second annotator), plus :func:`agreement_report` that reads an annotation
:class:`~berds_core.lab.store.Store` and builds the ``berds agreement`` report.
With ``p_o`` the observed share of agreement and ``p_h``, ``p_j`` the two
raters' shares of positives:

- Cohen's kappa: ``κ = (p_o − p_e) / (1 − p_e)``, ``p_e = p_h·p_j + (1−p_h)(1−p_j)``
  (agreement expected from the two marginals). NaN when ``p_e = 1``.
- PABAK (prevalence- and bias-adjusted kappa, Byrt et al. 1993), two
  categories: ``PABAK = 2·p_o − 1`` (kappa with ``p_e`` fixed at 1/2).
- Gwet's AC1 (Gwet 2008), two raters and two categories:
  ``π = (p_h + p_j) / 2``, ``p_e = 2·π·(1 − π)``, ``AC1 = (p_o − p_e) / (1 − p_e)``.
  Unlike kappa it stays high when both raters agree on a rare class (the
  BERDS human pairs have 16.8% positives).
- Precision, recall and F1 of the positive class (``supports``), the judge's
  or second rater's answer as prediction; F1 = ``2·TP / (2·TP + FP + FN)``
  (0 when no positives anywhere). Positive rate: share of ``pred`` that is 1.
- Krippendorff's alpha (nominal) through the ``krippendorff`` package:
  ``α = 1 − D_o / D_e`` over all pairs labelled by at least two annotators; for
  two categories this is ``α = 1 − (n − 1)·o_01 / (n_0·n_1)`` with ``o_01`` the
  (0, 1) coincidences (each unit's ``n0·n1 / (m_u − 1)``), used for its bootstrap.
- Bootstrap 95% intervals resample **questions** (the pairs of one question
  share a passage list and a topic, so they are not independent): per
  question confusion counts are summed over ``n_boot`` resamples of the
  questions with replacement (vectorised), percentile intervals. With fewer
  than two questions there is no interval (None).
"""
from __future__ import annotations

from collections import defaultdict
from itertools import combinations
from typing import Iterable, Mapping

import numpy as np

from .request_reads import RequestReads
from .sample_weights import sample_weights

METRICS = ("kappa", "pabak", "ac1", "accuracy", "precision", "recall", "f1", "positive_rate")
SMALL_N = 30  # fewer comparisons than this: figures are shown with a warning
SMALL_QUESTIONS = 5  # fewer questions than this: intervals are unreliable


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
    """All metrics from confusion counts (scalars or arrays, vectorised); formulas in the module docstring."""
    tp, fp, fn, tn = (np.asarray(v, dtype=float) for v in (tp, fp, fn, tn))
    n = tp + fp + fn + tn
    with np.errstate(divide="ignore", invalid="ignore"):
        po = (tp + tn) / n
        h1, p1 = (tp + fn) / n, (tp + fp) / n
        pe = h1 * p1 + (1 - h1) * (1 - p1)
        kappa = np.where(pe < 1, (po - pe) / (1 - pe), np.nan)
        pi = (h1 + p1) / 2
        pe_g = 2 * pi * (1 - pi)  # at most 1/2, so AC1 is always defined
        ac1 = (po - pe_g) / (1 - pe_g)
        pabak = 2 * po - 1
        precision = np.where(tp + fp > 0, tp / (tp + fp), 0.0)
        recall = np.where(tp + fn > 0, tp / (tp + fn), 0.0)
        f1 = np.where(2 * tp + fp + fn > 0, 2 * tp / (2 * tp + fp + fn), 0.0)
    return {"kappa": kappa, "pabak": pabak, "ac1": ac1, "accuracy": po, "precision": precision, "recall": recall,
            "f1": f1, "positive_rate": p1, "human_positive_rate": h1}


def _one(metric: str, a, b) -> float:
    (tn, fp), (fn, tp) = confusion_matrix(a, b)
    if tn + fp + fn + tp == 0:
        return float("nan")
    return float(_from_counts(tp, fp, fn, tn)[metric])


def cohen_kappa(a, b) -> float:
    """Cohen's kappa between two 0/1 raters (see module docstring); NaN if undefined or empty."""
    return _one("kappa", a, b)


def pabak(a, b) -> float:
    """Prevalence- and bias-adjusted kappa of two 0/1 raters: ``2·p_o − 1``; NaN when empty."""
    return _one("pabak", a, b)


def gwet_ac1(a, b) -> float:
    """Gwet's AC1 of two 0/1 raters: ``(p_o − p_e) / (1 − p_e)``, ``p_e = 2π(1 − π)``,
    ``π`` the mean of the two positive rates; NaN when empty."""
    return _one("ac1", a, b)


def f1_score(human, pred) -> float:
    (tn, fp), (fn, tp) = confusion_matrix(human, pred)
    return float(_from_counts(tp, fp, fn, tn)["f1"])


def binary_scores(human, pred) -> dict:
    """``n``, kappa, PABAK, AC1, accuracy, precision, recall, F1 (positive class), positive rates."""
    (tn, fp), (fn, tp) = confusion_matrix(human, pred)
    n = tn + fp + fn + tp
    if n == 0:
        return {"n": 0, **{k: None for k in METRICS}, "human_positive_rate": None}
    out = {k: _clean(v) for k, v in _from_counts(tp, fp, fn, tn).items()}
    return {"n": int(n), **out}


def _clean(v) -> float | None:
    v = float(v)
    return None if np.isnan(v) else v


def _group_counts(human, pred, groups=None) -> np.ndarray:
    """Confusion counts per group, shape (groups, 4) as (TP, FP, FN, TN); no groups: one per observation."""
    h, p = _arr(human), _arr(pred)
    if h.shape != p.shape:
        raise ValueError("human and pred must have the same length")
    cells = np.stack([h & p, (1 - h) & p, h & (1 - p), (1 - h) & (1 - p)], axis=1)
    if groups is None:
        return cells
    g = np.asarray([str(x) for x in groups])
    if g.shape[0] != h.shape[0]:
        raise ValueError("groups must have one entry per observation")
    _, inv = np.unique(g, return_inverse=True)
    out = np.zeros((inv.max() + 1 if inv.size else 0, 4), dtype=np.int64)
    np.add.at(out, inv, cells)
    return out


def bootstrap_replicates(human, pred, *, groups=None, n_boot: int = 1000, seed: int = 0) -> dict[str, np.ndarray]:
    """Each metric over ``n_boot`` resamples of the groups (questions) with replacement.

    ``groups`` gives each observation's question; None resamples observations.
    """
    counts = _group_counts(human, pred, groups)
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, len(counts), size=(n_boot, len(counts)))
    tot = counts[idx].sum(axis=1)  # (n_boot, 4)
    return _from_counts(tot[:, 0], tot[:, 1], tot[:, 2], tot[:, 3])


def _percentiles(reps: np.ndarray, level: float) -> list:
    v = reps[~np.isnan(reps)]
    if not v.size:
        return [None, None]
    q = [(1 - level) / 2 * 100, (1 + level) / 2 * 100]
    return [float(x) for x in np.percentile(v, q)]


def bootstrap_ci(human, pred, *, groups=None, n_boot: int = 1000, seed: int = 0,
                 level: float = 0.95) -> dict[str, list]:
    """Percentile bootstrap intervals ``{metric: [lo, hi]}`` for every metric of :func:`binary_scores`.

    Resamples questions (``groups``) or, without groups, observations.
    Replicates where a metric is undefined (kappa with one constant class)
    are left out of that metric's percentiles. Fewer than two groups: no
    interval (``[None, None]``), never a degenerate ``[x, x]``.
    """
    h = _arr(human)
    n_groups = len(set(map(str, groups))) if groups is not None else h.size
    if h.size == 0 or n_boot < 1 or n_groups < 2:
        return {k: [None, None] for k in METRICS}
    reps = bootstrap_replicates(human, pred, groups=groups, n_boot=n_boot, seed=seed)
    return {k: _percentiles(reps[k], level) for k in METRICS}


def scores_with_ci(human, pred, *, groups=None, n_boot: int = 1000, seed: int = 0) -> dict:
    """:func:`binary_scores` plus ``questions`` (groups), ``ci95`` (question bootstrap) and ``confusion``."""
    s = binary_scores(human, pred)
    s["questions"] = len(set(map(str, groups))) if groups is not None else s["n"]
    s["ci95"] = bootstrap_ci(human, pred, groups=groups, n_boot=n_boot, seed=seed)
    s["confusion"] = confusion_matrix(human, pred)
    return s


def weighted_block(y, labels, questions, weights, n_boot: int = 1000) -> dict:
    """The same figures from weighted confusion counts (a pair counts its inverse inclusion probability), the
    intervals over question resamples."""
    y, d, w = np.asarray(y, int), np.asarray(labels, int), np.asarray(weights, float)
    qs = np.asarray([str(q) for q in questions])
    names, inv = np.unique(qs, return_inverse=True)
    cells = np.stack([w * (y & d), w * ((1 - y) & d), w * (y & (1 - d)), w * ((1 - y) & (1 - d))], 1)
    per_q = np.zeros((len(names), 4))
    np.add.at(per_q, inv, cells)
    tot = per_q.sum(0)
    point = {k: float(v) for k, v in _from_counts(*tot).items()}
    ci = {}
    if len(names) > 1 and n_boot > 0:
        rng = np.random.default_rng(0)
        reps = per_q[rng.integers(0, len(names), size=(n_boot, len(names)))].sum(1)
        R = _from_counts(reps[:, 0], reps[:, 1], reps[:, 2], reps[:, 3])
        ci = {k: [float(np.nanpercentile(R[k], 2.5)), float(np.nanpercentile(R[k], 97.5))]
              for k in ("kappa", "f1", "positive_rate")}
    return {"n": int(len(y)), "questions": int(len(names)), "weighted": True,
            **{k: point[k] for k in ("kappa", "f1", "precision", "recall", "positive_rate", "human_positive_rate")},
            "ci95": ci}


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


# --------------------------------------------------------------------------- between humans


def _shared_units(ratings: Mapping[str, Mapping[str, int]]) -> list[str]:
    return sorted(u for u in {u for r in ratings.values() for u in r} if sum(u in r for r in ratings.values()) >= 2)


def krippendorff_alpha(ratings: Mapping[str, Mapping[str, int]]) -> float | None:
    """Nominal Krippendorff's alpha over ``{annotator: {unit: label}}`` (missing = not rated).

    Only units rated by at least two annotators carry information; None when
    there are none, or alpha is undefined (a single value everywhere).
    """
    import krippendorff

    annotators = sorted(ratings)
    units = _shared_units(ratings)
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


def _alpha_from_sums(o01, n0, n1) -> np.ndarray:
    """Binary nominal alpha ``1 − (n − 1)·o_01 / (n_0·n_1)`` (vectorised; NaN when one value only)."""
    o01, n0, n1 = (np.asarray(v, dtype=float) for v in (o01, n0, n1))
    n = n0 + n1
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where((n0 > 0) & (n1 > 0), 1 - (n - 1) * o01 / (n0 * n1), np.nan)


def alpha_ci(ratings: Mapping[str, Mapping[str, int]], groups: Mapping[str, str] | None = None, *,
             n_boot: int = 1000, seed: int = 0, level: float = 0.95) -> list:
    """Question-bootstrap interval of binary Krippendorff's alpha (``groups``: unit -> question)."""
    units = _shared_units(ratings)
    per_group = defaultdict(lambda: np.zeros(3))  # o01, n0, n1
    for u in units:
        vals = [r[u] for r in ratings.values() if u in r]
        if set(vals) - {0, 1}:
            raise ValueError("labels must be 0 or 1")
        m, k1 = len(vals), sum(vals)
        k0 = m - k1
        per_group[(groups or {}).get(u, u)] += (k0 * k1 / (m - 1), k0, k1)
    if len(per_group) < 2 or n_boot < 1:
        return [None, None]
    sums = np.stack(list(per_group.values()))
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, len(sums), size=(n_boot, len(sums)))
    tot = sums[idx].sum(axis=1)
    return _percentiles(_alpha_from_sums(tot[:, 0], tot[:, 1], tot[:, 2]), level)


def inter_annotator(ratings: Mapping[str, Mapping[str, int]], *, groups: Mapping[str, str] | None = None,
                    n_boot: int = 1000, seed: int = 0) -> dict:
    """Between humans: every annotator pair on its shared pairs, all of them pooled, and Krippendorff's alpha.

    ``groups`` maps a unit (pair id) to its question (bootstrap clusters).
    Per annotator pair: ``n``, ``questions``, kappa, PABAK, AC1, raw
    ``agreement``, ``ci95`` (per metric). ``pooled``: every (unit, annotator
    pair) comparison once, the alphabetically first annotator as reference.
    """
    pairs = {}
    pool_a, pool_b, pool_g = [], [], []
    for a, b in combinations(sorted(ratings), 2):
        shared = sorted(set(ratings[a]) & set(ratings[b]))
        if not shared:
            continue
        x = [ratings[a][u] for u in shared]
        y = [ratings[b][u] for u in shared]
        g = [(groups or {}).get(u, u) for u in shared]
        s = scores_with_ci(x, y, groups=g, n_boot=n_boot, seed=seed)
        pairs[f"{a}|{b}"] = {"a": a, "b": b, "n": len(shared), "questions": s["questions"], "kappa": s["kappa"],
                             "pabak": s["pabak"], "ac1": s["ac1"], "agreement": s["accuracy"],
                             "ci95": {k: s["ci95"][k] for k in ("kappa", "pabak", "ac1", "accuracy")}}
        pool_a += x
        pool_b += y
        pool_g += g
    units = _shared_units(ratings)
    return {"pairs": pairs, "alpha": krippendorff_alpha(ratings), "alpha_units": len(units),
            "alpha_ci95": alpha_ci(ratings, groups, n_boot=n_boot, seed=seed),
            "pooled": scores_with_ci(pool_a, pool_b, groups=pool_g, n_boot=n_boot, seed=seed) if pool_a else None,
            "annotators": sorted(ratings)}


# --------------------------------------------------------------------------- humans against a judge


def human_vs_judge(observations: Iterable[tuple[str, str, int]], judge: Mapping[str, tuple],
                   subsets: Mapping[str, str | None] | None = None, *, questions: Mapping[str, str] | None = None,
                   sides: Mapping[str, str | None] | None = None, question_text: Mapping[str, str] | None = None,
                   n_boot: int = 1000, seed: int = 0, n_bins: int = 10) -> dict:
    """Scores of the judge against human labels, pooled and broken down.

    ``observations``: ``(annotator, pair_id, label)``; each is one comparison
    (pooled = every human decision counts once). ``judge``: ``{pair_id: (prob
    or None, label)}``; observations of pairs the judge has no answer for are
    counted in ``missing_judge`` and left out. ``questions`` maps a pair to its
    question (bootstrap clusters; default: each pair its own), ``subsets`` and
    ``sides`` to its dataset subset and perspective side. Breakdowns:
    ``annotators``, ``subsets``, ``sides``, ``per_question`` (with
    ``text`` from ``question_text``), each with question-level intervals.
    """
    obs = [(a, p, int(l)) for a, p, l in observations]
    have = [(a, p, l) for a, p, l in obs if p in judge]
    qmap = questions or {}
    h = np.asarray([l for _, _, l in have], dtype=int)
    j = np.asarray([int(judge[p][1]) for _, p, _ in have], dtype=int)
    g = np.asarray([str(qmap.get(p, p)) for _, p, _ in have])
    report = scores_with_ci(h, j, groups=g, n_boot=n_boot, seed=seed)
    report["missing_judge"] = len(obs) - len(have)

    def split(key_of) -> dict:
        idx = defaultdict(list)
        for i, (a, p, _) in enumerate(have):
            idx[key_of(a, p) or "(none)"].append(i)
        return {k: scores_with_ci(h[ix], j[ix], groups=g[ix], n_boot=n_boot, seed=seed)
                for k, ix in sorted(idx.items())}

    report["annotators"] = split(lambda a, p: a)
    report["subsets"] = split(lambda a, p: (subsets or {}).get(p))
    report["sides"] = split(lambda a, p: (sides or {}).get(p))
    per_q = split(lambda a, p: str(qmap.get(p, p)))
    for key, block in per_q.items():
        block["text"] = (question_text or {}).get(key, key)
    report["per_question"] = per_q
    with_prob = [(judge[p][0], l) for _, p, l in have if judge[p][0] is not None]
    report["calibration"] = calibration_bins([x for x, _ in with_prob], [y for _, y in with_prob], n_bins) if with_prob else []
    return report


# --------------------------------------------------------------------------- reports from a store


def small_n_warnings(report: dict) -> list[str]:
    """One line per figure resting on few comparisons (fewer than SMALL_N pairs or SMALL_QUESTIONS questions)."""
    out = []

    def check(what: str, block: dict | None):
        if not block or not block.get("n"):
            return
        n, q = block["n"], block.get("questions", block["n"])
        if n < SMALL_N or q < SMALL_QUESTIONS:
            out.append(f"{what}: only {n} pair(s) from {q} question(s); kappa and the other figures move a lot "
                       f"with one more label, read them as indicative (intervals need {SMALL_QUESTIONS}+ questions).")

    if report.get("judge"):
        check("humans vs the judge", report)
    for v in (report.get("iaa") or {}).get("pairs", {}).values():
        check(f"{v['a']} and {v['b']} (shared pairs)", v)
    check("adjudicated gold vs the judge", report.get("gold"))
    return out


def calibration_scores(store) -> dict:
    """Each annotator against the reference labels: ``n``, accuracy, kappa, AC1, and how many of
    those pairs were calibration items mixed into their queue. ``store``: the store or a request's reads."""
    reads = RequestReads.of(store)
    ref = reads.reference_labels()
    calib = defaultdict(set)
    for a in reads.store.tasks.assignments():
        if a["kind"] == "calibration":
            calib[a["annotator"]].add(a["pair_id"])
    by_ann = defaultdict(list)
    for lab in reads.labels(include_skips=False):
        if lab.pair_id in ref:
            by_ann[lab.annotator].append((ref[lab.pair_id], int(lab.label), lab.pair_id))
    out = {}
    for a, rows in sorted(by_ann.items()):
        s = binary_scores([r for r, _, _ in rows], [x for _, x, _ in rows])
        out[a] = {"n": s["n"], "calibration_items": sum(p in calib[a] for _, _, p in rows),
                  "accuracy": s["accuracy"], "kappa": s["kappa"], "ac1": s["ac1"]}
    return out


def paper_table(report: dict) -> list[dict]:
    """The paper's agreement table: human labels vs each judge, adjudicated gold and reference labels vs
    the judge, and human vs human; one row each with n, questions, every metric and its interval."""
    rows = []

    def row(comparison, block):
        if block and block.get("n"):
            rows.append({"comparison": comparison, **{k: block.get(k) for k in ("n", "questions", *METRICS,
                                                                                "human_positive_rate")},
                         "ci95": block.get("ci95", {})})

    for name, block in (report.get("judges") or {}).items():
        row(f"human vs {name}", block)
        row(f"adjudicated gold vs {name}", block.get("gold"))
        row(f"reference labels vs {name}", block.get("reference"))
    row("human vs human", (report.get("iaa") or {}).get("pooled"))
    return rows


def distinct_judges(store) -> dict[str, list[str]]:
    """The stored judges, one entry per judge: ``{name: [other names of the same answers]}``.

    Earlier versions stored a judge's answers twice, under the spec typed
    (``embedded``) and under the judge's stable name
    (``embedded-minilm-v2-bf16-t0.183806``). Names whose answers are identical,
    probabilities included, on every pair are one judge: it keeps the longest
    name (the stable one) and lists the others as aliases. Judges that stored
    labels only are never merged (two judges may agree on a few labels).
    """
    groups: dict[tuple, list[str]] = {}
    for name in store.judges():
        preds = store.judge_preds(name)
        if preds and all(p is not None for p, _ in preds.values()):
            key = tuple(sorted((pid, round(float(p), 9), int(lab)) for pid, (p, lab) in preds.items()))
        else:
            key = ("labels only", name)
        groups.setdefault(key, []).append(name)
    out = {}
    for names in groups.values():
        main = max(names, key=lambda n: (len(n), n))
        out[main] = [n for n in names if n != main]
    return dict(sorted(out.items()))


def canonical_judge(store, name: str | None) -> str | None:
    """The name :func:`distinct_judges` lists for ``name`` (itself when it is not an alias)."""
    if not name:
        return name
    return next((main for main, aliases in distinct_judges(store).items() if name in aliases), name)


def _vs_judge_block(store, name: str, labels, info, n_boot: int, seed: int) -> dict:
    preds = store.judge_preds(name)
    qmap = {pid: p.question_key for pid, p in info.items()}
    block = human_vs_judge([(l.annotator, l.pair_id, l.label) for l in labels], preds,
                           {pid: p.subset for pid, p in info.items()}, questions=qmap,
                           sides={pid: p.side for pid, p in info.items()},
                           question_text={p.question_key: p.question for p in info.values()},
                           n_boot=n_boot, seed=seed)
    for key, got in (("gold", store.gold()), ("reference", store.reference_labels())):
        gp = [(v, int(preds[p][1]), qmap.get(p, p)) for p, v in got.items() if p in preds]
        block[key] = (scores_with_ci([a for a, _, _ in gp], [b for _, b, _ in gp], groups=[q for _, _, q in gp],
                                     n_boot=n_boot, seed=seed) if gp else None)
    return block


def agreement_report(store, judge_name: str | None, *, n_boot: int = 1000, seed: int = 0) -> dict:
    """The ``berds agreement`` report from an annotation store.

    Keys: ``judge``; for the chosen judge, pooled human-vs-judge ``n``,
    ``questions``, every metric of :data:`METRICS`, ``ci95`` (question
    bootstrap), ``confusion``, breakdowns ``annotators`` / ``subsets`` /
    ``sides`` / ``per_question``, ``calibration`` (probability bins), ``gold`` and
    ``reference`` (the judge vs adjudicated / reference labels); ``judges``
    (the same pooled block for every stored judge), ``iaa`` (between humans),
    ``calibration_scores`` (annotators vs reference labels), ``table`` (the
    paper-style table) and ``warnings`` (small samples). Skips are not labels
    and are left out everywhere. ``store``: the store, or a request's reads
    (:class:`~berds_core.lab.request_reads.RequestReads`) to share what they read.
    """
    reads = RequestReads.of(store)
    labels = reads.labels(include_skips=False)
    info = {p.pair_id: p for p in reads.pairs()}
    ratings: dict[str, dict[str, int]] = defaultdict(dict)
    for lab in labels:
        ratings[lab.annotator][lab.pair_id] = int(lab.label)
    judge_name = canonical_judge(reads, judge_name)
    out: dict = {"judge": judge_name}
    judges = {}
    for name in distinct_judges(reads):  # one row per judge, not one per name it was stored under
        judges[name] = _vs_judge_block(reads, name, labels, info, n_boot, seed)
    if judge_name and judge_name not in judges:
        judges[judge_name] = _vs_judge_block(reads, judge_name, labels, info, n_boot, seed)
    if judge_name:
        out.update(judges[judge_name])
    else:
        out.update({"n": 0, **{k: None for k in METRICS}, "questions": 0, "annotators": {}, "subsets": {},
                    "sides": {}, "per_question": {}, "calibration": [], "confusion": [[0, 0], [0, 0]],
                    "ci95": {k: [None, None] for k in METRICS}, "gold": None, "reference": None,
                    "missing_judge": 0})
    out["judges"] = {k: {kk: vv for kk, vv in v.items() if kk not in ("per_question", "calibration")}
                     for k, v in judges.items()}
    out["iaa"] = inter_annotator(ratings, groups={pid: p.question_key for pid, p in info.items()},
                                 n_boot=n_boot, seed=seed)
    weights = sample_weights(reads.store)
    if judge_name and weights:  # pairs chosen actively: the round's estimate counts each pair's weight
        preds = reads.judge_preds(judge_name)
        have = [(l.pair_id, int(l.label)) for l in labels if l.pair_id in preds]
        out["weighted"] = weighted_block([y for _, y in have], [int(preds[p][1]) for p, _ in have],
                                         [info[p].question_key for p, _ in have],
                                         [weights.get(p, 1.0) for p, _ in have], n_boot) if have else None
    out["calibration_scores"] = calibration_scores(reads)
    out["table"] = paper_table(out)
    out["warnings"] = small_n_warnings(out)
    return out


def disagreements(store, judge_name: str | None = None) -> list[dict]:
    """Pairs where two humans differ, or a human and the judge differ.

    Each: ``pair_id``, ``labels`` ({annotator: 0/1}), ``unsure`` (annotators
    who marked it), ``judge`` (0/1 or None), ``gold`` (adjudicated or None),
    ``kind`` (``humans``, ``judge`` or both).
    """
    by_pair: dict[str, dict[str, int]] = defaultdict(dict)
    unsure: dict[str, list[str]] = defaultdict(list)
    for lab in store.labels(include_skips=False):
        by_pair[lab.pair_id][lab.annotator] = int(lab.label)
        if lab.unsure:
            unsure[lab.pair_id].append(lab.annotator)
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
            out.append({"pair_id": pid, "labels": labs, "unsure": unsure.get(pid, []), "judge": j,
                        "gold": gold.get(pid), "kind": "+".join(kinds)})
    return out
