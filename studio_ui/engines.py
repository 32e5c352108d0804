"""The engine objects the pages use, kept in one process-wide store (``berds_core.runtime.background.MEMO``,
like ``st.cache_resource``) keyed by what identifies them (dataset source, corpus hash, model, judge spec), so
the background warm-up thread, which has no Streamlit context, and the pages share them: a model is loaded
once, whoever asks first. What a page computes lives in the engine (``berds_core.studio``); here are only
the cached objects and their one-line errors.
"""
from __future__ import annotations

import streamlit as st

from berds_core.errors import InputError
from berds_core.retrieval.caching import SharedSearch
from berds_core.runtime.background import MEMO
from berds_core.studio.data import Data, load_data, without_subsets
from studio_ui.config import Config, config_key, embedder_model
from studio_ui.text import show_error


def cached_data(cfg_key: tuple, _cfg: Config) -> Data:
    return MEMO.get(("data", cfg_key), lambda: load_data(_cfg))


def cached_retriever(kind: str, corpus_hash: str, model: str | None, _corpus, progress=None):
    """The retriever (wrapped in :class:`SharedSearch`); ``model``: the embedder, read only by a retriever that
    takes one (``retrieval.takes_model``: the same BM25 index whatever the sidebar's embedder);
    ``progress(done, total)`` while a dense index encodes."""
    from berds_core.files.safepaths import resolve_user_model
    from berds_core.retrieval import get_retriever, takes_model

    model = resolve_user_model(model, what="embedder") if model is not None and takes_model(kind) else None

    def make():
        retriever = get_retriever(kind, _corpus, model, progress=False, on_progress=progress)
        return SharedSearch(retriever)

    return MEMO.get(("retriever", kind, corpus_hash, model), make)


SIDEBAR = object()  # question_engine's judge / embedder not given: the sidebar's


def question_engine(cfg: Config, corpus, pipeline=None, *, judge=SIDEBAR, embedder=SIDEBAR):
    """The engine (``berds_core.studio.columns.Engine``) a question is ranked with in ``corpus`` (its own pool,
    ``Data.corpus_for``, or the dataset's corpus): the retriever ``pipeline`` names with its default embedder
    (the preset's dense, as ``--preset`` does), else the sidebar's retriever and embedder; ``judge`` and
    ``embedder`` (the stages'): the sidebar's unless given (None given stays None: a page whose embedder failed to
    load ranks with the dense retriever's own vectors, as before). The one builder of every page's engine."""
    from berds_core.diversify import as_pipeline
    from berds_core.studio.columns import Engine

    named = None if pipeline is None else as_pipeline(pipeline).retriever
    retriever = cached_retriever(named or cfg.retriever, corpus.hash, None if named else embedder_model(cfg.embedder),
                                 corpus)
    return Engine(corpus, retriever, cached_judge(cfg.judge) if judge is SIDEBAR else judge,
                  cached_embedder(embedder_model(cfg.embedder)) if embedder is SIDEBAR else embedder)


def pool_entries(data: Data, questions, kind: str, model: str | None, pipeline, k: int, *, judge=None,
                 embedder=None) -> list[dict]:
    """Run entries (top ``k``) of ``questions`` (``berds_core.experiment.run``), each ranked in its own pool
    (the built-in demo, as BERDS's web setting; ``Data.corpus_for``) or the dataset's corpus, with a cached
    ``kind`` retriever (``model``: its embedder, where it reads one) and ``pipeline`` (a spec or a Pipeline)."""
    from berds_core.diversify import Using
    from berds_core.experiment import Searched, run

    def where(q):
        corpus = data.corpus_for(q.id)
        return Searched(corpus, cached_retriever(kind, corpus.hash, model, corpus))

    return run(questions, pipeline, k, where, using=Using(judge=judge, embedder=embedder))


def cached_judge(spec: str):
    """The judge of a spec typed in the app: folders under the allowed roots, servers on the operator's
    list (``app_judge_spec``: InputError before anything is loaded or requested)."""
    from berds_core.judges import app_judge_spec, get_judge

    spec = app_judge_spec(spec)
    return MEMO.get(("judge", spec), lambda: get_judge(spec))


def cached_embedder(model: str | None):
    """The embedder of MMR and the re-ranker: the shared ``TextEncoder`` of the model (memory, then the
    embedding store, then the model, loaded at the first text it has not seen). A model typed in the app
    must name a folder under the allowed roots (or a hub id); a name that cannot be loaded fails here, at
    once (``embed.locate_embedder``)."""
    from berds_core.embeddings.models import locate_embedder, resolve_model
    from berds_core.embeddings.text_encoders import text_encoder
    from berds_core.files.safepaths import resolve_user_model

    model = None if model is None else resolve_user_model(model, what="embedder")

    def make():
        locate_embedder(resolve_model(model))
        return text_encoder(model)

    return MEMO.get(("embedder", model), make)


def judge_status(spec: str) -> tuple[bool | None, str]:
    """(usable, one line) for a judge spec: loaded, reachable, or why not; ``None`` while a
    local judge is still loading in the background (nothing is loaded here)."""
    from berds_core.judges import app_judge_spec, parse_spec

    try:
        backend, _ = parse_spec(spec)
        spec = app_judge_spec(spec)  # refused here, before any request, when not allowed
        if backend != "openai" and not MEMO.has(("judge", spec)):
            return None, "loading in the background…"
        res = _remote_status(spec) if backend == "openai" else cached_judge(spec).status()
    except (InputError, ValueError) as e:
        return False, str(e).splitlines()[0]
    except Exception as e:  # a judge that cannot load (missing package, unreachable server)
        return False, f"{type(e).__name__}: {e}".splitlines()[0]
    return bool(res.get("ok")), str(res.get("detail", ""))


@st.cache_data(ttl=30, show_spinner=False)
def _remote_status(spec: str) -> dict:
    """A server judge's reachability, re-checked every 30 s (a cheap request, not a model load)."""
    return cached_judge(spec).status()


def get_data(cfg: Config) -> Data | None:
    """The loaded dataset, or None after showing the InputError line. In lab mode, without its subsets unless a
    reviewer or an admin is signed in (:func:`studio_ui.lab_ui.sees_subsets`): a round's queues are stratified by
    them, and annotators are not told which subset a question is in."""
    from studio_ui.lab_ui import sees_subsets

    try:
        data = cached_data(config_key(cfg), cfg)
        return data if sees_subsets() else without_subsets(data)
    except InputError as e:
        shown = st.session_state.get(f"_upload_name_{e.path}")  # name the uploaded file, not its cache copy
        show_error(InputError(f"uploaded {shown}", e.line, e.field, e.message) if shown else e)
        return None


def get_engine(cfg: Config, data: Data):
    """(retriever, judge, embedder) for the config; None entries (and an error shown) when unusable."""
    if data.corpus is None:
        st.warning("This dataset has no passages: choose a corpus in the sidebar.")
        return None, None, None
    try:
        retriever = cached_retriever(cfg.retriever, data.corpus.hash, embedder_model(cfg.embedder), data.corpus)
    except InputError as e:
        show_error(e)
        return None, None, None
    except Exception as e:
        show_error(f"Could not build the {cfg.retriever} retriever: {type(e).__name__}: {e}")
        return None, None, None
    try:
        judge = cached_judge(cfg.judge)
    except Exception as e:
        show_error(f"Judge '{cfg.judge}' is not usable: {e}")
        judge = None
    try:
        embedder = cached_embedder(embedder_model(cfg.embedder))
    except Exception as e:
        show_error(f"Embedder '{cfg.embedder}' could not be loaded: {e}")
        embedder = None
    return retriever, judge, embedder
