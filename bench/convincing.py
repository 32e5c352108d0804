#!/usr/bin/env python
"""Throughput of the convincingness decisions (pairs/s) on a random Llama-shaped model: batched vs one at a time.

    python bench/convincing.py [--questions 6] [--max-pairs 12] [--repeats 3] [--layers 4] [--hidden 512] [--json]

Workload (offline, our own demo bundle): every two-perspective demo question;
its gold-labelled passages get sides from the gold labels and the leaning
sides (``convincing.from_run``); up to ``--max-pairs`` (yes, no) pairs per
question (seeded sample), each asked in both orders with ConflictingQA's
prompt; the answer is P("Yes") vs "No" from one forward pass
(``Generator.choice_probs``). The model is Llama-shaped with random weights
(throughput does not depend on the weights) and a byte-level BPE tokenizer
trained here on the demo passages. Measured in the same run, each the median
of ``--repeats``:

- ``batched``: ``convincing.decide`` with the generator's batches (sorted by
  length, left-padded, last-position logits only);
- ``one_by_one``: the same decisions with batch size 1.

Prints pairs/s (an ordered comparison counts as one pair) of both, the ratio,
the largest difference in P("Yes") between the two (they compute the same
numbers) and the machine's load (timings on a shared machine are noisy).
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

TEMPLATE = ("{{ bos_token }}{% for m in messages %}<|{{ m['role'] }}|>\n{{ m['content'] }}\n{% endfor %}"
            "{% if add_generation_prompt %}<|assistant|>\n{% endif %}")


def build(layers: int, hidden: int, vocab: int, texts: list[str]):
    import torch
    from tokenizers import ByteLevelBPETokenizer
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    bpe = ByteLevelBPETokenizer()
    bpe.train_from_iterator(texts + ["Yes No Yes. No. Answer with Yes or No."] * 50, vocab_size=8000,
                            min_frequency=1, special_tokens=["<s>", "</s>"])
    tok = PreTrainedTokenizerFast(tokenizer_object=bpe._tokenizer, bos_token="<s>", eos_token="</s>",
                                  unk_token="</s>")
    tok.chat_template = TEMPLATE
    torch.manual_seed(0)
    cfg = LlamaConfig(vocab_size=vocab, hidden_size=hidden, intermediate_size=int(hidden * 8 / 3) // 64 * 64,
                      num_hidden_layers=layers, num_attention_heads=max(1, hidden // 64),
                      num_key_value_heads=max(1, hidden // 256), max_position_embeddings=4096)
    return LlamaForCausalLM(cfg).eval(), tok


def workload(n_questions: int, max_pairs: int):
    from berds_core.convincing import comparisons, from_run
    from berds_core.datasets import load_demo

    b = load_demo()
    text = {p.id: p for p in b.passages}
    entries = []
    for q in b.questions:
        if len(q.perspectives) != 2 or q.id not in b.gold:
            continue
        ctxs = [{"id": pid, "title": text[pid].title, "text": text[pid].text, "score": None} for pid in b.gold[q.id]]
        entries.append({"id": q.id, "question": q.question, "perspectives": q.perspectives, "stances": q.stances,
                        "ctxs": ctxs})
    sets, _ = from_run(entries[:n_questions], gold=b.gold)
    return comparisons(sets, "sample", max_pairs, seed=0), [p.text for p in b.passages]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--questions", type=int, default=6)
    ap.add_argument("--max-pairs", type=int, default=12, help="(yes, no) pairs per question; each asked in both orders")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--batch-size", type=int, default=8)
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--hidden", type=int, default=512)
    ap.add_argument("--vocab", type=int, default=32000)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)

    import numpy as np

    from berds_core.convincing import decide
    from berds_core.generators.hf import HFGenerator

    comps, texts = workload(args.questions, args.max_pairs)
    model, tok = build(args.layers, args.hidden, args.vocab, texts)
    model.to(args.device)
    batched = HFGenerator.from_loaded(model, tok, "bench-llama", batch_size=args.batch_size)
    single = HFGenerator.from_loaded(model, tok, "bench-llama", batch_size=1)
    decide(batched, comps[:4])
    t_b, t_s, pb, ps = [], [], None, None
    for _ in range(args.repeats):
        t0 = time.perf_counter()
        pb = [o["p_yes"] for o in decide(batched, comps)]
        t_b.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        ps = [o["p_yes"] for o in decide(single, comps)]
        t_s.append(time.perf_counter() - t0)
    mb, ms = statistics.median(t_b), statistics.median(t_s)
    import torch

    out = {"device": args.device, "threads": torch.get_num_threads(), "load_avg_1m": os.getloadavg()[0],
           "pairs": len(comps), "layers": args.layers, "hidden": args.hidden, "vocab": args.vocab,
           "batch_size": args.batch_size, "repeats": args.repeats,
           "batched_seconds": round(mb, 3), "one_by_one_seconds": round(ms, 3),
           "batched_pairs_per_s": round(len(comps) / mb, 2), "one_by_one_pairs_per_s": round(len(comps) / ms, 2),
           "speedup": round(ms / mb, 2), "max_abs_diff_p_yes": float(np.max(np.abs(np.array(pb) - np.array(ps))))}
    if args.json:
        print(json.dumps(out))
    else:
        for k, v in out.items():
            print(f"{k:>24}  {v}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
