"""The shared sidebar: data, retrieval and judge choices that fill the :class:`~studio_ui.config.Config` kept in
``st.session_state``, checked before anything is loaded (folders under the allowed roots, servers on the
operator's list), with the judge's and the warm-up's state; uploads are stored under the cache by content."""
from __future__ import annotations

import hashlib
from pathlib import Path

import streamlit as st

from berds_core.errors import InputError
from berds_core.retrieval import CORPUS_RETRIEVERS
from berds_core.studio.data import DEMO, FROM_DATASET, FROM_PATH
from studio_ui.config import (DEFAULT_EMBEDDER_LABEL, FORMATS, INDEX_FOLDER, JUDGE_CHOICES, UPLOAD, Config,
                              embedder_model)
from studio_ui.engines import judge_status
from studio_ui.text import esc, show_error
from studio_ui.warmup import warmup_job, warmup_status


def save_upload(upload, kind: str) -> str:
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


def sidebar(*, warms: bool = True) -> Config:
    """The shared sidebar; its choices persist in ``st.session_state`` for the session. ``warms``: the page
    starts the configuration's warm-up once drawn (app.py's WARM_PAGES), so its state is polled until then."""
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
                dataset_path = save_upload(up, "questions") if up is not None else ""
            gold_path = st.text_input("Gold labels (optional)", key="sb_gold_path",
                                      placeholder="/path/to/gold.jsonl")
        corpus = st.selectbox("Corpus", [FROM_DATASET, FROM_PATH, UPLOAD], key="sb_corpus")
        corpus_path = ""
        if corpus == FROM_PATH:
            corpus_path = st.text_input("Corpus file or folder", key="sb_corpus_path",
                                        placeholder="/path/to/corpus.jsonl")
        elif corpus == UPLOAD:
            up = st.file_uploader("Corpus file", type=["jsonl", "json", "csv", "tsv"], key="sb_corpus_upload")
            corpus_path = save_upload(up, "corpus") if up is not None else ""

        st.markdown("### Retrieval")
        retriever = st.radio("Retriever", [*CORPUS_RETRIEVERS, INDEX_FOLDER], key="sb_retriever", horizontal=True,
                             help="BM25 (bm25s; tantivy for large corpora), dense (sentence-transformers + FAISS), "
                                  "or a prebuilt index folder ('berds index --index-dir', or a FAISS index + "
                                  "docid folder such as Pyserini's), opened memory-mapped.")
        if retriever == INDEX_FOLDER:
            retriever = _index_choice()
        embedder = st.text_input("Embedder", key="sb_embedder",
                                 help="Sentence-transformers id or local path; used by dense retrieval and MMR.")

        st.markdown("### Judge")
        from berds_core.files.lab_folder import lab_judge_names

        # the lab's own judges (berds agreement --fit NAME) beside the shipped ones
        choices = JUDGE_CHOICES[:-1] + [f"lab:{n}" for n in lab_judge_names()] + JUDGE_CHOICES[-1:]
        choice = st.selectbox("Judge", choices, key="sb_judge",
                              help="Decides whether a passage supports a perspective. embedded: offline, a small "
                                   "stance model (below the paper's evaluator). berds-evaluator: the BERDS paper's "
                                   "fine-tuned Mistral "
                                   "(needs its weights, a GPU advised); berds-evaluator:<url> for a vLLM server. "
                                   "lab:NAME: the embedded judge refitted on your lab's labels (Agreement page, "
                                   "Teach the judge).")
        spec = choice if choice != "custom spec" else "embedded"
        if choice == "custom spec":
            spec = st.text_input("Judge spec", key="sb_judge_spec",
                                 placeholder="berds-evaluator:<url>, hf:<model>[+<adapter>] or openai:<model>@<url>"
                                 ).strip() or "embedded"
    embedder, spec = _checked_models(embedder.strip() or DEFAULT_EMBEDDER_LABEL, spec)
    cfg = Config(src, dataset_path, fmt, gold_path, corpus, corpus_path, retriever, embedder, spec)
    ss["config"] = cfg
    job = warmup_job(cfg)  # started by app.py once the page is drawn
    with st.sidebar:  # the state of the background warm-up; nothing here waits for it
        # polled (a fragment rerun every second) only until the models are loaded: afterwards pages answer
        # without the warm-up, and a fragment polling beside them would leave their replaced elements on screen.
        # A page that starts no warm-up (Annotate, Agreement) polls only while one runs: with none, every open
        # page reran the fragment each second for nothing (a lab's pages loaded their server with it)
        settled = (job.over or job.ready) if job is not None else not warms
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


def _status_block(cfg: Config) -> None:
    ok, msg = judge_status(cfg.judge)
    line = esc(f"{cfg.judge}: {msg}")  # the spec is typed: shown literally
    if ok is None:
        st.info(line, icon=":material/hourglass_top:")
    else:
        (st.success if ok else st.error)(line, icon=":material/check_circle:" if ok else ":material/error:")
    warmup_status(cfg)
