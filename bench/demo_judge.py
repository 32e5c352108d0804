"""The embedded judge against the built-in demo's gold labels: every (passage, perspective) pair of every
question's pool, with the topicality gate (the question is known).

    python bench/demo_judge.py [--judge embedded] [--weights FILE] [--json]

Prints pairs, positives, F1 / kappa of the judge's labels (its threshold; of a question's opposite
perspectives one side, as every face decides them: ``judges.judge_passages``), how often it says "supports",
AUC, calibration error, the share of pairs the judge is unsure about (each pair's own band) and the precision of
its confident "supports". ``--weights``: another weights file of the embedded judge (``embedded_v4.npz``: each
pair alone). The demo is the project's own writing and
was never tuned on; it is cleaner than web pages, so these are not BERDS figures (docs/judge.md).
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--judge", default="embedded")
    ap.add_argument("--weights", default=None, help="the embedded judge's weights file (default: the shipped)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    from sklearn.metrics import cohen_kappa_score, f1_score, roc_auc_score

    from berds_core.datasets import load_demo
    from berds_core.judges import get_judge, judge_passages
    from berds_core.judges.calibration import ece
    from berds_core.studio.columns import judge_verdicts, question_groups

    if args.weights:
        from berds_core.judges.embedded import EmbeddedJudge

        judge = EmbeddedJudge(weights=args.weights)
    else:
        judge = get_judge(args.judge)
    bundle = load_demo()
    by_id = {p.id: p for p in bundle.passages}
    ys, ps, ds, vs = [], [], [], []
    for q in bundle.questions:
        passages = [by_id[i] for i in bundle.pools[q.id]]
        groups = question_groups(judge, q)
        probs, labels = judge_passages(judge, passages, q.perspectives, q.question, groups)
        gold = bundle.gold.get(q.id, {})
        ys.append([[j in gold.get(p.id, ()) for j in range(len(q.perspectives))] for p in passages])
        ps.append(probs)
        ds.append(labels)
        vs.append(judge_verdicts(judge, probs, groups, labels))
    y = np.concatenate([np.asarray(a, bool).ravel() for a in ys])
    p = np.concatenate([a.ravel() for a in ps])
    d = np.concatenate([a.ravel() for a in ds])
    v = np.concatenate([a.ravel() for a in vs])
    out = {"judge": judge.name, "pairs": int(len(y)), "positives": int(y.sum()), "f1": round(f1_score(y, d), 3),
           "kappa": round(cohen_kappa_score(y, d), 3), "says_supports": round(float(d.mean()), 3),
           "auc": round(roc_auc_score(y, p), 3), "ece": round(ece(y, p), 3),
           "unsure_share": round(float((v == 0).mean()), 3),
           "confident_supports_precision": round(float(y[v == 1].mean()), 3) if (v == 1).any() else None}
    print(json.dumps(out) if args.json else json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
