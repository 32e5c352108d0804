#!/usr/bin/env python
"""Two training runs of the stance model's fold models: does reading with both buy side accuracy? (issue 48)

    python bench/stance_soup.py --runs bench/results/stance_cv bench/results/stance_cv_seed1 [--json]

Each folder is a finished ``scripts/train_stance.py --stage cv`` run on the same ``dataset.json`` and
``folds.json`` (only the training seed differs). On the preset's one-sided candidates (labelled yes side / no
side; the side is the larger of the first two logits, as ``docs/diversity.md``'s side accuracy), out of fold:

- **each run alone** and **their ensemble** (the mean of the two runs' logits: two networks read every
  candidate, twice the preset's reading cost), from each run's ``oof_logits.npz``;
- **their soup** (one network, the preset's cost): per fold, the two LoRA adapters side by side
  (``A = [A1; A2]``, ``B = [B1 / 2, B2 / 2]``, so the merged update is the mean of the two runs' updates)
  and the mean of the two heads, read afresh by this script on the fold's held-out candidates.

No knob is chosen. Skips cleanly when a folder is missing.
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def soup_arrays(a, b) -> dict:
    """The uniform soup of two fold models' weight files (``np.load`` objects) of the same network config:
    adapters concatenated along the rank with each B halved (exact: ``B @ A = (B1 @ A1 + B2 @ A2) / 2``), the
    heads averaged, the rest (config, rules, meta) the first's."""
    cfg, other = (json.loads(str(z["config"])) for z in (a, b))
    differ = sorted(k for k in cfg.keys() | other.keys() if k != "version" and cfg.get(k) != other.get(k))
    if differ or sorted(a.files) != sorted(b.files):
        raise ValueError(f"{getattr(getattr(b, 'zip', None), 'filename', None) or 'the second weights'}: not the first's network "
                         f"({', '.join(differ) or 'other adapted layers'} differ): no soup")
    out = {}
    for k in a.files:
        if k.startswith("lora_A:"):
            out[k] = np.concatenate([a[k].astype(np.float32), b[k].astype(np.float32)], axis=0)
        elif k.startswith("lora_B:"):
            out[k] = np.concatenate([a[k].astype(np.float32) / 2, b[k].astype(np.float32) / 2], axis=1)
        elif k in ("head_W", "head_b"):
            out[k] = (a[k].astype(np.float32) + b[k].astype(np.float32)) / 2
        else:
            out[k] = a[k]
    cfg["version"] = f"soup-{cfg.get('version', 'stance')}"  # its own store key: never read as the first's
    out["config"] = np.array(json.dumps(cfg))
    return out


def side_right(Z: np.ndarray, y: np.ndarray) -> np.ndarray:
    return Z[:, :2].argmax(1) == y


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", nargs=2, required=True, metavar="DIR")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    runs = [Path(r) for r in args.runs]
    for r in runs:
        if not all((r / f).exists() for f in ("dataset.json", "folds.json", "report.json", "oof_logits.npz")):
            print(f"skip: {r} is not a finished cv stage (scripts/train_stance.py --stage cv)", file=sys.stderr)
            return 0
    from berds_core.stance import StanceModel

    if (runs[0] / "folds.json").read_text() != (runs[1] / "folds.json").read_text():
        raise SystemExit(f"{runs[1]}/folds.json: not the folds of {runs[0]}")
    ds = json.loads((runs[0] / "dataset.json").read_text())
    fold_of = json.loads((runs[0] / "folds.json").read_text())["fold"]
    pp = ds["preset_pairs"]
    sided = np.array([i for i, p in enumerate(pp) if p["label"] in (0, 1)])
    y = np.array([pp[i]["label"] for i in sided])
    Z = [np.load(r / "oof_logits.npz")["preset"][sided] for r in runs]
    soup = np.zeros_like(Z[0])
    names = [json.loads((r / "report.json").read_text())["fold_models"] for r in runs]
    with tempfile.TemporaryDirectory() as tmp:
        for f in sorted(names[0], key=int):
            a, b = (np.load(r / "models" / n[f]) for r, n in zip(runs, names))
            path = Path(tmp) / f"soup-fold{f}.npz"
            np.savez(path, **soup_arrays(a, b))
            at = np.array([k for k, i in enumerate(sided) if fold_of[pp[i]["qid"]] == int(f)])
            model = StanceModel(path, encoding="fp32", store=False)
            soup[at] = model.logits([(pp[sided[k]]["target"], pp[sided[k]]["text"]) for k in at])
    readers = {"run 1": Z[0], "run 2": Z[1], "ensemble (mean logits, 2x reading)": (Z[0] + Z[1]) / 2,
               "soup (one network)": soup}
    corpora = sorted({pp[i]["corpus"] for i in sided})
    out = {"runs": [str(r) for r in runs], "candidates": int(len(sided)), "side_accuracy": {}}
    for name, L in readers.items():
        right = side_right(L, y)
        row = {"pooled": round(float(right.mean()), 4)}
        for c in corpora:
            m = np.array([pp[i]["corpus"] == c for i in sided])
            row[c] = round(float(right[m].mean()), 4)
        out["side_accuracy"][name] = row
    if args.json:
        print(json.dumps(out, indent=1))
        return 0
    print(f"| reader | side accuracy, pooled ({len(sided)} one-sided candidates, out of fold) | "
          + " / ".join(corpora) + " |\n|---|---|---|")
    for name, row in out["side_accuracy"].items():
        print(f"| {name} | {row['pooled']:.3f} | " + " / ".join(f"{row[c]:.3f}" for c in corpora) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
