"""Playground latency: the engine calls the Playground page makes, per column, cold and warm.

    python bench/playground.py [--retriever bm25|dense] [--judge embedded] [--k 5] [--repeat 5]

For every demo question (or the questions of ``--questions FILE`` with
``--corpus FILE``): one *cold* call per column (the judge's prediction cache
starts empty in a fresh ``BERDS_CACHE``), then ``--repeat`` *warm* calls
(index built, models loaded, judge predictions cached; Streamlit's own
``st.cache_data`` is bypassed, so this is what a new question or a changed
widget costs once the engine is warm). A question's latency is the sum over
the four columns plus the look-up of perspectives no column covers, as the
page computes them. Prints one JSON object with medians (ms) and the
cold/warm ratio; progress on stderr. The retriever is wrapped in the page's
``SharedSearch`` (one search per query shared by the columns), cleared before
every timed repetition; the same run also times the columns without it
(``warm_ms_per_question_unshared``).
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

METHODS = ["none", "mmr", "qe", "rerank"]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--retriever", default="bm25", choices=["bm25", "dense"])
    ap.add_argument("--judge", default="embedded")
    ap.add_argument("--k", type=int, default=5)
    ap.add_argument("--lam", type=float, default=0.5)
    ap.add_argument("--qe-source", default="offline")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--questions", help="questions file (default: the built-in demo)")
    ap.add_argument("--corpus", help="corpus file (with --questions)")
    ap.add_argument("--limit", type=int, help="only the first N questions")
    ap.add_argument("--quiet", action="store_true")
    args = ap.parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    os.environ.setdefault("BERDS_CACHE", tempfile.mkdtemp(prefix="berds-bench-"))

    from tqdm import tqdm

    from berds_core import datasets
    from berds_core.corpus import corpus_from_passages, load_corpus
    from berds_core.embed import load_embedder
    from berds_core.judges import get_judge
    from berds_core.retrieval import get_retriever
    from pages.common import SharedSearch, best_ranks, column_result

    if args.questions:
        if not args.corpus:
            ap.error("--questions needs --corpus")
        questions, corpus, gold = datasets.load_questions(args.questions), load_corpus(args.corpus), None
    else:
        b = datasets.load_demo()
        questions, corpus, gold = b.questions, corpus_from_passages(b.passages, "demo"), b.gold

    questions = questions[: args.limit] if args.limit else questions
    t0 = time.perf_counter()
    raw = get_retriever(args.retriever, corpus, None, progress=not args.quiet)
    retriever = SharedSearch(raw)  # as the page
    judge = get_judge(args.judge)
    embedder = load_embedder(None)
    setup_s = time.perf_counter() - t0

    def one(q, method, retr=None):
        return column_result(q, corpus, retr or retriever, judge, method, args.k, gold=gold, lam=args.lam,
                             qe_source="dataset" if q.generated_perspectives else args.qe_source,  # the page's default
                             embedder=embedder)

    cold = {m: [] for m in METHODS}
    warm = {m: [] for m in METHODS}
    cold_total, warm_total, missing_ms, unshared_total = [], [], [], []
    for q in tqdm(questions, desc="questions", disable=args.quiet, file=sys.stderr):
        tot = 0.0
        results = {}
        retriever.clear()
        for m in METHODS:
            t = time.perf_counter()
            results[m] = one(q, m)
            dt = (time.perf_counter() - t) * 1000
            cold[m].append(dt)
            tot += dt
        missing = [j for j in range(len(q.perspectives)) if not any(r["covered"][j] for r in results.values())]
        t = time.perf_counter()
        best_ranks(q, corpus, retriever, judge, missing, gold=gold)
        tot += (time.perf_counter() - t) * 1000
        cold_total.append(tot)
        for _ in range(args.repeat):
            retriever.clear()  # a new question for the retriever; judge predictions stay cached
            tot = 0.0
            for m in METHODS:
                t = time.perf_counter()
                one(q, m)
                dt = (time.perf_counter() - t) * 1000
                warm[m].append(dt)
                tot += dt
            t = time.perf_counter()
            best_ranks(q, corpus, retriever, judge, missing, gold=gold)
            dt = (time.perf_counter() - t) * 1000
            missing_ms.append(dt)
            warm_total.append(tot + dt)
            # the alternative, same run: every column searches on its own (no SharedSearch)
            t = time.perf_counter()
            for m in METHODS:
                one(q, m, raw)
            best_ranks(q, corpus, raw, judge, missing, gold=gold)
            unshared_total.append((time.perf_counter() - t) * 1000)

    med = statistics.median
    out = {
        "questions": len(questions), "passages": len(corpus), "retriever": args.retriever, "judge": judge.name,
        "k": args.k, "repeat": args.repeat, "setup_s": round(setup_s, 2),
        "warm_ms_per_column": {m: round(med(v), 2) for m, v in warm.items()},
        "cold_ms_per_column": {m: round(med(v), 2) for m, v in cold.items()},
        "warm_ms_missing_lookup": round(med(missing_ms), 2),
        "warm_ms_per_question": round(med(warm_total), 2),
        "warm_ms_per_question_max": round(max(warm_total), 2),
        "cold_ms_per_question": round(med(cold_total), 2),
        "cold_over_warm": round(med(cold_total) / med(warm_total), 2),
        "warm_ms_per_question_unshared": round(med(unshared_total), 2),
        "unshared_over_shared": round(med(unshared_total) / med(warm_total), 2),
        "under_1s_warm": med(warm_total) < 1000,
    }
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
