#!/usr/bin/env python
"""Throughput of P.D. scoring (tokens/s) on a GPT-2-shaped random model, ours vs the per-pair computation.

    python bench/answers.py [--questions 14] [--repeats 3] [--batch-size 8] [--layers 12] [--device cpu] [--json]

(14 questions x 12 layers take tens of minutes on a loaded 2-core CPU; ``--questions 4 --layers 4`` is quick.)

Workload (offline, our own demo bundle): for every demo question, an
"answer" made of its first three gold-labelled passages (~250 words), scored
against every perspective of the question: one (answer, partial answer) pair
per perspective, as P.D. does. The model is GPT-2-shaped (``--layers``
blocks, 768 wide, 12 heads, GPT-2's 50,257-token vocabulary, random weights:
throughput does not depend on the weights) with a byte-level BPE tokenizer
trained here on the demo passages. Measured in the same run, each the median
of ``--repeats``:

- ``ours``: ``perspective_diversity`` -- the answer (the context) runs once
  and its key/value cache serves all its partial answers (``share_prefix``);
- ``batched``: the same without prefix sharing -- pairs sorted by length and
  batched with left padding, logits asked for the partial answer's positions
  only (``logits_to_keep``);
- ``per_pair``: the released script's shape of work -- one forward pass per
  pair with the full (1 x length x vocabulary) logits, loss over the partial
  answer's positions.

Reports partial-answer tokens/s and input tokens/s (context + partial answer,
as if every pair were run alone) for each, the ratios, and the largest
relative difference between the methods' perplexities (they compute the same
numbers). The machine's load is printed: timings on a shared
machine are noisy.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def build_model(path: Path, layers: int, vocab: int, texts: list[str]):
    import torch
    from tokenizers import ByteLevelBPETokenizer
    from transformers import GPT2Config, GPT2LMHeadModel, PreTrainedTokenizerFast

    bpe = ByteLevelBPETokenizer()
    bpe.train_from_iterator(texts, vocab_size=8000, min_frequency=1, special_tokens=["<|endoftext|>"])
    tok = PreTrainedTokenizerFast(tokenizer_object=bpe._tokenizer, bos_token="<|endoftext|>",
                                  eos_token="<|endoftext|>", unk_token="<|endoftext|>")
    torch.manual_seed(0)
    model = GPT2LMHeadModel(GPT2Config(vocab_size=vocab, n_positions=1024, n_embd=768, n_layer=layers, n_head=12))
    return model.eval(), tok


def workload(n_questions: int):
    from berds_core.datasets import load_demo

    bundle = load_demo()
    text = {p.id: p.text for p in bundle.passages}
    answers, refs = [], []
    for q in bundle.questions[:n_questions]:
        ids = list(bundle.gold.get(q.id, {}))[:3]
        answers.append(" ".join(text[i] for i in ids))
        refs.append(list(q.perspectives))
    return answers, refs, [p.text for p in bundle.passages]


def per_pair(gen, answers, refs) -> tuple[list[float], int, int]:
    """One full forward pass per pair (the released script's shape); the defined perplexity."""
    import torch

    from berds_core.answers.perspective_diversity import pd_context

    tok, out, n_pa, n_in = gen.tokenizer, [], 0, 0
    for a, rs in zip(answers, refs):
        ctx = tok(pd_context(gen, a), add_special_tokens=False)["input_ids"]
        for r in rs:
            pa = tok(r, add_special_tokens=False)["input_ids"]
            ids = torch.tensor([ctx + pa], device=gen.device)
            labels = ids.clone()
            labels[:, :len(ctx)] = -100
            with torch.inference_mode():
                loss = gen.model(input_ids=ids, labels=labels).loss  # mean over the partial answer's tokens
            out.append(math.exp(loss.item()))
            n_pa += len(pa)
            n_in += len(ctx) + len(pa)
    return out, n_pa, n_in


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--questions", type=int, default=14, help="demo questions (14 at most)")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--batch-size", type=int, default=8)
    ap.add_argument("--layers", type=int, default=12, help="GPT-2 small has 12")
    ap.add_argument("--vocab", type=int, default=50257, help="model vocabulary (GPT-2: 50257)")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--threads", type=int, help="torch threads (default: torch's)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)

    import torch

    from berds_core.answers import perspective_diversity
    from berds_core.generators.hf import HFGenerator

    if args.threads:
        torch.set_num_threads(args.threads)
    answers, refs, texts = workload(args.questions)
    model, tok = build_model(Path(tempfile.mkdtemp()), args.layers, args.vocab, texts)
    model.to(args.device)
    gen = HFGenerator.from_loaded(model, tok, "bench-gpt2", batch_size=args.batch_size, max_length=1024)
    flat = HFGenerator.from_loaded(model, tok, "bench-gpt2", batch_size=args.batch_size, max_length=1024)
    flat.share_prefix = False
    perspective_diversity(gen, answers[:1], refs[:1])  # warm-up
    per_pair(gen, answers[:1], refs[:1])
    t_ours, t_flat, t_pair, res, res_flat, base = [], [], [], None, None, None
    for _ in range(args.repeats):
        t0 = time.perf_counter()
        res = perspective_diversity(gen, answers, refs)
        t_ours.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        res_flat = perspective_diversity(flat, answers, refs)
        t_flat.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        base, n_pa, n_in = per_pair(gen, answers, refs)
        t_pair.append(time.perf_counter() - t0)
    ours_ppl = [p for r in res for p in r["ppl"]] + [p for r in res_flat for p in r["ppl"]]
    diff = max(abs(a - b) / b for a, b in zip(ours_ppl, base + base))
    mo, mf, mp = statistics.median(t_ours), statistics.median(t_flat), statistics.median(t_pair)
    out = {"device": args.device, "threads": torch.get_num_threads(), "load_avg_1m": os.getloadavg()[0],
           "pairs": len(base), "partial_answer_tokens": n_pa, "input_tokens": n_in, "layers": args.layers,
           "vocab": args.vocab, "batch_size": args.batch_size, "repeats": args.repeats,
           "ours_seconds": round(mo, 3), "batched_seconds": round(mf, 3), "per_pair_seconds": round(mp, 3),
           "ours_pa_tokens_per_s": round(n_pa / mo, 1), "batched_pa_tokens_per_s": round(n_pa / mf, 1),
           "per_pair_pa_tokens_per_s": round(n_pa / mp, 1),
           "ours_input_tokens_per_s": round(n_in / mo, 1), "batched_input_tokens_per_s": round(n_in / mf, 1),
           "per_pair_input_tokens_per_s": round(n_in / mp, 1),
           "speedup_vs_per_pair": round(mp / mo, 2), "speedup_vs_batched": round(mf / mo, 2),
           "max_rel_diff_ppl": diff}
    if args.json:
        print(json.dumps(out))
    else:
        for k, v in out.items():
            print(f"{k:>28}  {v}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
