#!/usr/bin/env python
"""Choose the embedded judge's rule for perspectives that exclude each other, by question-grouped nested
cross-validation; write the judge's weights (v5: v4's pair head, plus the one-side rule).

    python scripts/train_one_side_judge.py --data ../shared/data --stance-cv bench/results/stance_cv \\
        [--out berds_core/judges/weights/embedded_v5.npz] [--report docs/judge-one-side.json] [--json]

Development data only: the BERDS human pairs' development half (``berds-human/pers_det.dev.tsv``: 276 pairs of
15 questions, each question's two perspectives a statement and its negation, :mod:`berds_core.judges.groups`)
and procon for the topicality gate, exactly as ``scripts/train_judge.py`` reads them; the other half is never
read.

**The unit** is a passage and a group of perspectives it can support at most one of (its two opposite
perspectives). Each candidate rule gives every member a probability and decides none or one member:

- ``pairwise``: v4 as shipped, each pair alone (both sides may be "supports");
- ``closer``: v4's probabilities, the more probable member keeps its label (:func:`groups.keep_one`);
- ``stance-2``: P(member) = g * s. ``g`` = P(the passage supports one of the two), a logistic head on the
  members' mean cosine (the v4 feature; gated on topicality), calibrated (none / Platt / isotonic by inner
  log loss); ``s`` = P(this member | one of them), a Platt map without intercept of the stance model's
  support-minus-oppose margin of the first member minus the second's (two reads per unit): swapping the
  members swaps the decision, so the order a dataset lists them in never matters. The more probable member
  is the one decided. (``stance-1``, one read of the first member with an intercept, costs half the reads
  but decides by the order the perspectives are listed in; not a candidate, kept for the record with
  ``--rules``.)

Everything is chosen on the training folds only (five question-grouped folds, ``devsets.grouped_folds``, the
same seeds as ``train_judge.py``): the rule (inner out-of-fold F1 at its own best threshold; ties: the rule
listed first), g's calibration, s's map, the threshold (inner F1 of the decided members), the unsure band
(``calibration.threshold_band`` over question resamples) and the gate's tau. The held-out fold is then
scored; the figures are out of fold, medians over fold seeds 0-4 reported beside seed 0's.

**The stance reads are out of fold too.** The stance model was trained with these 15 questions' pairs, so
its own reads of them are in-sample. ``--stance-cv`` names the stance cross-validation's folder
(``scripts/train_stance.py --stage cv``): each question's pairs are read by the fold model that never saw
that question (the stance CV's own fold assignment, ``folds.json``). The shipped rule applies the shipped
stance model with the map fitted on those out-of-fold reads, as the stance model's own uses are.
``--stance-cv shipped`` reads with the shipped model instead: in-sample, for debugging only (the report
says so and no weights are written).
"""
from __future__ import annotations

import argparse
import glob
import hashlib
import json
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

import train_judge as TJ  # noqa: E402  (the v4 recipe: load, folds, head, calibration, gate)

from berds_core.judges.calibration import best_f1_threshold, ece, reliability, threshold_band  # noqa: E402
from berds_core.judges.groups import affirmative_first, exclusive_groups  # noqa: E402

RULES = ("pairwise", "closer", "stance-2")
OUT = ROOT / "berds_core" / "judges" / "weights" / "embedded_v5.npz"
WORK = ROOT / "bench" / "results" / "one_side"
SUP, OPP = 0, 1


def log(msg: str) -> None:
    sys.stderr.write(f"[{time.strftime('%H:%M:%S')}] {msg}\n")


# ------------------------------------------------------------------ units: a passage and its two opposite perspectives

def build_units(d: dict, rows: list[dict]) -> dict:
    """Every (question, passage, group) of the human pairs with the rows (pairs) that belong to it."""
    persp: dict[str, list[str]] = {}
    for r in rows:
        persp.setdefault(r["question"], [])
        if r["perspective"] not in persp[r["question"]]:
            persp[r["question"]].append(r["perspective"])
    groups = {q: exclusive_groups(ps, q) for q, ps in persp.items()}
    ungrouped = [q for q, g in groups.items() if not g]
    if ungrouped:
        raise SystemExit(f"questions without opposite perspectives in the development half: {ungrouped}")
    key_of, units = {}, []
    row_unit, row_member = np.zeros(len(rows), int), np.zeros(len(rows), int)
    for i, r in enumerate(rows):
        q = r["question"]
        j = persp[q].index(r["perspective"])
        g, oriented = affirmative_first(next(g for g in groups[q] if j in g), persp[q], q)
        k = (q, r["document"], g)
        if k not in key_of:
            key_of[k] = len(units)
            units.append({"question": q, "document": r["document"], "members": [persp[q][m] for m in g],
                          "qid": d["hp"]["qid"][i], "rows": [], "oriented": oriented})
        u = key_of[k]
        units[u]["rows"].append(i)
        row_unit[i], row_member[i] = u, g.index(j)
    return {"units": units, "row_unit": row_unit, "row_member": row_member, "groups": groups}


def unit_features(d: dict, U: dict, reads: dict) -> None:
    """Per unit: the members' cosines with the passage, the passage's question cosine, the stance margins."""
    from berds_core.embeddings.text_encoders import text_encoder

    te = text_encoder(None, encoding="fp32")
    units = U["units"]
    D = te.embed([u["document"] for u in units])
    Q = te.embed([u["question"] for u in units])
    cos = np.zeros((len(units), 2))
    margin = np.zeros((len(units), 2))
    for m in range(2):
        P = te.embed([u["members"][m] for u in units])
        cos[:, m] = np.sum(P * D, 1)
        Z = np.array([reads[(u["members"][m], u["document"])] for u in units])
        margin[:, m] = Z[:, SUP] - Z[:, OPP]
    y, lab = np.zeros((len(units), 2), int), np.zeros((len(units), 2), bool)
    for i in range(len(d["hp"]["y"])):
        y[U["row_unit"][i], U["row_member"][i]] |= int(d["hp"]["y"][i])
        lab[U["row_unit"][i], U["row_member"][i]] = True
    # a unit is known when both members are labelled, or one is labelled as supported (then the other is not)
    known = lab.all(1) | (y.sum(1) > 0)
    U.update(oriented=np.array([u["oriented"] for u in units], float), lab=lab | known[:, None], known=known, cos=cos, qcos=np.sum(Q * D, 1), margin=margin, y=y, qid=np.array([u["qid"] for u in units]))


# ------------------------------------------------------------------ stance reads (out of fold)

def stance_reads(data: Path, rows: list[dict], persp_pairs: list[tuple[str, str, str]], stance_cv: str) -> dict:
    """``{(perspective, passage): logits}`` of every member of every unit: each question read by the stance
    fold model that never saw it (``stance_cv`` a folder), or by the shipped model (``shipped``)."""
    from berds_core.stance.examples import human_qid
    from berds_core.stance.model import StanceModel

    WORK.mkdir(parents=True, exist_ok=True)
    tag = "shipped" if stance_cv == "shipped" else "cv-" + hashlib.sha1(
        "".join(sorted(Path(p).name for p in glob.glob(str(Path(stance_cv) / "models" / "fold*.npz")))).encode()
    ).hexdigest()[:10]
    cache = WORK / f"reads-{tag}.json"
    if cache.exists():
        got = json.loads(cache.read_text())
        out = {(a, b): np.array(v) for a, b, v in got}
        if all((p, t) in out for _, p, t in persp_pairs):
            return out
    out = {}
    if stance_cv == "shipped":
        m = StanceModel(encoding="fp32")
        Z = m.logits([(p, t) for _, p, t in persp_pairs])
        out = {(p, t): z for (_, p, t), z in zip(persp_pairs, Z)}
    else:
        work = Path(stance_cv)
        fold_of = json.loads((work / "folds.json").read_text())["fold"]
        by_fold: dict[int, list] = {}
        for q, p, t in persp_pairs:
            f = fold_of.get(human_qid(q))
            if f is None:
                raise SystemExit(f"{work}/folds.json: question {q!r} has no stance fold")
            by_fold.setdefault(int(f), []).append((p, t))
        for f, pairs in sorted(by_fold.items()):
            found = sorted(glob.glob(str(work / "models" / f"fold{f}-*.npz")))
            if not found:
                raise SystemExit(f"{work}/models: no fold {f} model (run scripts/train_stance.py --stage cv)")
            m = StanceModel(found[-1], encoding="fp32")
            log(f"stance fold {f}: {len(pairs)} reads with {Path(found[-1]).name}")
            Z = m.logits(pairs)
            out.update({pt: z for pt, z in zip(pairs, Z)})
    cache.write_text(json.dumps([[a, b, np.asarray(v).tolist()] for (a, b), v in out.items()]))
    return out


# ------------------------------------------------------------------ one rule, fitted and applied

def _sigmoid(z):
    return 1.0 / (1.0 + np.exp(-np.asarray(z, float)))


def side_input(U: dict, rule: str, idx) -> np.ndarray:
    m = U["margin"][idx]
    return m[:, 0] if rule == "stance-1" else m[:, 0] - m[:, 1]


def fit_side(U: dict, rule: str, idx) -> dict:
    """Platt map of the side input on units with exactly one supported member: P(the first member). For
    ``stance-2``: ``logit = a * (margin first - margin second) + b * oriented``: the margin difference is
    antisymmetric, and the only prior is the affirmative's (``oriented``: the first member is the affirmative
    of a statement and its negation, :func:`groups.affirmative_first`); a group with no affirmative (an
    either-or question's alternatives) is read in both orders, so which perspective a dataset lists first never
    moves a decision."""
    from sklearn.linear_model import LogisticRegression

    idx = np.asarray(idx)
    one = idx[U["y"][idx].sum(1) == 1]
    x, t, o = side_input(U, rule, one), U["y"][one, 0], U["oriented"][one]
    if not len(x):
        return {"a": 0.0, "b": 0.0}
    if rule == "stance-1":  # one read, an intercept: the order the perspectives are listed in decides (record)
        lr = LogisticRegression(C=1.0, max_iter=2000).fit(x[:, None], t)
        return {"a": float(lr.coef_[0, 0]), "b": float(lr.intercept_[0])}
    flip = o == 0
    X = np.concatenate([np.stack([x, o], 1), np.stack([-x[flip], o[flip]], 1)])
    T = np.concatenate([t, 1 - t[flip]])
    lr = LogisticRegression(C=1.0, max_iter=2000, fit_intercept=False).fit(X, T)
    return {"a": float(lr.coef_[0, 0]), "b": float(lr.coef_[0, 1])}


def group_x(U: dict, idx) -> np.ndarray:
    return U["cos"][idx].mean(1)


def fit_rule(U: dict, rule: str, idx, folds, tau: float) -> dict:
    """Everything the rule needs, chosen on units ``idx`` (their question folds ``folds`` for the inner
    choices), as ``train_judge.choose`` does for v4: the head on all of them; the calibration kind by the inner
    out-of-fold log loss of the head's outputs and the map fitted on those outputs; s's map (stance rules); the
    threshold (best F1 of the decided members) and the band on the calibrated inner out-of-fold outputs."""
    keep = U["known"][np.asarray(idx)]
    idx, folds = np.asarray(idx)[keep], np.asarray(folds)[keep]  # fitted and chosen on units whose labels are known
    ok = U["qcos"][idx] >= tau
    pairs = rule in ("pairwise", "closer")
    raw, side = np.zeros((len(idx), 2)), np.zeros((len(idx), 2))
    for k in np.unique(folds):  # inner out-of-fold raw outputs: the head (and s) fitted on the other inner folds
        m = folds == k
        part = fit_parts(U, rule, idx[~m], tau)
        raw[m], side[m] = raw_outputs(U, part, idx[m])
    x_lab = U["y"][idx].reshape(-1) if pairs else U["y"][idx].max(1)
    r_lab = raw.reshape(-1) if pairs else raw[:, 0]
    f_lab = np.repeat(folds, 2) if pairs else folds
    best = None
    for kind in TJ.CALIBRATIONS:
        cal_oof = np.zeros(len(x_lab))
        for k in np.unique(f_lab):
            m = f_lab == k
            cal_oof[m] = TJ.calibrate(TJ.fit_calibration(kind, r_lab[~m], x_lab[~m]), r_lab[m])
        ll = TJ.log_loss(x_lab, cal_oof)
        if best is None or ll < best[0] - 1e-9:
            best = (ll, kind)
    fit = {**fit_parts(U, rule, idx, tau), "kind": best[1],
           "calibration": TJ.fit_calibration(best[1], r_lab, x_lab)}
    P = combine(fit, raw, side, ok)
    yy, pp = U["y"][idx].reshape(-1), decided(P, rule).reshape(-1)
    fit["threshold"] = best_f1_threshold(yy, pp)
    lo, hi = threshold_band(yy, pp, np.repeat(U["qid"][idx], 2))
    fit["band"] = (min(lo, fit["threshold"]), max(hi, fit["threshold"]))
    fit["inner_f1"] = TJ.f1_at(yy, pp, fit["threshold"])
    return fit


def fit_parts(U: dict, rule: str, idx, tau: float) -> dict:
    """The rule's head (and s's map) fitted on units ``idx`` (those whose labels are known), no calibration map."""
    idx = np.asarray(idx)
    idx = idx[U["known"][idx]]
    fit: dict = {"rule": rule, "tau": tau, "calibration": {"kind": "none"}}
    if rule in ("pairwise", "closer"):
        fit["head"] = TJ.fit_head(U["cos"][idx].reshape(-1), U["y"][idx].reshape(-1))
    else:
        fit["head"] = TJ.fit_head(group_x(U, idx), U["y"][idx].max(1))
        fit["side"] = fit_side(U, rule, idx)
    return fit


def raw_outputs(U: dict, fit: dict, idx) -> tuple[np.ndarray, np.ndarray]:
    """(the head's outputs before calibration, s) per unit and member: for the pair rules the head of each
    member's cosine (s unused); for the stance rules g in both columns and (s, 1 - s)."""
    idx = np.asarray(idx)
    if fit["rule"] in ("pairwise", "closer"):
        return TJ.head_prob(fit["head"], U["cos"][idx].reshape(-1)).reshape(-1, 2), np.ones((len(idx), 2))
    g = TJ.head_prob(fit["head"], group_x(U, idx))
    prior = 1.0 if fit["rule"] == "stance-1" else U["oriented"][idx]
    s = _sigmoid(fit["side"]["a"] * side_input(U, fit["rule"], idx) + fit["side"]["b"] * prior)
    return np.stack([g, g], 1), np.stack([s, 1 - s], 1)


def combine(fit: dict, raw: np.ndarray, side: np.ndarray, ok) -> np.ndarray:
    """Member probabilities: calibrated head outputs (times s for the stance rules), 0 off the topic."""
    P = TJ.calibrate(fit["calibration"], raw.reshape(-1)).reshape(raw.shape) * side
    return np.where(np.asarray(ok)[:, None], P, 0.0)


def apply_rule(U: dict, fit: dict, idx) -> np.ndarray:
    """(len(idx), 2) member probabilities of the fitted rule (gated on topicality), as the judge computes them:
    where g is below the band the side is not read (s = 1/2: ``judges.one_side``)."""
    raw, side = raw_outputs(U, fit, idx)
    if fit["rule"] != "pairwise" and fit["rule"] != "closer" and "band" in fit:
        g = TJ.calibrate(fit["calibration"], raw[:, 0])
        side = np.where((g >= fit["band"][0])[:, None], side, 0.5)
    return combine(fit, raw, side, U["qcos"][np.asarray(idx)] >= fit["tau"])


def decided(P: np.ndarray, rule: str = "one") -> np.ndarray:
    """The probabilities the decision reads: the more probable member keeps its own, the other 0 (ties: the
    first member); ``pairwise`` reads every member's."""
    if rule == "pairwise":
        return P
    out = np.zeros_like(P)
    first = P[:, 0] >= P[:, 1]
    out[first, 0] = P[first, 0]
    out[~first, 1] = P[~first, 1]
    return out


# ------------------------------------------------------------------ nested cross-validation

SHARED = {"on": False}  # --shared-threshold: every rule decides at the pair rule's threshold and band (v4's)


def choose(U: dict, idx, folds, tau: float, rules=RULES) -> dict:
    """The rule with the best inner F1 (ties: listed first) and its fit, on units ``idx``."""
    fits = [fit_rule(U, r, idx, folds, tau) for r in rules]
    if SHARED["on"]:
        pair = fit_rule(U, "pairwise", idx, folds, tau)
        for f in fits:
            f["threshold"], f["band"] = pair["threshold"], pair["band"]
    best = max(range(len(fits)), key=lambda i: (round(fits[i]["inner_f1"], 6), -i))
    return {"chosen": fits[best], "all": {f["rule"]: round(f["inner_f1"], 4) for f in fits}}


def metrics_rows(d: dict, U: dict, P: np.ndarray, dec: np.ndarray, ver: np.ndarray) -> dict:
    """Pair-level figures: each human pair gets its unit member's probability and decision."""
    from sklearn.metrics import cohen_kappa_score, roc_auc_score

    ru, rm = U["row_unit"], U["row_member"]
    y = d["hp"]["y"]
    p, dd, vv = P[ru, rm], dec[ru, rm], ver[ru, rm]
    tp = int((dd & (y == 1)).sum())
    units_both = int(dec.all(1).sum())
    return {"n": int(len(y)), "f1": 2 * tp / max(int(y.sum()) + int(dd.sum()), 1),
            "precision": tp / max(int(dd.sum()), 1), "recall": tp / max(int(y.sum()), 1),
            "kappa": float(cohen_kappa_score(y, dd)), "auc": float(roc_auc_score(y, p)), "ece": ece(y, p),
            "positive_rate": float(dd.mean()), "human_rate": float(y.mean()),
            "unsure_share": float((vv == 0).mean()), "units_both_sides": units_both,
            "brier": float(np.mean((p - y) ** 2)), "reliability": reliability(y, p)}


def cross_validate(d: dict, U: dict, seed: int, rules=RULES) -> dict:
    from berds_core.datasets.devsets import grouped_folds

    qids = sorted(set(U["qid"]))
    fold_of = grouped_folds({q: q for q in qids}, TJ.N_FOLDS, seed=seed)
    ufold = np.array([fold_of[q] for q in U["qid"]])
    TJ.assign_folds(d, seed)  # procon's folds for the gate, as train_judge.py deals them
    pc = d["procon"]
    n = len(U["units"])
    P, dec, ver = np.zeros((n, 2)), np.zeros((n, 2), bool), np.zeros((n, 2), int)
    per_fold = []
    for k in range(TJ.N_FOLDS):
        te, tr = np.flatnonzero(ufold == k), np.flatnonzero(ufold != k)
        hp = d["hp"]
        rows_tr = hp["fold"] != k
        ptr = pc["fold"] != k
        tau = TJ.gate_tau(np.concatenate([hp["qcos"][rows_tr & (hp["y"] == 1)],
                                          pc["S"][np.flatnonzero(ptr), pc["own"][ptr]]]))
        ch = choose(U, tr, ufold[tr], tau, rules)
        f = ch["chosen"]
        p = apply_rule(U, f, te)
        P[te] = p
        pd_ = decided(p, f["rule"])
        dec[te] = pd_ >= f["threshold"]
        lo, hi = f["band"]
        ver[te] = np.where(pd_ >= hi, 1, np.where(p < lo, -1, 0))
        per_fold.append({"fold": k, "rule": f["rule"], "inner_f1": ch["all"], "threshold": round(f["threshold"], 4),
                         "band": [round(lo, 4), round(hi, 4)], "tau": round(tau, 4), "calibration": f.get("kind")})
    m = metrics_rows(d, U, P, dec, ver)
    m["seed"] = seed
    return {"judge": m, "folds": per_fold}


def final(d: dict, U: dict, rules=RULES) -> dict:
    from berds_core.datasets.devsets import grouped_folds

    TJ.assign_folds(d, 0)
    qids = sorted(set(U["qid"]))
    fold_of = grouped_folds({q: q for q in qids}, TJ.N_FOLDS, seed=0)
    ufold = np.array([fold_of[q] for q in U["qid"]])
    hp, pc = d["hp"], d["procon"]
    tau = TJ.gate_tau(np.concatenate([hp["qcos"][hp["y"] == 1], pc["S"][np.arange(len(pc["own"])), pc["own"]]]))
    return choose(U, np.arange(len(U["units"])), ufold, tau, rules)


def write_weights(path: Path, report: dict, stance_cv: str) -> None:
    """v4's weights (pair head, calibration, threshold, band, gate: every pair outside a group, as before) plus
    the one-side rule chosen on all folds and the out-of-fold report (seed 0's figures, the medians over the
    fold seeds, each candidate's)."""
    from berds_core.files.jsonio import atomic_write
    from berds_core.judges.embedded import load_head

    fin = report["final"]
    if fin["rule"] != "stance-2":
        raise SystemExit(f"the nested choice on all folds is {fin['rule']!r}: no one-side rule to ship")
    v4 = load_head(str(TJ.OUT))
    meta = {k: v4[k] for k in ("features", "encoder", "head", "calibration", "threshold", "band", "gate")}
    s0 = report["seeds"][0]["judge"]
    meta.update(version="v5", one_side={
        "rule": fin["rule"], "reads": "both",
        "features": ["mean cos(member perspective, passage text)", "stance margin (support - oppose logit)"],
        "stance_model": ship_side_model(stance_cv, path.parent).name, "head": fin["head"], "calibration": fin["calibration"], "side": fin["side"],
        "threshold": fin["threshold"], "band": list(fin["band"]), "inner_f1": report["final_inner"]},
        oof={"judge": {k: v for k, v in s0.items() if k != "reliability"}, "reliability": s0["reliability"],
             "median": report["median"], "fold_seeds": [r["judge"] | {"rules": [f["rule"] for f in r["folds"]]}
                                                        for r in report["seeds"]],
             "forced": report["forced"], "v4": report["v4"], "stance_reads": report["stance_reads"],
             "stance_cv": Path(stance_cv).name, "recorded": TJ.RECORDED},
        trained=time.strftime("%Y-%m-%d"))
    for r in meta["oof"]["fold_seeds"]:
        r.pop("reliability", None)
    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_write(path, "wb") as fh:
        np.savez(fh, meta=np.array(json.dumps(meta, default=float)))


SIDE_MODEL = "side_stance_v1.npz"


def ship_side_model(stance_cv: str, folder: Path) -> Path:
    """The stance model the rule was fitted on reads the sides in the product too: the model of ``stance_cv``
    that never saw the human pairs' questions (one fold model holding them all out), copied beside the
    judge's weights as ``side_stance_v1.npz`` (version ``side-v1``; weights unchanged)."""
    from berds_core.stance.network import load_weights, save_weights

    work = Path(stance_cv)
    fold_of = json.loads((work / "folds.json").read_text())["fold"]
    folds = {f for q, f in fold_of.items() if q.startswith("human-")}
    if len(folds) != 1:
        raise SystemExit(f"{work}: the human pairs' questions are in {len(folds)} folds; the product reads sides "
                         "with one model, so train one that holds them all out (docs/judge.md)")
    (src,) = sorted(glob.glob(str(work / "models" / f"fold{folds.pop()}-*.npz")))[-1:]
    w = load_weights(src)
    out = folder / SIDE_MODEL
    save_weights(out, {**{"lora_A:" + k: a for k, (a, _) in w["lora"].items()},
                       **{"lora_B:" + k: b for k, (_, b) in w["lora"].items()}},
                 *w["head"], {**w["config"], "version": "side-v1"}, w["uses"],
                 {**w["meta"], "source": Path(src).name, "data": "development only: procon, PERSPECTRUM train+dev, "
                  "demo, BERDS dev (silver); never the BERDS human pairs (their questions held out)"})
    return out


def v4_figures(d: dict, seeds: int) -> dict:
    """v4 as shipped, by train_judge.py's own cross-validation on the same fold seeds (the baseline)."""
    out = []
    for seed in range(seeds):
        TJ.assign_folds(d, seed)
        r = TJ.cross_validate(d)
        oof, fold = np.asarray(r["oof"]), d["hp"]["fold"]
        dec = np.zeros(len(oof), bool)
        for f in r["folds"]:
            dec[fold == f["fold"]] = oof[fold == f["fold"]] >= f["threshold"]
        j = r["judge"]
        out.append({"seed": seed, **{k: float(j[k]) for k in ("f1", "kappa", "ece", "unsure_share")},
                    "positive_rate": float(dec.mean())})
    keys = ("f1", "kappa", "ece", "positive_rate", "unsure_share")
    return {"seeds": out, "median": {k: float(np.median([r[k] for r in out])) for k in keys}}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default=str(ROOT.parent / "shared" / "data"))
    ap.add_argument("--stance-cv", default=str(ROOT / "bench" / "results" / "stance_cv"),
                    help="the stance CV's folder (fold models, folds.json), or 'shipped' (in-sample, debug only)")
    ap.add_argument("--rules", default=",".join(RULES), help="candidate rules (comma-separated)")
    ap.add_argument("--fold-seeds", type=int, default=5)
    ap.add_argument("--out", default=None, help=f"weights to write (default {OUT.name}; never with --stance-cv shipped)")
    ap.add_argument("--shared-threshold", action="store_true",
                    help="every rule decides at the pair rule's threshold and band (v4's, chosen the same way)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    SHARED["on"] = args.shared_threshold
    data = Path(args.data)
    if not (data / "berds-human" / "pers_det.dev.tsv").exists():
        print(f"skip: no human pairs under {data}", file=sys.stderr)
        return 0
    from berds_core.datasets.human_pairs import read_pairs

    rows = read_pairs(data / "berds-human" / "pers_det.dev.tsv")
    d = TJ.load(data, "fp32")
    U = build_units(d, rows)
    needed = sorted({(u["question"], m, u["document"]) for u in U["units"] for m in u["members"]})
    reads = stance_reads(data, rows, needed, args.stance_cv)
    unit_features(d, U, reads)
    rules = tuple(r for r in args.rules.split(",") if r)
    bad = [r for r in rules if r not in RULES + ("stance-1",)]
    if bad:
        raise SystemExit(f"--rules: unknown rule {bad[0]!r}; choose from {', '.join(RULES)}")
    report = {"stance_reads": "in-sample (the studio's stance model; not a result)" if args.stance_cv == "shipped"
              else "a stance model trained without these questions, shipped as the side reader",
              "rules": list(rules), "seeds": [], "forced": {}}
    for seed in range(args.fold_seeds):
        r = cross_validate(d, U, seed, rules)
        report["seeds"].append(r)
        log(f"seed {seed}: F1 {r['judge']['f1']:.3f} kappa {r['judge']['kappa']:.3f} ECE {r['judge']['ece']:.3f} "
            f"positive rate {r['judge']['positive_rate']:.3f} rules {[f['rule'] for f in r['folds']]}")
    for rule in rules:  # each candidate alone, for the table
        rs = [cross_validate(d, U, seed, (rule,))["judge"] for seed in range(args.fold_seeds)]
        report["forced"][rule] = {k: float(np.median([r[k] for r in rs])) for k in
                                  ("f1", "kappa", "ece", "positive_rate", "unsure_share", "auc")}
        report["forced"][rule]["seed0"] = {k: rs[0][k] for k in ("f1", "kappa", "ece", "positive_rate")}
        log(f"{rule} alone, medians: {report['forced'][rule]}")
    med = {k: float(np.median([r["judge"][k] for r in report["seeds"]]))
           for k in ("f1", "kappa", "ece", "positive_rate", "unsure_share", "auc")}
    report["median"] = med
    fin = final(d, U, rules)
    report["final"] = {k: v for k, v in fin["chosen"].items()}
    report["final_inner"] = fin["all"]
    report["v4"] = v4_figures(d, args.fold_seeds)
    log(f"v4 medians over the same fold seeds: {report['v4']['median']}")
    if args.stance_cv != "shipped":
        out = Path(args.out or OUT)
        write_weights(out, report, args.stance_cv)
        log(f"wrote {out}")
    if args.json:
        print(json.dumps(report, indent=1, default=float))
    else:
        print(json.dumps({"median": med, "forced": report["forced"], "final": report["final"]}, indent=1, default=float))
    return 0


if __name__ == "__main__":
    sys.exit(main())
