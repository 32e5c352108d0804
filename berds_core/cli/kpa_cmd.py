"""``berds kpa-match``: a judge's predictions for the Key Point Analysis 2021 task, track 1 (and its mAP).

Every argument of the split is scored against every key point of its topic and stance (the judge reads the
argument as the passage and the key point as the perspective, through the prediction cache); the file
written is the task's predictions format, ``{arg_id: {key_point_id: score}}``, which the task's own scorer
reads unchanged. When the split has ``labels_NAME.csv`` the report adds mAP strict / relaxed as that scorer
computes them (``berds_core.eval.kpa_track1``).
"""
from __future__ import annotations

import json

from ..datasets.argkp import candidate_pairs, read_split
from ..errors import InputError
from ..eval.kpa_track1 import track1_map
from ..files.jsonio import atomic_write
from ._parsing import declare
from .judge_cmd import _judge_args, _predict, make_judge


def register(sub) -> None:
    p = sub.add_parser("kpa-match", help="a judge's key point matching predictions (KPA 2021 track 1) and their mAP")
    p.add_argument("--data", required=True, help="folder with arguments_NAME.csv, key_points_NAME.csv "
                                                 "(and labels_NAME.csv)")
    p.add_argument("--split", required=True, help="the split NAME (train, dev, test)")
    p.add_argument("--out", required=True, help="predictions JSON to write")
    _judge_args(p)
    p.set_defaults(func=run)
    declare(p, inputs=("data",), outputs=("out",), servers=("judge",))


def run(args) -> dict:
    if not args.split.replace("-", "").replace("_", "").isalnum():
        raise InputError("--split", None, None, f"expected a split name such as dev, got {args.split!r}")
    s = read_split(args.data, args.split)
    cand = candidate_pairs(s)
    if not cand:
        raise InputError(args.data, None, None, f"split {args.split!r}: no argument has a key point of its topic "
                                                "and stance")
    judge = make_judge(args)
    pairs = [(s.arguments[a]["text"], s.key_points[k]["text"]) for a, k in cand]
    probs, _ = _predict(judge, pairs, args, "--judge")
    preds: dict[str, dict[str, float]] = {}
    for (a, k), p in zip(cand, probs):
        preds.setdefault(a, {})[k] = round(float(p), 6)
    with atomic_write(args.out) as fh:
        json.dump(preds, fh)
    out = {"judge": judge.name, "split": args.split, "out": str(args.out), "arguments": len(s.arguments),
           "key_points": len(s.key_points), "pairs": len(cand)}
    if s.labels is not None:
        try:
            m = track1_map(preds, s.arguments, s.key_points, s.labels)
        except ValueError as e:
            raise InputError(args.data, None, None, f"split {args.split!r}: {e}") from None
        out.update(map_strict=m["map_strict"], map_relaxed=m["map_relaxed"], groups=m["groups"],
                   groups_skipped=m["groups_skipped"], undecided_best=m["undecided"])
    return out
