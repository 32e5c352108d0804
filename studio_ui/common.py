"""Shared Streamlit glue of the pages: the app shell, the sidebar, cached engine objects, safe HTML.

What a page computes lives in the engine (``berds_core.studio``: ``columns.rank``, ``column_result``,
``run_entry``, ``best_ranks``; ``summaries.summarize``; ``data.load_data``; the retriever's caching stage
``berds_core.retrieval.caching.SharedSearch``); here are only the Streamlit wrappers: engine objects kept
in one process-wide store keyed by what identifies them (dataset source, corpus hash, model, judge spec),
the background warm-up, and the shared sidebar that fills a :class:`Config` kept in ``st.session_state``.

Nothing user-typed or loaded is rendered as raw HTML: :func:`esc` escapes
HTML *and* the characters Markdown would interpret.
"""
from __future__ import annotations

import hashlib
import re
import runpy
import threading
import time
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path

import streamlit as st

from berds_core.runtime.background import JOBS, MEMO, JobState
from berds_core.errors import InputError
from berds_core.retrieval.caching import SharedSearch

from berds_core.studio.data import DEMO, FROM_DATASET, FROM_PATH, Data, load_data  # noqa: F401  (the pages' data)

UPLOAD = "Upload a file"
FORMATS = ["auto", "jsonl", "qe", "csv", "debate-sites", "perspectrum"]
LABEL_SOURCES = ["gold", "judge"]  # where a page's labels come from; the first one available is the default
DEFAULT_EMBEDDER_LABEL = "all-MiniLM-L6-v2"
JUDGE_CHOICES = ["embedded", "berds-evaluator", "custom spec"]
INDEX_FOLDER = "index folder"


# --------------------------------------------------------------------------- the app shell

APP = Path(__file__).resolve().parents[1] / "app.py"
_shell = threading.local()  # per script-run thread: is app.py's navigation running this page?


@contextmanager
def shell():
    """Marks the pages that app.py's ``st.navigation`` runs (see :func:`ensure_shell`)."""
    _shell.active = True
    try:
        yield
    finally:
        _shell.active = False


def ensure_shell() -> None:
    """Run the page inside app.py's navigation and shared sidebar.

    On a fresh server, a deep link or a browser refresh (``/leaning``) is
    resolved by Streamlit's ``pages/`` folder mode, which runs the page file
    alone: no navigation, no shared sidebar. A page calls this first; when the
    server's main script is app.py but the shell is not running, it runs the
    shell (which routes to the page) and stops. ``streamlit run pages/x.py``
    still runs a page on its own.
    """
    if getattr(_shell, "active", False):
        return
    from streamlit.runtime.scriptrunner import get_script_run_ctx

    ctx = get_script_run_ctx()
    if ctx is not None and Path(ctx.main_script_path).resolve() == APP:
        # as app.py's own runs do: widgets drawn outside a page (lab mode's sign-in form) keep their ids
        # from this run to the next, so the first click on a deep link is not lost
        scoped = getattr(ctx, "run_with_active_hash", None)
        main_hash = getattr(getattr(ctx, "pages_manager", None), "main_script_hash", None)
        if scoped is not None and main_hash:
            with scoped(main_hash):
                runpy.run_path(str(APP), run_name="__main__")
        else:
            runpy.run_path(str(APP), run_name="__main__")
        st.stop()




_ENTITIES = {c: f"&#{ord(c)};" for c in "&<>\"'\\`*_{}[]()#+-.!|~:$="}


def esc(text) -> str:
    """Text safe to put inside HTML rendered by ``st.markdown``.

    Every character HTML or Markdown would interpret (tags, quotes, ``**``,
    ``[]()``, ``:emoji:``, ``$math$`` ...) becomes a numeric entity, so a
    passage shows exactly the characters it contains; whitespace collapses.
    """
    return re.sub(r"\s+", " ", "".join(_ENTITIES.get(c, c) for c in str(text))).strip()


# --------------------------------------------------------------------------- configuration


@dataclass(frozen=True)
class Config:
    """What the sidebar selects; hashable, so it keys caches."""

    dataset: str = DEMO
    dataset_path: str = ""
    dataset_format: str = "auto"
    gold_path: str = ""
    corpus: str = FROM_DATASET
    corpus_path: str = ""
    retriever: str = "bm25"
    embedder: str = DEFAULT_EMBEDDER_LABEL
    judge: str = "embedded"

    def label(self) -> str:
        data = "demo" if self.dataset == DEMO else Path(self.dataset_path).name
        retriever = self.retriever
        if retriever.startswith("index:"):
            retriever = "index " + Path(retriever[len("index:"):].partition("|")[0]).name
        return f"{data} · {retriever} · judge {self.judge}"

    def as_dict(self) -> dict:
        return asdict(self)


# --------------------------------------------------------------------------- data


def embedder_model(label: str) -> str | None:
    return None if not label or label == DEFAULT_EMBEDDER_LABEL else label


# --------------------------------------------------------------------------- cached engine objects


def show_error(err, prefix: str = "") -> None:
    """One clear line for bad input, never a traceback; shown literally (paths and values a
    visitor typed or a file holds are not Markdown: ``root:x:0`` must not become an emoji).
    ``prefix`` (e.g. ``"Generator: "``) goes before it, also literally."""
    line = " ".join(str(err).split("\n", 1)[0].split()) if str(err).strip() else type(err).__name__
    st.error(esc(prefix + line), icon=":material/error:")


# Engine objects live in one process-wide store (``berds_core.runtime.background.MEMO``, like
# ``st.cache_resource``) so that the background warm-up thread, which has no Streamlit
# context, and the pages share them: a model is loaded once, whoever asks first.


def cached_data(cfg_key: tuple, _cfg: Config) -> Data:
    return MEMO.get(("data", cfg_key), lambda: load_data(_cfg))


def cached_retriever(kind: str, corpus_hash: str, model: str | None, _corpus, progress=None):
    """The retriever (wrapped in :class:`SharedSearch`); ``progress(done, total)`` while a dense index encodes."""
    from berds_core.retrieval import get_retriever
    from berds_core.files.safepaths import resolve_user_model

    model = None if model is None else resolve_user_model(model, what="embedder")
    return MEMO.get(("retriever", kind, corpus_hash, model),
                    lambda: SharedSearch(get_retriever(kind, _corpus, model, progress=False, on_progress=progress)))


def question_engine(cfg: Config, data: Data, question, judge, embedder, kind: str | None = None):
    """The engine one question is ranked with: its own pool (the built-in demo, as BERDS's web setting;
    ``Data.corpus_for``) or the dataset's corpus, with a ``kind`` retriever (default: the sidebar's; the
    preset passes ``dense`` with the default embedder, as ``--preset`` does)."""
    from berds_core.studio.columns import Engine

    kind = kind or cfg.retriever
    corpus = data.corpus_for(question.id)
    model = embedder_model(cfg.embedder) if kind == "dense" and kind == cfg.retriever else None
    return Engine(corpus, cached_retriever(kind, corpus.hash, model, corpus), judge, embedder)


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
    from berds_core.embeddings.store import text_encoder
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


# --------------------------------------------------------------------------- background warm-up


def engine_job(cfg: Config) -> JobState:
    """The background warm-up of a configuration: data, judge, index, embedder, passage embeddings.

    Submitted once per configuration (``JOBS`` runs one job at a time); pages wait for
    it with a progress bar (:func:`wait_for`), the sidebar shows its state.
    """
    key = ("engine",) + _config_key(cfg)

    def run(report) -> None:
        from berds_core.studio.warmup import seed_shipped, warm_passages

        report("loading the dataset and corpus")
        data = cached_data(_config_key(cfg), cfg)
        if data.corpus is None:
            return
        report("loading the judge")
        judge = cached_judge(cfg.judge)
        report("reading the demo's precomputed embeddings")
        seed_shipped(data.corpus, judge=judge)  # the built-in demo: its passages need no encoder at all
        model = embedder_model(cfg.embedder)
        report(f"building the {cfg.retriever} index over {len(data.corpus):,} passages")
        cached_retriever(cfg.retriever, data.corpus.hash, model if cfg.retriever == "dense" else None, data.corpus,
                         progress=lambda d, t: report("encoding passages for the dense index", d, t))
        for i, pool in enumerate(data.pools.values()):  # each demo question retrieves from its own pool
            report(f"building the {cfg.retriever} index of each question's pool", i, len(data.pools))
            cached_retriever(cfg.retriever, pool.hash, model if cfg.retriever == "dense" else None, pool)
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
    model = embedder_model(embedder) if kind == "dense" else None

    def run(report) -> None:
        report(f"building the {kind} index over {len(data.corpus):,} passages")
        cached_retriever(kind, data.corpus.hash, model, data.corpus,
                         progress=lambda d, t: report("encoding passages for the dense index", d, t))
        for i, pool in enumerate(data.pools.values()):  # the questions' own pools (the built-in demo)
            report(f"building the {kind} index of each question's pool", i, len(data.pools))
            cached_retriever(kind, pool.hash, model, pool)

    return JOBS.submit(("retriever", kind, data.corpus.hash, model), f"{kind} index", run)


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


def warmup_status(cfg: Config) -> None:
    """The sidebar's line about the warm-up of the current configuration (polls while it runs)."""
    job = JOBS.get(("engine",) + _config_key(cfg))
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


def _config_key(cfg: Config) -> tuple:
    return tuple(asdict(cfg).items())


def get_data(cfg: Config) -> Data | None:
    """The loaded dataset, or None after showing the InputError line."""
    try:
        return cached_data(_config_key(cfg), cfg)
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
        retriever = cached_retriever(cfg.retriever, data.corpus.hash, embedder_model(cfg.embedder)
                                     if cfg.retriever == "dense" else None, data.corpus)
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


# --------------------------------------------------------------------------- sidebar


def _save_upload(upload, kind: str) -> str:
    """Store an uploaded file under the cache (named by its content hash); return the path."""
    from berds_core.files.cache import cache_dir

    data = upload.getvalue()
    suffix = Path(upload.name).suffix.lower()
    path = cache_dir("uploads") / f"{kind}-{hashlib.sha1(data).hexdigest()[:16]}{suffix}"
    if not path.exists():
        from berds_core.files.jsonio import atomic_write

        with atomic_write(path, "wb") as fh:
            fh.write(data)
    st.session_state[f"_upload_name_{path}"] = upload.name
    st.session_state[f"_upload_name_{path.resolve()}"] = upload.name  # errors name the resolved path
    return str(path)


def sidebar() -> Config:
    """The shared sidebar; its choices persist in ``st.session_state`` for the session."""
    ss = st.session_state
    for key, val in (("sb_dataset", DEMO), ("sb_format", "auto"), ("sb_dataset_path", ""), ("sb_gold_path", ""),
                     ("sb_corpus", FROM_DATASET), ("sb_corpus_path", ""), ("sb_retriever", "bm25"),
                     ("sb_embedder", DEFAULT_EMBEDDER_LABEL), ("sb_judge", "embedded"), ("sb_judge_spec", "")):
        ss.setdefault(key, val)
    with st.sidebar:
        st.markdown("### Data")
        src = st.selectbox("Dataset", [DEMO, FROM_PATH, UPLOAD], key="sb_dataset",
                           help="Questions with perspectives. The demo works offline with gold labels.")
        dataset_path, fmt, gold_path = "", "auto", ""
        if src != DEMO:
            fmt = st.selectbox("Format", FORMATS, key="sb_format",
                               help="jsonl/csv: question + perspectives; qe: BERDS query-expansion JSONL; "
                                    "debate-sites: procon-style JSON with passages and gold labels.")
            if src == FROM_PATH:
                dataset_path = st.text_input("Questions file", key="sb_dataset_path",
                                             placeholder="/path/to/questions.jsonl")
            else:
                up = st.file_uploader("Questions file", type=["jsonl", "json", "csv", "tsv"], key="sb_dataset_upload")
                dataset_path = _save_upload(up, "questions") if up is not None else ""
            gold_path = st.text_input("Gold labels (optional)", key="sb_gold_path",
                                      placeholder="/path/to/gold.jsonl")
        corpus = st.selectbox("Corpus", [FROM_DATASET, FROM_PATH, UPLOAD], key="sb_corpus")
        corpus_path = ""
        if corpus == FROM_PATH:
            corpus_path = st.text_input("Corpus file or folder", key="sb_corpus_path",
                                        placeholder="/path/to/corpus.jsonl")
        elif corpus == UPLOAD:
            up = st.file_uploader("Corpus file", type=["jsonl", "json", "csv", "tsv"], key="sb_corpus_upload")
            corpus_path = _save_upload(up, "corpus") if up is not None else ""

        st.markdown("### Retrieval")
        retriever = st.radio("Retriever", ["bm25", "dense", INDEX_FOLDER], key="sb_retriever", horizontal=True,
                             help="BM25 (bm25s; tantivy for large corpora), dense (sentence-transformers + FAISS), "
                                  "or a prebuilt index folder ('berds index --index-dir', or a FAISS index + "
                                  "docid folder such as Pyserini's), opened memory-mapped.")
        if retriever == INDEX_FOLDER:
            retriever = _index_choice()
        embedder = st.text_input("Embedder", key="sb_embedder",
                                 help="Sentence-transformers id or local path; used by dense retrieval and MMR.")

        st.markdown("### Judge")
        choice = st.selectbox("Judge", JUDGE_CHOICES, key="sb_judge",
                              help="Decides whether a passage supports a perspective. embedded: offline, a small "
                                   "stance model (below the paper's evaluator). berds-evaluator: the BERDS paper's "
                                   "fine-tuned Mistral "
                                   "(needs its weights, a GPU advised); berds-evaluator:<url> for a vLLM server.")
        spec = choice if choice != "custom spec" else "embedded"
        if choice == "custom spec":
            spec = st.text_input("Judge spec", key="sb_judge_spec",
                                 placeholder="berds-evaluator:<url>, hf:<model>[+<adapter>] or openai:<model>@<url>"
                                 ).strip() or "embedded"
    embedder, spec = _checked_models(embedder.strip() or DEFAULT_EMBEDDER_LABEL, spec)
    cfg = Config(src, dataset_path, fmt, gold_path, corpus, corpus_path, retriever, embedder, spec)
    ss["config"] = cfg
    job = JOBS.get(("engine",) + _config_key(cfg))  # started by app.py once the page is drawn
    with st.sidebar:  # the state of the background warm-up; nothing here waits for it
        # polled (a fragment rerun every second) only until the models are loaded: afterwards pages answer
        # without the warm-up, and a fragment polling beside them would leave their replaced elements on screen
        settled = job is not None and (job.over or job.ready)
        status = _status_block if settled else st.fragment(run_every=1.0)(_status_block)
        status(cfg)
    return cfg


def _index_choice() -> str:
    """The sidebar's index folder (and, for a prebuilt FAISS folder, its query encoder) as a retriever spec."""
    from berds_core.retrieval import index_spec
    from berds_core.files.safepaths import resolve_user_path

    st.session_state.setdefault("sb_index_dir", "")
    st.session_state.setdefault("sb_query_encoder", "")
    folder = st.text_input("Index folder", key="sb_index_dir", placeholder="/path/to/index-folder",
                           help="Leave the corpus path empty to use the corpus the folder was built from.").strip()
    encoder = st.text_input("Query encoder (prebuilt FAISS folders only)", key="sb_query_encoder",
                            placeholder="dpr:facebook/dpr-question_encoder-multiset-base").strip()
    if folder:
        try:  # the spec carries the resolved path; a refused one fails (with its message) when the data loads
            folder = str(resolve_user_path(folder, what="index folder"))
        except InputError:
            pass
    return index_spec(folder, encoder or None)


def _checked_models(embedder: str, spec: str) -> tuple[str, str]:
    """The sidebar's embedder and judge as the app may use them: a folder outside the allowed roots or
    a server not on the operator's list is refused here (one line in the sidebar) and the default
    is used instead, so no page loads or requests what a visitor typed unchecked."""
    from berds_core.judges import app_judge_spec
    from berds_core.files.safepaths import resolve_user_model

    try:
        model = embedder_model(embedder)
        if model is not None:
            resolve_user_model(model, what="embedder")
    except InputError as e:
        with st.sidebar:
            show_error(e, "Embedder: ")
        embedder = DEFAULT_EMBEDDER_LABEL
    try:
        spec = app_judge_spec(spec)
    except InputError as e:
        with st.sidebar:
            show_error(e, "Judge: ")
        spec = "embedded"
    except ValueError:  # not a judge spec at all: the status line below says why
        pass
    return embedder, spec


def start_warmup() -> JobState:
    """Start the warm-up of the current configuration (app.py calls it after the page is drawn,
    so the first page view never competes with model loading)."""
    return engine_job(current_config())


def _status_block(cfg: Config) -> None:
    ok, msg = judge_status(cfg.judge)
    line = esc(f"{cfg.judge}: {msg}")  # the spec is typed: shown literally
    if ok is None:
        st.info(line, icon=":material/hourglass_top:")
    else:
        (st.success if ok else st.error)(line, icon=":material/check_circle:" if ok else ":material/error:")
    warmup_status(cfg)


def current_config() -> Config:
    return st.session_state.get("config") or Config()


# --------------------------------------------------------------------------- small renderers


def judge_caveat(spec_or_names) -> bool:
    """Say what a judge measures where its verdicts are shown: for the offline ``embedded`` judge (a small
    stance model, with its out-of-fold agreement with people) one caption pointing to the LLM judges. Takes a
    spec, a stored judge name, or several names (one caption at most). True when a caveat was shown."""
    from berds_core.judges import describe_judge

    names = [spec_or_names] if isinstance(spec_or_names, str) or spec_or_names is None else list(spec_or_names)
    caveat = next((c for c in (describe_judge(n)["caveat"] for n in names if n) if c), None)
    if caveat:
        st.caption(f":material/info: {caveat}")
    return bool(caveat)


def pct(x) -> str:
    return "–" if x is None else f"{100 * x:.0f}%"
