"""The static first stage at scale: index build and two-stage query latency on synthetic corpora (issue 67).

    python bench/static_scale.py --sizes 100k,1M --work /tmp/berds-scale        # needs `berds models distill`

Corpora and questions are bench/scale.py's (100-word passages from a Zipf vocabulary, DPR's TSV layout;
8-word queries from passages). Per size, each a separate process (peak memory = its whole-process maximum
resident set), in one run side by side:

- ``berds index --retriever static --index ivfpq --memory-budget B`` (``--memory-budget``, default 2G: over
  it the lists go to disk; the on-disk store, the static vectors in shards, the IVF-PQ folder) and ``berds
  index --retriever bm25`` (tantivy): wall seconds, peak memory (and its anonymous part: what the process
  needs, not the page cache of files it maps), bytes on disk (store, vectors, index);
- query latency over ``--queries`` single questions, the indexes open, MiniLM's vectors of the candidates
  not yet cached (a fresh embedding store: every candidate is encoded when met): ``static`` alone, ``bm25``
  alone, ``static%20>>union>>reread`` (the pipeline whose N was chosen out of fold on the development
  corpora: bench/static_first_stage.py) and ``static%200>>reread``: p50 / p95 seconds.

- ``--encode-sample N`` (default 20,000): the static model's encoding rate on N passages of the 200k corpus:
  the studio's lookup path (``embeddings.static_encode``, a fresh piece store each run) at 1,024 texts a
  batch (``STATIC_BATCH``) and at 64 (every other encoder's), against ``SentenceTransformer.encode`` at
  1,024, interleaved, median of ``--repeat`` runs each, in one process; that all give the same vectors; and
  the rates on real prose of the same length (procon's arguments from ``--data`` in 100-word windows), with
  the word pieces a passage of each (the synthetic words split into more pieces than real ones).

Synthetic passages carry no meaning, so this measures cost only; quality is bench/static_first_stage.py's.
Writes bench/results/static_scale.json and a Markdown table; the CPU and its load are printed with it.
"""
from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from scale import ROOT, berds, cpu_name, dir_bytes, label, load, log, make_corpus, make_questions, run_measured, \
    size_of  # noqa: E402

LATENCY = r"""
import json, sys, time
import numpy as np
from berds_core.corpora.disk import ingest
from berds_core.diversify import Pipeline, Using
from berds_core.experiment import Searched, rankings
from berds_core.retrieval import get_retriever
from berds_core.retrieval.index_plan import parse_memory
corpus_file, static_dir, queries = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
corpus = ingest(corpus_file)
static = get_retriever("static", corpus, progress=False, index="ivfpq", memory_budget=parse_memory(sys.argv[4]))
bm25 = get_retriever("bm25", corpus, progress=False)
out = {}
for name, spec, where in [("static", "none", static), ("bm25", "none", bm25),
                          ("static%20>>union>>reread", "static%20>>union>>reread", static),
                          ("static%200>>reread", "static%200>>reread", static)]:
    pipe = Pipeline.parse(spec)
    lat = []
    for q in queries:
        t0 = time.perf_counter()
        rankings([type("Q", (), {"question": q, "id": q})()], pipe, 10, Searched(corpus, where),
                 using=Using(other_retriever=bm25))
        lat.append(time.perf_counter() - t0)
    out[name] = {"p50_s": float(np.percentile(lat, 50)), "p95_s": float(np.percentile(lat, 95)), "n": len(lat)}
print(json.dumps(out))
"""


def bench_size(n: int, work: Path, queries: int, budget: str) -> dict:
    from berds_core.embeddings.static import default_static_model

    corpus = make_corpus(work / f"corpus-{label(n)}.tsv", n)
    qs = make_questions(corpus, None, n=queries, rows=min(n, 100_000))[:queries]
    cache = work / f"cache-static-{label(n)}"
    shutil.rmtree(cache, ignore_errors=True)
    (cache / "static").mkdir(parents=True)
    src = default_static_model()
    shutil.copytree(src, cache / "static" / src.name)  # the distilled model, where --retriever static looks
    res = {"passages": n, "memory_budget": budget}
    st = berds("index", "--corpus", corpus, "--corpus-storage", "disk", "--retriever", "static", "--index", "ivfpq",
               "--memory-budget", budget, cache=cache)
    res["static_index"] = {"seconds": st["seconds"], "rss": st["rss"], "rss_anon": st["rss_anon"],
                           "rss_file": st["rss_file"], "cpu_s": st["cpu_s"], "load": st["load"],
                           "vectors_bytes": dir_bytes(cache / "vectors"), "index_bytes": dir_bytes(cache / "indexes"),
                           "store_bytes": dir_bytes(cache / "corpora") if (cache / "corpora").exists() else None}
    log(f"{label(n)}: static index {st['seconds']:.0f}s, peak {st['rss'] / 1e9:.2f} GB")
    bm = berds("index", "--corpus", corpus, "--corpus-storage", "disk", "--retriever", "bm25", cache=cache)
    res["bm25_index"] = {"seconds": bm["seconds"], "rss": bm["rss"], "load": bm["load"]}
    log(f"{label(n)}: bm25 index {bm['seconds']:.0f}s, peak {bm['rss'] / 1e9:.2f} GB")
    lat = run_measured([sys.executable, "-c", LATENCY, str(corpus), str(cache / "static"), json.dumps(qs), budget],
                       env={"BERDS_CACHE": str(cache)})
    res["latency"] = json.loads(lat["stdout"].strip().splitlines()[-1])
    res["latency_process"] = {"seconds": lat["seconds"], "rss": lat["rss"], "load": lat["load"]}
    log(f"{label(n)}: latency {json.dumps(res['latency'])}")
    return res


ENCODE = r"""
import json, statistics, sys, time
import numpy as np
from berds_core.embeddings import static_encode
from berds_core.embeddings.static import default_static_model
from berds_core.embeddings.text_encoders import STATIC_BATCH, TextEncoder, encode_normalized
corpus, n, repeat, data = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
texts = []
with open(corpus, encoding="utf-8") as fh:
    next(fh)
    for line in fh:
        texts.append(line.split("\t")[1])
        if len(texts) == n:
            break
real = []  # real prose in Wikipedia's passage length: procon's arguments cut into 100-word windows
try:
    from pathlib import Path
    from berds_core.datasets.devsets import dev_bundles
    words = " ".join(p.text for b in dev_bundles(Path(data), ["procon"])[0].values() for p in b.passages).split()
    windows = [" ".join(words[i:i + 100]) for i in range(0, len(words) - 99, 100)]
    real = (windows * (1 + n // max(1, len(windows))))[:n] if windows else []
except (OSError, ValueError):
    pass
te = TextEncoder(str(default_static_model()), store=False)
te.encode_uncached(texts[:256])
tok = te.encoder[0].tokenizer
pieces = {"synthetic": float(np.mean([len(e.ids) for e in tok.encode_batch(texts[:2000], add_special_tokens=False)]))}
ways = {  # the studio's lookup path (a fresh piece store each run: its first meeting with the pieces counted),
    # at its batch and at every other encoder's; sentence-transformers' encode at the same batch
    f"lookup@{STATIC_BATCH}": lambda x: static_encode.encode_static(te.encoder, x, STATIC_BATCH),
    "lookup@64": lambda x: static_encode.encode_static(te.encoder, x, 64),
    f"sentence-transformers@{STATIC_BATCH}": lambda x: encode_normalized(te.encoder, x, STATIC_BATCH)}
rates, vecs, real_rates = {k: [] for k in ways}, {}, {k: [] for k in ways}
for _ in range(repeat):
    for way, run in ways.items():
        for corpus_texts, into in [(texts, rates), (real, real_rates)]:
            if not corpus_texts:
                continue
            static_encode._pieces.clear()
            t0 = time.perf_counter()
            got = run(corpus_texts)
            into[way].append(len(corpus_texts) / (time.perf_counter() - t0))
            if corpus_texts is texts:
                vecs[way] = np.nan_to_num(got)
if real:
    pieces["procon"] = float(np.mean([len(e.ids) for e in tok.encode_batch(real[:2000], add_special_tokens=False)]))
first = next(iter(vecs.values()))
print(json.dumps({"passages": len(texts), "per_s": {b: statistics.median(r) for b, r in rates.items()},
                  "same_vectors": all(np.array_equal(first, v) for v in vecs.values()),
                  "real_100_words_per_s": {b: statistics.median(r) for b, r in real_rates.items() if r} or None,
                  "word_pieces_per_passage": pieces}))
"""


def encode_rate(work: Path, n: int, repeat: int, data: Path) -> dict:
    corpus = make_corpus(work / "corpus-200k.tsv", 200_000)
    res = run_measured([sys.executable, "-c", ENCODE, str(corpus), str(n), str(repeat), str(data)])
    got = json.loads(res["stdout"].strip().splitlines()[-1])
    got["load"] = res["load"]
    log(f"static encoding: {json.dumps(got)}")
    return got


def markdown(res: dict) -> str:
    lines = [f"CPU: {res['cpu']}; load before: {res['load']}", "",
             "| passages | static index s | peak GB (anonymous) | vectors + index GB | bm25 index s | static p50 / p95 s | "
             "bm25 p50 / p95 s | static%20>>union>>reread p50 / p95 s | static%200>>reread p50 / p95 s |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in res["sizes"]:
        s, lat = r["static_index"], r["latency"]
        cell = " | ".join(f"{lat[k]['p50_s']:.3f} / {lat[k]['p95_s']:.3f}" for k in lat)  # the LATENCY rows
        anon = f" ({s['rss_anon'] / 1e9:.2f})" if s.get("rss_anon") else ""
        lines.append(f"| {r['passages']:,} | {s['seconds']:.0f} | {s['rss'] / 1e9:.2f}{anon} | "
                     f"{(s['vectors_bytes'] + s['index_bytes']) / 1e9:.2f} | {r['bm25_index']['seconds']:.0f} | {cell} |")
    if res.get("encode"):
        e = res["encode"]
        real = e.get("real_100_words_per_s") or {}
        lines += ["", f"static encoding, {e['passages']:,} passages (load {e['load']}; medians): "
                  + ", ".join(f"{way} {int(float(r)):,}/s" for way, r in e["per_s"].items())
                  + f"; same vectors: {e['same_vectors']}; real prose (procon, 100-word windows): "
                  + (", ".join(f"{way} {int(float(r)):,}/s" for way, r in real.items()) if real else "not read")
                  + f"; word pieces a passage: {json.dumps(e.get('word_pieces_per_passage'))}"]
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="100k")
    ap.add_argument("--work", default="/tmp/berds-scale")
    ap.add_argument("--queries", type=int, default=30)
    ap.add_argument("--memory-budget", default="2G", help="the static index's --memory-budget (over it, its lists "
                                                           "go to disk)")
    ap.add_argument("--encode-sample", type=int, default=20_000, help="passages for the encoding rate (0: skip)")
    ap.add_argument("--repeat", type=int, default=3, help="encoding-rate runs per batch size (median)")
    ap.add_argument("--encode-only", action="store_true", help="only the encoding rate")
    ap.add_argument("--data", default=str(ROOT.parent / "shared" / "data"),
                    help="development data: procon's arguments in 100-word windows give the rate on real prose")
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "static_scale.json"))
    args = ap.parse_args(argv)
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    res = {"cpu": cpu_name(), "load": load(), "sizes": []}
    if args.encode_only and Path(args.out).is_file():  # the sizes of the last run stay, the rate is added
        res = {**json.loads(Path(args.out).read_text()), "encode_cpu": res["cpu"]}
    if args.encode_sample:
        res["encode"] = encode_rate(work, args.encode_sample, args.repeat, Path(args.data))
    for n in [] if args.encode_only else [size_of(s) for s in args.sizes.split(",")]:
        res["sizes"].append(bench_size(n, work, args.queries, args.memory_budget))
        Path(args.out).write_text(json.dumps(res, indent=2) + "\n")
    Path(args.out).write_text(json.dumps(res, indent=2) + "\n")
    print(markdown(res))
    return 0


if __name__ == "__main__":
    sys.exit(main())
