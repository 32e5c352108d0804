"""Playground latency: the first page view, the one-off warm-up, and each question cold and warm.

    python bench/playground.py [--retriever bm25|dense] [--repeat 5] [--no-browser]

Three parts, one JSON object on stdout (medians in ms unless named _s;
progress on stderr):

1. **First page view** (needs /usr/bin/chromium and playwright; ``--no-browser``
   skips it): ``streamlit run app.py`` with an empty ``BERDS_CACHE``; headless
   Chromium opens the Home page. ``first_view_s``: from the request until Home
   and the sidebar have rendered and the script run is over (the app is usable;
   models are still loading in the background); ``first_view_server_cpu_s``:
   the CPU seconds the server spent on it (less sensitive to a busy machine
   than the wall time). ``warmup_ready_s``: until the
   sidebar says the models are ready (pages answer from then on; the sidebar stops
   polling there, and passages still to encode are encoded in the background).
   ``first_question_s``: then, from a click
   on Playground until its 4 columns of cards are drawn. With ``--at-once``
   (a speaker who opens the Playground at once), a second fresh server: the
   Playground is clicked as soon as Home is drawn, and
   ``at_once_first_question_s`` is the time from that click until the first
   demo question's 4 columns are drawn (``at_once_from_request_s``: from the
   first request).
2. **Cold questions without the warm-up** (the alternative, how the app worked
   before): models loaded, an empty cache, each demo question asked for the
   first time encodes the passages it needs (``cold_no_warmup_ms_per_question``).
3. **With the warm-up** (what the app does now): a second empty cache,
   ``berds_core.studio.warmup.warm_passages`` encodes every passage and the dataset's
   perspectives once, as the app's warm-up does (``warmup_s``),
   then each question is asked for the first time (``cold_ms_per_question``,
   ``cold_ms_per_question_max``: the target is under 1 s for every question) and
   ``--repeat`` more times (``warm_ms_per_question``: judge predictions cached).

A question's latency is what the page computes for it: the four columns (plain,
MMR, query expansion, re-ranker; judged) through the page's ``SharedSearch``,
plus the look-up of perspectives no column covers. Streamlit's own
``st.cache_data`` is bypassed. ``load_avg`` records how busy the machine was
(timings on a loaded machine are noisy; compare ratios within one run).
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



def at_once(timeout: float = 1800.0, log=print) -> dict:
    """A fresh server; the Playground clicked as soon as Home is drawn (see the module docstring)."""
    sys.path.insert(0, str(ROOT / "tests"))
    from browser_harness import chromium_page, skip_reason, streamlit_server, wait_idle

    reason = skip_reason()
    if reason:
        return {"skipped": reason}
    with streamlit_server(ROOT / "app.py", timeout=300) as url, chromium_page() as page:
        t0 = time.perf_counter()
        page.goto(url)
        page.wait_for_selector("h1:has-text('BERDS Studio')", timeout=timeout * 1000)
        page.wait_for_selector('[data-testid="stSidebar"] [data-testid="stSelectbox"]', timeout=timeout * 1000)
        wait_idle(page, int(timeout * 1000))
        t1 = time.perf_counter()
        page.get_by_role("link", name="Playground").first.click()
        page.wait_for_function("() => document.querySelectorAll('.bc-card').length >= 20", timeout=timeout * 1000)
        t2 = time.perf_counter()
        log(f"at once: Home {t1 - t0:.1f} s, first question {t2 - t1:.1f} s after the click")
        return {"at_once_home_s": round(t1 - t0, 2), "at_once_first_question_s": round(t2 - t1, 2),
                "at_once_from_request_s": round(t2 - t0, 2)}


def first_view(timeout: float = 1800.0, log=print) -> dict:
    """Time the first page view of a fresh server in headless Chromium (see the module docstring)."""
    sys.path.insert(0, str(ROOT / "tests"))
    from browser_harness import chromium_page, skip_reason, streamlit_server, wait_idle

    reason = skip_reason()
    if reason:
        return {"skipped": reason}
    out = {}

    def cpu_s(pid: int) -> float:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    with streamlit_server(ROOT / "app.py", timeout=300) as url, chromium_page() as page:
        c0 = cpu_s(url.pid) if Path(f"/proc/{url.pid}/stat").exists() else None
        t0 = time.perf_counter()
        page.goto(url)
        page.wait_for_selector("h1:has-text('BERDS Studio')", timeout=timeout * 1000)
        page.wait_for_selector('[data-testid="stSidebar"] [data-testid="stSelectbox"]', timeout=timeout * 1000)
        page.wait_for_selector('[data-testid="stMetricValue"]', timeout=timeout * 1000)
        wait_idle(page, int(timeout * 1000))
        out["first_view_s"] = round(time.perf_counter() - t0, 2)
        if c0 is not None:
            out["first_view_server_cpu_s"] = round(cpu_s(url.pid) - c0, 2)
        log(f"first view: {out['first_view_s']} s; waiting for the warm-up")
        page.wait_for_selector("text=/Models (and passages )?ready/", timeout=timeout * 1000)
        out["warmup_ready_s"] = round(time.perf_counter() - t0, 2)
        log(f"warm-up ready: {out['warmup_ready_s']} s")
        t1 = time.perf_counter()
        page.get_by_role("link", name="Playground").first.click()
        page.wait_for_function("() => document.querySelectorAll('.bc-card').length >= 20", timeout=timeout * 1000)
        wait_idle(page, int(timeout * 1000))
        out["first_question_s"] = round(time.perf_counter() - t1, 2)
    return out


def main(argv=None) -> int:
    from berds_core.diversify.methods import METHOD_TABLE
    from berds_core.retrieval import CORPUS_RETRIEVERS

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog="\n".join(__doc__.splitlines()[2:]))
    ap.add_argument("--retriever", default="bm25", choices=CORPUS_RETRIEVERS)
    ap.add_argument("--judge", default="embedded")
    ap.add_argument("--k", type=int, default=5)
    ap.add_argument("--lam", type=float, default=0.75, help="MMR lambda (the page's default)")
    ap.add_argument("--qe-source", default="offline", help="for questions without generated perspectives")
    ap.add_argument("--repeat", type=int, default=5, help="warm repetitions per question")
    ap.add_argument("--questions", help="questions file (default: the built-in demo)")
    ap.add_argument("--corpus", help="corpus file (with --questions)")
    ap.add_argument("--limit", type=int, help="only the first N questions")
    ap.add_argument("--no-browser", action="store_true", help="skip the first-page-view measurement")
    ap.add_argument("--at-once", action="store_true",
                    help="also time the first question of a speaker who opens the Playground at once (a second "
                         "fresh server)")
    ap.add_argument("--only-browser", action="store_true", help="only the browser measurements (no per-question part)")
    ap.add_argument("--quiet", action="store_true")
    args = ap.parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    log = (lambda *a: None) if args.quiet else (lambda *a: print(*a, file=sys.stderr, flush=True))
    out = {"load_avg_start": [round(x, 2) for x in os.getloadavg()]}

    if not args.no_browser:
        out.update(first_view(log=log))
        if args.at_once:
            out.update(at_once(log=log))
    if args.only_browser:
        out["load_avg_end"] = [round(x, 2) for x in os.getloadavg()]
        print(json.dumps(out))
        return 0

    from berds_core import datasets
    from berds_core.corpora.memory import corpus_from_passages, load_corpus
    from berds_core.diversify import vectors as div_emb
    from berds_core.embeddings.models import load_embedder
    from berds_core.judges import get_judge
    from berds_core.retrieval import get_retriever
    from berds_core.studio.warmup import warm_passages
    from berds_core.retrieval.caching import SharedSearch
    from berds_core.studio.columns import Engine, best_ranks, column_pipeline, column_result

    if args.questions:
        if not args.corpus:
            ap.error("--questions needs --corpus")
        questions, corpus, gold = datasets.load_questions(args.questions), load_corpus(args.corpus), None
    else:
        b = datasets.load_demo()
        questions, corpus, gold = b.questions, corpus_from_passages(b.passages, "demo"), b.gold
    questions = questions[: args.limit] if args.limit else questions
    med = statistics.median

    def fresh_engine():
        """An empty cache and new judge / retriever objects (models stay loaded in the process)."""
        os.environ["BERDS_CACHE"] = tempfile.mkdtemp(prefix="berds-bench-")
        div_emb._OBJ_STORE.clear()  # the embedding store itself lives under the new BERDS_CACHE
        t = time.perf_counter()
        raw = get_retriever(args.retriever, corpus, None, progress=False)
        judge = get_judge(args.judge)
        embedder = load_embedder(None)
        return raw, SharedSearch(raw), judge, embedder, time.perf_counter() - t

    shown = [m.name for m in METHOD_TABLE if m.shown]  # the Playground's columns before any toggle is touched

    def ask(q, retriever, judge, embedder) -> float:
        """ms for everything the page computes for one question."""
        t = time.perf_counter()
        engine = Engine(corpus, retriever, judge, embedder)
        source = "dataset" if q.generated_perspectives else args.qe_source
        results = {m: column_result(engine, q, column_pipeline(m, args.lam if m == "mmr" else None, source), args.k,
                                    gold=gold, label=m) for m in shown}
        missing = [j for j in range(len(q.perspectives)) if not any(r["covered"][j] for r in results.values())]
        best_ranks(engine, q, missing, gold=gold)
        return (time.perf_counter() - t) * 1000

    # -- the alternative: no warm-up (each new question encodes what it needs)
    raw, retriever, judge, embedder, setup_s = fresh_engine()
    out["setup_s"] = round(setup_s, 2)
    ask(questions[0].__class__("bench-probe", "probe question", ["probe"]), retriever, judge, embedder)  # torch warm
    raw, retriever, judge, embedder, _ = fresh_engine()
    no_warm = []
    for q in questions:
        retriever.clear()
        no_warm.append(ask(q, retriever, judge, embedder))
    log(f"cold without warm-up: median {med(no_warm):.0f} ms")

    # -- with the warm-up
    raw, retriever, judge, embedder, _ = fresh_engine()
    t = time.perf_counter()
    warmed = warm_passages(corpus, judge, embedder, texts=[p for q in questions for p in
                                                         list(q.perspectives) + list(q.generated_perspectives or ())])
    warmup_s = time.perf_counter() - t
    log(f"warm-up: {warmup_s:.1f} s")
    cold, warm = [], []
    for q in questions:
        retriever.clear()
        cold.append(ask(q, retriever, judge, embedder))
        for _ in range(args.repeat):
            retriever.clear()  # a new search; judge predictions stay cached
            warm.append(ask(q, retriever, judge, embedder))
    out.update({
        "questions": len(questions), "passages": len(corpus), "retriever": args.retriever, "judge": judge.name,
        "k": args.k, "repeat": args.repeat,
        "warmup_s": round(warmup_s, 2), "warmup_encoded": warmed,
        "cold_ms_per_question": round(med(cold), 1), "cold_ms_per_question_max": round(max(cold), 1),
        "cold_ms_each": [round(x, 1) for x in cold],  # in question order: the first is the first demo question
        "warm_ms_per_question": round(med(warm), 1) if warm else None,
        "cold_no_warmup_ms_per_question": round(med(no_warm), 1),
        "cold_no_warmup_ms_per_question_max": round(max(no_warm), 1),
        "no_warmup_over_warmup_cold": round(med(no_warm) / med(cold), 2),
        "cold_over_warm": round(med(cold) / med(warm), 2) if warm else None,
        "every_cold_question_under_1s": max(cold) < 1000,
        "load_avg_end": [round(x, 2) for x in os.getloadavg()],
    })
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
