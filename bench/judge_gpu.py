#!/usr/bin/env python
"""Throughput of the ``hf`` judge with a model of Mistral-7B-Instruct-v0.2's shape (random weights).

    python bench/judge_gpu.py [--pairs 1024] [--batch-size 32] [--runs 3] [--gen-pairs 256] [--json]
    python bench/judge_gpu.py --tiny          # a tiny config on CPU, to check the script runs

The model is built from a ``MistralConfig`` directly on the GPU in bf16 (no
download); the tokenizer is Mistral's real v1 SentencePiece tokenizer (shipped
in ``mistral-common``) with the Mistral-Instruct chat template, so prompt
lengths are the evaluator's. Prompts are the BERDS paper's (``berds``,
zero-shot, system turn dropped, as the BERDS evaluator reads them) around
synthetic passages whose lengths follow BERDS passages (100-word chunks: mean
~104 words, 65-124). Two decisions are timed in the same run:

- ``logits`` (the default of the judge): render, sort by length, one batched
  forward pass, Yes/No softmax (``_score``, uncached);
- ``generate`` (the authors' procedure): greedy decoding of 16 new tokens
  (uncached). A random model never stops early, so this is the 16-token worst
  case; the fine-tuned evaluator answers "Yes"/"No" and stops after ~2 tokens
  when a whole batch has finished.

Prints medians of several runs (pairs/s) and the ratio logits / generate.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

WORDS = ("the government policy public people should would evidence research study report argue "
         "support against benefit cost risk health economy law rights freedom children school energy "
         "climate war peace market price tax technology science data privacy security community").split()


def mistral_7b_config(tiny: bool):
    from transformers import MistralConfig

    if tiny:
        return MistralConfig(vocab_size=32000, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                             num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=4096,
                             sliding_window=None, tie_word_embeddings=False)
    # mistralai/Mistral-7B-Instruct-v0.2 config.json
    return MistralConfig(vocab_size=32000, hidden_size=4096, intermediate_size=14336, num_hidden_layers=32,
                         num_attention_heads=32, num_key_value_heads=8, max_position_embeddings=32768,
                         rope_theta=1e6, sliding_window=None, rms_norm_eps=1e-5, tie_word_embeddings=False)


def make_pairs(n: int, seed: int = 0):
    """Synthetic (passage, perspective) pairs with BERDS-like passage lengths (words)."""
    import numpy as np

    rng = np.random.default_rng(seed)
    pairs = []
    for i in range(n):
        n_words = int(np.clip(rng.normal(104, 8), 65, 124))
        doc = " ".join(rng.choice(WORDS, n_words)) + "."
        persp = " ".join(rng.choice(WORDS, int(rng.integers(6, 16)))) + "."
        pairs.append((doc, persp))
    return pairs


def _median_rate(fn, n: int, runs: int, device: str, label: str) -> tuple[float, list[float]]:
    import torch

    rates = []
    for r in range(runs):
        if device == "cuda":
            torch.cuda.synchronize()
        t = time.perf_counter()
        fn()
        if device == "cuda":
            torch.cuda.synchronize()
        rates.append(n / (time.perf_counter() - t))
        sys.stderr.write(f"{label} run {r + 1}: {rates[-1]:.1f} pairs/s\n")
    return statistics.median(rates), rates


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tiny", action="store_true", help="tiny config on CPU (smoke test of the script)")
    ap.add_argument("--pairs", type=int, default=1024, help="pairs per logits run")
    ap.add_argument("--gen-pairs", type=int, default=256, help="pairs per generate run (0: skip generate)")
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)

    import torch
    from transformers import MistralForCausalLM

    from berds_core.judges.hf import GENERATE_TOKENS, HFJudge
    sys.path.insert(0, str(ROOT / "tests"))
    from tiny_models import make_mistral_v1_tokenizer

    if args.tiny:
        device, dtype = "cpu", torch.float32
    else:
        if not torch.cuda.is_available():
            sys.stderr.write("judge_gpu: no CUDA device; this benchmark needs a GPU (use --tiny to smoke-test on CPU)\n")
            return 2
        device, dtype = "cuda", torch.bfloat16
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        tok = make_mistral_v1_tokenizer(tmp)
    cfg = mistral_7b_config(args.tiny)
    torch.manual_seed(0)
    t0 = time.perf_counter()
    old = torch.get_default_dtype()
    torch.set_default_dtype(dtype)
    with torch.device(device):
        model = MistralForCausalLM(cfg)
    torch.set_default_dtype(old)
    model.eval()
    build_s = time.perf_counter() - t0
    n_params = sum(p.numel() for p in model.parameters())
    label = "random-mistral-7b-shape" if not args.tiny else "random-tiny-mistral"
    judge = HFJudge.from_loaded(model, tok, label, batch_size=args.batch_size)
    assert judge.prompt.name == "berds" and not judge.keep_system
    pairs = make_pairs(args.pairs)
    lengths = [len(tok(judge.render(p, s), add_special_tokens=False)["input_ids"]) for p, s in pairs]
    judge._score(pairs[: args.batch_size * 2])  # warm-up (kernels, allocator)
    logits_rate, logits_runs = _median_rate(lambda: judge._score(pairs), len(pairs), args.runs, device, "logits")
    probs = judge._score(pairs[: args.batch_size])
    result = {
        "device": torch.cuda.get_device_name(0) if device == "cuda" else "cpu (tiny config)",
        "dtype": str(dtype).replace("torch.", ""), "params": n_params, "build_s": round(build_s, 2),
        "prompt": judge.name, "pairs": len(pairs), "batch_size": args.batch_size,
        "prompt_tokens_mean": round(statistics.mean(lengths), 1), "prompt_tokens_min": min(lengths),
        "prompt_tokens_max": max(lengths), "runs": [round(x, 2) for x in logits_runs],
        "pairs_per_s_median": round(logits_rate, 2),
        "prob_range": [float(probs.min()), float(probs.max())],
    }
    if args.gen_pairs:
        gen_pairs = pairs[: args.gen_pairs]
        chats = [judge.messages(p, s) for p, s in gen_pairs]
        judge.lm._generate(chats[: args.batch_size], GENERATE_TOKENS, 0.0)  # warm-up
        gen_rate, gen_runs = _median_rate(lambda: judge.lm._generate(chats, GENERATE_TOKENS, 0.0), len(chats),
                                          args.runs, device, "generate")
        result.update(generate_pairs=len(chats), generate_runs=[round(x, 2) for x in gen_runs],
                      generate_pairs_per_s_median=round(gen_rate, 2),
                      logits_over_generate=round(logits_rate / gen_rate, 2))
    if device == "cuda":
        result["max_memory_gib"] = round(torch.cuda.max_memory_allocated() / 2**30, 2)
    print(json.dumps(result) if args.json else json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
