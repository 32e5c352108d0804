"""berds_core.runtime.background: objects made once across threads; background jobs with progress,
promotion (the job a page waits for goes first) and a clean stop."""
from __future__ import annotations

import threading
import time

import pytest

from berds_core.runtime.background import JobCancelled, Jobs, Memo


def test_memo_makes_each_object_once_across_threads():
    memo, calls = Memo(), []
    gate = threading.Event()

    def make():
        calls.append(1)
        gate.wait(5)
        return object()

    got = []
    threads = [threading.Thread(target=lambda: got.append(memo.get(("judge", "x"), make))) for _ in range(4)]
    for t in threads:
        t.start()
    time.sleep(0.2)
    gate.set()
    for t in threads:
        t.join(5)
    assert len(calls) == 1 and len(got) == 4 and all(g is got[0] for g in got)
    assert memo.has(("judge", "x")) and memo.peek(("judge", "y")) is None


def test_memo_does_not_keep_failures_and_evicts_per_kind():
    memo = Memo(max_per_kind=2)
    with pytest.raises(ValueError):
        memo.get(("data", 1), lambda: (_ for _ in ()).throw(ValueError("bad file")))
    assert memo.get(("data", 1), lambda: "fixed") == "fixed"  # a corrected input is tried again
    memo.get(("data", 2), lambda: 2)
    memo.get(("judge", "j"), lambda: "j")
    memo.get(("data", 3), lambda: 3)
    assert not memo.has(("data", 1)) and memo.has(("data", 3)) and memo.has(("judge", "j"))


def _wait(pred, timeout=10.0):
    end = time.monotonic() + timeout
    while not pred():
        assert time.monotonic() < end
        time.sleep(0.01)


def test_jobs_report_progress_and_errors():
    jobs = Jobs()
    try:
        def ok(report):
            for i in range(3):
                report("step", i + 1, 3)

        def bad(report):
            report("reading")
            raise ValueError("broken")

        a = jobs.submit("a", "A", ok)
        b = jobs.submit("b", "B", bad)
        assert jobs.submit("a", "A", ok) is a  # one job per key
        assert a.wait(10) and b.wait(10)
        assert a.status == "done" and a.fraction == 1.0 and a.text == "A: ready"
        assert b.status == "error" and str(b.error) == "broken" and b.text == "B: failed"
        assert jobs.submit("b", "B", ok) is not b  # a failed job may be tried again
    finally:
        jobs.shutdown()


def test_promoted_job_runs_first_and_the_running_one_resumes():
    jobs, order = Jobs(), []
    step = threading.Event()
    try:
        def long(report):
            order.append("long:start")
            for i in range(200):
                report("encoding", i, 200)
                step.wait(0.02)
            order.append("long:end")

        def short(report):
            report("loading")
            order.append("short")

        first = jobs.submit("long", "Warm-up demo", long)
        _wait(lambda: first.status == "running" and first.done)
        second = jobs.submit("short", "Warm-up mine", short)
        jobs.promote("short")
        assert second.wait(10) and second.status == "done"
        assert first.wait(20) and first.status == "done"
        assert order == ["long:start", "short", "long:start", "long:end"]
    finally:
        jobs.shutdown()


def _forever(seen):
    """A job that reports until it is cancelled (and notes it in ``seen``)."""
    def job(report):
        try:
            while True:
                report("working")
                time.sleep(0.01)
        except JobCancelled:
            seen.append("cancelled")
            raise
    return job


def test_shutdown_stops_the_running_job_at_its_next_step():
    jobs = Jobs()
    seen = []

    st = jobs.submit("f", "F", _forever(seen))
    _wait(lambda: st.status == "running")
    jobs.shutdown(timeout=5)
    assert seen == ["cancelled"] and st.status == "error"


def test_cancel_stops_the_running_job_drops_the_queue_and_keeps_the_worker():
    jobs = Jobs()
    seen = []

    try:
        running = jobs.submit("f", "F", _forever(seen))
        queued = jobs.submit("q", "Q", lambda report: seen.append("queued ran"))
        _wait(lambda: running.status == "running")
        assert jobs.cancel(timeout=5)
        assert seen == ["cancelled"] and running.status == "error" and queued.status == "error"
        assert isinstance(queued.error, JobCancelled)
        # the worker takes later jobs; a cancelled key submitted again runs again
        again = jobs.submit("q", "Q", lambda report: seen.append("queued ran"))
        assert again is not queued and again.wait(5) and again.status == "done"
        assert seen == ["cancelled", "queued ran"]
        assert jobs.cancel(timeout=1)  # nothing running: returns at once
    finally:
        jobs.shutdown()


def test_ready_marks_the_part_pages_need_and_foreground_work_pauses_the_job():
    """issue 24: a page waits only until the job has loaded what it needs (``ready``), and while the page
    computes (``foreground``) the job pauses at its next report instead of sharing the CPU."""
    jobs = Jobs()
    steps, release = [], threading.Event()

    def job(report):
        report("loading models")
        report.ready()
        for i in range(50):
            report("encoding passages", i, 50)
            steps.append(time.perf_counter())
            time.sleep(0.01)

    st = jobs.submit("warm", "Warm-up", job)
    try:
        deadline = time.perf_counter() + 10
        while not st.ready and time.perf_counter() < deadline:
            time.sleep(0.01)
        assert st.ready and not st.over and st.ready_at is not None
        with jobs.foreground():
            time.sleep(0.1)  # the step under way may finish
            paused_at = len(steps)
            time.sleep(0.4)
            assert len(steps) <= paused_at + 1  # no progress while the page computes
            assert not st.over
        assert st.wait(10) and st.status == "done" and len(steps) == 50
    finally:
        release.set()
        jobs.shutdown()


def test_a_job_paused_for_the_foreground_still_stops_on_shutdown():
    jobs = Jobs()

    def job(report):
        while True:
            report("forever")
            time.sleep(0.01)

    st = jobs.submit("loop", "Loop", job)
    time.sleep(0.1)
    with jobs.foreground():
        jobs.shutdown(5)
    assert st.status == "error" and isinstance(st.error, JobCancelled)


def test_shipped_demo_embeddings_seed_the_store_and_the_demo_needs_no_encoder(tmp_path, monkeypatch):
    """issue 24: the demo's precomputed embeddings fill the store, so the Playground's first demo question
    runs with no encoder loaded; the shipped vectors agree with what this machine computes."""
    import numpy as np

    from berds_core import datasets
    from berds_core.corpora.memory import corpus_from_passages
    from berds_core.embeddings.text_encoders import embedding_store, text_encoder
    from berds_core.judges import get_judge
    from berds_core.retrieval import get_retriever
    from berds_core.studio.warmup import seed_shipped
    from berds_core.retrieval.caching import SharedSearch
    from berds_core.studio.columns import Engine, best_ranks, column_pipeline, column_result

    monkeypatch.setenv("BERDS_CACHE", str(tmp_path / "cache"))
    b = datasets.load_demo()
    corpus = corpus_from_passages(b.passages, "demo")
    te = text_encoder(None)
    if te.encoding != "fp32":  # BERDS_ENCODING names a speed mode: it computes its own vectors
        pytest.skip(f"this process encodes in {te.encoding}: only the fp32 reference ships")
    judge = get_judge("embedded")
    n = seed_shipped(corpus, judge=judge)
    from berds_core.judges.base import prediction_cache

    n_text, n_judged = embedding_store().count(te.key), prediction_cache().count(judge.cache_key)
    from berds_core.diversify.presets import get_preset

    preset = get_preset("diverse")
    from berds_core.stance import get_stance_model

    stance = get_stance_model()  # the preset's network (the judge embeds texts; it reads no pairs)
    n_stance = embedding_store().count(stance.key_for(preset.stages[-1].tokens))  # at the preset's length
    assert n_text >= 560 and n_judged > 4_000 and n_stance == len(b.questions) * preset.depth
    assert n == n_text + n_judged + n_stance
    assert seed_shipped(corpus, judge=judge) == 0  # already there
    assert seed_shipped(corpus_from_passages(b.passages[:-1], "other"), judge=judge) == 0  # not the demo: nothing
    by_id = {p.id: p for p in b.passages}
    before, stance_before = te.n_encoded, stance.n_encoded
    for q in b.questions[:3]:  # each demo question in its own pool, as the pages rank it
        pool = corpus_from_passages([by_id[i] for i in b.pools[q.id]], f"demo:{q.id}")
        engine = Engine(pool, SharedSearch(get_retriever("bm25", pool, progress=False)), judge, te)
        res = {m: column_result(engine, q, column_pipeline(m, 0.75 if m == "mmr" else None, "dataset"), 5, gold=b.gold)
               for m in ("none", "mmr", "qe", "rerank")}
        dense = Engine(pool, SharedSearch(get_retriever("dense", pool, progress=False)), judge, te)
        res["preset"] = column_result(dense, q, column_pipeline("preset"), 5, gold=b.gold)
        best_ranks(engine, q, [0, 1])
        assert all(len(r["passages"]) == 5 for r in res.values())
    assert te.n_encoded == before and te._encoder is None  # nothing encoded, no model loaded
    # nor the stance model: the preset's (question, candidate) pairs shipped
    assert stance.n_encoded == stance_before
    # the shipped vectors are this encoder's: recomputed here (on any CPU, issue 52) they agree to fp32 noise
    texts = [p.text for p in b.passages[:20]]
    fresh = te.encode_uncached(texts)
    shipped = te.embed(texts)
    assert float(np.min(np.sum(fresh * shipped, axis=1))) > 1 - 1e-5
    np.testing.assert_allclose(fresh, shipped, rtol=0, atol=1e-5)
    # and so are the shipped verdicts: the judge's probabilities of the first question's pairs
    q = b.questions[0]
    pairs = [(p.text, persp) for p in (by_id[i] for i in b.pools[q.id][:10]) for persp in q.perspectives]
    shipped_p, _ = judge.predict(pairs)
    fresh_p = judge.probabilities(np.array([float(fresh_v @ te.encode_uncached([persp])[0])
                                            for fresh_v, persp in zip(te.encode_uncached([d for d, _ in pairs]),
                                                                      [p for _, p in pairs])]))
    np.testing.assert_allclose(shipped_p, fresh_p, rtol=0, atol=1e-3)
