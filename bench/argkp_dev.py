#!/usr/bin/env python
"""ArgKP dev, KPA 2021 track-1 mAP (the task's scorer, ``berds_core.eval.kpa_track1``) of the studio's judges,
in one run (issue 47, ``docs/judge.md``):

    python bench/argkp_dev.py [--data ../shared/data/argkp] [--split dev] [--encoding fp32] [--json]
        [--ce-weights FILE --head FILE]      # a candidate network and its head instead of the shipped ones

Rows: ``embedded`` (v4, the cosine head), ``argkp`` as shipped (the cross-encoder's match logit beside the
cosine, its head chosen on the BERDS development folds), and the cross-encoder's own ranking (its match logit
``log P(match) - log P(no match)``, no head): every argument against every key point of its topic and
stance, as ``berds kpa-match`` scores them (the judges' predictions are those ``berds kpa-match --judge J``
writes). Skips cleanly when the data folder is missing.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def predictions(cand, scores) -> dict:
    out: dict[str, dict[str, float]] = {}
    for (a, k), p in zip(cand, scores):
        out.setdefault(a, {})[k] = round(float(p), 6)
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", default=str(ROOT.parent / "shared" / "data" / "argkp"))
    ap.add_argument("--split", default="dev")
    ap.add_argument("--encoding", default="fp32")
    ap.add_argument("--ce-weights", default=None, help="the argkp rows' cross-encoder (default: the shipped one)")
    ap.add_argument("--head", default=None, help="the argkp row's head (default: the shipped one)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    if not Path(args.data).exists():
        print(f"skip: {args.data} not found", file=sys.stderr)
        return 0
    from berds_core.datasets.argkp import candidate_pairs, read_split
    from berds_core.eval.kpa_track1 import track1_map
    from berds_core.judges import get_judge
    from berds_core.judges.cross_encoder import match_logits

    s = read_split(args.data, args.split)
    cand = candidate_pairs(s)
    pairs = [(s.arguments[a]["text"], s.key_points[k]["text"]) for a, k in cand]
    rows = {}
    for spec in ("embedded", "argkp"):
        opts = {"cross_encoder": args.ce_weights, "weights": args.head} if spec == "argkp" else {}
        judge = get_judge(spec, encoding=args.encoding, **opts)
        probs, _ = judge.predict(pairs, progress=False)
        rows[f"{spec} ({judge.name})"] = track1_map(predictions(cand, probs), s.arguments, s.key_points, s.labels)
        if spec == "argkp":
            logit = match_logits(judge.cross_encoder.logits([(p, d) for d, p in pairs]))
            rows["argkp network's match logit (no head)"] = track1_map(predictions(cand, logit), s.arguments,
                                                                      s.key_points, s.labels)
    out = {"split": args.split, "encoding": args.encoding, "pairs": len(cand), "arguments": len(s.arguments),
           "rows": {k: {"map_strict": v["map_strict"], "map_relaxed": v["map_relaxed"]} for k, v in rows.items()}}
    if args.json:
        print(json.dumps(out, indent=1))
    else:
        print(f"ArgKP {args.split}, {len(cand)} pairs, {args.encoding}\n\n| judge | mAP strict | mAP relaxed |\n|---|---|---|")
        for k, v in out["rows"].items():
            print(f"| {k} | {v['map_strict']:.3f} | {v['map_relaxed']:.3f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
