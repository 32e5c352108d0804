#!/usr/bin/env python
"""Choose, calibrate and gate the offline embedded judge by question-grouped nested cross-validation; write its weights.

    python scripts/train_judge.py --data ../shared/data [--out berds_core/judges/weights/embedded_v4.npz]
        [--report docs/judge.md] [--plot docs/judge-reliability.png] [--json]

Development data only: the BERDS human pairs' development half (``berds-human/pers_det.dev.tsv``, 276 pairs
of 15 questions) for the judge, and procon's arguments (``debate-sites/procon.json``) with the human pairs
for the topicality gate. The other half of the human pairs is never read.

**The judge.** P(the passage supports the perspective) from the cosine of the packaged MiniLM's embeddings
of perspective and passage text (the vectors dense retrieval stores: one embedding per passage), through a
logistic head and, if the nested choice takes one, a calibration map (``none`` | ``platt`` | ``isotonic``
on the head's inner out-of-fold outputs). Candidates that read the question too cannot be judges (a judge
scores (passage, perspective) pairs); the question is read by the gate.

**The gate** (topicality first). A passage whose cosine with the question is below ``tau`` supports nothing:
``tau`` is the 1st percentile of that cosine over the training folds' supporting passages (human-pair
positives and procon arguments with their own claim).

**Unsure.** The band of thresholds the training questions cannot tell apart
(``judges.calibration.threshold_band``: the F1 threshold's 10th-90th percentiles over bootstrap resamples of
questions); a probability inside it is drawn as "unsure" and not counted by banners or the Playground's
MRecall.

**Nested.** Five question-grouped folds (``devsets.grouped_folds``, seed 0; procon's claims dealt into five
folds the same way). For each held-out fold, everything is chosen on the other four: the calibration kind
(inner out-of-fold log loss), the threshold (inner F1), the band, ``tau``; the held-out fold is scored with
them. The printed figures are out of fold. The shipped weights repeat the choice on all five folds'
out-of-fold outputs and fit the head on all pairs.

**Features** (``--features``): ``cos`` (the shipped v4 judge), ``ce`` (the ArgKP cross-encoder's match logit,
``scripts/train_argkp_judge.py``: trained on ArgKP train only, so no BERDS question is in its training) or
``ce+cos`` (both, side by side in the head). Folds, seeds, calibration, threshold, band and gate are the same
code for every candidate; ``ce`` and ``ce+cos`` write ``berds_core/judges/weights/argkp_judge_v1.npz`` (the
``argkp`` judge's head) unless ``--out`` says otherwise.

The earlier judges under the same folds: the earlier cosine judge (the raw cosine, F1 threshold chosen
nested, as ``embedded-minilm-v2`` did) is recomputed here; the stance-model judge and the stack of its logits
with the cosine need the stance model's fold models (``scripts/train_stance.py --stage cv``) and are quoted
from ``docs/stance.md`` (the stance CV's five folds of the same 15 questions).
"""
from __future__ import annotations

import argparse
import hashlib
import json
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from berds_core.judges.calibration import (best_f1_threshold, ece, f1_at, reliability,  # noqa: E402
                                           threshold_band)
from berds_core.judges.fitting import (CALIBRATIONS, choose_calibration, fit_calibration,  # noqa: E402,F401
                                       fit_head, log_loss)

N_FOLDS = 5
GATE_QUANTILE = 1.0  # percent of supporting passages the gate may lose on the training folds
OUT = ROOT / "berds_core" / "judges" / "weights" / "embedded_v4.npz"
OUT_CE = ROOT / "berds_core" / "judges" / "weights" / "argkp_judge_v1.npz"
FEATURES = ("cos", "ce", "ce+cos")
# the stance-model judge and the stack, out of fold on the same 15 questions (docs/stance.md, 2026-11-26)
RECORDED = {
    "stance model (embedded-stance-v3, the judge main shipped)": {"f1": 0.292, "kappa": 0.075, "auc": 0.622},
    "stack: stance logits + cosine (bench/judge_stack.py, not shipped)": {"f1": 0.369, "kappa": 0.178, "auc": 0.684},
}


def log(msg: str) -> None:
    sys.stderr.write(f"[{time.strftime('%H:%M:%S')}] {msg}\n")


# ------------------------------------------------------------------ the head and its calibration

def head_prob(h: dict, x) -> np.ndarray:
    from berds_core.judges.calibration import head_probability

    return head_probability(h, x)


def calibrate(c: dict, p) -> np.ndarray:
    from berds_core.judges.embedded import apply_calibration

    return apply_calibration(c, np.asarray(p, float))


# ------------------------------------------------------------------ one nested choice

def inner_oof(x, y, folds) -> np.ndarray:
    out = np.zeros(len(y))
    for k in np.unique(folds):
        m = folds == k
        out[m] = head_prob(fit_head(x[~m], y[~m]), x[m])
    return out


def choose(x, y, folds, qids, gate_ok) -> dict:
    """Everything chosen on these folds only: calibration kind, head, calibrator, threshold, band."""
    raw = inner_oof(x, y, folds)
    # the calibrator's own out-of-fold outputs (fitted on the other inner folds' head outputs) choose the kind
    kind, cal, inner_ll = choose_calibration(raw, y, folds)
    p = np.where(gate_ok, calibrate(cal, raw), 0.0)
    t = best_f1_threshold(y, p)
    lo, hi = threshold_band(y, p, qids)
    return {"kind": kind, "inner_log_loss": inner_ll, "head": fit_head(x, y), "calibration": cal, "threshold": t,
            "band": (min(lo, t), max(hi, t))}


def gate_tau(cos_q_positive) -> float:
    return float(np.percentile(cos_q_positive, GATE_QUANTILE))


# ------------------------------------------------------------------ data

def load(data: Path, encoding: str, features: str = "cos", ce_weights: str | None = None) -> dict:
    from berds_core.datasets import load_debate_sites
    from berds_core.datasets.devsets import grouped_folds
    from berds_core.datasets.human_pairs import read_pairs
    from berds_core.embeddings.text_encoders import text_encoder

    rows = read_pairs(data / "berds-human" / "pers_det.dev.tsv")
    te = text_encoder(None, encoding=encoding)
    Q = te.embed([r["question"] for r in rows])
    D = te.embed([r["document"] for r in rows])
    P = te.embed([r["perspective"] for r in rows])
    qid = np.array([hashlib.sha1(r["question"].encode()).hexdigest()[:10] for r in rows])
    hp = {"cos": np.sum(P * D, 1), "qcos": np.sum(Q * D, 1), "y": np.array([int(r["label"]) for r in rows]),
          "qid": qid, "Q": Q, "D": D}
    if features != "cos":
        from berds_core.judges.cross_encoder import match_logits
        from berds_core.stance.model import StanceModel

        ce = StanceModel(ce_weights, encoding=encoding)
        hp["ce"] = match_logits(ce.logits([(r["perspective"], r["document"]) for r in rows]))
    hp["x"] = {"cos": hp["cos"], "ce": hp.get("ce"),
               "ce+cos": np.stack([hp["ce"], hp["cos"]], 1) if "ce" in hp else None}[features]
    questions, passages, gold = load_debate_sites(data / "debate-sites" / "procon.json")
    own = {pid: q.id for q in questions for pid in gold.get(q.id, {})}
    keep = [p for p in passages if p.id in own]
    PQ = te.embed([q.question for q in questions])
    PD = te.embed([p.text for p in keep])
    qi = {q.id: i for i, q in enumerate(questions)}
    pc = {"S": PD @ PQ.T, "own": np.array([qi[own[p.id]] for p in keep]), "qids": [q.id for q in questions],
          "owner": [own[p.id] for p in keep]}
    d = {"hp": hp, "procon": pc, "encoder": te.key}
    assign_folds(d, seed=0)
    return d


def assign_folds(d: dict, seed: int) -> None:
    """Five question-grouped folds (``devsets.grouped_folds``) of the human pairs' and procon's questions."""
    from berds_core.datasets.devsets import grouped_folds

    hp, pc = d["hp"], d["procon"]
    fold_of = grouped_folds({q: q for q in sorted(set(hp["qid"]))}, N_FOLDS, seed=seed)
    hp["fold"] = np.array([fold_of[q] for q in hp["qid"]])
    pfold = grouped_folds({q: q for q in pc["qids"]}, N_FOLDS, seed=seed)
    pc["fold"] = np.array([pfold[q] for q in pc["owner"]])
    pc["qfold"] = np.array([pfold[q] for q in pc["qids"]])


# ------------------------------------------------------------------ evaluation

def metrics(y, p, d) -> dict:
    from sklearn.metrics import average_precision_score, cohen_kappa_score, roc_auc_score

    y, d = np.asarray(y, int), np.asarray(d, bool)
    tp = int((d & (y == 1)).sum())
    return {"n": int(len(y)), "positives": int(y.sum()), "f1": f1_at(y, d.astype(float), 0.5),
            "precision": tp / max(int(d.sum()), 1), "recall": tp / max(int(y.sum()), 1),
            "kappa": float(cohen_kappa_score(y, d)), "auc": float(roc_auc_score(y, p)),
            "average_precision": float(average_precision_score(y, p)), "ece": ece(y, p),
            "brier": float(np.mean((np.asarray(p) - y) ** 2)), "log_loss": log_loss(y, p)}


def cross_validate(d: dict) -> dict:
    hp, pc = d["hp"], d["procon"]
    x, y, folds, qid = hp["x"], hp["y"], hp["fold"], hp["qid"]
    cos = hp["cos"]
    oof, dec, ver = np.zeros(len(y)), np.zeros(len(y), bool), np.zeros(len(y), int)
    cos_dec = np.zeros(len(y), bool)
    gate = {"hp_pos_lost": 0, "hp_pos": 0, "procon_pos_lost": 0, "procon_pos": 0, "off_rejected": 0, "off": 0}
    per_fold = []
    for k in range(N_FOLDS):
        te, tr = folds == k, folds != k
        ptr, pte = pc["fold"] != k, pc["fold"] == k
        pos_q = np.concatenate([hp["qcos"][tr & (y == 1)], pc["S"][np.flatnonzero(ptr), pc["own"][ptr]]])
        tau = gate_tau(pos_q)
        ch = choose(x[tr], y[tr], folds[tr], qid[tr], hp["qcos"][tr] >= tau)
        p = calibrate(ch["calibration"], head_prob(ch["head"], x[te]))
        ok = hp["qcos"][te] >= tau
        p = np.where(ok, p, 0.0)
        oof[te], dec[te] = p, p >= ch["threshold"]
        lo, hi = ch["band"]
        ver[te] = np.where(p >= hi, 1, np.where(p < lo, -1, 0))
        # the earlier cosine judge: the raw cosine, its F1 threshold chosen on the training folds
        cos_dec[te] = cos[te] >= best_f1_threshold(y[tr], cos[tr])
        # the gate on held-out questions: supporting passages lost, off-topic passages rejected
        gate["hp_pos"] += int((y[te] == 1).sum())
        gate["hp_pos_lost"] += int(((y[te] == 1) & ~ok).sum())
        own = pc["S"][np.flatnonzero(pte), pc["own"][pte]]
        gate["procon_pos"] += int(len(own))
        gate["procon_pos_lost"] += int((own < tau).sum())
        heldq = np.flatnonzero(pc["qfold"] == k)
        S = pc["S"][np.flatnonzero(pte)][:, heldq]
        mask = heldq[None, :] != pc["own"][pte][:, None]
        off = S[mask]
        Dh, Qh = hp["D"][te], hp["Q"][te]
        hq = qid[te]
        uq = np.unique(hq)
        Qu = np.stack([Qh[np.flatnonzero(hq == q)[0]] for q in uq])
        Sh = Dh @ Qu.T
        mh = hq[:, None] != uq[None, :]
        off = np.concatenate([off, Sh[mh]])
        gate["off"] += int(len(off))
        gate["off_rejected"] += int((off < tau).sum())
        per_fold.append({"fold": k, "calibration": ch["kind"], "threshold": round(ch["threshold"], 4),
                         "band": [round(lo, 4), round(hi, 4)], "tau": round(tau, 4)})
    m = metrics(y, oof, dec)
    conf = ver != 0
    m["unsure_share"] = float((ver == 0).mean())
    m["confident_precision"] = float(((ver == 1) & (y == 1)).sum() / max((ver == 1).sum(), 1))
    m["confident_accuracy"] = float(((ver == 1) == (y == 1))[conf].mean()) if conf.any() else 0.0
    from sklearn.metrics import cohen_kappa_score, roc_auc_score

    earlier = {"f1": f1_at(y, cos_dec.astype(float), 0.5), "kappa": float(cohen_kappa_score(y, cos_dec)),
               "auc": float(roc_auc_score(y, cos))}
    # a one-feature head is monotone in its feature: the ranking's own AUC
    m["ranking_auc"] = float(roc_auc_score(y, x)) if np.ndim(x) == 1 else m["auc"]
    return {"judge": m, "earlier_cosine": earlier, "gate": gate, "folds": per_fold,
            "reliability": reliability(y, oof), "oof": oof.tolist(), "y": y.tolist()}


def final(d: dict) -> dict:
    hp, pc = d["hp"], d["procon"]
    x, y, folds, qid = hp["x"], hp["y"], hp["fold"], hp["qid"]
    pos_q = np.concatenate([hp["qcos"][y == 1], pc["S"][np.arange(len(pc["own"])), pc["own"]]])
    tau = gate_tau(pos_q)
    ch = choose(x, y, folds, qid, hp["qcos"] >= tau)
    return {**ch, "tau": tau}


# ------------------------------------------------------------------ outputs

FEATURE_NAMES = {"cos": ["cos(perspective, passage text)"], "ce": ["ArgKP cross-encoder match logit"],
                 "ce+cos": ["ArgKP cross-encoder match logit", "cos(perspective, passage text)"]}


def write_weights(path: Path, fin: dict, report: dict, encoder: str, features: str = "cos",
                  ce_weights: str | None = None) -> None:
    from berds_core.files.jsonio import atomic_write

    meta = {"version": "v4" if features == "cos" else "argkp-v1", "features": FEATURE_NAMES[features],
            "encoder": encoder, **({"cross_encoder": Path(ce_weights).name} if features != "cos" else {}),
            "head": fin["head"], "calibration": fin["calibration"], "threshold": fin["threshold"],
            "band": list(fin["band"]), "gate": {"tau": fin["tau"], "reads": "cos(question, passage text)"},
            "oof": {"judge": {k: v for k, v in report["judge"].items()}, "earlier_cosine": report["earlier_cosine"],
                    "gate": report["gate"], "folds": report["folds"], "fold_seeds": report["fold_seeds"],
                    "recorded": RECORDED},
            "trained": time.strftime("%Y-%m-%d")}
    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_write(path, "wb") as fh:
        np.savez(fh, meta=np.array(json.dumps(meta)))


def plot(path: Path, rel: list[dict], title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(4.6, 4.2), dpi=120)
    ax.plot([0, 1], [0, 1], ls="--", c="#888", lw=1, label="perfectly calibrated")
    xs, ys, ns = [b["mean_p"] for b in rel], [b["rate"] for b in rel], [b["n"] for b in rel]
    ax.plot(xs, ys, marker="o", c="#1f5f8b", label="embedded judge, out of fold")
    for xx, yy, n in zip(xs, ys, ns):
        ax.annotate(str(n), (xx, yy), textcoords="offset points", xytext=(4, -10), fontsize=7, color="#555")
    ax.set_xlim(0, 1), ax.set_ylim(0, 1)
    ax.set_xlabel("predicted P(supports) (bin mean)"), ax.set_ylabel("observed share supporting")
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=7, loc="upper left")
    fig.tight_layout()
    fig.savefig(path)


HEADS = {"cos": "embedded v4** (cosine head", "ce": "argkp** (cross-encoder logit head",
         "ce+cos": "argkp** (cross-encoder logit + cosine head"}


def markdown(report: dict, fin: dict, features: str = "cos") -> str:
    j, e, g = report["judge"], report["earlier_cosine"], report["gate"]
    lines = ["| judge (out of fold, 276 pairs, 15 questions) | F1 | kappa | AUC | ECE |", "|---|---|---|---|---|",
             f"| **{HEADS[features]}, calibrated, topicality gate) | **{j['f1']:.3f}** | **{j['kappa']:.3f}** | "
             f"{j['auc']:.3f} (ranking {j['ranking_auc']:.3f}) | **{j['ece']:.3f}** |",
             f"| earlier cosine judge (embedded-minilm-v2's rule, same folds) | {e['f1']:.3f} | {e['kappa']:.3f} | "
             f"{e['auc']:.3f} | - |"]
    for name, r in RECORDED.items():
        lines.append(f"| {name}, recorded | {r['f1']:.3f} | {r['kappa']:.3f} | {r['auc']:.3f} | - |")
    lines += ["", f"Precision {j['precision']:.3f}, recall {j['recall']:.3f}, average precision "
                  f"{j['average_precision']:.3f}, Brier {j['brier']:.3f}. Unsure (inside the band): "
                  f"{j['unsure_share']:.1%} of pairs; confident decisions right {j['confident_accuracy']:.1%} "
                  f"of the time, confident \"supports\" right {j['confident_precision']:.1%}.",
              f"Gate, held-out questions: {g['hp_pos_lost']} of {g['hp_pos']} supporting human pairs and "
              f"{g['procon_pos_lost']} of {g['procon_pos']} procon arguments gated; {g['off_rejected']:,} of "
              f"{g['off']:,} off-topic (question, passage) pairs rejected ({g['off_rejected'] / max(g['off'], 1):.1%}).",
              "Over fold assignments (seeds " + ", ".join(str(r["seed"]) for r in report["fold_seeds"]) + "): F1 "
              + _range([r["f1"] for r in report["fold_seeds"]]) + " (earlier cosine judge "
              + _range([r["earlier_f1"] for r in report["fold_seeds"]]) + "), kappa "
              + _range([r["kappa"] for r in report["fold_seeds"]]) + " (earlier "
              + _range([r["earlier_kappa"] for r in report["fold_seeds"]]) + "), ECE "
              + _range([r["ece"] for r in report["fold_seeds"]]) + ".",
              f"Shipped: calibration `{fin['kind']}`, threshold {fin['threshold']:.3f}, unsure band "
              f"[{fin['band'][0]:.3f}, {fin['band'][1]:.3f}), gate tau {fin['tau']:.3f}."]
    return "\n".join(lines)


def _range(v) -> str:
    return f"{np.median(v):.3f} (median; {min(v):.3f} to {max(v):.3f})"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default=str(ROOT.parent / "shared" / "data"))
    ap.add_argument("--out", default=None, help=f"weights to write (default: {OUT.name} for cos, {OUT_CE.name} "
                                                "otherwise)")
    ap.add_argument("--features", choices=FEATURES, default="cos",
                    help="the head's features: cos (v4), ce (the ArgKP cross-encoder's logit) or ce+cos")
    ap.add_argument("--ce-weights", default=None, help="the cross-encoder's weights (default: the shipped "
                                                       "argkp_ce_v1.npz)")
    ap.add_argument("--encoding", default="fp32", help="precision of the features (fp32: the judge of every precision)")
    ap.add_argument("--plot", default=None, help="write the out-of-fold reliability plot (PNG) here")
    ap.add_argument("--fold-seeds", type=int, default=5,
                    help="also report the figures under this many fold assignments (seeds 0..N-1; seed 0 ships)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    data = Path(args.data)
    if not (data / "berds-human" / "pers_det.dev.tsv").exists():
        print(f"skip: no human pairs under {data}", file=sys.stderr)
        return 0
    from berds_core.judges.cross_encoder import CE_WEIGHTS

    ce_weights = args.ce_weights or str(CE_WEIGHTS)
    d = load(data, args.encoding, args.features, ce_weights)
    spread = []
    for seed in range(1, args.fold_seeds):  # other fold assignments: how much the figures move with the folds
        assign_folds(d, seed)
        r = cross_validate(d)
        spread.append({"seed": seed, "f1": r["judge"]["f1"], "kappa": r["judge"]["kappa"], "ece": r["judge"]["ece"],
                       "earlier_f1": r["earlier_cosine"]["f1"], "earlier_kappa": r["earlier_cosine"]["kappa"]})
    assign_folds(d, 0)
    report = cross_validate(d)
    report["fold_seeds"] = [{"seed": 0, "f1": report["judge"]["f1"], "kappa": report["judge"]["kappa"],
                             "ece": report["judge"]["ece"], "earlier_f1": report["earlier_cosine"]["f1"],
                             "earlier_kappa": report["earlier_cosine"]["kappa"]}] + spread
    fin = final(d)
    out = args.out or str(OUT if args.features == "cos" else OUT_CE)
    write_weights(Path(out), fin, report, d["encoder"], args.features, ce_weights)
    if args.plot:
        plot(Path(args.plot), report["reliability"],
             f"Embedded judge v4: ECE {report['judge']['ece']:.3f} out of fold\n(BERDS human pairs, dev half)")
    if args.json:
        print(json.dumps({k: v for k, v in report.items() if k not in ("oof", "y")}, indent=1))
    else:
        print(markdown(report, fin, args.features))
    return 0


if __name__ == "__main__":
    sys.exit(main())
