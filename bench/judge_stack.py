"""Would a stack of the stance model's judge logits with the MiniLM cosine make a better embedded judge?

    python bench/judge_stack.py [--work bench/results/stance_cv]

Reads a finished ``scripts/train_stance.py --stage cv`` folder: the question-grouped folds
(``folds.json``), the human pairs (``dataset.json``) and the out-of-fold logits of every pair and of
its negated perspective (``oof_logits.npz``, each pair scored by the fold model that never saw its
question). Features per pair: ``cos`` (the packaged MiniLM's cosine of perspective and passage, what
the earlier embedded judge thresholded), ``stance`` (the three logits), ``stance+neg`` (and those of
the negated perspective), ``both`` / ``all`` (with the cosine). A logistic regression is fitted on
four folds and applied to the fifth; its F1 threshold is chosen on the four folds' own inner
out-of-fold outputs (nested). Prints AUC, F1 and Cohen's kappa over all pairs, out of fold.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def nested(F, y, folds, C: float = 1.0):
    from sklearn.linear_model import LogisticRegression

    from berds_core.stance.rules import best_threshold, f1_at

    oof, pred = np.zeros(len(y)), np.zeros(len(y), bool)
    for k in np.unique(folds):
        te = folds == k
        Fi, yi, fi = F[~te], y[~te], folds[~te]
        inner = np.zeros(len(yi))
        for kk in np.unique(fi):
            m = fi == kk
            inner[m] = LogisticRegression(C=C, max_iter=2000).fit(Fi[~m], yi[~m]).predict_proba(Fi[m])[:, 1]
        t = best_threshold(yi, inner, f1_at)
        oof[te] = LogisticRegression(C=C, max_iter=2000).fit(Fi, yi).predict_proba(F[te])[:, 1]
        pred[te] = oof[te] >= t
    return oof, pred


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--work", default=str(ROOT / "bench" / "results" / "stance_cv"))
    args = ap.parse_args(argv)
    from sklearn.metrics import cohen_kappa_score, roc_auc_score

    from berds_core.embeddings.text_encoders import text_encoder
    from berds_core.stance.rules import f1_at

    work = Path(args.work)
    if not (work / "oof_logits.npz").exists():
        print(f"skip: no out-of-fold logits in {work} (run scripts/train_stance.py --stage cv)", file=sys.stderr)
        return 0
    ds = json.loads((work / "dataset.json").read_text())
    fold = json.loads((work / "folds.json").read_text())["fold"]
    Z = np.load(work / "oof_logits.npz")
    hp = ds["human_pairs"]
    y = np.array([p["label"] for p in hp])
    folds = np.array([fold[p["qid"]] for p in hp])
    te = text_encoder(None)
    cos = np.sum(te.embed([p["perspective"] for p in hp]) * te.embed([p["text"] for p in hp]), axis=1)
    zj, zn = Z["judge"], Z["judge_neg"]
    rows = {"cos": np.c_[cos], "stance": zj, "stance+neg": np.c_[zj, zn], "both": np.c_[zj, cos],
            "all": np.c_[zj, zn, cos]}
    print(f"{len(y)} human pairs ({int(y.sum())} positive), {len(np.unique(folds))} question-grouped folds\n")
    print("| features | AUC | F1 | kappa |\n|---|---|---|---|")
    for name, F in rows.items():
        oof, pred = nested(F, y, folds)
        print(f"| {name} | {roc_auc_score(y, oof):.3f} | {f1_at(y, pred.astype(float), 0.5):.3f} | "
              f"{cohen_kappa_score(y, pred):.3f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
