#!/usr/bin/env python
"""The cost of Ray against one process on this machine, and what it projects to on N GPU nodes.

    python bench/ray_scale.py [--passages 100000] [--words 40] [--questions 1000] [--repeat 1] [--json OUT]

Each workload runs as the user runs it, ``berds ...`` in a subprocess with an
empty cache, once in one process and once with ``--ray local`` (a Ray
instance started for the command on this machine, every core, stopped after;
its start-up is part of the time), alternating, ``--repeat`` times; medians:

- ``demo``: the built-in demo bundle (560 passages, 14 questions): ``berds index --retriever dense``
  then ``berds retrieve`` (k 20) and ``berds judge --judge embedded`` on the run;
- ``synthetic index``: ``berds index --retriever dense`` over ``--passages`` synthetic passages of
  ``--words`` words (MiniLM, the CPU default precision);
- ``synthetic judge``: ``berds judge --judge embedded`` over a run of ``--questions`` questions x
  (passages / questions) passages x 2 perspectives, empty cache (every (perspective, passage) pair read
  by the stance model's cross-encoder; with ``--ray``, in judge actors).

Outputs are checked equal (the run files byte for byte). From the ``--ray``
runs' own report it also derives the throughput per encoder actor and the
fixed cost of a job (start-up, actor start), and measures how fast the driver
commits results (vectors into the embedding store, probabilities into the
prediction cache): the ceiling of any cluster. ``docs/scale.md`` turns these
into a projection for N GPU nodes. Reports the CPU and the load average
before and after (timings on a loaded machine are not results).

Short passages make Ray's fixed costs weigh more, so ``--words 40`` gives an
upper bound of the overhead for BERDS' 100-word passages.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from machine import cpu_model, load  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
WORDS = """school tax energy climate water food health money law ban speech children government people
country state world life work time science technology art music sport animal city farm river forest
market price job wage trade bank loan debt court police prison vote party union church family home
house road car train plane ship oil gas coal solar wind nuclear power grid data privacy phone internet
news media book film game doctor nurse hospital drug vaccine virus disease diet sugar meat bread milk
should must could would better worse harm benefit cost risk safe unsafe free fair unfair right wrong
""".split()


def cpu_name() -> str:
    return f"{cpu_model()} ({os.cpu_count()} cores)"


def berds(args: list[str], cache: Path, ray: bool) -> tuple[float, dict]:
    env = {**os.environ, "BERDS_CACHE": str(cache)}
    env.pop("BERDS_RAY_ADDRESS", None)
    cmd = [sys.executable, "-m", "berds_core", *args, "--json", "--quiet"] + (["--ray", "local"] if ray else [])
    t0 = time.perf_counter()
    p = subprocess.run(cmd, capture_output=True, text=True, env=env)
    dt = time.perf_counter() - t0
    if p.returncode != 0:
        raise SystemExit(f"failed: {' '.join(cmd)}\n{p.stderr[-3000:]}")
    return dt, json.loads(p.stdout.splitlines()[-1])


def synth(folder: Path, n: int, words: int, n_questions: int, seed: int = 0) -> tuple[Path, Path]:
    rng = random.Random(seed)
    texts = [" ".join(rng.choice(WORDS) for _ in range(words - 1)) + f" n{i}" for i in range(n)]
    corpus = folder / "corpus.jsonl"
    with open(corpus, "w", encoding="utf-8") as fh:
        for i, t in enumerate(texts):
            fh.write(json.dumps({"id": f"p{i}", "title": "", "text": t}) + "\n")
    per = n // n_questions
    run = folder / "run.jsonl"
    with open(run, "w", encoding="utf-8") as fh:
        for q in range(n_questions):
            persp = [" ".join(rng.choice(WORDS) for _ in range(10)) + f" side {j}" for j in range(2)]
            ctxs = [{"id": f"p{i}", "title": "", "text": texts[i], "score": float(-j)}
                    for j, i in enumerate(range(q * per, (q + 1) * per))]
            fh.write(json.dumps({"id": f"q{q}", "question": f"question {q}?", "perspectives": persp,
                                 "ctxs": ctxs}) + "\n")
    return corpus, run


def workloads(tmp: Path, args) -> dict:
    demo = tmp / "demo"
    subprocess.run([sys.executable, "-m", "berds_core", "import", "demo", "--out", str(demo)], check=True,
                   capture_output=True)
    corpus, run = synth(tmp, args.passages, args.words, args.questions)
    out = {}
    if not args.skip_demo:
        def demo_job(cache: Path, ray: bool, tag: str):
            t1, a = berds(["index", "--corpus", str(demo / "corpus.jsonl"), "--retriever", "dense"], cache, ray)
            t2, _ = berds(["retrieve", "--questions", str(demo / "questions.jsonl"), "--corpus",
                           str(demo / "corpus.jsonl"), "--retriever", "dense", "--k", "20",
                           "--out", str(tmp / f"demo-{tag}.jsonl")], cache, ray)
            t3, c = berds(["judge", "--run", str(tmp / f"demo-{tag}.jsonl"), "--judge", "embedded",
                           "--out", str(tmp / f"demo-{tag}.judged.jsonl")], cache, ray)
            return t1 + t2 + t3, {"index": a, "judge": c}, tmp / f"demo-{tag}.judged.jsonl"
        out["demo (index + retrieve + judge, 560 passages)"] = demo_job
    if not args.skip_index:
        def index_job(cache: Path, ray: bool, tag: str):
            t, info = berds(["index", "--corpus", str(corpus), "--retriever", "dense"], cache, ray)
            return t, info, None
        out[f"synthetic index ({args.passages:,} passages, {args.words} words)"] = index_job
    if not args.skip_judge:
        def judge_job(cache: Path, ray: bool, tag: str):
            dest = tmp / f"judged-{tag}.jsonl"
            t, info = berds(["judge", "--run", str(run), "--judge", "embedded", "--out", str(dest)], cache, ray)
            return t, info, dest
        out[f"synthetic judge ({args.passages * 2:,} pairs, cold cache)"] = judge_job
    return out


def driver_limits(tmp: Path, n: int = 100_000) -> dict:
    """How fast the driver commits what the workers send back (the ceiling of any cluster): unit vectors
    into the embedding store and probabilities into the prediction cache, in the parts the jobs use."""
    import numpy as np

    os.environ["BERDS_CACHE"] = str(tmp / "cache-limits")
    sys.path.insert(0, str(ROOT))
    from berds_core.files.cache import text_hash
    from berds_core.embeddings.text_encoders import CHUNK, embedding_store
    from berds_core.judges.base import prediction_cache

    rng = np.random.default_rng(0)
    vecs = rng.standard_normal((CHUNK, 384)).astype(np.float32)
    store = embedding_store()
    t0 = time.perf_counter()
    for a in range(0, n, CHUNK):
        store.put_many("bench", [(text_hash(f"t{a + i}"), vecs[i]) for i in range(min(CHUNK, n - a))])
    vec_rate = n / (time.perf_counter() - t0)
    cache = prediction_cache()
    t0 = time.perf_counter()
    for a in range(0, n, 2048):
        cache.put_many("bench", [((text_hash(f"p{a + i}"), text_hash("s")), 0.5) for i in range(min(2048, n - a))])
    pair_rate = n / (time.perf_counter() - t0)
    return {"store_vectors_per_s": round(vec_rate), "cache_pairs_per_s": round(pair_rate)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--passages", type=int, default=100_000)
    ap.add_argument("--words", type=int, default=40)
    ap.add_argument("--questions", type=int, default=1000)
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--skip-demo", action="store_true")
    ap.add_argument("--skip-index", action="store_true")
    ap.add_argument("--skip-judge", action="store_true")
    ap.add_argument("--json", dest="json_out", help="write the results here too")
    args = ap.parse_args()
    report = {"cpu": cpu_name(), "load_before": load(), "passages": args.passages, "words": args.words,
              "repeat": args.repeat, "rows": []}
    print(f"# {report['cpu']}; load average before: {report['load_before']}", flush=True)
    with tempfile.TemporaryDirectory(prefix="berds-ray-bench-") as tmpdir:
        tmp = Path(tmpdir)
        for w, (name, job) in enumerate(workloads(tmp, args).items()):
            times = {"one": [], "ray": []}
            last = {}
            for r in range(args.repeat):
                for mode in ("one", "ray"):
                    cache = tmp / f"cache-{w}-{mode}-{r}"  # one per workload: the judge's cache is really cold
                    dt, info, out = job(cache, mode == "ray", f"{mode}-{r}")
                    times[mode].append(dt)
                    last[mode] = (info, out)
                    print(f"  {name} [{mode} #{r + 1}] {dt:.1f} s (load {load()})", flush=True)
            same = None
            if last["one"][1] is not None:
                same = last["one"][1].read_bytes() == last["ray"][1].read_bytes()
            one, ray = statistics.median(times["one"]), statistics.median(times["ray"])
            row = {"workload": name, "one_s": round(one, 1), "ray_s": round(ray, 1), "ratio": round(ray / one, 3),
                   "outputs_equal": same, "ray_report": last["ray"][0].get("ray")}
            report["rows"].append(row)
            print(f"{name}: one process {one:.1f} s, --ray local {ray:.1f} s, ratio {ray / one:.2f}x, "
                  f"outputs equal: {same}", flush=True)
        report["driver"] = driver_limits(tmp)
        print(f"driver commits: {report['driver']['store_vectors_per_s']:,} vectors/s into the embedding store, "
              f"{report['driver']['cache_pairs_per_s']:,} pairs/s into the prediction cache", flush=True)
    report["load_after"] = load()
    print(f"# load average after: {report['load_after']}")
    print("\n| workload | one process | --ray local | ratio | outputs equal |\n|---|---|---|---|---|")
    for r in report["rows"]:
        print(f"| {r['workload']} | {r['one_s']} s | {r['ray_s']} s | {r['ratio']:.2f}x | {r['outputs_equal']} |")
    if args.json_out:
        Path(args.json_out).write_text(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
