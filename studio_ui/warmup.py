"""The background warm-up of a configuration (data, judge, index, embedder, passage embeddings), what the
sidebar says about it, and what a tool page waits for before it draws (:func:`page_engine`)."""
from __future__ import annotations

import time

import streamlit as st

from berds_core.errors import InputError
from berds_core.runtime.background import JOBS, JobState
from berds_core.studio.data import Data
from studio_ui.config import Config, config_key, current_config, embedder_model
from studio_ui.engines import cached_data, cached_embedder, cached_judge, cached_retriever, get_data, get_engine
from studio_ui.text import esc, show_error


def engine_job(cfg: Config) -> JobState:
    """The background warm-up of a configuration: data, judge, index, embedder, passage embeddings.

    Submitted once per configuration (``JOBS`` runs one job at a time); pages wait for
    it with a progress bar (:func:`wait_for`), the sidebar shows its state.
    """
    key = ("engine",) + config_key(cfg)
    # imported here, in the caller's thread, never in the job's: a package imported by two threads at once
    # deadlocks on its module locks (the job importing berds_core.diversify.vectors while a page imports
    # berds_core.diversify.methods; Python raises _DeadlockError in one of them)
    from berds_core.studio.warmup import seed_shipped, warm_passages

    def run(report) -> None:
        report("loading the dataset and corpus")
        data = cached_data(config_key(cfg), cfg)
        if data.corpus is None:
            return
        report("loading the judge")
        judge = cached_judge(cfg.judge)
        report("reading the demo's precomputed embeddings")
        seed_shipped(data.corpus, judge=judge)  # the built-in demo: its passages need no encoder at all
        model = embedder_model(cfg.embedder)
        report(f"building the {cfg.retriever} index over {len(data.corpus):,} passages")
        cached_retriever(cfg.retriever, data.corpus.hash, model, data.corpus,
                         progress=lambda d, t: report("encoding passages for the dense index", d, t))
        for i, pool in enumerate(data.pools.values()):  # each demo question retrieves from its own pool
            report(f"building the {cfg.retriever} index of each question's pool", i, len(data.pools))
            cached_retriever(cfg.retriever, pool.hash, model, pool)
        report("loading the embedder")
        embedder = cached_embedder(model)
        report.ready()  # pages can answer now; encoding every passage ahead of time only speeds later questions
        perspectives = [p for q in data.questions for p in list(q.perspectives) + list(q.generated_perspectives or ())]
        warm_passages(data.corpus, judge, embedder, report, texts=perspectives)

    return JOBS.submit(key, "Warm-up", run)


def foreground():
    """``with foreground():`` around a page's own computing: the warm-up pauses at its next step meanwhile."""
    return JOBS.foreground()


def retriever_job(kind: str, data: Data, embedder: str) -> JobState:
    """Build one more retriever in the background (Leaning's coverage needs both kinds)."""
    model = embedder_model(embedder)  # cached_retriever reads it where the retriever takes a model

    def run(report) -> None:
        report(f"building the {kind} index over {len(data.corpus):,} passages")
        cached_retriever(kind, data.corpus.hash, model, data.corpus,
                         progress=lambda d, t: report("encoding passages for the dense index", d, t))
        for i, pool in enumerate(data.pools.values()):  # the questions' own pools (the built-in demo)
            report(f"building the {kind} index of each question's pool", i, len(data.pools))
            cached_retriever(kind, pool.hash, model, pool)

    from berds_core.retrieval import takes_model

    return JOBS.submit(("retriever", kind, data.corpus.hash, model if takes_model(kind) else None), f"{kind} index",
                       run)


def wait_for(job: JobState, note: str = "One-off warm-up for this configuration; later questions are fast.",
             *, until_ready: bool = False) -> None:
    """Block this page run until ``job`` is over (``until_ready``: until it has loaded what pages need,
    :attr:`JobState.ready`; the rest goes on in the background), with a progress bar; stop the page on failure.

    The job is promoted: a warm-up of a configuration the visitor left yields to it."""
    JOBS.promote(job.key)

    def waiting() -> bool:
        return not (job.over or until_ready and job.ready)

    if waiting():
        slot = st.empty()
        while waiting():
            with slot.container():
                st.progress(job.fraction, text=esc(job.text))
                st.caption(note)
            time.sleep(0.25)
        slot.empty()
    if job.status == "error":
        err = job.error
        show_error(err if isinstance(err, InputError) else f"{job.label} failed: {type(err).__name__}: {err}")
        st.stop()


def warmup_job(cfg: Config) -> JobState | None:
    """The warm-up job of a configuration, when one was started."""
    return JOBS.get(("engine",) + config_key(cfg))


def warmup_status(cfg: Config) -> None:
    """The sidebar's line about the warm-up of the current configuration (polls while it runs)."""
    job = warmup_job(cfg)
    if job is None:
        st.caption("Models load in the background once the page is drawn.")
        return
    if job.ready and not job.over:
        st.caption("Models ready. Passages are encoded in the background; questions do not wait for it.")
    elif not job.over:
        st.progress(job.fraction, text=esc(job.text))
    elif job.status == "error":
        st.caption("Warm-up stopped: see the message on the page.")
    else:
        st.caption(f"Models and passages ready (warm-up {job.finished - job.started:.1f} s).")


def start_warmup() -> JobState:
    """Start the warm-up of the current configuration (app.py calls it after the page is drawn,
    so the first page view never competes with model loading)."""
    return engine_job(current_config())


def page_engine(*, need_judge: bool = True):
    """``(cfg, data, retriever, judge, embedder)`` for a tool page; stops the page (after the
    error line is shown) when the data, the retriever or a needed judge is unusable."""
    cfg = current_config()
    data = get_data(cfg)
    if data is None:
        st.stop()
    if data.corpus is not None:  # the models; passages still being encoded are encoded on demand
        wait_for(engine_job(cfg), "Loading the models for this configuration (once).", until_ready=True)
    retriever, judge, embedder = get_engine(cfg, data)
    if retriever is None or (need_judge and judge is None):
        st.stop()
    return cfg, data, retriever, judge, embedder
