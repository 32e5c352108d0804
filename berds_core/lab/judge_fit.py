"""The lab teaches the judge: ``berds agreement --fit NAME`` refits the embedded judge's calibration map,
threshold and unsure band on a round's labels, with the agreement measured out of fold.

What is fitted, and what stays frozen: the base judge (``embedded``, or ``embedded:v4``) reads every labelled
pair as it reads a run (its encoder, topicality gate, stance model and one-side rule, all frozen: one base
probability per pair, and whether the pair is the member its group's rule picked); the fit chooses a map of
that probability (``none``: threshold and band only, ``platt`` or ``isotonic``: by question-grouped
out-of-fold log loss, :func:`berds_core.judges.fitting.choose_calibration`), the threshold (best F1 of the
decided pairs on the map's out-of-fold outputs) and the band of thresholds the round's questions cannot tell
apart (:func:`berds_core.judges.calibration.threshold_band`). Numpy and sklearn on a few thousand numbers:
seconds on 2 cores once the base judge has read the pairs.

Honest by construction (``docs/annotation-lab.md``, "The lab teaches the judge"):

- refused, with one line, below :data:`MIN_QUESTIONS` questions with labels or :data:`MIN_POSITIVES` positive
  labels (five question folds need two questions each; a threshold on fewer positives is noise);
- the "after" figures are out of fold only: five question-grouped folds (the round's questions are the
  groups, :func:`berds_core.datasets.devsets.grouped_folds`), everything chosen on four and scored on the
  fifth, the inner choices on the four folds' own folds, as ``scripts/train_judge.py`` does; fold seeds
  0-4, seed 0's figures with bootstrap intervals over questions, the medians beside them. "Before" is the
  base judge as shipped (nothing fitted on the round). No in-sample agreement is reported;
- a fit whose out-of-fold kappa (median over the fold seeds) does not beat the base judge's is not written
  unless asked (``keep_anyway``): the report says so;
- reproducible: the folds and bootstrap are seeded and the file is JSON with sorted keys and rounded
  numbers: the same round gives the same bytes.

The judge file is read by :class:`berds_core.judges.lab_judge.LabJudge` (``--judge lab:NAME``).
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..datasets.devsets import grouped_folds
from ..files.jsonio import atomic_write
from ..judges import get_judge
from ..judges.calibration import apply_calibration, best_f1_threshold, ece, threshold_band
from ..judges.fitting import CALIBRATIONS, choose_calibration, fit_calibration
from ..judges.lab_judge import BASE_WEIGHTS, FORMAT, check_name, lab_judges_dir
from .agreement import scores_with_ci, weighted_block
from .sample_weights import sample_weights
from .tasks import judge_probabilities

MIN_QUESTIONS = 10
MIN_POSITIVES = 20
N_FOLDS = 5
FOLD_SEEDS = 5  # fold assignments 0..4, as scripts/train_judge.py reports
LABEL_SOURCES = ("auto", "adjudicated", "reference")


class FitRefused(ValueError):
    """A round the judge cannot honestly be fitted on (too few questions or positives, nothing labelled)."""


@dataclass
class RoundData:
    """The labelled pairs of a round, as the base judge reads them."""
    pair_ids: list[str]
    questions: np.ndarray  # question key per pair (the folds' and the bootstrap's groups)
    y: np.ndarray  # the round's label (0/1)
    p: np.ndarray  # the base judge's probability
    own: np.ndarray  # the pair is decided by its own probability (not a group's less probable member)
    base_label: np.ndarray  # the base judge's verdict
    weights: np.ndarray | None = None  # a sample's inverse inclusion probability (actively chosen rounds)


# ------------------------------------------------------------------ the round

def round_labels(store, source: str = "auto", task_set: str | None = None) -> tuple[dict[str, int], str]:
    """The labels a fit reads: adjudicated gold (``auto``: when the round has any) or reference labels; only the
    pairs of ``task_set`` when given."""
    if source not in LABEL_SOURCES:
        raise FitRefused(f"--labels {source!r}: one of {', '.join(LABEL_SOURCES)}")
    gold = store.gold()
    if source == "auto":
        source = "adjudicated" if gold else "reference"
    labels = dict(gold if source == "adjudicated" else store.reference_labels())
    if task_set is not None:
        if task_set not in store.tasks.names():
            raise FitRefused(f"task set {task_set!r} is not in {store.path}")
        keep = store.reports.set_pairs(task_set)
        labels = {k: v for k, v in labels.items() if k in keep}
    return labels, source


def check_enough(n_questions: int, n_positives: int, what: str) -> None:
    """One line when a round is too small to fit a judge on honestly."""
    if n_questions < MIN_QUESTIONS:
        raise FitRefused(f"{what}: {n_questions} question(s) with labels, a fit needs at least {MIN_QUESTIONS} "
                         f"(five question folds, two questions each)")
    if n_positives < MIN_POSITIVES:
        raise FitRefused(f"{what}: {n_positives} positive label(s), a fit needs at least {MIN_POSITIVES}")


def read_round(store, base_judge, labels: dict[str, int], what: str, weights: dict | None = None) -> RoundData:
    """The base judge's reading of the labelled pairs (each decided with its question's other perspectives)."""
    pairs = store.pairs(sorted(labels))
    qkeys = {p.question_key for p in pairs}
    check_enough(len(qkeys), sum(int(labels[p.pair_id]) for p in pairs), what)
    context = [p for p in store.pairs() if p.question_key in qkeys]
    picks: dict[str, bool] = {}
    preds = judge_probabilities(pairs, base_judge, context, picks)
    ids = [p.pair_id for p in pairs]
    w = np.array([float(weights.get(i, 1.0)) for i in ids]) if weights else None
    return RoundData(ids, np.array([p.question_key for p in pairs]), np.array([int(labels[i]) for i in ids]),
                     np.array([preds[i][0] for i in ids], float), np.array([picks[i] for i in ids], bool),
                     np.array([preds[i][1] for i in ids], int), w)


def question_folds(questions, seed: int, n_folds: int = N_FOLDS) -> np.ndarray:
    fold_of = grouped_folds({q: q for q in sorted(set(map(str, questions)))}, n_folds, seed=seed)
    return np.array([fold_of[str(q)] for q in questions])


# ------------------------------------------------------------------ the map, its threshold and band

def mapped(calibration: dict, p) -> np.ndarray:
    """The map of base probabilities; 0 (off the topic, or no support at all) stays 0 (as ``LabJudge``)."""
    p = np.asarray(p, float)
    return np.where(p > 0, apply_calibration(calibration, p), 0.0)


def fit_map(p, y, own, questions, folds, weights=None, kinds=CALIBRATIONS) -> dict:
    """Everything chosen on these rows (their ``folds`` for the inner choices): the map's kind (out-of-fold
    log loss) and the map, the threshold (best F1 of the decided pairs on the map's out-of-fold outputs), the
    band (thresholds over question resamples)."""
    p, y, own, folds = np.asarray(p, float), np.asarray(y, int), np.asarray(own, bool), np.asarray(folds)
    w = None if weights is None else np.asarray(weights, float)
    on = p > 0  # the map is fitted where the base judge gives any support (a gated passage stays at 0)
    if len(np.unique(y[on])) < 2:  # every supported pair one class: no map can be fitted, the base's probabilities
        kinds = ("none",)
    kind, cal, ll = choose_calibration(p[on], y[on], folds[on], kinds, None if w is None else w[on])
    oof = np.zeros(len(y))
    for k in np.unique(folds):
        m = folds == k
        tr = ~m & on
        oof[m] = mapped(fit_calibration(kind, p[tr], y[tr], None if w is None else w[tr]), p[m])
    d = np.where(own, oof, 0.0)
    t = best_f1_threshold(y, d)
    lo, hi = threshold_band(y, d, questions)
    return {"kind": kind, "calibration": cal, "threshold": t, "band": [min(lo, t), max(hi, t)],
            "inner_log_loss": ll}


def decisions(fit: dict, p, own) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(probabilities, labels, verdicts +1 / 0 unsure / -1) of a fitted map on base probabilities."""
    q = mapped(fit["calibration"], p)
    lab = np.asarray(own, bool) & (q >= fit["threshold"])
    lo, hi = fit["band"]
    d = np.where(own, q, 0.0)
    ver = np.where(d >= hi, 1, np.where(d < lo, -1, 0))
    return q, lab, ver


def cross_validate(data: RoundData, seed: int, n_folds: int = N_FOLDS) -> dict:
    """Out-of-fold probabilities, labels and verdicts of the refit (fold seed ``seed``), each fold's choice."""
    folds = question_folds(data.questions, seed, n_folds)
    n = len(data.y)
    P, L, V = np.zeros(n), np.zeros(n, bool), np.zeros(n, int)
    chosen = []
    for k in range(n_folds):
        te, tr = folds == k, folds != k
        fit = fit_map(data.p[tr], data.y[tr], data.own[tr], data.questions[tr], folds[tr],
                      None if data.weights is None else data.weights[tr])
        P[te], L[te], V[te] = decisions(fit, data.p[te], data.own[te])
        chosen.append({"fold": k, "kind": fit["kind"], "threshold": round(fit["threshold"], 4),
                       "band": [round(v, 4) for v in fit["band"]]})
    return {"probs": P, "labels": L, "verdicts": V, "folds": chosen}


# ------------------------------------------------------------------ the report

def agreement_block(y, labels, questions, probs=None, weights=None, n_boot: int = 1000) -> dict:
    """Kappa, F1, precision, recall and positive rates with question-bootstrap intervals (and the probabilities'
    calibration error); with ``weights``, the weighted figures (a round whose pairs were chosen actively)."""
    if weights is not None:
        return weighted_block(y, labels, questions, weights, n_boot)
    s = scores_with_ci(np.asarray(y, int), np.asarray(labels, int), groups=list(questions), n_boot=n_boot, seed=0)
    out = {k: s[k] for k in ("n", "questions", "kappa", "f1", "precision", "recall", "positive_rate",
                             "human_positive_rate")}
    out["ci95"] = {k: s["ci95"][k] for k in ("kappa", "f1", "positive_rate")}
    if probs is not None:
        out["ece"] = ece(y, probs)
    return out


def fit_report(data: RoundData, fold_seeds: int = FOLD_SEEDS, n_boot: int = 1000) -> dict:
    """Before (the base judge) and after (the refit, out of fold) on the round's labels."""
    runs = [cross_validate(data, s) for s in range(fold_seeds)]
    w = data.weights
    before = agreement_block(data.y, data.base_label, data.questions, data.p, w, n_boot)
    after = agreement_block(data.y, runs[0]["labels"], data.questions, runs[0]["probs"], w, n_boot)
    after["unsure_share"] = float((runs[0]["verdicts"] == 0).mean())
    per_seed = [agreement_block(data.y, r["labels"], data.questions, r["probs"], w, 0) for r in runs]
    medians = {k: float(np.median([s[k] for s in per_seed])) for k in ("kappa", "f1", "positive_rate")}
    medians["range"] = {k: [float(min(s[k] for s in per_seed)), float(max(s[k] for s in per_seed))]
                        for k in ("kappa", "f1")}
    beats = medians["kappa"] > (before["kappa"] if before["kappa"] is not None else -1.0)
    return {"before": before, "after": after, "after_median": medians, "fold_seeds": fold_seeds,
            "folds": runs[0]["folds"], "beats_base": bool(beats),
            "kinds_chosen": sorted({f["kind"] for r in runs for f in r["folds"]})}


CURVE_SIZES = (50, 100, 200, 400, 800, 1600, 3200, 6400, 12800)


def label_order(store, ids) -> list[int]:
    """Row order of ``ids`` as the round's labels came in: by the earliest ``updated_at`` of the pair's labels
    (the store keeps a label's last change, so a label changed later moves its pair later), pairs no person
    labelled (reference labels) after them in the order they were added."""
    first: dict[str, str] = {}
    for lab in store.labels(include_skips=False):
        if lab.pair_id not in first or lab.updated_at < first[lab.pair_id]:
            first[lab.pair_id] = lab.updated_at
    return sorted(range(len(ids)), key=lambda i: (ids[i] not in first, first.get(ids[i], ""), i))


def learning_curve(data: RoundData, order, sizes=CURVE_SIZES) -> list[dict]:
    """The refit's out-of-fold kappa (fold seed 0) on the first ``n`` labels, for each size up to all of them:
    how the agreement grew as labels came in (None where the first ``n`` are too few to fit on)."""
    order = np.asarray(order)
    out = []
    for n in [x for x in sizes if x < len(order)] + [len(order)]:
        rows = order[:n]
        sub = RoundData([data.pair_ids[i] for i in rows], data.questions[rows], data.y[rows], data.p[rows],
                        data.own[rows], data.base_label[rows], None if data.weights is None else data.weights[rows])
        point = {"labels": int(n), "questions": int(len(set(sub.questions))), "positives": int(sub.y.sum())}
        try:
            check_enough(point["questions"], point["positives"], "")
        except FitRefused:
            out.append({**point, "kappa": None, "base_kappa": None})
            continue
        cv = cross_validate(sub, 0)
        after = agreement_block(sub.y, cv["labels"], sub.questions, None, sub.weights, 0)
        before = agreement_block(sub.y, sub.base_label, sub.questions, None, sub.weights, 0)
        out.append({**point, "kappa": after["kappa"], "base_kappa": before["kappa"]})
    return out


def _rounded(x):
    if isinstance(x, float):
        return float(f"{x:.10g}")
    if isinstance(x, dict):
        return {k: _rounded(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_rounded(v) for v in x]
    if isinstance(x, (np.floating, np.integer, np.bool_)):
        return _rounded(x.item())
    return x


def labels_digest(labels: dict[str, int]) -> str:
    return hashlib.sha256(json.dumps(sorted(labels.items())).encode()).hexdigest()[:16]


def judge_file(name: str, base_spec: str, base_judge, round_info: dict, fit: dict, report: dict) -> bytes:
    """The lab judge's file: the same round and the same base give the same bytes."""
    doc = {"format": FORMAT, "name": name,
           "base": {"spec": base_spec, "name": base_judge.name, "weights": BASE_WEIGHTS[base_spec],
                    "version": base_judge.meta.get("version", "v4")},
           "round": round_info, "map": {k: fit[k] for k in ("kind", "calibration", "threshold", "band")},
           "report": report}
    return (json.dumps(_rounded(doc), sort_keys=True, indent=1) + "\n").encode()


def fit_lab_judge(store, name: str, *, base: str = "embedded", source: str = "auto", task_set: str | None = None,
                  keep_anyway: bool = False, fold_seeds: int = FOLD_SEEDS, n_boot: int = 1000) -> dict:
    """Fit, report and (if it beats the base judge out of fold, or ``keep_anyway``) write ``NAME.json`` in
    the lab folder. Returns the report with ``written`` (the file, or None) and ``why``."""
    check_name(name)
    base = (base or "embedded").strip()
    if base not in BASE_WEIGHTS:
        raise FitRefused(f"--base {base!r}: a lab refits {' or '.join(BASE_WEIGHTS)} (their map, threshold "
                         f"and band; the encoders stay frozen)")
    labels, used = round_labels(store, source, task_set)
    what = f"{Path(store.path).name}" + (f" task set {task_set}" if task_set else "") + f" ({used} labels)"
    if not labels:
        raise FitRefused(f"{what}: no labels to fit on")
    judge = get_judge(base)
    recorded = sample_weights(store, task_set)  # pairs chosen actively count their inverse inclusion probability
    weights = recorded if any(pid in recorded for pid in labels) else None
    data = read_round(store, judge, labels, what, weights)
    report = fit_report(data, fold_seeds, n_boot)
    report["curve"] = learning_curve(data, label_order(store, data.pair_ids))
    final = fit_map(data.p, data.y, data.own, data.questions, question_folds(data.questions, 0), data.weights)
    round_info = {"name": task_set or Path(store.path).stem, "db": Path(store.path).name, "labels": used,
                  "pairs": int(len(data.y)), "questions": int(len(set(data.questions))),
                  "positives": int(data.y.sum()), "labels_digest": labels_digest(labels),
                  "weighted": data.weights is not None}
    folder = lab_judges_dir(store.path)
    path = folder / f"{name}.json"
    out = {"name": name, "base": judge.name, "round": round_info, **report,
           "map": {k: final[k] for k in ("kind", "threshold", "band")}}
    if report["beats_base"] or keep_anyway:
        with atomic_write(path, "wb") as fh:
            fh.write(judge_file(name, base, judge, round_info, final, report))
        out["written"] = str(path)
        out["judge_spec"] = f"lab:{name}"
        out["why"] = ("its out-of-fold kappa beats the base judge's" if report["beats_base"] else
                      "written as asked (--keep-anyway): its out-of-fold kappa does not beat the base judge's")
    else:
        out["written"] = None
        out["why"] = (f"not written: its out-of-fold kappa ({report['after_median']['kappa']:.3f}, median over "
                      f"{fold_seeds} fold seeds) does not beat the base judge's ({report['before']['kappa']:.3f}); "
                      f"--keep-anyway writes it")
    return out


__all__ = ["FitRefused", "MIN_QUESTIONS", "MIN_POSITIVES", "RoundData", "round_labels", "read_round", "fit_map",
           "cross_validate", "fit_report", "fit_lab_judge", "judge_file", "decisions", "question_folds",
           "learning_curve", "label_order"]
