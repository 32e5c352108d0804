"""Retrieval speed (and the fast encoder's quality) in one run.

    python bench/retrieval.py CORPUS [--queries QUESTIONS] [--n 10000] [--n-search 100000]

CORPUS is a debate-sites JSON (e.g. shared/data/debate-sites/procon.json:
questions, passages and gold labels) or any corpus ``load_corpus`` reads.
``--queries`` takes any questions file (e.g. a BERDS query-expansion JSONL);
by default the questions of the debate-sites file are the queries.

Measured, each against its alternative in the same run:
  * BM25 index rate (passages/s) at ``--n`` passages and single-query latency:
    berds_core (bm25s) vs rank_bm25 (BM25Okapi on the same tokens).
  * Dense encoding rate (passages/s) of the bf16 and int8 encoders vs plain
    fp32 sentence-transformers, measured chunk by chunk, interleaved, on the
    source passages; with quality: top-10 overlap of each ranking with fp32
    and, with gold labels, MRecall@5 / Precision@5 of each.
  * Dense search latency at ``--n-search`` passages: FAISS flat and HNSW vs
    numpy (matrix product + argpartition). Random unit vectors stand in for
    passage embeddings there (clustered, 2,000 topics; encoding 100k passages
    on 2 CPU cores would take an hour); query encoding latency is reported
    separately.
  * Cache: seconds to load a built BM25 index and dense embeddings again.
The corpus of ``--n`` passages is the source passages followed by perturbed
copies (10% of words dropped, random source words inserted), seeded.
Writes bench/results/retrieval-<time>.json and prints a table. Exits 0 with
a message when CORPUS is missing.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def median(xs):
    return float(statistics.median(xs))


def load_source(path: Path, queries_path: str | None):
    from berds_core.corpora.memory import corpus_from_passages, load_corpus

    questions, gold = [], {}
    if path.suffix == ".json":
        from berds_core.datasets import load_debate_sites

        try:
            bundle = load_debate_sites(path)
            corpus = corpus_from_passages(bundle.passages, path.stem)
            questions, gold = bundle.questions, bundle.gold
        except Exception:  # noqa: BLE001 - not debate-sites: a plain JSON array corpus
            corpus = load_corpus(path)
    else:
        corpus = load_corpus(path)
    if queries_path:
        from berds_core.datasets import load_questions

        questions = load_questions(queries_path)
        gold = {}
    return corpus, questions, gold


def grow(corpus, n: int, seed: int = 0):
    """``n`` passages: the source ones, then perturbed copies (unique texts)."""
    from berds_core.corpora.memory import Corpus
    from berds_core.records import Passage

    rng = random.Random(seed)
    pool = [w for t in corpus.texts[:2000] for w in t.split()]
    out = list(corpus.passages[:n])
    i = 0
    while len(out) < n:
        src = corpus.passages[i % len(corpus)]
        words = [w for w in src.text.split() if rng.random() > 0.1]
        for _ in range(max(1, len(words) // 10)):
            words.insert(rng.randrange(len(words) + 1), rng.choice(pool))
        out.append(Passage(f"{src.id}~{i}", src.title, " ".join(words)))
        i += 1
    return Corpus(out, f"{corpus.name}-{n}")


# ---------------------------------------------------------------- BM25

def bench_bm25(corpus, queries, repeats: int) -> dict:
    from rank_bm25 import BM25Okapi

    from berds_core.retrieval.bm25 import BM25Retriever, _Analyzer

    n = len(corpus)
    ours_s, base_s = [], []
    retriever = None
    for _ in range(repeats):
        t = time.perf_counter()
        retriever = BM25Retriever(corpus, progress=False, cache=False)
        ours_s.append(time.perf_counter() - t)
    base = None
    for _ in range(repeats):
        t = time.perf_counter()
        analyzer = _Analyzer()  # fresh stem memo each time, as for ours
        tokens = analyzer.analyze(corpus.texts)  # same tokens for both
        base = BM25Okapi(tokens)
        base_s.append(time.perf_counter() - t)
    k = min(100, n)
    ours_q, base_q = [], []
    for q in queries:
        t = time.perf_counter()
        retriever.search([q], k)
        ours_q.append(time.perf_counter() - t)
        t = time.perf_counter()
        scores = base.get_scores(analyzer.analyze([q])[0])
        top = np.argpartition(-scores, k - 1)[:k]
        top[np.argsort(-scores[top])]
        base_q.append(time.perf_counter() - t)
    # cache: build into a fresh cache, then time loading it
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["BERDS_CACHE"] = tmp
        BM25Retriever(corpus, progress=False)
        t = time.perf_counter()
        again = BM25Retriever(corpus, progress=False)
        load_s = time.perf_counter() - t
        assert again.cache_hit
    return {
        "passages": n, "queries": len(queries), "k": k, "repeats": repeats,
        "index_rate_ours": n / median(ours_s), "index_rate_rank_bm25": n / median(base_s),
        "index_speedup": median(base_s) / median(ours_s),
        "query_ms_ours": 1000 * median(ours_q), "query_ms_rank_bm25": 1000 * median(base_q),
        "query_speedup": median(base_q) / median(ours_q),
        "cache_load_s": load_s,
    }


# ---------------------------------------------------------------- dense encoding + quality

def bench_encoding(corpus, questions, gold, chunk: int, limit: int | None) -> dict:
    """Plain sentence-transformers fp32 (the baseline) vs our bf16 and int8 encoders."""
    import torch

    from berds_core.embeddings.models import cpu_has_fast_bf16, load_embedder, load_encoder, resolve_encoding
    from berds_core.retrieval.dense import encode_normalized

    texts = corpus.texts[:limit] if limit else corpus.texts
    fp32 = load_embedder(None, "cpu")
    # the baseline: plain sentence-transformers with its defaults (batch 32, fp32)
    encoders = {"fp32": lambda xs: fp32.encode(xs, normalize_embeddings=True, convert_to_numpy=True)}
    encoders["fp32-b64"] = lambda xs: encode_normalized(fp32, xs, 64)  # ours without the precision change
    for name in ("bf16", "int8"):
        model = load_encoder(None, "cpu", name)
        encoders[name] = lambda xs, m=model: encode_normalized(m, xs, 64)
    for fn in encoders.values():  # warm up
        fn(texts[:8])
    rates = {k: [] for k in encoders}
    embs = {k: [] for k in encoders}
    for start in range(0, len(texts), chunk):
        part = texts[start:start + chunk]
        for name, fn in encoders.items():  # interleaved: every encoder sees the same machine load
            t = time.perf_counter()
            e = fn(part)
            rates[name].append(len(part) / (time.perf_counter() - t))
            embs[name].append(np.asarray(e, dtype=np.float32))
        log(f"  encoded {min(start + chunk, len(texts))}/{len(texts)}: "
            + ", ".join(f"{k} {v[-1]:.1f}/s" for k, v in rates.items()))
    out = {"passages": len(texts), "chunk": chunk, "torch_threads": torch.get_num_threads(),
           "cpu_native_bf16": cpu_has_fast_bf16(), "auto_encoding": resolve_encoding(None, "cpu")}
    for name in encoders:
        out[f"rate_{name}"] = median(rates[name])
        out[f"speedup_{name}"] = median(rates[name]) / median(rates["fp32"])
    E = {k: np.concatenate(v) for k, v in embs.items()}
    for name in encoders:
        out[f"mean_cosine_{name}_vs_fp32"] = float(np.mean(np.sum(E["fp32"] * E[name], axis=1)))
    if questions:
        qtexts = [q.question for q in questions]
        Q = {name: np.asarray(fn(qtexts), dtype=np.float32) for name, fn in encoders.items()}
        tops = {name: np.argsort(-(Q[name] @ E[name].T), axis=1)[:, :10] for name in E}
        out["queries"] = len(qtexts)
        for name in encoders:
            out[f"overlap_at_10_{name}"] = float(np.mean([len(set(a) & set(b)) / 10
                                                          for a, b in zip(tops["fp32"], tops[name])]))
        if gold:
            from berds_core.eval.measures import mrecall_at_k, precision_at_k
            from berds_core.runs import label_matrix

            ids = corpus.ids[:len(texts)]
            for name, top in tops.items():
                mats = [label_matrix({"id": q.id, "perspectives": q.perspectives,
                                      "ctxs": [{"id": ids[r]} for r in row]}, gold=gold)
                        for q, row in zip(questions, top)]
                out[f"mrecall@5_{name}"] = float(np.mean([mrecall_at_k(m, 5) for m in mats]))
                out[f"precision@5_{name}"] = float(np.mean([precision_at_k(m, 5) for m in mats]))
        lat = {k: [] for k in encoders}
        for q in qtexts[:50]:
            for name, fn in encoders.items():
                t = time.perf_counter()
                fn([q])
                lat[name].append(time.perf_counter() - t)
        for name in encoders:
            out[f"query_encode_ms_{name}"] = 1000 * median(lat[name])
    return out


# ---------------------------------------------------------------- dense search

def bench_search(n: int, dim: int, n_queries: int, k: int) -> dict:
    from berds_core.retrieval import faiss_index

    rng = np.random.default_rng(0)
    # clustered unit vectors (2,000 "topics"), closer to real passage embeddings than
    # uniform noise, on which every nearest-neighbour structure degenerates
    topics = rng.standard_normal((2000, dim), dtype=np.float32)
    topics /= np.linalg.norm(topics, axis=1, keepdims=True)
    emb = topics[rng.integers(0, len(topics), n)] + rng.standard_normal((n, dim), dtype=np.float32) / np.sqrt(dim)
    emb /= np.linalg.norm(emb, axis=1, keepdims=True)
    q = emb[rng.choice(n, n_queries, replace=False)] + 0.7 * rng.standard_normal((n_queries, dim), dtype=np.float32) / np.sqrt(dim)
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    t = time.perf_counter()
    flat = faiss_index.build_index(emb, "flat")
    flat_build = time.perf_counter() - t
    t = time.perf_counter()
    hnsw = faiss_index.build_index(emb, "hnsw")
    hnsw_build = time.perf_counter() - t
    lat = {"flat": [], "flat_faiss": [], "hnsw": [], "numpy": []}
    exact, approx = [], []
    for i in range(n_queries):
        qi = q[i:i + 1]
        t = time.perf_counter()
        _, r = faiss_index.search(flat, "flat", qi, k, emb=emb)  # what DenseRetriever does on CPU
        lat["flat"].append(time.perf_counter() - t)
        exact.append(r[0])
        t = time.perf_counter()
        _, r2 = faiss_index.search(flat, "flat", qi, k)  # FAISS's own single-query scan
        lat["flat_faiss"].append(time.perf_counter() - t)
        assert set(r2[0]) == set(r[0])
        t = time.perf_counter()
        _, r = faiss_index.search(hnsw, "hnsw", qi, k)
        lat["hnsw"].append(time.perf_counter() - t)
        approx.append(r[0])
        t = time.perf_counter()
        s = emb @ qi[0]
        top = np.argpartition(-s, k - 1)[:k]
        top[np.argsort(-s[top])]
        lat["numpy"].append(time.perf_counter() - t)
    recall = float(np.mean([len(set(a) & set(b)) / k for a, b in zip(exact, approx)]))
    recall10 = float(np.mean([len(set(a[:10]) & set(b[:10])) / 10 for a, b in zip(exact, approx)]))
    return {"passages": n, "dim": dim, "queries": n_queries, "k": k, "vectors": "clustered random unit vectors",
            "hnsw_recall_at_10": recall10,
            "flat_ms": 1000 * median(lat["flat"]), "flat_faiss_scan_ms": 1000 * median(lat["flat_faiss"]),
            "hnsw_ms": 1000 * median(lat["hnsw"]),
            "numpy_ms": 1000 * median(lat["numpy"]),
            "flat_speedup_vs_numpy": median(lat["numpy"]) / median(lat["flat"]),
            "hnsw_speedup_vs_numpy": median(lat["numpy"]) / median(lat["hnsw"]),
            "hnsw_recall_at_k": recall, "flat_build_s": flat_build, "hnsw_build_s": hnsw_build}


def bench_dense_cache(corpus, limit: int) -> dict:
    from berds_core.corpora.memory import Corpus
    from berds_core.retrieval.dense import DenseRetriever

    small = Corpus(corpus.passages[:limit], "cache-bench")
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["BERDS_CACHE"] = tmp
        t = time.perf_counter()
        first = DenseRetriever(small, progress=False)
        build = time.perf_counter() - t
        t = time.perf_counter()
        again = DenseRetriever(small, progress=False)
        load = time.perf_counter() - t
        assert again.cache_hit and again.n_encoded == 0
        return {"passages": limit, "encoding": first.encoding, "build_s": build, "cache_load_s": load}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("corpus")
    ap.add_argument("--queries", default=None, help="questions file for BM25 query latency")
    ap.add_argument("--n", type=int, default=10_000, help="BM25 corpus size")
    ap.add_argument("--n-search", type=int, default=100_000, help="dense search corpus size (random vectors)")
    ap.add_argument("--encode-limit", type=int, default=None, help="encode only the first N source passages")
    ap.add_argument("--chunk", type=int, default=128, help="passages per timed encoding chunk")
    ap.add_argument("--repeats", type=int, default=5, help="BM25 index builds timed per side")
    ap.add_argument("--skip", default="", help="comma list of sections to skip: bm25,encode,search,cache")
    ap.add_argument("--out", default=None)
    args = ap.parse_args(argv)
    path = Path(args.corpus)
    if not path.exists():
        print(f"skipped: corpus {path} not found", file=sys.stderr)
        return 0
    skip = set(filter(None, args.skip.split(",")))
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    src, questions, gold = load_source(path, None)
    queries = [q.question for q in (load_source(path, args.queries)[1] if args.queries else questions)]
    if not queries:
        queries = [" ".join(t.split()[:8]) for t in src.texts[:100]]
    res = {"corpus": str(path), "source_passages": len(src), "cpu_count": os.cpu_count(),
           "load_avg_start": os.getloadavg(), "started": time.strftime("%Y-%m-%dT%H:%M:%S")}
    if "bm25" not in skip:
        log(f"BM25: {args.n} passages, {len(queries)} queries")
        res["bm25"] = bench_bm25(grow(src, args.n), queries, args.repeats)
    if "encode" not in skip:
        log("Dense encoding: plain fp32 vs bf16 vs int8")
        res["encoding"] = bench_encoding(src, questions, gold, args.chunk, args.encode_limit)
    if "search" not in skip:
        log(f"Dense search: {args.n_search} random unit vectors")
        res["search"] = bench_search(args.n_search, 384, min(200, max(50, len(queries))), 100)
    if "cache" not in skip:
        log("Dense cache reload")
        res["dense_cache"] = bench_dense_cache(src, min(256, len(src)))
    res["load_avg_end"] = os.getloadavg()
    out = Path(args.out) if args.out else ROOT / "bench" / "results" / f"retrieval-{time.strftime('%Y%m%d-%H%M%S')}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(res, indent=2))
    print_table(res)
    print(f"\nwritten: {out}")
    return 0


def print_table(res: dict) -> None:
    rows = []
    b = res.get("bm25")
    if b:
        rows += [("BM25 index rate (passages/s)", f"{b['index_rate_ours']:,.0f}", f"{b['index_rate_rank_bm25']:,.0f}",
                  f"{b['index_speedup']:.1f}x", f"n={b['passages']}"),
                 ("BM25 query latency (ms, k=100)", f"{b['query_ms_ours']:.2f}", f"{b['query_ms_rank_bm25']:.2f}",
                  f"{b['query_speedup']:.1f}x", f"{b['queries']} queries"),
                 ("BM25 cache load (s)", f"{b['cache_load_s']:.3f}", "", "", "")]
    e = res.get("encoding")
    if e:
        for name in ("fp32-b64", "bf16", "int8"):
            rows.append((f"Dense encode rate {name} (passages/s)", f"{e[f'rate_{name}']:.1f}",
                         f"{e['rate_fp32']:.1f} (plain ST fp32)", f"{e[f'speedup_{name}']:.2f}x",
                         f"n={e['passages']}, median of chunks of {e['chunk']}"))
        for name in ("fp32", "fp32-b64", "bf16", "int8"):
            if f"overlap_at_10_{name}" in e:
                gold = (f"MRecall@5 {e[f'mrecall@5_{name}']:.3f}, P@5 {e[f'precision@5_{name}']:.3f}"
                        if f"mrecall@5_{name}" in e else "")
                rows.append((f"  quality {name}", f"top-10 overlap {e[f'overlap_at_10_{name}']:.3f}",
                             f"cos {e[f'mean_cosine_{name}_vs_fp32']:.4f}", "", gold))
        if "query_encode_ms_fp32" in e:
            rows.append(("Query encode latency (ms)", f"bf16 {e['query_encode_ms_bf16']:.1f}, "
                         f"int8 {e['query_encode_ms_int8']:.1f}", f"{e['query_encode_ms_fp32']:.1f}", "",
                         f"auto encoding here: {e['auto_encoding']}"))
    s = res.get("search")
    if s:
        rows += [("Dense search flat exact (ms, k=100)", f"{s['flat_ms']:.2f}", f"{s['numpy_ms']:.2f} (numpy)",
                  f"{s['flat_speedup_vs_numpy']:.1f}x", f"n={s['passages']} clustered random vectors; "
                  f"FAISS one-query scan {s['flat_faiss_scan_ms']:.1f} ms"),
                 ("Dense search HNSW (ms, k=100)", f"{s['hnsw_ms']:.2f}", f"{s['numpy_ms']:.2f} (numpy)",
                  f"{s['hnsw_speedup_vs_numpy']:.1f}x",
                  f"recall@10 {s['hnsw_recall_at_10']:.3f}, @100 {s['hnsw_recall_at_k']:.3f} vs exact; "
                  f"build {s['hnsw_build_s']:.0f}s")]
    c = res.get("dense_cache")
    if c:
        rows.append(("Dense cache: build vs reload (s)", f"{c['cache_load_s']:.2f}", f"{c['build_s']:.2f}", "",
                     f"n={c['passages']}, {c['encoding']}"))
    head = ("measure", "berds_core", "alternative", "ratio", "notes")
    widths = [max(len(str(r[i])) for r in rows + [head]) for i in range(5)]
    for r in [head] + rows:
        print("  ".join(str(x).ljust(w) for x, w in zip(r, widths)))
    print(f"load average start {res['load_avg_start'][0]:.1f}, end {res['load_avg_end'][0]:.1f} "
          f"on {res['cpu_count']} CPUs")


if __name__ == "__main__":
    sys.exit(main())
