"""The Playground's "Web (live)" corpus: a typed question gets its own corpus from a web search, now.

A helper module of ``pages/playground.py`` (not a page of its own). The operator
configures what the app may use; a visitor only picks among it:

- ``BERDS_SEARCH``: the search backends offered, comma-separated specs
  (``searxng:http://127.0.0.1:8888, serper``), from the environment or
  ``.streamlit/secrets.toml``; keys (``SERPER_API_KEY``, ...) likewise, passed to
  the engine and never shown, logged or used in a cache key;
- ``BERDS_WEB_SNAPSHOTS``: where snapshots are saved (default: the cache's
  ``web/snapshots``), one folder per day and question; a folder typed in the page
  must lie under the app's allowed roots (:mod:`berds_core.files.safepaths`);
- ``BERDS_WEB_ALLOW_PRIVATE=1``: allow pages on private or local addresses (off by
  default, so a search result cannot make the server read its own network).

With no backend configured (a speaker without network), the page replays the
built-in recording (the ``replay`` backend, :mod:`berds_core.web.replay`): a
few questions' searches and pages, written for this project, labelled as a
recording with their fetch dates wherever they are shown.
"""
from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path

import streamlit as st

from berds_core.errors import InputError
from berds_core.records import Question
from berds_core.studio.columns import best_ranks, column_result
from studio_ui.engines import question_engine
from studio_ui.text import esc, show_error

WEB_LIVE = "Web (live)"
SIDEBAR_CORPUS = "Sidebar corpus"
ENV_SEARCH = "BERDS_SEARCH"
ENV_SNAPSHOTS = "BERDS_WEB_SNAPSHOTS"
ENV_ALLOW_PRIVATE = "BERDS_WEB_ALLOW_PRIVATE"
TOPS = [10, 20, 50, 100]
REPLAY = "replay"  # the built-in recording (berds_core.web.replay), offered when no backend is configured


def _secret(name: str) -> str | None:
    """A value from ``st.secrets`` (None when there is no secrets file or no such entry)."""
    try:
        val = st.secrets.get(name)
    except Exception:  # no secrets.toml at all
        return None
    return str(val).strip() if val else None


def configured_backends() -> list[str]:
    """The search specs the operator offers (environment first, then secrets)."""
    raw = os.environ.get(ENV_SEARCH, "").strip() or (_secret(ENV_SEARCH) or "")
    return list(dict.fromkeys(s.strip() for s in raw.split(",") if s.strip()))


def _key_from_secrets(spec: str) -> str | None:
    """The backend's key from ``st.secrets`` when the environment has none (the engine reads the environment)."""
    from berds_core.web.search import key_names

    names = key_names(spec)
    if any(os.environ.get(n, "").strip() for n in names):
        return None
    return next((v for v in map(_secret, names) if v), None)


@st.cache_resource(show_spinner=False, max_entries=8)
def cached_backend(spec: str):
    """The search backend of a spec; its key comes from the environment or the secrets, not the cache key."""
    from berds_core.web import get_search

    return get_search(spec, api_key=_key_from_secrets(spec), timeout=15.0)


def snapshot_root(typed: str) -> Path:
    """Where snapshots go: a typed folder (allowed roots only), ``BERDS_WEB_SNAPSHOTS`` or the cache."""
    if typed.strip():
        from berds_core.files.safepaths import resolve_user_path

        return resolve_user_path(typed, what="snapshot folder", must_exist=False)
    env = os.environ.get(ENV_SNAPSHOTS, "").strip()
    if env:
        return Path(env).expanduser()
    from berds_core.files.cache import cache_dir

    return cache_dir("web") / "snapshots"


def corpus_choice() -> dict | None:
    """The corpus picker of a typed question; the web settings when "Web (live)" is chosen, else None."""
    src = st.radio("Corpus for this question", [SIDEBAR_CORPUS, WEB_LIVE], horizontal=True, key="pg_corpus_src",
                   help="Web (live): search the web for the question, fetch the top pages and split them into "
                        "100-word passages (the BERDS paper's per-question web corpus); saved as a snapshot.")
    if src != WEB_LIVE:
        return None
    specs = configured_backends()
    if not specs:
        return recording_choice()
    c1, c2, c3 = st.columns([1.4, 1, 1])
    spec = c1.selectbox("Search backend", specs + [REPLAY], key="pg_web_backend",
                        format_func=lambda s: "replay (the built-in recording, no network)" if s == REPLAY else s)
    top = c2.select_slider("Pages to fetch", TOPS, value=20, key="pg_web_top",
                           help="Search results fetched for the question (the paper used 100).")
    extractor = c3.radio("Text extraction", ["trafilatura", "readability"], horizontal=True, key="pg_web_extract",
                         help="trafilatura: main text without boilerplate; readability: readability-lxml + "
                              "html2text, as in the paper.")
    with st.expander("Snapshot folder"):
        folder = st.text_input("Save snapshots under (optional)", key="pg_web_dir",
                               help=f"Empty: {ENV_SNAPSHOTS} or the cache. A folder under the app's allowed roots.")
    return {"spec": spec, "top": int(top), "extractor": extractor, "folder": folder}


@st.cache_resource(show_spinner=False)
def demo_recording():
    """The built-in recording (what ``replay`` replays)."""
    from berds_core.web.replay import ReplaySearch

    return ReplaySearch()


def _ask_recorded() -> None:
    """Button callback: put the chosen recorded question in the question box."""
    pick = st.session_state.get("pg_web_recorded")
    if pick:
        st.session_state["pg_text"] = pick


def recording_label(info: dict) -> str:
    """One line that says a corpus is a recording, with its dates."""
    dates = info.get("fetched_from") or "?"
    if info.get("fetched_to") and info.get("fetched_to") != info.get("fetched_from"):
        dates += f" to {info['fetched_to']}"
    return (f"a recording, not the live web: the search of {info.get('searched_at') or '?'} and its pages as "
            f"fetched on {dates} ({info.get('source')})")


def recording_choice() -> dict:
    """No backend configured: offer the built-in recording, labelled as such, instead of a dead end."""
    rec = demo_recording()
    held = rec.questions()
    info = [rec.recording_info(q) for q in held]
    searched = sorted({i["searched_at"] for i in info if i.get("searched_at")})
    st.info(f"No web search backend is configured ({ENV_SEARCH}), so this replays a recording: the web searches "
            f"of {', '.join(searched)} and their pages, for {len(held)} questions (pages written for this demo, "
            "fictional sites). It is not the live web.", icon=":material/history:")
    c1, c2 = st.columns([3, 1])
    c1.selectbox("Recorded questions", held, key="pg_web_recorded",
                 help="The questions the recording holds; another question finds nothing in it.")
    c2.button("Ask this question", key="pg_web_ask", on_click=_ask_recorded)
    st.caption(f"For the live web, the operator sets {ENV_SEARCH} (e.g. searxng:http://127.0.0.1:8888, or serper "
               "with SERPER_API_KEY) in the environment or .streamlit/secrets.toml.")
    return {"spec": REPLAY, "top": 100, "extractor": "trafilatura", "folder": ""}


def typed_id(text: str) -> str:
    return "typed-" + hashlib.sha1(" ".join(text.lower().split()).encode("utf-8")).hexdigest()[:12]


@dataclass
class WebEngine:
    """The web corpus of one typed question, and the Playground's two calls over it."""

    folder: str
    stamp: str
    corpus: object
    summary: dict

    def column(self, cfg_key: tuple, qkey: tuple, spec: str, label: str, k: int, use_gold: bool, policy: str,
               question: Question) -> dict:
        return _web_column(self.folder, self.stamp, cfg_key, qkey, spec, label, k, policy, question)

    def best_ranks(self, cfg_key: tuple, qkey: tuple, which: tuple, use_gold: bool, policy: str,
                   question: Question) -> dict:
        return _web_best_ranks(self.folder, self.stamp, cfg_key, qkey, which, policy, question)


@st.cache_resource(show_spinner=False, max_entries=16)
def _web_corpus(folder: str, stamp: str):
    from berds_core.web import load_snapshot_corpus

    return load_snapshot_corpus(folder)


def _web_engine(folder: str, stamp: str, cfg_key: tuple, pipeline=None):
    from studio_ui.config import Config

    return question_engine(Config(**dict(cfg_key)), _web_corpus(folder, stamp), pipeline)


@st.cache_data(show_spinner=False, max_entries=256)
def _web_column(folder: str, stamp: str, cfg_key: tuple, qkey: tuple, spec: str, label: str, k: int, policy: str,
                _question: Question) -> dict:
    return column_result(_web_engine(folder, stamp, cfg_key, spec), _question, spec, k, label=label, policy=policy)


@st.cache_data(show_spinner=False, max_entries=256)
def _web_best_ranks(folder: str, stamp: str, cfg_key: tuple, qkey: tuple, which: tuple, policy: str,
                    _question: Question) -> dict:
    return best_ranks(_web_engine(folder, stamp, cfg_key), _question, list(which), policy=policy)


def open_engine(question: Question, settings: dict) -> WebEngine | None:
    """Build (or reopen) the typed question's web corpus, with a progress bar while pages arrive.

    Returns None after showing why when there is no usable corpus.
    """
    from berds_core.specs import SpecError
    from berds_core.web import FetchConfig, SearchError, WebOptions, build_question_corpus
    from berds_core.web.search import today

    if settings.get("error"):
        return None
    replay = settings["spec"].split(":", 1)[0] == REPLAY
    try:  # a replayed recording gets its own folder: it never mixes with live snapshots of the same day
        root = snapshot_root(settings["folder"]) / ("recordings" if replay else today())
        backend = cached_backend(settings["spec"])
    except InputError as e:
        show_error(e)
        return None
    except (SpecError, SearchError) as e:
        show_error(e, f"{ENV_SEARCH}: ")
        return None
    allow_private = os.environ.get(ENV_ALLOW_PRIVATE, "").strip().lower() in ("1", "true", "yes")
    opts = WebOptions(top=settings["top"], extractor=settings["extractor"],
                      fetch=FetchConfig(timeout=8.0, page_timeout=20.0, max_bytes=3_000_000,
                                        allow_private=allow_private))
    q = Question(typed_id(question.question), question.question, list(question.perspectives))
    bar = st.empty()

    def on_event(kind: str, info: dict) -> None:
        if kind == "search":
            bar.progress(0.0, text=f"{info['results']} search results; fetching pages…")
        elif kind == "page":
            bar.progress(info["done"] / max(info["total"], 1),
                         text=f"Fetching pages: {info['done']} / {info['total']}")

    bar.progress(0.0, text="Replaying the recording…" if replay else "Searching the web…")
    try:
        res = build_question_corpus(q, backend, root, opts, on_event=on_event)
    except (SearchError, OSError) as e:
        bar.empty()
        show_error(e, "Web search failed: ")
        return None
    bar.empty()
    if res.search_error:
        show_error(res.search_error, "Not in the recording: " if replay else "Web search failed: ")
        return None
    _show_summary(res, f"{'recordings' if replay else today()}/{res.folder.name}")
    if not res.passages:
        st.warning("No page gave any text: nothing to retrieve from. See the fetch log above.")
        return None
    from berds_core.web import read_manifest

    stamp = str((read_manifest(res.folder) or {}).get("built_at", ""))
    return WebEngine(str(res.folder), stamp, _web_corpus(str(res.folder), stamp), res.summary())


def _show_summary(res, where: str) -> None:
    """Counts, the fetch log and the snapshot's folder (relative to the snapshot root: the page never
    shows the server's own folders)."""
    from berds_core.web import read_manifest

    recording = (read_manifest(res.folder) or {}).get("recording")
    how = recording_label(recording) if recording else "saved snapshot" if res.reused else "fetched now"
    st.markdown(f'<div class="bc-desc" data-testid="web-corpus-summary">Web corpus ({esc(how)}): {res.fetched} of '
                f'{res.results} pages gave text, {res.passages} passages; {res.failed} failed, {res.skipped} skipped.'
                '</div>', unsafe_allow_html=True)
    with st.expander(f"Fetch log ({len(res.log)} pages) and snapshot folder"):
        st.caption("Snapshot saved in the snapshot folder under:")
        st.code(where, language=None)
        rows = [{"url": r.get("url"), "outcome": r.get("outcome"), "status": r.get("status"),
                 "reason": r.get("reason"), "passages": r.get("passages", 0), "fetched at": r.get("fetched_at")}
                for r in res.log]
        if rows:
            st.dataframe(rows, hide_index=True, width="stretch")
