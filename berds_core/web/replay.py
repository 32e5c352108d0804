"""Replaying a recorded web search: the ``replay[:<recording.jsonl>]`` search backend.

A recording holds, per question, what a search returned and what each page
answered when it was fetched (its HTML, HTTP status and fetch date)::

    {"question": ..., "query": ..., "searched_at": "2026-11-20",
     "results": [{"url", "title", "snippet", "rank"}, ...],
     "pages": {"<url>": {"fetched_at": "2026-11-20T14:02:51Z", "status": 200,
                         "content_type": "text/html; charset=utf-8", "html": "..."}
               "<url>": {"fetched_at": ..., "status": 404, "reason": "HTTP 404"}}}

:class:`ReplaySearch` answers ``search(query)`` with the recorded results of the
question asked (case and spacing ignored) and ``fetch_pages(urls)`` with the
recorded answers, so :func:`berds_core.web.build_question_corpus` runs its
real pipeline (extract, split, save a snapshot) with no network at all. Every
page record keeps its recorded ``fetched_at`` date and the snapshot's manifest
names the recording: what the app shows is labelled as a recording, never as
the live web. A question the recording does not hold is a search error that
lists the questions it does hold.

The bare spec ``replay`` replays the built-in demo recording
(``berds_core/demo/web_recording.jsonl``: pages written for this project, on
fictional ``.example`` sites).
"""
from __future__ import annotations

import functools
from pathlib import Path
from typing import Callable

from ..errors import InputError
from .fetch import FetchConfig, PageResult
from .results import SearchError, SearchResult
from ..datasets.demo import demo_recording_path
from ..files.jsonio import iter_jsonl


def _norm(text: str) -> str:
    return " ".join(str(text).lower().split()).rstrip("?!. ")


@functools.lru_cache(maxsize=4)
def _load(path: str, mtime: int) -> tuple[dict, ...]:
    out = []
    for no, obj in iter_jsonl(path):
        for key in ("question", "results", "pages"):
            if key not in obj:
                raise InputError(path, no, key, "missing")
        if not isinstance(obj["results"], list) or not isinstance(obj["pages"], dict):
            raise InputError(path, no, "results", "expected a list of results and an object of pages")
        out.append(obj)
    if not out:
        raise InputError(path, None, None, "the recording holds no search")
    return tuple(out)


def load_recording(path) -> tuple[dict, ...]:
    p = Path(path)
    if not p.is_file():
        raise InputError(p, None, None, "recording not found")
    return _load(str(p), p.stat().st_mtime_ns)


class ReplaySearch:
    """A search backend that answers from a recording (see the module docstring)."""

    kind = "replay"
    key_env: tuple[str, ...] = ()
    is_recording = True

    def __init__(self, recording=None, **_ignored):
        self.builtin = recording is None
        self.path = Path(recording) if recording else demo_recording_path()
        self.entries = load_recording(self.path)
        self._by_query = {_norm(e.get("query") or e["question"]): e for e in self.entries}
        self._pages = {url: page for e in self.entries for url, page in e["pages"].items()}

    @property
    def name(self) -> str:
        return "replay:demo" if self.builtin else f"replay:{self.path.name}"

    def __repr__(self) -> str:
        return f"<ReplaySearch {self.name}>"

    def questions(self) -> list[str]:
        """The questions the recording holds, in its order."""
        return [e["question"] for e in self.entries]

    def entry(self, query: str) -> dict | None:
        return self._by_query.get(_norm(query))

    def searched_at(self, query: str) -> str | None:
        e = self.entry(query)
        return None if e is None else e.get("searched_at")

    def search(self, query: str, n: int = 10) -> list[SearchResult]:
        e = self.entry(query)
        if e is None:
            held = "; ".join(repr(q) for q in self.questions())
            raise SearchError(f"the recording {self.name} holds no search for {query!r} (it holds: {held})")
        return [SearchResult(r["url"], r.get("title", ""), r.get("snippet", ""), int(r.get("rank", i)))
                for i, r in enumerate(e["results"][: max(1, int(n))], 1)]

    def fetch_pages(self, urls: list[str], config: FetchConfig | None = None,
                    on_page: Callable[[int, PageResult], None] | None = None) -> list[PageResult]:
        """The recorded answer of each URL (no request is made); ``on_page`` as :func:`fetch.fetch_pages`."""
        out = []
        for i, url in enumerate(urls):
            rec = self._pages.get(url)
            if rec is None:
                page = PageResult(url, "failed", "not in the recording", fetched_at=None)
            elif rec.get("html") is not None and int(rec.get("status", 200)) < 400:
                html = str(rec["html"])
                page = PageResult(url, "ok", "ok", int(rec.get("status", 200)), rec.get("final_url") or url,
                                  (rec.get("content_type") or "text/html").split(";")[0].strip(), "utf-8", html,
                                  len(html.encode("utf-8")), fetched_at=rec.get("fetched_at"))
            else:
                page = PageResult(url, "failed", str(rec.get("reason") or f"HTTP {rec.get('status')}"),
                                  rec.get("status"), fetched_at=rec.get("fetched_at"))
            out.append(page)
            if on_page is not None:
                on_page(i, page)
        return out

    def recording_info(self, query: str) -> dict:
        """What the manifest says about the recording a snapshot was replayed from."""
        e = self.entry(query) or {}
        dates = sorted(str(p["fetched_at"])[:10] for p in e.get("pages", {}).values() if p.get("fetched_at"))
        return {"source": self.name, "searched_at": e.get("searched_at"),
                "fetched_from": dates[0] if dates else None, "fetched_to": dates[-1] if dates else None,
                "note": e.get("recorded_by")}
