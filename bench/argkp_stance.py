#!/usr/bin/env python
"""Does the ArgKP cross-encoder read stance better than the stance model? (issue 47, item 4; ``docs/stance.md``)

    python bench/argkp_stance.py [--stance-cv bench/results/stance_cv] [--ce-weights FILE] [--json]

On the stance model's own out-of-fold measures (``scripts/train_stance.py``'s ``dataset.json`` and
``report.json`` in ``--stance-cv``):

- **the preset's candidates**: every one-sided candidate (the union of the dense and BM25 top 20 of the
  development corpora, labelled yes side / no side); the cross-encoder's side is the larger of its match
  logits against the question's two side statements (``datasets.sides.yes_no_sides``, what the preset has
  at query time);
- **discovery's T2**: PERSPECTRUM's gold (claim, perspective) pairs; supports when the match logit against the
  claim exceeds the one against its negation.

No knob is chosen (an argmax of two logits), and the ArgKP network never read these sources, so its figures
are out of sample as they stand; the stance model's are its five fold models' out-of-fold figures from the
same files. Skips cleanly when the folder is missing.
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
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--stance-cv", default=str(ROOT / "bench" / "results" / "stance_cv"))
    ap.add_argument("--ce-weights", default=None, help="default: the shipped argkp cross-encoder")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    work = Path(args.stance_cv)
    if not (work / "dataset.json").exists() or not (work / "report.json").exists():
        print(f"skip: {work} has no dataset.json / report.json (scripts/train_stance.py --stage cv)", file=sys.stderr)
        return 0
    from berds_core.datasets.sides import yes_no_sides
    from berds_core.judges.cross_encoder import CE_WEIGHTS, match_logits
    from berds_core.stance import StanceModel

    ds = json.loads((work / "dataset.json").read_text())
    report = json.loads((work / "report.json").read_text())
    ce = StanceModel(str(args.ce_weights or CE_WEIGHTS), encoding="fp32")
    one_sided = [p for p in ds["preset_pairs"] if p["label"] in (0, 1)]
    sides = {p["target"]: yes_no_sides(p["target"]) for p in one_sided}
    pairs = [(t, p["text"]) for p in one_sided for t in sides[p["target"]]]
    t2 = ds["t2_pairs"]
    pairs += [(t, p["text"]) for p in t2 for t in (p["claim"], p["negation"])]
    logit = match_logits(ce.logits(pairs))
    n = 2 * len(one_sided)
    pre, t2l = logit[:n].reshape(-1, 2), logit[n:].reshape(-1, 2)
    out = {"network": Path(args.ce_weights or CE_WEIGHTS).name, "preset": {}, "t2": {}}
    right = (pre[:, 1] > pre[:, 0]).astype(int) == np.array([p["label"] for p in one_sided])
    for corpus in sorted({p["corpus"] for p in one_sided}) + ["pooled"]:
        m = np.array([corpus in ("pooled", p["corpus"]) for p in one_sided])
        out["preset"][corpus] = {"candidates": int(m.sum()), "side_accuracy": round(float(right[m].mean()), 4)}
    t2_right = (t2l[:, 1] > t2l[:, 0]).astype(int) == np.array([p["label"] for p in t2])
    out["t2"] = {"pairs": len(t2), "accuracy": round(float(t2_right.mean()), 4)}
    pc = report["preset_candidates"]
    out["stance_model"] = {"preset": {c: {"candidates": v["sided_candidates"], "side_accuracy": round(v["side_accuracy"], 4)}
                                      for c, v in pc.items()},
                           "t2": {"pairs": report["t2"]["all"]["pairs"], "accuracy": round(report["t2"]["all"]["accuracy"], 4)}}
    if args.json:
        print(json.dumps(out, indent=1))
        return 0
    print(f"| reader | preset side accuracy, pooled ({out['preset']['pooled']['candidates']} one-sided candidates) | "
          + " / ".join(c for c in out["preset"] if c != "pooled") + f" | T2 accuracy ({len(t2)} pairs) |\n|---|---|---|---|")
    for name, r in ((f"ArgKP cross-encoder ({out['network']}), argmax of two match logits", out),
                    ("the stance model, its five fold models out of fold (report.json)", out["stance_model"])):
        print(f"| {name} | {r['preset']['pooled']['side_accuracy']:.3f} | "
              + " / ".join(f"{r['preset'][c]['side_accuracy']:.3f}" for c in out["preset"] if c != "pooled")
              + f" | {r['t2']['accuracy']:.3f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
