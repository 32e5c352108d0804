"""The cost curve of the paper's corpora: BM25 and dense at 100k -> 1M -> 5M passages, and a projection.

    python bench/scale.py --sizes 100k,1M,5M --work /tmp/berds-scale      # BM25 + dense + projection
    python bench/scale.py --sections quality --data ../shared/data        # ranking quality on the dev corpora
    python bench/scale.py --sizes 100k --sections bm25 --bm25s-max 100k   # one size, one section

Synthetic corpora, made by this script under ``--work`` (never in the repo;
``--clean`` deletes them at the end): DPR's ``psgs_w100.tsv`` layout (id, text,
title), 100-word passages drawn from a Zipf vocabulary of 50,000 words
(seeded), the shape of the issue's measurements.

Sections (each figure is a separate process, peak memory = its whole-process
maximum resident set, from ``wait4``):

- ``bm25``: per size, in one run, side by side: a bare ``tantivy`` index of the
  TSV (the issue's 25-line script: Python's csv reader, ``en_stem``, 256 MB
  writer heap, 2 threads); ``berds index --retriever bm25`` (auto: the on-disk
  store + tantivy), its time split into ingest and index; ``berds retrieve``
  of 50 questions at k 10; the in-memory ``bm25s`` path
  (``--corpus-storage memory --bm25-engine bm25s``) up to ``--bm25s-max``;
  query latency p50/p95 over 200 single queries after the index is open, and
  the first query after opening. Index size = corpus store + index on disk.
- ``dense``: precomputed vectors -- random unit vectors around random topic
  centres, 500 passages a topic at every size (384-d, MiniLM's size; same-topic
  cosines about 0.6, others about 0: real embeddings are clustered too, and
  uniform random vectors, the worst case of any IVF index, are measured beside) written as the product's vector shards, then the product's
  IVF-PQ build (``--index ivfpq``, ``--memory-budget``): build time, peak memory,
  index size, p50/p95 latency at k 10 and 100, recall@100 of IVF-PQ (with and
  without the exact re-ranking) against exact search over the same vectors, and
  exact (flat, memory-mapped) latency for comparison.
- ``crossover``: corpora in memory, one process (imports done): bm25s and
  tantivy build time and p50 query latency at ``--crossover-sizes``; where
  tantivy starts to win is ``retrieval.TANTIVY_MIN_PASSAGES``.
- ``quality``: on the development corpora (``berds_core.datasets.devsets``, gold labels):
  MRecall@5 / Precision@5 of today's bm25 (bm25s) and the tantivy engine, and the
  overlap of their top-10 lists; dense flat against ivfpq and hnsw (MiniLM).
  Nothing is tuned here, so nothing is cross-validated: every number is a plain
  evaluation of fixed settings.
- ``projection``: 21M and 906M passages from the measured per-passage slopes
  (the two largest sizes): BM25 and IVF-PQ time, disk and memory on this
  machine, plus encoding hours: MiniLM on this CPU (measured here, on
  ``--encode-sample`` passages) and an arithmetic estimate for N GPUs.

Writes ``bench/results/scale.json`` and prints Markdown tables. Record the
machine's load (``uptime``) with every figure: it is printed.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from machine import cpu_model, load  # noqa: E402

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
VOCAB = 50_000
WORDS = 100
DIM = 384
TOPIC_SIZE = 500  # passages a synthetic topic: the same structure at every corpus size
QUESTIONS = 50
LATENCY_QUERIES = 200


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def size_of(text: str) -> int:
    t = text.strip().lower()
    mult = {"k": 1_000, "m": 1_000_000}.get(t[-1], 1)
    return int(float(t[:-1] if t[-1] in "km" else t) * mult)


def label(n: int) -> str:
    return f"{n // 1_000_000}M" if n % 1_000_000 == 0 else f"{n // 1000}k" if n % 1000 == 0 else str(n)


def cpu_name() -> str:
    return f"{cpu_model()} x{os.cpu_count()}"


def dir_bytes(path) -> int:
    p = Path(path)
    if not p.exists():
        return 0
    return p.stat().st_size if p.is_file() else sum(f.stat().st_size for f in p.rglob("*") if f.is_file())


def _sample_memory(pid: int, stop, peaks: dict) -> None:
    """Peaks of the child's anonymous and file-backed resident memory (/proc/PID/status, every 50 ms)."""
    while not stop.is_set():
        try:
            status = open(f"/proc/{pid}/status").read()
        except OSError:
            return
        for line in status.splitlines():
            key = line.split(":", 1)[0]
            if key in ("RssAnon", "RssFile", "VmRSS"):
                peaks[key] = max(peaks.get(key, 0), int(line.split()[1]) * 1024)
        stop.wait(0.05)


def run_measured(argv, env=None, timeout=None) -> dict:
    """Run a command; its wall seconds, peak RSS (whole process, bytes: ``wait4``), the peaks of its
    anonymous memory and of its resident memory-mapped file pages (sampled), exit code, stdout."""
    import threading

    t0 = time.perf_counter()
    proc = subprocess.Popen(argv, env={**os.environ, **(env or {})}, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    stop, peaks = threading.Event(), {}
    sampler = threading.Thread(target=_sample_memory, args=(proc.pid, stop, peaks), daemon=True)
    sampler.start()
    out, err = proc.communicate(timeout=timeout)
    wall = time.perf_counter() - t0
    stop.set()
    sampler.join()
    rss = getattr(proc, "_berds_maxrss", None)  # recorded when the child was reaped (wait4)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(map(str, argv))} failed ({proc.returncode}): {err[-2000:]}")
    return {"seconds": wall, "cpu_s": getattr(proc, "_berds_cpu", None), "rss": rss, "rss_anon": peaks.get("RssAnon"),
            "rss_file": peaks.get("RssFile"), "stdout": out, "stderr": err, "load": load()}


class _Popen(subprocess.Popen):
    """A Popen whose wait records the child's peak RSS (``os.wait4``)."""

    def _try_wait(self, wait_flags):
        try:
            pid, sts, ru = os.wait4(self.pid, wait_flags)
        except ChildProcessError:
            pid, sts = self.pid, 0
            ru = None
        if ru is not None and pid == self.pid:
            self._berds_maxrss = ru.ru_maxrss * 1024
            self._berds_cpu = ru.ru_utime + ru.ru_stime
        return pid, sts


subprocess.Popen = _Popen  # noqa: only this script's children


def berds(*args, cache: Path, timeout=None) -> dict:
    res = run_measured([sys.executable, "-m", "berds_core", *map(str, args), "--json", "--quiet"],
                       env={"BERDS_CACHE": str(cache)}, timeout=timeout)
    res["json"] = json.loads(res["stdout"].strip().splitlines()[-1])
    return res


# ------------------------------------------------------------------ synthetic data


def make_corpus(path: Path, n: int, seed: int = 0) -> Path:
    """``n`` 100-word passages from a Zipf vocabulary, DPR's TSV layout (written once)."""
    if path.is_file():
        return path
    rng = np.random.default_rng(seed)
    vocab = np.array([f"w{i}" for i in range(VOCAB)], dtype=object)
    p = 1.0 / np.arange(1, VOCAB + 1)
    p /= p.sum()
    tmp = path.with_suffix(".tmp")
    t0 = time.perf_counter()
    with open(tmp, "w", encoding="utf-8") as fh:
        fh.write("id\ttext\ttitle\n")
        for a in range(0, n, 20_000):
            m = min(20_000, n - a)
            toks = rng.choice(VOCAB, size=(m, WORDS), p=p)
            fh.write("".join(f"{a + i + 1}\t{' '.join(vocab[toks[i]])}\tTopic {(a + i) // 37}\n" for i in range(m)))
    tmp.rename(path)
    log(f"made {path} ({n:,} passages, {dir_bytes(path) / 1e6:.0f} MB) in {time.perf_counter() - t0:.0f}s")
    return path


def make_questions(corpus: Path, out: Path | None, n: int = QUESTIONS, rows: int = 100_000, seed: int = 1) -> list[str]:
    """Queries: 8 words from passages picked at random (in the first ``rows`` rows)."""
    rng = np.random.default_rng(seed)
    picks = set(rng.choice(rows, size=min(rows, n * 4), replace=False).tolist())
    queries = []
    with open(corpus, encoding="utf-8") as fh:
        next(fh)
        for i, line in enumerate(fh):
            if i in picks:
                words = line.split("\t")[1].split()
                start = int(rng.integers(0, len(words) - 8))
                queries.append(" ".join(words[start:start + 8]))
            if i > 100_000:
                break
    queries = [queries[i] for i in rng.permutation(len(queries))]
    if out is not None:
        out.write_text("".join(json.dumps({"id": f"q{i}", "question": q, "perspectives": ["a", "b"]}) + "\n"
                               for i, q in enumerate(queries[:n])), encoding="utf-8")
    return queries


def clustered_vectors(n: int, dim: int = DIM, seed: int = 0, start: int = 0, uniform: bool = False,
                      topics: int = 2_000) -> np.ndarray:
    """Unit vectors around ``topics`` random centres (rows start..start+n-1 of one seeded stream)."""
    rng = np.random.default_rng([seed, start])
    if uniform:
        x = rng.standard_normal((n, dim)).astype(np.float32)
    else:
        centres = np.random.default_rng([seed, 1000, topics]).standard_normal((topics, dim)).astype(np.float32)
        centres /= np.linalg.norm(centres, axis=1, keepdims=True)
        # noise of norm ~0.75 around a unit centre: same-topic cosines ~0.6, other topics ~0 (MiniLM-like)
        x = centres[rng.integers(0, topics, n)] + (0.75 / np.sqrt(dim)) * rng.standard_normal((n, dim)).astype(np.float32)
    return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)


# ------------------------------------------------------------------ BM25


BARE_TANTIVY = r'''
import csv, sys, tantivy
csv.field_size_limit(sys.maxsize)
sb = tantivy.SchemaBuilder()
sb.add_text_field("text", stored=False, tokenizer_name="en_stem", index_option="freq")
sb.add_integer_field("row", fast=True)
index = tantivy.Index(sb.build(), path=sys.argv[2])
writer = index.writer(heap_size=256_000_000, num_threads=2)
with open(sys.argv[1], newline="", encoding="utf-8") as fh:
    rows = csv.reader(fh, delimiter="\t")
    next(rows)
    for i, row in enumerate(rows):
        writer.add_document(tantivy.Document(text=row[1], row=i))
writer.commit()
writer.wait_merging_threads()
'''

BARE_LATENCY = r'''
import json, re, sys, time, tantivy
index = tantivy.Index.open(sys.argv[1])
searcher = index.searcher()
queries = json.loads(sys.argv[2])
lat = []
for q in queries:
    t = time.perf_counter()
    hits = searcher.search(index.parse_query(" ".join(re.findall(r"\w+", q.lower())), ["text"]), 10).hits
    searcher.fast_field_values("row", [a for _, a in hits])
    lat.append(time.perf_counter() - t)
print(json.dumps({"latencies": lat}))
'''

LATENCY_BM25 = r'''
import json, sys, time
t0 = time.perf_counter()
from berds_core.corpora import open_corpus
from berds_core.retrieval import get_retriever
corpus = open_corpus(sys.argv[1], storage=sys.argv[2])
r = get_retriever("bm25", corpus, progress=False, engine=sys.argv[3])
opened = time.perf_counter() - t0
queries = json.loads(sys.argv[4])
t = time.perf_counter(); first = r.search(queries[:1], 10); first_s = time.perf_counter() - t
lat = []
for q in queries:
    t = time.perf_counter(); r.search([q], 10); lat.append(time.perf_counter() - t)
print(json.dumps({"open_s": opened, "first_query_s": first_s, "latencies": lat}))
'''


def percentiles(lat) -> dict:
    lat = sorted(lat)
    return {"p50_ms": 1000 * statistics.median(lat), "p95_ms": 1000 * lat[int(0.95 * (len(lat) - 1))]}


def index_pair(n: int, corpus: Path, work: Path, repeat: int) -> tuple[dict, dict, dict]:
    """Bare tantivy and ``berds index`` of the same file, interleaved ``repeat`` times (each on a fresh
    cache): the medians of wall and CPU seconds, so a load change between two runs does not decide
    the ratio. Returns (bare, studio, the last studio JSON)."""
    bare, studio, info = [], [], None
    cache = work / f"cache-{label(n)}"
    for _ in range(repeat):
        bare_dir = work / f"bare-{label(n)}"
        shutil.rmtree(bare_dir, ignore_errors=True)
        bare_dir.mkdir()
        bare.append(run_measured([sys.executable, "-c", BARE_TANTIVY, str(corpus), str(bare_dir)]))
        bare[-1]["index_bytes"] = dir_bytes(bare_dir)
        bare[-1]["dir"] = bare_dir
        shutil.rmtree(cache, ignore_errors=True)
        res = berds("index", "--corpus", corpus, "--corpus-storage", "disk", "--retriever", "bm25", cache=cache)
        studio.append(res)
        info = res["json"]

    def med(runs, key):
        vals = [r[key] for r in runs if r.get(key) is not None]
        return statistics.median(vals) if vals else None

    def summary(runs):
        return {**{k: med(runs, k) for k in ("seconds", "cpu_s", "rss", "rss_anon", "rss_file")},
                "runs": [{k: r.get(k) for k in ("seconds", "cpu_s", "load")} for r in runs], "load": runs[-1]["load"]}

    b, st = summary(bare), summary(studio)
    b["index_bytes"] = bare[-1]["index_bytes"]
    return b, st, info


def bench_bm25(n: int, work: Path, bm25s_max: int, baseline: dict, repeat: int = 1) -> dict:
    corpus = make_corpus(work / f"corpus-{label(n)}.tsv", n)
    qfile = work / f"questions-{label(n)}.jsonl"
    queries = make_questions(corpus, None, LATENCY_QUERIES, rows=min(n, 100_000))[:LATENCY_QUERIES]
    qfile.write_text("".join(json.dumps({"id": f"q{i}", "question": q, "perspectives": ["a", "b"]}) + "\n"
                             for i, q in enumerate(queries[:QUESTIONS])), encoding="utf-8")
    out = {"passages": n, "corpus_bytes": dir_bytes(corpus)}
    # the bare tantivy index of the same file and the studio's berds index (ingest + tantivy), interleaved
    bare, res, info = index_pair(n, corpus, work, repeat)
    bare_dir = work / f"bare-{label(n)}"
    lat = json.loads(run_measured([sys.executable, "-c", BARE_LATENCY, str(bare_dir), json.dumps(queries)])["stdout"])
    out["bare_tantivy"] = {**bare, **percentiles(lat["latencies"])}
    shutil.rmtree(bare_dir, ignore_errors=True)
    log(f"[{label(n)}] bare tantivy {bare['seconds']:.1f}s (CPU {bare['cpu_s']:.1f}s) {bare['rss'] / 1e9:.2f} GB "
        f"(load {bare['load']}); query p50 {out['bare_tantivy']['p50_ms']:.1f} ms")
    cache = work / f"cache-{label(n)}"
    store = Path(info["corpus_store"])
    manifest = json.loads((store / "manifest.json").read_text())
    out["studio_index"] = {**res, "engine": info["engine"], "ingest_s": manifest["seconds"],
                           "index_s": info["build_seconds"], "store_bytes": dir_bytes(store),
                           "index_bytes": dir_bytes(info["cache_path"])}
    log(f"[{label(n)}] berds index {res['seconds']:.1f}s (CPU {res['cpu_s']:.1f}s; ingest {manifest['seconds']:.1f}s, "
        f"tantivy {info['build_seconds']:.1f}s, in one pass) {res['rss'] / 1e9:.2f} GB, anonymous "
        f"{(res['rss_anon'] or 0) / 1e9:.2f} GB (load {res['load']})")
    res = berds("retrieve", "--corpus", corpus, "--corpus-storage", "disk", "--questions", qfile, "--k", 10,
                "--out", work / "run.jsonl", cache=cache)
    out["studio_retrieve"] = {"seconds": res["seconds"], "rss": res["rss"], "rss_over_baseline": res["rss"] - baseline["rss"],
                              "rss_anon": res["rss_anon"], "rss_file": res["rss_file"],
                              "anon_over_baseline": (res["rss_anon"] or 0) - (baseline.get("rss_anon") or 0),
                              "load": res["load"]}
    log(f"[{label(n)}] berds retrieve {QUESTIONS} questions {res['seconds']:.1f}s {res['rss'] / 1e9:.2f} GB "
        f"({(res['rss'] - baseline['rss']) / 1e9:+.2f} over baseline; anonymous "
        f"{out['studio_retrieve']['anon_over_baseline'] / 1e9:+.2f})")
    res = run_measured([sys.executable, "-c", LATENCY_BM25, str(corpus), "disk", "tantivy", json.dumps(queries)],
                       env={"BERDS_CACHE": str(cache)})
    lat = json.loads(res["stdout"])
    out["studio_latency"] = {**percentiles(lat["latencies"]), "open_s": lat["open_s"],
                             "first_query_s": lat["first_query_s"], "rss": res["rss"], "load": res["load"]}
    log(f"[{label(n)}] tantivy p50 {out['studio_latency']['p50_ms']:.1f} ms p95 {out['studio_latency']['p95_ms']:.1f} "
        f"ms; open {lat['open_s']:.2f}s, first query {lat['first_query_s'] * 1000:.0f} ms")
    need = _bm25s_estimate(n)
    if n <= bm25s_max and need is not None and need > 0.6 * mem_available():
        out["bm25s_skipped"] = (f"estimated {need / 1e9:.1f} GB (linear from the smaller size) against "
                                f"{mem_available() / 1e9:.1f} GB available on this shared machine")
        log(f"[{label(n)}] bm25s skipped: {out['bm25s_skipped']}")
    elif n <= bm25s_max:
        mem_cache = work / f"cache-mem-{label(n)}"
        shutil.rmtree(mem_cache, ignore_errors=True)
        res = berds("index", "--corpus", corpus, "--corpus-storage", "memory", "--bm25-engine", "bm25s",
                    cache=mem_cache)
        out["bm25s_index"] = {"seconds": res["seconds"], "rss": res["rss"], "rss_anon": res["rss_anon"],
                              "index_bytes": dir_bytes(res["json"]["cache_path"]), "load": res["load"]}
        log(f"[{label(n)}] bm25s index {res['seconds']:.1f}s {res['rss'] / 1e9:.2f} GB")
        res = berds("retrieve", "--corpus", corpus, "--corpus-storage", "memory", "--bm25-engine", "bm25s",
                    "--questions", qfile, "--k", 10, "--out", work / "run-mem.jsonl", cache=mem_cache)
        out["bm25s_retrieve"] = {"seconds": res["seconds"], "rss": res["rss"], "load": res["load"]}
        res = run_measured([sys.executable, "-c", LATENCY_BM25, str(corpus), "memory", "bm25s", json.dumps(queries)],
                           env={"BERDS_CACHE": str(mem_cache)})
        lat = json.loads(res["stdout"])
        out["bm25s_latency"] = {**percentiles(lat["latencies"]), "open_s": lat["open_s"], "rss": res["rss"]}
        _BM25S_RSS[n] = out["bm25s_index"]["rss"]
        log(f"[{label(n)}] bm25s retrieve {out['bm25s_retrieve']['seconds']:.1f}s "
            f"{out['bm25s_retrieve']['rss'] / 1e9:.2f} GB; p50 {out['bm25s_latency']['p50_ms']:.1f} ms")
        shutil.rmtree(mem_cache, ignore_errors=True)
    out["corpus_store"] = str(store)
    return out


_BM25S_RSS: dict[int, int] = {}


def _bm25s_estimate(n: int) -> int | None:
    """bm25s's peak memory at ``n`` passages, linear from the largest size measured (None: none yet)."""
    if not _BM25S_RSS:
        return None
    m = max(_BM25S_RSS)
    return int(_BM25S_RSS[m] * n / m)


def mem_available() -> int:
    for line in open("/proc/meminfo"):
        if line.startswith("MemAvailable:"):
            return int(line.split()[1]) * 1024
    return 0


def retrieve_baseline(work: Path) -> dict:
    """Peak RSS of ``berds retrieve`` over a 1,000-passage corpus: the process's baseline."""
    corpus = make_corpus(work / "corpus-1k.tsv", 1000, seed=9)
    qfile = work / "questions-1k.jsonl"
    make_questions(corpus, qfile, rows=1000)
    cache = work / "cache-1k"
    berds("index", "--corpus", corpus, "--corpus-storage", "disk", cache=cache)
    res = berds("retrieve", "--corpus", corpus, "--corpus-storage", "disk", "--questions", qfile, "--k", 10,
                "--out", work / "run-1k.jsonl", cache=cache)
    log(f"baseline: berds retrieve over 1k passages peaks at {res['rss'] / 1e9:.2f} GB")
    return {"rss": res["rss"], "rss_anon": res["rss_anon"], "seconds": res["seconds"], "load": res["load"]}


# ------------------------------------------------------------------ dense


DENSE_BUILD = r'''
import json, sys, time
from berds_core.files.build_dir import building
from berds_core.corpora.disk import DiskCorpus
from berds_core.retrieval.faiss_build import build_folder
from berds_core.retrieval.index_plan import plan_index
from berds_core.retrieval.vector_shards import VectorShards
corpus = DiskCorpus(sys.argv[1])
vectors = VectorShards(sys.argv[2], len(corpus), corpus.hash, sys.argv[3])
plan = plan_index(sys.argv[4], len(corpus), vectors.dim, int(sys.argv[6]))
t = time.perf_counter()
with building(sys.argv[5], "dense index") as tmp:
    build_folder(tmp, vectors, plan, corpus=corpus, encoder={"model": None, "key": sys.argv[3]})
print(json.dumps({"plan": plan.to_json(), "build_s": time.perf_counter() - t}))
'''

DENSE_QUERY = r'''
import json, sys, time
import numpy as np
sys.path.insert(0, sys.argv[6])
t0 = time.perf_counter()
from berds_core.corpora.disk import DiskCorpus
from berds_core.retrieval.index_dir import DenseIndex, exact_search
from berds_core.retrieval.vector_shards import VectorShards
from scale import TOPIC_SIZE, clustered_vectors
corpus = DiskCorpus(sys.argv[1])
vectors = VectorShards(sys.argv[2], len(corpus), corpus.hash, sys.argv[3])
index = DenseIndex(sys.argv[4], corpus, vectors=vectors)
opened = time.perf_counter() - t0
uniform = sys.argv[5] == "uniform"
q = clustered_vectors(200, seed=0, start=10**9, uniform=uniform, topics=max(1, len(corpus) // TOPIC_SIZE))
t = time.perf_counter(); index.search(q[:1], 10); first = time.perf_counter() - t
out = {"open_s": opened, "first_query_s": first}
for k in (10, 100):
    lat = []
    for i in range(len(q)):
        t = time.perf_counter(); index.search(q[i:i + 1], k); lat.append(time.perf_counter() - t)
    out[f"lat_k{k}"] = lat
nq = 100
truth = exact_search(vectors, q[:nq], 100)[1]
got = index.search(q[:nq], 100)
out["recall@100"] = float(np.mean([len({r for r, _ in g} & set(t.tolist())) / 100 for g, t in zip(got, truth)]))
refine, index.plan["refine"] = index.plan.get("refine"), 0
got = index.search(q[:nq], 100)
out["recall@100_codes_only"] = float(np.mean([len({r for r, _ in g} & set(t.tolist())) / 100
                                              for g, t in zip(got, truth)]))
index.plan["refine"] = refine
lat = []
for i in range(20):
    t = time.perf_counter(); exact_search(vectors, q[i:i + 1], 10); lat.append(time.perf_counter() - t)
out["exact_lat"] = lat
print(json.dumps(out))
'''


def write_vectors(folder: Path, store: Path, key: str, uniform: bool) -> None:
    from berds_core.corpora.disk import DiskCorpus
    from berds_core.retrieval.vector_shards import VectorShards

    corpus = DiskCorpus(store)
    shards = VectorShards(folder, len(corpus), corpus.hash, key)
    if shards.complete:
        return
    t0 = time.perf_counter()
    for i in range(shards.n_shards):
        a, b = shards.bounds(i)
        shards.write(i, clustered_vectors(b - a, start=a, uniform=uniform, topics=max(1, len(corpus) // TOPIC_SIZE)))
    shards.finish(DIM)
    log(f"wrote {len(corpus):,} {'uniform' if uniform else 'clustered'} vectors in {time.perf_counter() - t0:.0f}s")


def bench_dense(n: int, work: Path, store: Path, budget: int, uniform: bool = False) -> dict:
    kind = "uniform" if uniform else "clustered"
    key = f"synthetic-{kind}-{DIM}"
    vec = work / f"vectors-{label(n)}-{kind}"
    write_vectors(vec, store, key, uniform)
    folder = work / f"dense-{label(n)}-{kind}"
    shutil.rmtree(folder, ignore_errors=True)
    env = {"BERDS_CACHE": str(work / f"cache-{label(n)}")}
    res = run_measured([sys.executable, "-c", DENSE_BUILD, str(store), str(vec), key, "ivfpq", str(folder),
                        str(budget)], env=env)
    built = json.loads(res["stdout"])
    out = {"passages": n, "vectors": kind, "plan": built["plan"], "build_s": res["seconds"], "rss": res["rss"],
           "rss_anon": res["rss_anon"], "rss_file": res["rss_file"],
           "index_bytes": dir_bytes(folder), "vector_bytes": dir_bytes(vec), "load": res["load"]}
    log(f"[{label(n)} {kind}] ivfpq {built['plan']['factory']} built in {res['seconds']:.0f}s, "
        f"{res['rss'] / 1e9:.2f} GB (anonymous {(res['rss_anon'] or 0) / 1e9:.2f}), index "
        f"{out['index_bytes'] / 1e6:.0f} MB (load {res['load']})")
    res = run_measured([sys.executable, "-c", DENSE_QUERY, str(store), str(vec), key, str(folder), kind,
                        str(Path(__file__).parent)], env=env)
    q = json.loads(res["stdout"])
    out.update({"open_s": q["open_s"], "first_query_s": q["first_query_s"], "k10": percentiles(q["lat_k10"]),
                "k100": percentiles(q["lat_k100"]), "exact": percentiles(q["exact_lat"]),
                "recall@100": q["recall@100"], "recall@100_codes_only": q["recall@100_codes_only"],
                "query_rss": res["rss"], "query_load": res["load"]})
    log(f"[{label(n)} {kind}] recall@100 {q['recall@100']:.3f} (codes only {q['recall@100_codes_only']:.3f}); "
        f"p50 k10 {out['k10']['p50_ms']:.1f} ms, k100 {out['k100']['p50_ms']:.1f} ms; exact p50 "
        f"{out['exact']['p50_ms']:.0f} ms")
    return out


# ------------------------------------------------------------------ which BM25 engine for corpora in memory


def bench_crossover(sizes: list[int], work: Path, repeat: int = 2) -> dict:
    """In one process (imports done), per size: bm25s and tantivy build seconds and p50 query ms over 200
    queries, ``repeat`` times each (medians); where tantivy starts to win decides ``TANTIVY_MIN_PASSAGES``."""
    import tempfile

    import bm25s  # noqa: F401 - imported before timing, as the app has it

    from berds_core.corpora.memory import load_corpus
    from berds_core.retrieval.bm25 import BM25Retriever
    from berds_core.retrieval.tantivy_bm25 import TantivyBM25Retriever

    out = {}
    os.environ["BERDS_CACHE"] = tempfile.mkdtemp(dir=work)
    for n in sizes:
        path = make_corpus(work / f"corpus-{label(n)}.tsv", n)
        queries = make_questions(path, None, LATENCY_QUERIES, rows=n)
        corpus = load_corpus(path)
        rows = {"bm25s": {"build": [], "build_cpu": [], "p50": [], "query_cpu": []},
                "tantivy": {"build": [], "build_cpu": [], "p50": [], "query_cpu": []}}
        for _ in range(repeat):
            for name in rows:
                t, c = time.perf_counter(), time.process_time()  # CPU seconds of every thread: robust to load
                r = (BM25Retriever(corpus, progress=False) if name == "bm25s" else
                     TantivyBM25Retriever(corpus, progress=False, folder=Path(tempfile.mkdtemp(dir=work)) / "i"))
                rows[name]["build"].append(time.perf_counter() - t)
                rows[name]["build_cpu"].append(time.process_time() - c)
                lat = []
                c = time.process_time()
                for q in queries:
                    t = time.perf_counter()
                    r.search([q], 10)
                    lat.append(time.perf_counter() - t)
                rows[name]["query_cpu"].append(1000 * (time.process_time() - c) / len(queries))
                rows[name]["p50"].append(1000 * statistics.median(lat))
                shutil.rmtree(r.cache_path, ignore_errors=True)
        out[label(n)] = {k: {"build_s": statistics.median(v["build"]), "build_cpu_s": statistics.median(v["build_cpu"]),
                             "p50_ms": statistics.median(v["p50"]), "query_cpu_ms": statistics.median(v["query_cpu"])}
                         for k, v in rows.items()}
        out[label(n)]["load"] = load()
        log(f"[{label(n)}] in memory: bm25s build {out[label(n)]['bm25s']['build_s']:.2f}s p50 "
            f"{out[label(n)]['bm25s']['p50_ms']:.2f} ms; tantivy {out[label(n)]['tantivy']['build_s']:.2f}s "
            f"{out[label(n)]['tantivy']['p50_ms']:.2f} ms (load {load()})")
    return out


# ------------------------------------------------------------------ quality on the development corpora


def bench_quality(data: Path) -> dict:
    from berds_core.corpora.memory import corpus_from_passages
    from berds_core.datasets.devsets import dev_bundles
    from berds_core.eval.measures import mrecall_at_k, precision_at_k
    from berds_core.retrieval import get_retriever
    from berds_core.runs import gold_matrix

    bundles, missing = dev_bundles(data)
    out = {"missing": missing, "corpora": {}}

    def scores(bundle, corpus, hits):
        m, p = [], []
        for q, h in zip(bundle.questions, hits):
            L = gold_matrix(bundle.gold, q.id, len(q.perspectives), [corpus.ids[r] for r, _ in h[:5]])
            m.append(mrecall_at_k(L, 5))
            p.append(precision_at_k(L, 5))
        return float(np.mean(m)), float(np.mean(p)), m, p

    pooled: dict[str, list] = {}
    for name, b in bundles.items():
        corpus = corpus_from_passages(b.passages, b.name)
        texts = [q.question for q in b.questions]
        row = {"questions": len(texts), "passages": len(corpus)}
        runs = {"bm25 (bm25s)": get_retriever("bm25", corpus, progress=False, engine="bm25s").search(texts, 10),
                "bm25 (tantivy)": get_retriever("bm25", corpus, progress=False, engine="tantivy").search(texts, 10)}
        dense_flat = get_retriever("dense", corpus, progress=False)
        qv = dense_flat.encode(texts)
        runs["dense flat"] = dense_flat.search_vectors(qv, 10)
        for spec in ("ivfpq", "hnsw"):
            runs[f"dense {spec}"] = get_retriever("dense", corpus, index=spec, progress=False).search_vectors(qv, 10)
        for key, hits in runs.items():
            mr, pr, m, p = scores(b, corpus, hits)
            row[key] = {"mrecall@5": mr, "precision@5": pr}
            pooled.setdefault(key, [[], []])
            pooled[key][0] += m
            pooled[key][1] += p

        def overlap(a, c):
            return float(np.mean([len({r for r, _ in x} & {r for r, _ in y}) / max(1, min(len(x), len(y)))
                                  for x, y in zip(runs[a], runs[c])]))

        row["top10_overlap_bm25"] = overlap("bm25 (bm25s)", "bm25 (tantivy)")
        row["top10_overlap_ivfpq_flat"] = overlap("dense flat", "dense ivfpq")
        row["top10_overlap_hnsw_flat"] = overlap("dense flat", "dense hnsw")
        out["corpora"][name] = row
        log(f"quality {name}: " + ", ".join(f"{k} {v['mrecall@5']:.3f}/{v['precision@5']:.3f}"
                                            for k, v in row.items() if isinstance(v, dict)))
    out["pooled"] = {k: {"mrecall@5": float(np.mean(v[0])), "precision@5": float(np.mean(v[1])),
                         "questions": len(v[0])} for k, v in pooled.items()}
    from berds_core.eval.evaluation import paired_comparison

    # the large-corpus path against today's: pooled paired differences, 95% bootstrap intervals
    out["differences"] = {
        f"{b} - {a}": {m: paired_comparison(pooled[a][i], pooled[b][i], n_boot=2000)
                       for i, m in enumerate(("mrecall@5", "precision@5"))}
        for a, b in (("bm25 (bm25s)", "bm25 (tantivy)"), ("dense flat", "dense ivfpq"), ("dense flat", "dense hnsw"))}
    return out


# ------------------------------------------------------------------ projection


ENCODE_CPU = r'''
import json, sys, time
from berds_core.embeddings.text_encoders import text_encoder
te = text_encoder()
texts = [line.split("\t")[1] for line in open(sys.argv[1], encoding="utf-8").readlines()[1:int(sys.argv[2]) + 1]]
te.encode_uncached(texts[:64])
t = time.perf_counter(); te.encode_uncached(texts); s = time.perf_counter() - t
print(json.dumps({"passages": len(texts), "seconds": s, "encoding": te.encoding}))
'''


def encode_rate(work: Path, sample: int) -> dict:
    corpus = make_corpus(work / "corpus-100k.tsv", 100_000)
    res = run_measured([sys.executable, "-c", ENCODE_CPU, str(corpus), str(sample)],
                       env={"BERDS_CACHE": str(work / "cache-encode")})
    got = json.loads(res["stdout"])
    got["per_s"] = got["passages"] / got["seconds"]
    got["load"] = res["load"]
    log(f"MiniLM ({got['encoding']}) on this CPU: {got['per_s']:.0f} passages/s (load {res['load']})")
    return got


# arithmetic, not measurement: forward FLOPs = 2 x non-embedding parameters x tokens (128 per passage),
# at 40% of an H100 SXM's 989 dense bf16 TFLOP/s
GPU_FLOPS = 0.4 * 989e12
ENCODERS = {"MiniLM-L6 (384-d)": (10.6e6, 384), "DPR / BERT-base (768-d)": (85e6, 768),
            "NV-Embed-v2 (4096-d)": (7.1e9, 4096)}  # non-embedding parameters


HASH_RUN_BYTES = 24  # the on-disk store's de-duplication: 12 bytes a passage for texts, 12 for ids


def projection(results: dict, encode: dict | None) -> dict:
    bm = [results["bm25"][k] for k in sorted(results.get("bm25", {}), key=lambda s: results["bm25"][s]["passages"])]
    dn = [results["dense"][k] for k in sorted(results.get("dense", {}), key=lambda s: results["dense"][s]["passages"])
          if results["dense"][k]["vectors"] == "clustered"]
    out = {}

    def slope(rows, f):
        if len(rows) < 2:
            r = rows[-1]
            return f(r) / r["passages"], 0.0
        a, b = rows[-2], rows[-1]
        s = (f(b) - f(a)) / (b["passages"] - a["passages"])
        return s, f(b) - s * b["passages"]

    for n in (21_015_324, 906_000_000):
        row = {"passages": n}
        if bm:
            t, t0 = slope(bm, lambda r: r["studio_index"]["seconds"])
            d, d0 = slope(bm, lambda r: r["studio_index"]["store_bytes"] + r["studio_index"]["index_bytes"])
            row["bm25_hours"] = (t0 + t * n) / 3600
            row["bm25_disk_bytes"] = d0 + d * n
            # bounded but for one part: the ingest's de-duplication runs (texts and ids: 2 x 12 bytes a passage,
            # corpora/hashset.py) grow with the corpus; the rest (tantivy's writer heap, batches) does not
            top = max(bm, key=lambda r: r["passages"])
            row["bm25_index_peak_rss"] = top["studio_index"]["rss"] + HASH_RUN_BYTES * (n - top["passages"])
        if dn:
            t, t0 = slope(dn, lambda r: r["build_s"])
            from berds_core.retrieval.index_plan import ivf_nlist, plan_index, pq_m

            plan = plan_index("ivfpq", n, DIM, 12 << 30)
            row["ivfpq_factory"] = plan.factory
            row["ivfpq_hours"] = (t0 + t * n) / 3600
            row["ivfpq_index_bytes"] = n * (pq_m(DIM) // 2 + 8) + ivf_nlist(n) * DIM * 4
            row["ivfpq_on_disk_at_12GB"] = plan.on_disk
            row["vector_bytes_384d"] = n * DIM * 4
            row["vector_bytes_4096d"] = n * 4096 * 4
        if encode:
            row["minilm_cpu_hours"] = n / encode["per_s"] / 3600
        row["gpu_hours"] = {name: n * 2 * params * 128 / GPU_FLOPS / 3600 for name, (params, _) in ENCODERS.items()}
        out[str(n)] = row
    return out


# ------------------------------------------------------------------ report


def gb(x) -> str:
    return "–" if x is None else f"{x / 1e9:.2f} GB"


def markdown(res: dict) -> str:
    lines = [f"Machine: {res['machine']}; load average at start {res['load_start']}, at end {res.get('load_end')}.", ""]
    if res.get("bm25"):
        lines += ["### BM25", "",
                  "| passages | bare tantivy index | `berds index` (ingest + tantivy in one pass) | ratio | peak RSS "
                  "(anonymous) | index size (store + index) | `berds retrieve` 50 q | retrieve peak RSS over baseline "
                  "(anonymous) | p50 / p95 query (bare tantivy p50) | bm25s index | bm25s peak | load |",
                  "|---|---|---|---|---|---|---|---|---|---|---|---|"]
        for k, r in sorted(res["bm25"].items(), key=lambda kv: kv[1]["passages"]):
            si, bt, sr, sl = r["studio_index"], r["bare_tantivy"], r["studio_retrieve"], r["studio_latency"]
            bi = r.get("bm25s_index")
            lines.append(
                f"| {k} | {bt['seconds']:.1f} s (CPU {bt.get('cpu_s') or 0:.0f} s) | {si['seconds']:.1f} s (CPU "
                f"{si.get('cpu_s') or 0:.0f} s) | {si['seconds'] / bt['seconds']:.2f}x (CPU "
                f"{(si.get('cpu_s') or 0) / max(bt.get('cpu_s') or 1, 1e-9):.2f}x) | {gb(si['rss'])} ({gb(si.get('rss_anon'))}) | "
                f"{gb(si['store_bytes'])} + {gb(si['index_bytes'])} | {sr['seconds']:.1f} s | "
                f"{gb(sr['rss_over_baseline'])} ({gb(sr.get('anon_over_baseline'))}) | "
                f"{sl['p50_ms']:.1f} / {sl['p95_ms']:.1f} ms ({bt.get('p50_ms', float('nan')):.1f}) | "
                f"{'%.1f s' % bi['seconds'] if bi else '–'} | {gb(bi['rss']) if bi else '–'} | {si['load']} |")
        lines.append("")
    if res.get("dense"):
        lines += ["### Dense (IVF-PQ over precomputed vectors)", "",
                  "| passages | vectors | index | build | peak RSS (anonymous) | index size | p50 / p95 k=10 | p50 k=100 | "
                  "recall@100 (codes only) | exact p50 | load |", "|---|---|---|---|---|---|---|---|---|---|---|"]
        for k, r in sorted(res["dense"].items(), key=lambda kv: (kv[1]["passages"], kv[1]["vectors"])):
            lines.append(
                f"| {label(r['passages'])} | {r['vectors']} | {r['plan']['factory']}{' (lists on disk)' if r['plan']['on_disk'] else ''}"
                f", nprobe {r['plan']['nprobe']} | {r['build_s']:.0f} s | {gb(r['rss'])} ({gb(r.get('rss_anon'))}) | "
                f"{gb(r['index_bytes'])} | "
                f"{r['k10']['p50_ms']:.1f} / {r['k10']['p95_ms']:.1f} ms | {r['k100']['p50_ms']:.1f} ms | "
                f"{r['recall@100']:.3f} ({r['recall@100_codes_only']:.3f}) | {r['exact']['p50_ms']:.0f} ms | {r['load']} |")
        lines.append("")
    if res.get("crossover"):
        lines += ["### BM25 in memory: bm25s or tantivy (one process, imports done; medians of 2; CPU seconds of "
                  "all threads in brackets)", "",
                  "| passages | bm25s build | tantivy build | bm25s p50 query (CPU a query) | tantivy p50 query (CPU a "
                  "query) | load |", "|---|---|---|---|---|---|"]
        for k, r in sorted(res["crossover"].items(), key=lambda kv: size_of(kv[0])):
            b, t = r["bm25s"], r["tantivy"]
            lines.append(f"| {k} | {b['build_s']:.2f} s ({b.get('build_cpu_s', float('nan')):.2f}) | "
                         f"{t['build_s']:.2f} s ({t.get('build_cpu_s', float('nan')):.2f}) | "
                         f"{b['p50_ms']:.2f} ms ({b.get('query_cpu_ms', float('nan')):.2f}) | "
                         f"{t['p50_ms']:.2f} ms ({t.get('query_cpu_ms', float('nan')):.2f}) | {r['load']} |")
        lines.append("")
    if res.get("quality"):
        q = res["quality"]
        lines += ["### Ranking quality on the development corpora (gold labels)", "",
                  "| corpus | questions | " + " | ".join(f"{k} MR@5 / P@5" for k in q["pooled"]) +
                  " | top-10 overlap bm25s~tantivy | flat~ivfpq | flat~hnsw |",
                  "|---|---|" + "---|" * (len(q["pooled"]) + 3)]
        for name, row in q["corpora"].items():
            lines.append(f"| {name} | {row['questions']} | " + " | ".join(
                f"{row[k]['mrecall@5']:.3f} / {row[k]['precision@5']:.3f}" for k in q["pooled"]) +
                f" | {row['top10_overlap_bm25']:.3f} | {row['top10_overlap_ivfpq_flat']:.3f} | "
                f"{row['top10_overlap_hnsw_flat']:.3f} |")
        lines.append(f"| pooled | {next(iter(q['pooled'].values()))['questions']} | " + " | ".join(
            f"{v['mrecall@5']:.3f} / {v['precision@5']:.3f}" for v in q["pooled"].values()) + " | | | |")
        lines.append("")
        for name, d in q.get("differences", {}).items():
            lines.append(f"- {name}, pooled: " + "; ".join(
                f"{m} {v['diff']:+.4f} [{v['ci'][0]:+.4f}, {v['ci'][1]:+.4f}] ({v['wins']} better, {v['losses']} worse)"
                for m, v in d.items()))
        lines.append("")
    if res.get("projection"):
        lines += ["### Projection (from the measured slopes)", "",
                  "| passages | BM25 index (this machine) | BM25 disk | BM25 peak memory | IVF-PQ | IVF-PQ build | "
                  "IVF-PQ size | vectors 384-d / 4096-d | MiniLM encode, this CPU | encode on 1 / 8 GPUs: MiniLM, DPR, "
                  "NV-Embed-v2 (arithmetic) |",
                  "|---|---|---|---|---|---|---|---|---|---|"]
        for n, r in res["projection"].items():
            g = r["gpu_hours"]
            lines.append(
                f"| {int(n):,} | {r.get('bm25_hours', 0):.1f} h | {gb(r.get('bm25_disk_bytes'))} | "
                f"{gb(r.get('bm25_index_peak_rss'))} | {r.get('ivfpq_factory', '–')} | {r.get('ivfpq_hours', 0):.1f} h | "
                f"{gb(r.get('ivfpq_index_bytes'))} | {gb(r.get('vector_bytes_384d'))} / {gb(r.get('vector_bytes_4096d'))} | "
                f"{'%.0f h' % r['minilm_cpu_hours'] if r.get('minilm_cpu_hours') else 'not measured'} | "
                + ", ".join(f"{v:.1f} / {v / 8:.2f} h" for v in g.values()) + " |")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", default="100k,1M,5M")
    ap.add_argument("--sections", default="bm25,dense,projection")
    ap.add_argument("--work", default="/tmp/berds-scale", help="where the synthetic corpora go (not the repo)")
    ap.add_argument("--bm25s-max", default="1M", help="largest size the in-memory bm25s path is measured at")
    ap.add_argument("--memory-budget", default="8G", help="the dense index's --memory-budget")
    ap.add_argument("--uniform-max", default="1M", help="largest size also measured with uniform random vectors")
    ap.add_argument("--encode-sample", type=int, default=2000, help="passages encoded to time MiniLM on this CPU")
    ap.add_argument("--repeat", type=int, default=1, help="bare / studio BM25 index runs, interleaved (medians)")
    ap.add_argument("--crossover-sizes", default="1k,2k,5k,20k,50k", help="sizes of the crossover section")
    ap.add_argument("--data", default=str(ROOT.parent / "shared" / "data"), help="development data (quality)")
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "scale.json"))
    ap.add_argument("--clean", action="store_true", help="delete --work at the end")
    args = ap.parse_args(argv)
    from berds_core.retrieval.index_plan import parse_memory

    sections = set(args.sections.split(","))
    sizes = [size_of(s) for s in args.sizes.split(",") if s]
    work = Path(args.work)
    if ROOT in work.resolve().parents or work.resolve() == ROOT:
        sys.exit("--work must be outside the repository")
    work.mkdir(parents=True, exist_ok=True)
    out_path = Path(args.out)
    res = json.loads(out_path.read_text()) if out_path.is_file() else {}
    res.update({"machine": cpu_name(), "load_start": load(), "date": time.strftime("%Y-%m-%d %H:%M")})
    try:
        if "bm25" in sections or "dense" in sections:
            baseline = retrieve_baseline(work) if "bm25" in sections else None
            for n in sizes:
                if "bm25" in sections:
                    res.setdefault("bm25", {})[label(n)] = bench_bm25(n, work, size_of(args.bm25s_max), baseline,
                                                                      args.repeat)
                    res["bm25_baseline"] = baseline
                if "dense" in sections:
                    store = res.get("bm25", {}).get(label(n), {}).get("corpus_store")
                    if not store or not Path(store).is_dir():
                        cache = work / f"cache-{label(n)}"
                        info = berds("corpus", "ingest", "--corpus", make_corpus(work / f"corpus-{label(n)}.tsv", n),
                                     cache=cache)["json"]
                        store = info["store"]
                    res.setdefault("dense", {})[f"{label(n)}-clustered"] = bench_dense(
                        n, work, Path(store), parse_memory(args.memory_budget))
                    if n <= size_of(args.uniform_max):
                        res["dense"][f"{label(n)}-uniform"] = bench_dense(n, work, Path(store),
                                                                          parse_memory(args.memory_budget), True)
                        shutil.rmtree(work / f"vectors-{label(n)}-uniform", ignore_errors=True)
                out_path.parent.mkdir(parents=True, exist_ok=True)
                out_path.write_text(json.dumps(res, indent=1))
        if "crossover" in sections:
            res["crossover"] = bench_crossover([size_of(x) for x in args.crossover_sizes.split(",")], work)
        if "quality" in sections:
            if not Path(args.data).is_dir():
                log(f"{args.data} not found: quality section skipped")
            else:
                res["quality"] = bench_quality(Path(args.data))
        if "projection" in sections:
            enc = encode_rate(work, args.encode_sample) if args.encode_sample else None
            res["encode_cpu"] = enc
            res["projection"] = projection(res, enc)
    finally:
        res["load_end"] = load()
        out_path.parent.mkdir(parents=True, exist_ok=True)
        out_path.write_text(json.dumps(res, indent=1))
        if args.clean:
            shutil.rmtree(work, ignore_errors=True)
    print(markdown(res))
    return 0


if __name__ == "__main__":
    sys.exit(main())
