#!/usr/bin/env python
"""Train the stance cross-encoder on development data only; write berds_core/judges/weights/stance_v2.npz.

    python scripts/train_stance.py --data ../shared/data [--out PATH] [--corpora procon,perspectrum,demo]
        [--layers 6] [--lora-r 16] [--max-length 64] [--epochs 2] [--negatives 2] [--per-question 4] [--seed 0]

What it learns: for a question and a candidate passage, whether the passage
argues for the question's yes-answer, for its no-answer, or is off the
question (``berds_core.diversify.stance``). Examples come from the
development corpora in gold form (``berds_core.datasets.devsets.dev_bundles``):

- every passage labelled with exactly one side of a question (the side is the
  stance of the perspective it supports: ``support`` -> yes, ``oppose`` -> no;
  perspectives without a stance and passages on both sides are skipped);
- ``--negatives`` passages per question from its candidate pool (the union of
  the dense and BM25 top 30) that support none of its perspectives -> off.

Network: the packaged all-MiniLM-L6-v2 (first ``--layers`` layers), LoRA
(rank ``--lora-r``, alpha 2r) on every linear layer of the encoder, mean
pooling, a 3-way linear head; AdamW, linear warm-up and decay, cross-entropy.
Only the LoRA factors and the head are saved (float16), about 1.2 MB.

Out-of-fold figures (side accuracy against the cosine-to-sides rule, and what
the re-ranker makes of the probabilities) come from ``bench/diversity.py``,
which trains one model per question-grouped fold with ``train_network`` below.
This script trains the shipped model on all development questions.
"""
from __future__ import annotations

import argparse
import itertools
import json
import random
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

DEFAULTS = {"layers": 6, "lora_r": 16, "max_length": 64, "epochs": 2.0, "lr": 1e-3, "batch_size": 32,
            "negatives": 2, "per_question": 4, "seed": 0}
TARGETS = ("query", "key", "value", "dense")


def log(msg: str) -> None:
    sys.stderr.write(msg + "\n")
    sys.stderr.flush()


def side_of(question, supported: set[int]) -> int | None:
    """0 (yes) / 1 (no) for a passage supporting ``supported`` perspectives, None when unclear."""
    stances = question.stances or []
    sides = {stances[j] for j in supported if j < len(stances)} - {None}
    if sides == {"support"}:
        return 0
    if sides == {"oppose"}:
        return 1
    return None


def stance_examples(bundle, pools: dict[str, list[int]] | None = None, negatives: int = 2, seed: int = 0,
                    per_question: int = 0):
    """``(question id, question, passage string, label)`` for one gold-labelled bundle.

    ``pools``: question id -> candidate rows (into ``bundle.passages``) from which
    off-question negatives are drawn (the first ``negatives`` unlabelled ones after
    a seeded shuffle of the pool). ``per_question`` > 0 keeps at most that many
    sided passages per question, alternating sides (PERSPECTRUM clusters repeat
    one perspective in several wordings; this keeps training time in bounds).
    """
    from berds_core.diversify.stance import stance_text

    rng = random.Random(seed)
    row_of = {p.id: i for i, p in enumerate(bundle.passages)}
    out = []
    for q in bundle.questions:
        gold = bundle.gold.get(q.id, {})
        sided = {0: [], 1: []}
        for pid in sorted(gold):
            side = side_of(q, set(gold[pid]))
            if side is not None:
                sided[side].append(pid)
        for lst in sided.values():
            rng.shuffle(lst)
        picks = [pid for pair in itertools.zip_longest(sided[0], sided[1]) for pid in pair if pid is not None]
        if per_question > 0:
            picks = picks[:per_question]
        for pid in picks:
            out.append((q.id, q.question, stance_text(bundle.passages[row_of[pid]]), side_of(q, set(gold[pid]))))
        if pools and negatives:
            free = [r for r in pools.get(q.id, []) if bundle.passages[r].id not in gold]
            rng.shuffle(free)
            out += [(q.id, q.question, stance_text(bundle.passages[r]), 2) for r in free[:negatives]]
    return out


def candidate_pools(bundle, depth: int = 30, progress: bool = False) -> dict[str, list[int]]:
    """Question id -> rows of the union of the dense and BM25 top ``depth`` (dense order first)."""
    from berds_core.corpus import corpus_from_passages
    from berds_core.retrieval import get_retriever

    corpus = corpus_from_passages(bundle.passages, bundle.name)
    texts = [q.question for q in bundle.questions]
    lists = [get_retriever(kind, corpus, progress=progress).search(texts, depth) for kind in ("dense", "bm25")]
    return {q.id: list(dict.fromkeys([r for r, _ in lists[0][i]] + [r for r, _ in lists[1][i]]))
            for i, q in enumerate(bundle.questions)}


def train_network(examples, *, base: str | None = None, layers: int = 6, lora_r: int = 8, max_length: int = 96,
                  epochs: float = 1.0, lr: float = 5e-4, batch_size: int = 32, seed: int = 0, progress=log, **_):
    """Fine-tune LoRA factors and the head on ``examples``; return the (PEFT-wrapped) network."""
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import AutoTokenizer

    from berds_core.diversify.stance import build_network
    from berds_core.embeddings.models import resolve_model

    base = base or resolve_model(None)
    torch.manual_seed(seed)
    rng = random.Random(seed)
    tok = AutoTokenizer.from_pretrained(base)
    net = build_network(base, layers)
    net.enc = get_peft_model(net.enc, LoraConfig(r=lora_r, lora_alpha=2 * lora_r, target_modules=list(TARGETS),
                                                 lora_dropout=0.0))
    params = [p for p in net.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(params, lr=lr, weight_decay=0.01)
    steps = max(1, int(epochs * len(examples) / batch_size))
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: min(1.0, (s + 1) / max(1, 0.06 * steps)) * max(0.0, 1 - s / steps))
    net.train()
    t0, step = time.time(), 0
    while step < steps:
        order = list(range(len(examples)))
        rng.shuffle(order)
        for i in range(0, len(order), batch_size):
            batch = [examples[j] for j in order[i:i + batch_size]]
            enc = tok([b[1] for b in batch], [b[2] for b in batch], truncation="only_second",
                      max_length=max_length, padding=True, return_tensors="pt")
            loss = torch.nn.functional.cross_entropy(net(**enc), torch.tensor([b[3] for b in batch]))
            loss.backward()
            torch.nn.utils.clip_grad_norm_(params, 1.0)
            opt.step()
            sched.step()
            opt.zero_grad()
            step += 1
            if progress and step % 100 == 0:
                progress(f"  step {step}/{steps} loss {loss.item():.3f} ({time.time() - t0:.0f}s)")
            if step >= steps:
                break
    net.eval()
    return net


def export_weights(net, config: dict, meta: dict, path) -> Path:
    """Write the LoRA factors (per target layer), the head and the config/report to ``path`` (.npz)."""
    arrays = {}
    for name, module in net.enc.named_modules():
        if hasattr(module, "lora_A") and "default" in getattr(module, "lora_A", {}):
            clean = name.replace("base_model.model.", "", 1)
            arrays["lora_A:" + clean] = module.lora_A["default"].weight.detach().cpu().numpy().astype(np.float16)
            arrays["lora_B:" + clean] = module.lora_B["default"].weight.detach().cpu().numpy().astype(np.float16)
    if not arrays:
        raise ValueError("no LoRA layers found in the network")
    arrays["head_W"] = net.head.weight.detach().cpu().numpy().astype(np.float32)
    arrays["head_b"] = net.head.bias.detach().cpu().numpy().astype(np.float32)
    arrays["config"] = np.array(json.dumps(config))
    arrays["meta"] = np.array(json.dumps(meta))
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.stem}.tmp.npz")
    np.savez_compressed(tmp, **arrays)
    tmp.replace(path)
    return path


def model_config(args: dict, base: str | None = None) -> dict:
    return {"version": args.get("version", "v1"), "base": base, "layers": int(args["layers"]),
            "lora_r": int(args["lora_r"]), "lora_alpha": 2 * int(args["lora_r"]),
            "max_length": int(args["max_length"]), "classes": ["yes", "no", "off"], "passage": "title. text"}


def fit_and_export(examples, path, opts: dict, meta: dict | None = None, base: str | None = None) -> Path:
    """Train on ``examples`` and write the weights file; ``opts`` as ``DEFAULTS``."""
    net = train_network(examples, base=base, **opts)
    return export_weights(net, model_config(opts, base), meta or {}, path)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", default=str(ROOT.parent / "shared" / "data"))
    ap.add_argument("--corpora", default="procon,perspectrum,demo")
    ap.add_argument("--out", default=str(ROOT / "berds_core" / "judges" / "weights" / "stance_v2.npz"))
    for key, val in DEFAULTS.items():
        ap.add_argument("--" + key.replace("_", "-"), type=type(val), default=val)
    ap.add_argument("--exclude", help="JSON file: a list of question ids left out of training (cross-validation)")
    ap.add_argument("--version", default="v2", help="model version (part of the prediction cache key)")
    ap.add_argument("--threads", type=int, default=0, help="torch threads (0: torch's default)")
    ap.add_argument("--quiet", action="store_true")
    args = ap.parse_args(argv)
    from berds_core.datasets.devsets import dev_bundles

    if args.threads:
        import torch

        torch.set_num_threads(args.threads)
    bundles, missing = dev_bundles(args.data, args.corpora.split(","))
    if missing:
        log(f"skipped: {missing}")
    exclude = set(json.loads(Path(args.exclude).read_text())) if args.exclude else set()
    opts = {k: getattr(args, k) for k in DEFAULTS}
    examples, counts = [], {}
    for name, b in bundles.items():
        if exclude:
            b = type(b)(b.name, [q for q in b.questions if q.id not in exclude], b.passages, b.gold)
        ex = stance_examples(b, candidate_pools(b, progress=not args.quiet), args.negatives, args.seed,
                             args.per_question)
        counts[name] = {c: sum(e[3] == i for e in ex) for i, c in enumerate(("yes", "no", "off"))}
        examples += ex
    log(f"examples {len(examples)}: {counts}")
    t0 = time.time()
    meta = {"trained_on": counts, "options": opts, "excluded_questions": len(exclude),
            "data": "development only: procon.json, PERSPECTRUM train+dev, demo bundle"}
    path = fit_and_export(examples, args.out, dict(opts, version=args.version), meta)
    log(f"trained in {time.time() - t0:.0f}s; wrote {path} ({path.stat().st_size / 1024:.0f} KB)")
    print(json.dumps({"out": str(path), "examples": counts, "seconds": round(time.time() - t0)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
