#!/usr/bin/env python
"""Throughput of the ``hf`` judge with a model of Mistral-7B-Instruct-v0.2's shape + a LoRA (random weights).

    python bench/judge_gpu.py [--pairs-tsv pers_det.dev.tsv] [--passages 450] [--batch-size 32] [--runs 3]
                              [--steps input,sorted,bucket,merge,prefix,compile] [--dtype bfloat16] [--json]
    python bench/judge_gpu.py --tiny          # a tiny config on CPU: checks the script end to end

The model is built from ``MistralConfig`` (mistralai/Mistral-7B-Instruct-v0.2's
config.json) directly on the GPU in bf16, with random weights (nothing is
downloaded), and wrapped in a PEFT LoRA of the evaluator's shape: r = 16,
alpha = 32 on q/k/v/o projections (ASSUMED: the published adapter
``timchen0618/Mistral_BERDS_evaluator``'s adapter_config.json could not be
read here, no network; ``--lora-r`` / ``--lora-targets`` change it), its B
matrices random so the adapter changes the logits. The tokenizer is Mistral's
real v1 SentencePiece tokenizer (from ``mistral-common``, or ``--tokenizer-model``)
with the Mistral-Instruct chat template, so prompt lengths are the evaluator's.

Workload: passages with 2-3 perspectives each (mean ~2.3, as BERDS), pairs in
passage order as ``judge_run`` sends them, prompts of the paper's ``berds``
prompt (zero-shot, system turn dropped, as the evaluator reads them).
Documents: ``--pairs-tsv`` (the BERDS human pairs TSV: its real documents,
each with its question's perspectives, a third perspective from another
question on ~30% of passages; documents reused after the first round are
rotated by a few words so no two passages share a prefix), else synthetic
documents with BERDS lengths (100-word chunks: mean ~104 words, 65-124).

Steps, measured in the same run on the same pairs, each adding one
optimisation to the previous (``--steps``):

  input    fixed batches of --batch-size in the order given, LoRA unmerged: the unoptimised path
  sorted   + batches sorted by length (the plain path; the default off CUDA)
  bucket   + length buckets under a token budget (batch size x mean prompt length)
  merge    + the LoRA merged into the weights (PEFT merge_and_unload)
  prefix   + each passage's shared prefix computed once, its KV cache extended per perspective
           (bucket + merge + prefix = ``inference="fast"``, the default on CUDA)
  compile  + torch.compile (--compile-mode; reduce-overhead = CUDA graphs); only when named:
           ``--steps prefix,compile`` measures it against the fast path

Per step: pairs/s (median of --runs timed runs after one untimed pass; pairs go to the judge in
chunks of its commit_every, 8 x --batch-size, as ``Judge.predict`` sends them),
prompt tokens/s (the pairs' full prompts), forward tokens/s (tokens the model
ran: fewer with prefix reuse), padding share, executed TFLOP/s and model FLOP
utilisation against the card's dense bf16 peak (--peak-tflops, or from the
device name: H100 SXM 989, H100 PCIe 756, H200 989, A100 312), peak GPU
memory, and against the first step (the unoptimised path): max |P(yes)
difference| and the share of identical decisions at 0.5 (with how many of
the flipped pairs lie within that difference of 0.5, i.e. are rounding noise).

FLOPs: 2 x (decoder linear parameters, LoRA included while unmerged) per
token run + 4 x layers x hidden x causal query-key pairs + 2 x hidden x vocab
per logits row. ``limit_pairs_per_s`` is peak / FLOPs per pair of the plain
path: the arithmetic ceiling at 100% utilisation without prefix reuse.

``--gen-pairs N`` also times the authors' procedure (greedy 16 tokens; a
random model never stops early, so this is the 16-token worst case) on the
final model. Prints JSON (stdout) and a table (stderr); ``--out`` writes the JSON.
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

WORDS = ("the government policy public people should would evidence research study report argue "
         "support against benefit cost risk health economy law rights freedom children school energy "
         "climate war peace market price tax technology science data privacy security community").split()

STEPS = {
    "input": ("plain,input", "fixed batches in input order, LoRA unmerged (unoptimised)"),
    "sorted": ("plain", "+ sorted by length (plain path)"),
    "bucket": ("plain,bucket", "+ length buckets, token budget"),
    "merge": ("plain,bucket,merge", "+ LoRA merged"),
    "prefix": ("fast", "+ shared prefix once per passage (CUDA default)"),
    "compile": ("fast,compile={mode}", "+ torch.compile ({mode})"),
}

PEAKS = (("H100 PCIE", 756.0), ("H100", 989.0), ("H200", 989.0), ("GH200", 989.0), ("A100", 312.0),
         ("L40S", 362.0), ("A40", 150.0))  # dense bf16 TFLOP/s from the data sheets


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


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


# --------------------------------------------------------------------------- workload


def synthetic_documents(n: int, rng) -> list[str]:
    import numpy as np

    return [" ".join(rng.choice(WORDS, int(np.clip(rng.normal(104, 8), 65, 124)))) + "." for _ in range(n)]


def tsv_passages(path: str) -> list[tuple[str, list[str]]]:
    """(document, its question's perspectives) for each distinct document of a BERDS human pairs TSV."""
    import csv

    csv.field_size_limit(1 << 24)
    docs: dict[tuple[str, str], None] = {}
    persp: dict[str, list[str]] = {}
    with open(path, newline="", encoding="utf-8") as fh:
        for row in csv.DictReader(fh, delimiter="\t"):
            docs[(row["question"], row["document"])] = None
            persp.setdefault(row["question"], [])
            if row["perspective"] not in persp[row["question"]]:
                persp[row["question"]].append(row["perspective"])
    return [(d, list(persp[q])) for q, d in docs]


def make_passages(n: int, tsv: str | None = None, seed: int = 0, third: float = 0.3) -> list[tuple[str, list[str]]]:
    """``n`` passages with 2-3 perspectives each (a third one on ~``third`` of them)."""
    import numpy as np

    rng = np.random.default_rng(seed)
    if tsv:
        base = [(d, ps[:2]) for d, ps in tsv_passages(tsv) if len(ps) >= 2]
        if not base:
            raise SystemExit(f"judge_gpu: {tsv}: no document whose question has two perspectives")
    else:
        docs = synthetic_documents(n, rng)
        base = [(d, [" ".join(rng.choice(WORDS, int(rng.integers(6, 16)))).capitalize() + "."
                     for _ in range(2)]) for d in docs]
    all_persp = [p for _, ps in base for p in ps]
    out = []
    for i in range(n):
        doc, ps = base[i % len(base)]
        r = i // len(base)
        if r:  # a later round: rotate the words so the passage is new (same length, no shared prefix)
            words = doc.split()
            k = (7 * r) % max(1, len(words))
            doc = " ".join(words[k:] + words[:k])
        ps = list(ps)
        if rng.random() < third:
            extra = [p for p in all_persp if p not in ps]
            ps.append(extra[int(rng.integers(len(extra)))])
        out.append((doc, ps))
    return out


# --------------------------------------------------------------------------- model


def build_model(tiny: bool, device: str, dtype, lora_r: int, lora_targets: list[str], lora_std: float):
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import MistralForCausalLM

    cfg = mistral_7b_config(tiny)
    torch.manual_seed(0)
    old = torch.get_default_dtype()
    torch.set_default_dtype(dtype)
    try:
        with torch.device(device):
            model = MistralForCausalLM(cfg)
    finally:
        torch.set_default_dtype(old)
    model.eval()
    n_params = sum(p.numel() for p in model.parameters())
    if lora_r:
        lcfg = LoraConfig(r=lora_r, lora_alpha=2 * lora_r, target_modules=lora_targets, lora_dropout=0.0,
                          task_type="CAUSAL_LM")
        model = get_peft_model(model, lcfg).eval()
        g = torch.Generator(device=device).manual_seed(1)
        with torch.no_grad():
            for name, p in model.named_parameters():
                if "lora_B" in name:  # PEFT starts B at zero: make the adapter change the logits
                    p.copy_(torch.randn(p.shape, generator=g, device=device, dtype=torch.float32).mul_(lora_std))
    return model, n_params


def shape_of(model) -> dict:
    cfg = model.config
    lin = sum(p.numel() for n, p in model.named_parameters() if ".layers." in n and p.dim() == 2)
    head_dim = getattr(cfg, "head_dim", None) or cfg.hidden_size // cfg.num_attention_heads
    return {"linear_params": lin, "layers": cfg.num_hidden_layers, "hidden": cfg.hidden_size,
            "attn_dim": cfg.num_attention_heads * head_dim, "vocab": cfg.vocab_size}


def flops(c: dict, shape: dict) -> float:
    """FLOPs the forward passes executed (padding excluded), from the generator's counters."""
    return (2.0 * shape["linear_params"] * c["tokens"] + 4.0 * shape["layers"] * shape["attn_dim"] * c["attn_pairs"]
            + 2.0 * shape["hidden"] * shape["vocab"] * c["logit_rows"])


def plain_flops_per_pair(lengths: list[int], shape: dict) -> float:
    lin = 2.0 * shape["linear_params"] * sum(lengths)
    attn = 4.0 * shape["layers"] * shape["attn_dim"] * sum(n * (n + 1) // 2 for n in lengths)
    return (lin + attn) / len(lengths) + 2.0 * shape["hidden"] * shape["vocab"]


def peak_tflops(name: str, given: float | None) -> float | None:
    if given:
        return given
    up = name.upper()
    for key, tf in PEAKS:
        if all(k in up for k in key.split()):
            return tf
    return None


def sync(device: str) -> None:
    if device.startswith("cuda"):
        import torch

        torch.cuda.synchronize()


# --------------------------------------------------------------------------- run


def run_step(name: str, spec: str, model, tok, label: str, pairs, args, device: str, ref, lengths):
    import numpy as np
    import torch

    from berds_core.judges.hf import HFJudge

    if device.startswith("cuda"):
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()
    judge = HFJudge.from_loaded(model, tok, label, batch_size=args.batch_size, inference=spec)
    assert judge.prompt.name == "berds" and not judge.keep_system
    chunk = judge.commit_every  # as Judge.predict sends uncached pairs (minus the SQLite cache)

    def score_all():
        return np.concatenate([judge._score(pairs[i:i + chunk]) for i in range(0, len(pairs), chunk)])

    t0 = time.perf_counter()
    probs = score_all()  # untimed: warm-up (kernels, allocator, compilation); its P(yes) are compared
    sync(device)
    first_s = time.perf_counter() - t0
    times, counters = [], None
    for r in range(args.runs):
        judge.lm.counters.reset()
        sync(device)
        t = time.perf_counter()
        score_all()
        sync(device)
        times.append(time.perf_counter() - t)
        counters = dict(judge.lm.counters)
        log(f"  {name} run {r + 1}: {len(pairs) / times[-1]:.1f} pairs/s")
    dt = statistics.median(times)
    shape = shape_of(judge.lm.model)
    f = flops(counters, shape)
    res = {"step": name, "inference": judge.lm.fast.describe(), "spec": spec,
           "attn": getattr(judge.lm.model.config, "_attn_implementation", None),
           "pairs_per_call": chunk, "pairs_per_s": round(len(pairs) / dt, 2), "runs_pairs_per_s": [round(len(pairs) / t, 2) for t in times],
           "first_pass_s": round(first_s, 2),
           "prompt_tokens_per_s": round(sum(lengths) / dt, 1),
           "forward_tokens_per_s": round(counters["tokens"] / dt, 1),
           "forward_tokens_per_pair": round(counters["tokens"] / len(pairs), 1),
           "padding_share": round(1 - counters["tokens"] / max(1, counters["slots"]), 4),
           "forwards": counters["forwards"], "prefix_rows": counters["prefix_rows"],
           "tflops_per_s": round(f / dt / 1e12, 2), "linear_params": shape["linear_params"]}
    if args.peak:
        res["mfu"] = round(f / dt / 1e12 / args.peak, 4)
    if device.startswith("cuda"):
        res["max_memory_gib"] = round(torch.cuda.max_memory_allocated() / 2**30, 2)
    if ref is not None:
        diff = np.abs(probs - ref)
        flips = (probs >= 0.5) != (ref >= 0.5)
        res.update(max_abs_dp=float(diff.max()), mean_abs_dp=float(diff.mean()),
                   same_decisions=round(float(1 - flips.mean()), 6), flipped=int(flips.sum()),
                   flipped_within_noise=int((flips & (np.abs(ref - 0.5) <= diff.max())).sum()))
    return judge, probs, res


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tiny", action="store_true", help="tiny config on CPU, float32 (smoke test of the script)")
    ap.add_argument("--pairs-tsv", help="BERDS human pairs TSV whose documents to use (default: synthetic)")
    ap.add_argument("--passages", type=int, help="passages (2-3 perspectives each; default 450, tiny 24)")
    ap.add_argument("--batch-size", type=int, help="rows per batch (default 32, tiny 4)")
    ap.add_argument("--runs", type=int, help="timed runs per step (default 3, tiny 2)")
    ap.add_argument("--steps", default="input,sorted,bucket,merge,prefix",
                    help=f"comma list of {','.join(STEPS)} (default: all but compile; the first is the reference)")
    ap.add_argument("--compile-mode", default="default",
                    choices=["default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs"])
    ap.add_argument("--dtype", default=None, help="bfloat16 (GPU default) | float16 | float32 (tiny default)")
    ap.add_argument("--lora-r", type=int, default=16, help="LoRA rank (0: no adapter)")
    ap.add_argument("--lora-targets", default="q_proj,k_proj,v_proj,o_proj")
    ap.add_argument("--lora-std", type=float, default=None, help="std of the random LoRA B (default 0.01, tiny 0.02)")
    ap.add_argument("--tokenizer-model", help="Mistral v1 tokenizer.model (default: the one in mistral-common)")
    ap.add_argument("--peak-tflops", type=float, help="the card's dense bf16 peak (default: from the device name)")
    ap.add_argument("--gen-pairs", type=int, default=None, help="pairs for a generate timing (default 256, tiny 0)")
    ap.add_argument("--json", action="store_true", help="print only the JSON (one line)")
    ap.add_argument("--out", help="also write the JSON here")
    args = ap.parse_args(argv)

    import torch

    sys.path.insert(0, str(ROOT / "tests"))
    from tiny_models import make_mistral_v1_tokenizer

    tiny = args.tiny
    args.passages = args.passages or (24 if tiny else 450)
    args.batch_size = args.batch_size or (4 if tiny else 32)
    args.runs = args.runs or (2 if tiny else 3)
    args.gen_pairs = (0 if tiny else 256) if args.gen_pairs is None else args.gen_pairs
    steps = [s.strip() for s in args.steps.split(",") if s.strip()]
    bad = [s for s in steps if s not in STEPS]
    if bad:
        ap.error(f"unknown step(s) {bad}; choose from {', '.join(STEPS)}")
    if tiny:
        device = "cpu"
        torch.set_num_threads(1)  # tiny matrices; a shared machine
    else:
        if not torch.cuda.is_available():
            log("judge_gpu: no CUDA device; this benchmark needs a GPU (use --tiny to check it on the CPU)")
            return 2
        device = "cuda"
    dtype = getattr(torch, args.dtype or ("float32" if tiny else "bfloat16"))
    if args.pairs_tsv and not os.path.isfile(args.pairs_tsv):
        log(f"judge_gpu: {args.pairs_tsv}: no such file")
        return 2
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        tok = make_mistral_v1_tokenizer(tmp, model_file=args.tokenizer_model)
    t0 = time.perf_counter()
    model, n_params = build_model(tiny, device, dtype, args.lora_r, args.lora_targets.split(","),
                                  args.lora_std if args.lora_std is not None else (0.02 if tiny else 0.01))
    sync(device)
    build_s = time.perf_counter() - t0
    dev_name = torch.cuda.get_device_name(0) if device == "cuda" else "cpu (tiny config)"
    args.peak = peak_tflops(dev_name, args.peak_tflops) if device == "cuda" or args.peak_tflops else None
    label = "random-tiny-mistral" if tiny else "random-mistral-7b-shape"

    passages = make_passages(args.passages, args.pairs_tsv)
    pairs = [(d, p) for d, ps in passages for p in ps]  # passage order, as judge_run sends them
    from berds_core.judges.hf import HFJudge

    probe = HFJudge.from_loaded(model, tok, label, inference="plain,no-merge")
    lengths = [len(x) for x in probe.lm.tokenize([probe.render(d, p) for d, p in pairs])]
    shape0 = shape_of(model)
    result = {
        "device": dev_name, "dtype": str(dtype).replace("torch.", ""), "params": n_params,
        "lora": {"r": args.lora_r, "alpha": 2 * args.lora_r, "targets": args.lora_targets.split(","),
                 "assumed": True} if args.lora_r else None,
        "build_s": round(build_s, 2), "prompt": probe.name, "documents": args.pairs_tsv or "synthetic",
        "passages": len(passages), "pairs": len(pairs),
        "perspectives_per_passage": round(len(pairs) / len(passages), 2),
        "prompt_tokens_mean": round(statistics.mean(lengths), 1), "prompt_tokens_min": min(lengths),
        "prompt_tokens_max": max(lengths), "batch_size": args.batch_size, "runs": args.runs,
        "peak_tflops": args.peak, "torch": torch.__version__, "date": time.strftime("%Y-%m-%d"),
        "load_avg": os.getloadavg(),
    }
    if args.peak:
        base_shape = dict(shape0, linear_params=shape0["linear_params"] - sum(
            p.numel() for n, p in model.named_parameters() if "lora_" in n))
        result["plain_tflop_per_pair"] = round(plain_flops_per_pair(lengths, base_shape) / 1e12, 4)
        result["limit_pairs_per_s"] = round(args.peak * 1e12 / plain_flops_per_pair(lengths, base_shape), 1)
    log(f"{dev_name}: {n_params / 1e9:.2f}B params, {len(pairs)} pairs over {len(passages)} passages, "
        f"prompts {result['prompt_tokens_mean']} tokens on average")

    ref, rows, judge = None, [], None
    for name in steps:
        spec = STEPS[name][0].format(mode=args.compile_mode)
        log(f"step {name}: {spec}")
        judge, probs, res = run_step(name, spec, model, tok, label, pairs, args, device, ref, lengths)
        model = judge.lm.model  # merged from the 'merge' step on
        if ref is None:
            ref = probs
            res["reference"] = True
        rows.append(res)
    result["steps"] = rows
    if args.gen_pairs and judge is not None:
        from berds_core.judges.hf import GENERATE_TOKENS

        gen = HFJudge.from_loaded(model, tok, label, batch_size=args.batch_size, inference="plain")
        chats = [gen.messages(p, s) for p, s in pairs[: args.gen_pairs]]
        gen.lm._generate(chats[: args.batch_size], GENERATE_TOKENS, 0.0)  # warm-up
        times = []
        for _ in range(args.runs):
            sync(device)
            t = time.perf_counter()
            gen.lm._generate(chats, GENERATE_TOKENS, 0.0)
            sync(device)
            times.append(time.perf_counter() - t)
        result["generate"] = {"pairs": len(chats), "new_tokens": GENERATE_TOKENS,
                              "pairs_per_s": round(len(chats) / statistics.median(times), 2),
                              "model": "merged" if "merge" in steps else "unmerged"}
    text = json.dumps(result) if args.json else json.dumps(result, indent=1)
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(json.dumps(result, indent=1))
    print(text)
    if not args.json:
        print_table(result)
    return 0


def print_table(res: dict) -> None:
    head = f"{'step':8} {'pairs/s':>9} {'x input':>8} {'tok/s run':>10} {'pad':>6} {'TFLOP/s':>8} {'MFU':>6} " \
           f"{'mem GiB':>8} {'max|dP|':>9} {'same':>8}"
    log("\n" + head)
    base = res["steps"][0]["pairs_per_s"] if res["steps"] else 1
    for r in res["steps"]:
        log(f"{r['step']:8} {r['pairs_per_s']:9.1f} {r['pairs_per_s'] / base:8.2f} {r['forward_tokens_per_s']:10.0f} "
            f"{r['padding_share']:6.3f} {r['tflops_per_s']:8.2f} {r.get('mfu', float('nan')):6.3f} "
            f"{r.get('max_memory_gib', float('nan')):8.2f} {r.get('max_abs_dp', 0.0):9.2e} "
            f"{r.get('same_decisions', 1.0):8.4f}")
    if res.get("limit_pairs_per_s"):
        log(f"arithmetic limit without prefix reuse at {res['peak_tflops']} TFLOP/s: {res['limit_pairs_per_s']} pairs/s "
            f"({res['plain_tflop_per_pair']} TFLOP per pair, {res['prompt_tokens_mean']} tokens)")
    if res.get("generate"):
        log(f"generate (16 new tokens): {res['generate']['pairs_per_s']} pairs/s")


if __name__ == "__main__":
    sys.exit(main())
