#!/usr/bin/env python
"""Throughput of the ``hf`` judge with a model of Mistral-7B-Instruct-v0.2's shape (random weights).

    python bench/judge_gpu.py [--pairs 1024] [--batch-size 32] [--runs 3] [--json]
    python bench/judge_gpu.py --tiny          # a tiny config on CPU, to check the script runs

The model is built from a ``MistralConfig`` directly on the GPU in bf16 (no
download); the tokenizer is a word-level tokenizer built here. Prompts use the
judge's real chat-formatted prompt around synthetic passages whose lengths
follow BERDS passages (100-word chunks: mean ~104 words, 65-124), which with
the instruction gives prompts of ~300 tokens. The measured call is the
judge's uncached scoring path (``_score``: render, sort by length, batched
forward pass, Yes/No softmax). Prints medians of several runs (pairs/s).
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


def make_pairs(n: int, seed: int = 0, target_tokens: int = 300):
    """Synthetic (passage, perspective) pairs with BERDS-like passage lengths."""
    import numpy as np

    rng = np.random.default_rng(seed)
    # word-level tokens ~ words; BERDS passages ~ 104 +- 8 words ~ 140 Mistral tokens: scale so the
    # full prompt (instruction ~ 110 tokens here) averages ~target_tokens
    scale = (target_tokens - 110) / 104.0
    pairs = []
    for i in range(n):
        n_words = int(np.clip(rng.normal(104, 8), 65, 124) * scale)
        doc = " ".join(rng.choice(WORDS, n_words)) + "."
        persp = " ".join(rng.choice(WORDS, int(rng.integers(6, 16)))) + "."
        pairs.append((doc, persp))
    return pairs


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tiny", action="store_true", help="tiny config on CPU (smoke test of the script)")
    ap.add_argument("--pairs", type=int, default=1024)
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--target-tokens", type=int, default=300)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)

    import torch
    from transformers import MistralForCausalLM

    from berds_core.judges.hf import HFJudge
    sys.path.insert(0, str(ROOT / "tests"))
    from tiny_models import make_tiny_tokenizer

    if args.tiny:
        device, dtype = "cpu", torch.float32
    else:
        if not torch.cuda.is_available():
            sys.stderr.write("judge_gpu: no CUDA device; this benchmark needs a GPU (use --tiny to smoke-test on CPU)\n")
            return 2
        device, dtype = "cuda", torch.bfloat16
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        tok = make_tiny_tokenizer(tmp, extra_text=" ".join(WORDS))
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
    judge = HFJudge.from_loaded(model, tok, "random-mistral-7b-shape" if not args.tiny else "random-tiny-mistral",
                                batch_size=args.batch_size)
    pairs = make_pairs(args.pairs, target_tokens=args.target_tokens)
    lengths = [len(tok(judge.render(p, s), add_special_tokens=False)["input_ids"]) for p, s in pairs]
    judge._score(pairs[: args.batch_size * 2])  # warm-up (kernels, allocator)
    rates = []
    for r in range(args.runs):
        if device == "cuda":
            torch.cuda.synchronize()
        t = time.perf_counter()
        probs = judge._score(pairs)
        if device == "cuda":
            torch.cuda.synchronize()
        rates.append(len(pairs) / (time.perf_counter() - t))
        sys.stderr.write(f"run {r + 1}: {rates[-1]:.1f} pairs/s\n")
    result = {
        "device": torch.cuda.get_device_name(0) if device == "cuda" else "cpu (tiny config)",
        "dtype": str(dtype).replace("torch.", ""), "params": n_params, "build_s": round(build_s, 2),
        "pairs": len(pairs), "batch_size": args.batch_size,
        "prompt_tokens_mean": round(statistics.mean(lengths), 1), "prompt_tokens_min": min(lengths),
        "prompt_tokens_max": max(lengths), "runs": [round(x, 2) for x in rates],
        "pairs_per_s_median": round(statistics.median(rates), 2),
        "prob_range": [float(probs.min()), float(probs.max())],
    }
    if device == "cuda":
        result["max_memory_gib"] = round(torch.cuda.max_memory_allocated() / 2**30, 2)
    print(json.dumps(result) if args.json else json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
