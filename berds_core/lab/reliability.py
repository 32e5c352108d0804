"""Each annotator's reliability, estimated from redundant labels as they come in (Dawid-Skene and MACE).

**The models** (:func:`estimate`):

- MACE (Hovy, Berg-Kirkpatrick, Vaswani and Hovy, NAACL 2013, "Learning Whom to
  Trust with MACE"; :mod:`berds_core.lab.mace`): each annotator ``j`` either knows
  the true label of an item (with probability ``θ_j``, their *competence*) and
  gives it, or spams, drawing a label from their own distribution ``ξ_j``;
  variational Bayes (Beta(0.5, 0.5) and Dirichlet(10) priors, MACE's) estimates
  ``θ``, ``ξ``, the class prevalence and each item's posterior, best of 10
  restarts. A spammer's ``θ`` goes to 0, whether they answer at random or always
  the same. Written here rather than taken from Toloka's ``crowd-kit``: its MACE
  (1.4.2) keeps the paper's uniform prior on the true label, and with a fifth of
  the pairs "supports" it explains an accurate annotator's many "does not
  support" answers as spam (θ 0.49 for an annotator right 97% of the time).
- Dawid-Skene (Dawid and Skene 1979; crowd-kit 1.4.2): a full confusion matrix
  per annotator, ``P(label | true label)``, by EM. Its competence is Youden's J of
  that matrix, ``P(1 | 1) + P(0 | 0) − 1``: 0 for labels at random or always the
  same, 1 for perfect ones (for two labels, MACE's ``θ`` under MACE's model).

The default (``competence``, the order of the annotators) is MACE: on 20
held-out rounds of simulated annotators of known quality its ``θ`` put them in
the order of their true quality in 20, Dawid-Skene's J in 13 and crowd-kit's
MACE in 1, and its labels were the closest to the truth (median accuracy 0.915,
Dawid-Skene 0.907, majority vote 0.80; ``bench/lab_reliability.py``,
docs/annotation-lab.md, where the choice between the variants is described).
Both models' competences are reported, and both label sets exported.

**What goes in** (:func:`model_labels`): every label except skips and except the
labels an annotator gave to their own gold checks (assignments of kind ``check``
or ``calibration``): those measure the annotator against a known answer and are
scored apart (:mod:`berds_core.lab.checks`). So an annotator who answers every
check right and the rest at random gets a high check score and a competence
near 0: only the estimate across redundant labels sees them.

**The report** (:func:`reliability_report`), per annotator: estimated
competence; gold checks (accuracy, 95% Wilson interval); agreement with the
others (their label against the competence-weighted majority of the *other*
annotators of the same pair, ties left out); time per label as the server
measured it (since the annotator's previous decision; the browser's own figure,
which a page can claim freely, beside it as ``browser_median_ms``): median, and the
share of labels under the lead's time floor; drift (that agreement over a
rolling window of their labels in the order they made them: first, last and the
change). Also the round's label sets (:func:`label_sets`): majority vote, each
model's most likely labels, and adjudication.

**Fitted once per change of the labels** (:func:`fitted`): both models are fitted on the labels of one
version (:meth:`berds_core.lab.store.Labelling.labels_version`: it moves with every label, skip, undo, import and
assignment), and kept; a page that reruns with no new label reads one small statement and fits nothing.
"""
from __future__ import annotations

import math
import threading
from collections import OrderedDict, defaultdict
from dataclasses import dataclass, field

import numpy as np

from .checks import CHECK_KINDS, check_scores, pauses, wilson_interval
from .controls import DEFAULT_TIME_FLOOR_MS, get_controls
from .request_reads import RequestReads

METHODS = ("mace", "dawid-skene")
DEFAULT_METHOD = "mace"  # ranked simulated annotators right more often (bench/lab_reliability.py)
MIN_REDUNDANT = 20  # fewer pairs with two or more labels than this: the estimate is flagged as resting on little
MIN_LABELS = 10  # fewer model labels than this for an annotator: their competence is flagged
_MEMO: OrderedDict = OrderedDict()
_MEMO_SIZE = 8
_FITS: OrderedDict = OrderedDict()  # (labels version, task set, seed) -> (model labels, {method: Estimate})
_FITS_LOCK = threading.Lock()


@dataclass
class Estimate:
    method: str
    competence: dict[str, float | None]
    posterior: dict[str, float]  # P(true label = 1) per pair
    labels: dict[str, int]
    n_labels: int
    n_pairs: int
    redundant_pairs: int
    warnings: list[str] = field(default_factory=list)


def model_labels(store, task_set: str | None = None) -> list[tuple[str, str, int]]:
    """``[(pair_id, annotator, 0/1)]``: the labels the model reads (no skips, no annotator's own checks)."""
    reads = RequestReads.of(store)
    kinds = reads.store.reports.assignment_kinds()
    in_set = None
    if task_set is not None:
        in_set = reads.store.reports.set_pairs(task_set, tasks_only=True)
    out = []
    for lab in reads.labels(include_skips=False):
        if kinds.get((lab.pair_id, lab.annotator), set()) & set(CHECK_KINDS):
            continue
        if in_set is not None and lab.pair_id not in in_set:
            continue
        out.append((lab.pair_id, lab.annotator, int(lab.label)))
    return out


def fitted(store, task_set: str | None = None, *, seed: int = 0) -> tuple[list, dict[str, "Estimate"]]:
    """The model labels (:func:`model_labels`) and each annotator model (:data:`METHODS`) fitted on them:
    read and fitted once per version of the labels (:meth:`~berds_core.lab.store.Labelling.labels_version`),
    then served from memory until a label, skip, undo, import or assignment changes it."""
    reads = RequestReads.of(store)
    key = (reads.labels_version(), task_set, seed)
    with _FITS_LOCK:
        if key in _FITS:
            _FITS.move_to_end(key)
            return _FITS[key]
    rows = model_labels(reads, task_set)
    got = (rows, {m: estimate(rows, m, seed=seed) for m in METHODS})
    with _FITS_LOCK:
        _FITS[key] = got
        while len(_FITS) > _MEMO_SIZE:
            _FITS.popitem(last=False)
    return got


def majority(rows) -> dict[str, dict]:
    """``{pair: {label (None on a tie), share (of 1s), n}}``: plain majority vote."""
    by = defaultdict(list)
    for pid, _, lab in rows:
        by[pid].append(lab)
    out = {}
    for pid, labs in by.items():
        share = sum(labs) / len(labs)
        out[pid] = {"label": None if share == 0.5 else int(share > 0.5), "share": share, "n": len(labs)}
    return out


def _coded(rows):
    """The labels as crowd-kit 1.4.2 needs them: annotators and labels renamed to codes that sort in the
    order they first appear. Its MACE (used here before :mod:`berds_core.lab.mace`) matches per-annotator,
    per-label counts (a ``groupby``, sorted by name) to parameters by position (``pd.factorize``, order of appearance): with names or labels whose
    appearance order is not their sorted order (any real round), the strategies were swapped between
    annotators, and competences came out wrong. Returns the frame, the annotator names and the label values."""
    import pandas as pd

    df = pd.DataFrame(rows, columns=["task", "worker", "label"])
    wcode, wnames = pd.factorize(df["worker"])
    lcode, lvalues = pd.factorize(df["label"])
    coded = pd.DataFrame({"task": df["task"], "worker": [f"w{c:06d}" for c in wcode], "label": lcode})
    return coded, [str(w) for w in wnames], [int(v) for v in lvalues]


def _fit(rows, method: str, seed: int) -> tuple[dict, dict]:
    if method == "mace":
        from .mace import MaceOptions
        from .mace import fit as fit_mace

        pairs, item_codes = np.unique([p for p, _, _ in rows], return_inverse=True)
        names, ann_codes = np.unique([a for _, a, _ in rows], return_inverse=True)
        model = fit_mace(item_codes, ann_codes, [y for _, _, y in rows], n_items=len(pairs),
                         n_annotators=len(names), options=MaceOptions(seed=seed))
        competence = {str(w): float(model.theta[i]) for i, w in enumerate(names)}
        return competence, {str(p): float(model.posterior[i, 1]) for i, p in enumerate(pairs)}
    from crowdkit.aggregation import DawidSkene

    df, names, values = _coded(rows)
    one = values.index(1)
    model = DawidSkene(n_iter=100)  # crowd-kit's tolerance (1e-5): about 50 iterations
    model.fit(df)
    err = model.errors_  # index (worker, observed label code), columns: true label code; P(observed | true)
    competence = {}
    for i, w in enumerate(names):
        m = err.loc[f"w{i:06d}"]
        hit = [float(m.loc[c, c]) if c in m.index and c in m.columns else 0.0 for c in (0, 1)]
        competence[w] = hit[0] + hit[1] - 1.0  # Youden's J: 0 at random or constant, 1 when perfect
    p1 = model.probas_[one] if one in model.probas_.columns else 1.0 - model.probas_[1 - one]
    return competence, {str(k): float(v) for k, v in p1.items()}


def estimate(rows, method: str = DEFAULT_METHOD, *, seed: int = 0) -> Estimate:
    """Fit the annotator model on ``[(pair, annotator, 0/1)]`` (results memoised on the exact labels)."""
    if method not in METHODS:
        raise ValueError(f"unknown method {method!r} (choose from {', '.join(METHODS)})")
    rows = sorted((str(p), str(a), int(l)) for p, a, l in rows)
    key = (method, seed, hash(tuple(rows)), len(rows))
    if key in _MEMO:
        _MEMO.move_to_end(key)
        return _MEMO[key]
    annotators = sorted({a for _, a, _ in rows})
    maj = majority(rows)
    redundant = sum(v["n"] >= 2 for v in maj.values())
    warnings = []
    values = {l for _, _, l in rows}
    if redundant == 0 or len(values) < 2:
        competence = dict.fromkeys(annotators)
        posterior = {p: v["share"] for p, v in maj.items()}
        warnings.append("No pair has two or more labels with both answers yet: competence needs redundant labels "
                        "(overlap or redundancy when the task set is built).")
    else:
        competence, posterior = _fit(rows, method, seed)
        if redundant < MIN_REDUNDANT:
            warnings.append(f"Only {redundant} pairs have two or more labels: read the estimates as indicative.")
    counts = defaultdict(int)
    for _, a, _ in rows:
        counts[a] += 1
    few = [a for a in annotators if counts[a] < MIN_LABELS]
    if few and redundant:
        warnings.append(f"Fewer than {MIN_LABELS} labels from {', '.join(few)}: their competence moves a lot.")
    est = Estimate(method=method, competence=competence, posterior=posterior,
                   labels={p: int(v >= 0.5) for p, v in posterior.items()}, n_labels=len(rows), n_pairs=len(maj),
                   redundant_pairs=redundant, warnings=warnings)
    _MEMO[key] = est
    while len(_MEMO) > _MEMO_SIZE:
        _MEMO.popitem(last=False)
    return est


def _weight(c) -> float:
    return 1.0 if c is None or (isinstance(c, float) and math.isnan(c)) else max(float(c), 0.0)


def weighted_share(labels: dict[str, int], competence: dict[str, float | None]) -> float | None:
    """Competence-weighted share of "supports" among ``{annotator: 0/1}`` (plain share when all weights are 0)."""
    if not labels:
        return None
    w = {a: _weight(competence.get(a)) for a in labels}
    tot = sum(w.values())
    if tot <= 0:
        return sum(labels.values()) / len(labels)
    return sum(w[a] * y for a, y in labels.items()) / tot


def _time_floor(store, task_set: str | None, given: int | None) -> int:
    if given is not None:
        return int(given)
    sets = [task_set] if task_set else list(reversed(store.tasks.names()))
    for ts in sets:
        raw = store.settings.get("round:" + ts, None)
        if raw:
            return get_controls(store, ts).time_floor_ms
    return DEFAULT_TIME_FLOOR_MS


def _times(store, task_set: str | None) -> dict[str, list[tuple[str, int | None, int | None]]]:
    """``{annotator: [(updated_at, server_ms, time_ms)]}`` of their labels (skips included: time is behaviour):
    the server's time (since their previous decision) and the browser's claim."""
    reads = RequestReads.of(store)
    in_set = None
    if task_set is not None:
        in_set = reads.store.reports.set_pair_annotators(task_set)
    out = defaultdict(list)
    for lab in reads.labels():
        if in_set is None or (lab.pair_id, lab.annotator) in in_set:
            out[lab.annotator].append((lab.updated_at, lab.server_ms, lab.time_ms))
    return out


def _rolling(hits: list[int], window: int) -> list[dict]:
    if not hits:
        return []
    w = min(window, len(hits))
    c = np.cumsum([0] + hits)
    return [{"label": i, "agreement": float((c[i] - c[i - w]) / w)} for i in range(w, len(hits) + 1)]


def reliability_report(store, *, method: str = DEFAULT_METHOD, task_set: str | None = None,
                       time_floor_ms: int | None = None, window: int = 20, seed: int = 0) -> dict:
    """Per annotator: competence, checks, agreement with the others, time per label, drift (module docstring).

    ``competence`` comes from ``method``; ``competence_by_model`` has both models' (MACE's θ and
    Dawid-Skene's J). ``order``: annotators from the highest estimated competence down (unknown last).
    ``store``: the store, or a request's reads (:class:`~berds_core.lab.request_reads.RequestReads`).
    """
    if window < 2:
        raise ValueError("the drift window is 2 labels or more")
    if method not in METHODS:
        raise ValueError(f"unknown method {method!r} (choose from {', '.join(METHODS)})")
    reads = RequestReads.of(store)
    store = reads.store
    rows, both = fitted(reads, task_set, seed=seed)
    est = both[method]
    floor = _time_floor(store, task_set, time_floor_ms)
    by_pair: dict[str, dict[str, int]] = defaultdict(dict)
    for pid, a, lab in rows:
        by_pair[pid][a] = lab
    at = {(l.pair_id, l.annotator): l.updated_at for l in reads.labels(include_skips=False)}
    comparisons: dict[str, list[tuple[str, int]]] = defaultdict(list)
    for pid, labs in by_pair.items():
        for a, y in labs.items():
            others = {b: v for b, v in labs.items() if b != a}
            share = weighted_share(others, est.competence)
            if share is None or share == 0.5:
                continue
            comparisons[a].append((at.get((pid, a), ""), int(y == int(share > 0.5))))
    scores = check_scores(store, task_set)
    times = _times(reads, task_set)
    open_p = defaultdict(list)
    for p in pauses(store, open_only=True):
        if task_set is None or p["task_set"] == task_set:
            open_p[p["annotator"]].append(p["task_set"])
    counts = defaultdict(int)
    for _, a, _ in rows:
        counts[a] += 1
    names = sorted(set(counts) | set(scores) | set(times))
    out = {}
    for a in names:
        comp = sorted(comparisons.get(a, []))
        hits = [h for _, h in comp]
        roll = _rolling(hits, window)
        t = [srv if srv is not None else ms for _, srv, ms in times.get(a, []) if srv is not None or ms is not None]
        browser = [ms for _, _, ms in times.get(a, []) if ms is not None]
        ck = scores.get(a)
        out[a] = {
            "labels": counts.get(a, 0),
            "competence": est.competence.get(a),
            "competence_by_model": {m: e.competence.get(a) for m, e in both.items()},
            "checks": None if ck is None else {k: ck[k] for k in ("n", "correct", "failed", "accuracy", "ci95")},
            "agreement_with_others": {"n": len(hits), "agreement": (sum(hits) / len(hits)) if hits else None,
                                      "ci95": wilson_interval(sum(hits), len(hits))},
            "time": {"timed": len(t), "median_ms": float(np.median(t)) if t else None, "floor_ms": floor,
                     "browser_median_ms": float(np.median(browser)) if browser else None,
                     "under_floor": sum(ms < floor for ms in t), "under_floor_share": (sum(ms < floor for ms in t)
                                                                                        / len(t)) if t else None},
            "drift": {"window": min(window, len(hits)) if hits else window, "series": roll,
                      "first": roll[0]["agreement"] if roll else None, "last": roll[-1]["agreement"] if roll else None,
                      "change": (roll[-1]["agreement"] - roll[0]["agreement"]) if len(roll) > 1 else None},
            "paused_in": sorted(open_p.get(a, [])),
        }
    order = sorted(names, key=lambda a: (out[a]["competence"] is None, -(out[a]["competence"] or 0.0), a))
    maj = majority(rows)
    differ = {m: sum(1 for p, v in maj.items() if v["label"] is not None and e.labels.get(p) != v["label"])
              for m, e in both.items()}
    return {"method": est.method, "task_set": task_set, "annotators": out, "order": order, "labels": est.n_labels,
            "pairs": est.n_pairs, "redundant_pairs": est.redundant_pairs, "time_floor_ms": floor, "window": window,
            "model_vs_majority_differ": differ, "warnings": list(est.warnings)}


def label_sets(store, *, task_set: str | None = None, seed: int = 0) -> dict[str, dict]:
    """The round's label sets: ``majority`` (``{pair: {label, share, n}}``), ``mace`` and ``dawid-skene``
    (``{pair: {label, p1, n}}``, each model's most likely label) and ``adjudicated`` (``{pair: 0/1}``)."""
    rows, both = fitted(store, task_set, seed=seed)
    maj = majority(rows)
    out: dict[str, dict] = {"majority": maj}
    for m, est in both.items():
        out[m] = {p: {"label": est.labels[p], "p1": est.posterior[p], "n": maj[p]["n"]} for p in est.posterior}
    gold = store.gold()
    out["adjudicated"] = {p: v for p, v in gold.items() if p in maj} if task_set is not None else gold
    return out
