"""One question's web corpus: search, fetch, extract, split into passages, save a snapshot.

``build_question_corpus(question, backend, root, WebOptions(...))`` is resumable:

- a question whose ``manifest.json`` is complete and was built with the same backend,
  query, ``top``, extractor and passage length is not touched again (``refresh`` or
  ``retry_failed`` re-open it);
- the search results saved in ``search.json`` are reused (``refresh`` searches again);
  otherwise the search cache answers for the same (backend, query, date);
- a URL whose page is saved is never fetched again; a URL that failed for good (404,
  robots.txt, PDF, loop...) is not retried; one that failed for a passing reason
  (timeout, 5xx, connection) is fetched again on the next build.

Passages are the page's extracted text in ``passage_words``-word windows (the corpus
machinery of :mod:`berds_core.corpora.memory`); their ids are ``<final url>-<k>``, their title
the page's title (else the search result's), and they keep the URL. A passage whose
text repeats an earlier one (shared boilerplate) is dropped, and a page reached
through two search results counts once.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable
from urllib.parse import urldefrag

from ..records import Question
from . import snapshot as snap
from .extract import EXTRACTORS, extract_page
from .fetch import FetchConfig, PageResult, fetch_pages
from .results import SearchError, SearchResult
from .search import SearchBackend, cached_search, today
from ..corpora.memory import CorpusBuilder


@dataclass(frozen=True)
class WebOptions:
    top: int = 100
    extractor: str = "trafilatura"
    passage_words: int = 100
    fetch: FetchConfig = field(default_factory=FetchConfig)
    refresh: bool = False  # search again, even when the snapshot has results
    retry_failed: bool = False  # re-open complete snapshots to retry pages that failed for a passing reason
    date: str | None = None  # search date for the cache (default: today, UTC)

    def __post_init__(self):
        if self.top < 1:
            raise ValueError("top must be at least 1")
        if self.passage_words < 1:
            raise ValueError("passage_words must be at least 1")
        EXTRACTORS.parse(self.extractor)


@dataclass
class BuildResult:
    question_id: str
    folder: Path
    passages: int = 0
    results: int = 0
    fetched: int = 0  # pages that gave text (now or in an earlier build)
    failed: int = 0
    skipped: int = 0
    requested: int = 0  # pages requested from the web in this build
    reused: bool = False  # the whole snapshot was already complete
    search_from_cache: bool = False
    search_error: str | None = None
    seconds: float = 0.0
    log: list[dict] = field(default_factory=list)

    def summary(self) -> dict:
        return {"question_id": self.question_id, "folder": str(self.folder), "passages": self.passages,
                "results": self.results, "fetched": self.fetched, "failed": self.failed, "skipped": self.skipped,
                "requested": self.requested, "reused": self.reused, "search_from_cache": self.search_from_cache,
                "search_error": self.search_error, "seconds": round(self.seconds, 3)}


Event = Callable[[str, dict], None]


def _same_settings(m: dict, backend: SearchBackend, query: str, opts: WebOptions) -> bool:
    return (m.get("format") == snap.FORMAT and m.get("backend") == backend.name and m.get("query") == query
            and m.get("top") == opts.top and m.get("extractor") == opts.extractor
            and m.get("passage_words") == opts.passage_words)


def _result_from_manifest(question: Question, qdir: Path, m: dict, seconds: float) -> BuildResult:
    c = m.get("counts", {})
    log = snap.read_log(qdir)
    return BuildResult(question.id, qdir, c.get("passages", 0), c.get("results", 0), c.get("fetched", 0),
                       c.get("failed", 0), c.get("skipped", 0), 0, True, True, m.get("search_error"), seconds,
                       list(log.values()))


def _search(question: Question, backend: SearchBackend, qdir: Path, opts: WebOptions, query: str):
    """``(results, date, from_cache)``; the snapshot's saved results first."""
    saved = snap.read_json(qdir / snap.SEARCH_FILE)
    if (saved and not opts.refresh and saved.get("backend") == backend.name and saved.get("query") == query
            and saved.get("top") == opts.top and isinstance(saved.get("results"), list)):
        return [SearchResult(**r) for r in saved["results"]], saved.get("date"), True
    recorded = getattr(backend, "searched_at", None)  # a replayed search keeps the date it was made
    date = opts.date or (recorded(query) if recorded else None) or today()
    results, hit = cached_search(backend, query, opts.top, date=date)
    snap.write_json(qdir / snap.SEARCH_FILE, {"backend": backend.name, "query": query, "date": date,
                                              "top": opts.top, "results": [r.to_json() for r in results]})
    return results, date, hit


def build_question_corpus(question: Question, backend: SearchBackend, root, options: WebOptions | None = None,
                          *, on_event: Event | None = None) -> BuildResult:
    """Build (or resume) the web corpus of one question under ``root``; see the module docstring.

    ``on_event(kind, info)``: ``"search"`` ({results, from_cache}), ``"page"`` ({done, total, record})
    for each page fetched now, ``"done"`` (the summary). A fatal search error (refused key, wrong
    endpoint) raises :class:`SearchError`; any other search failure is recorded in the manifest.
    """
    opts = options or WebOptions()
    emit = on_event or (lambda kind, info: None)
    t0 = time.perf_counter()
    qdir = snap.question_dir(root, question.id)
    qdir.mkdir(parents=True, exist_ok=True)
    query = question.question.strip()
    old = snap.read_manifest(qdir)
    if (old and old.get("complete") and not old.get("search_error") and not opts.refresh
            and not opts.retry_failed and _same_settings(old, backend, query, opts)):
        res = _result_from_manifest(question, qdir, old, time.perf_counter() - t0)
        emit("done", res.summary())
        return res

    res = BuildResult(question.id, qdir)
    manifest = {"format": snap.FORMAT, "question_id": question.id, "question": question.question, "query": query,
                "backend": backend.name, "date": None, "top": opts.top, "extractor": opts.extractor,
                "passage_words": opts.passage_words, "user_agent": opts.fetch.user_agent}
    if getattr(backend, "is_recording", False):  # what the app labels as a recording, never as the live web
        manifest["recording"] = backend.recording_info(query)
    try:
        results, date, res.search_from_cache = _search(question, backend, qdir, opts, query)
    except SearchError as e:
        if e.fatal:
            raise
        res.search_error = str(e)
        manifest.update(date=opts.date or today(), complete=False, search_error=res.search_error,
                        counts={"results": 0, "fetched": 0, "failed": 0, "skipped": 0, "passages": 0},
                        fetched=[], failed=[], skipped=[], built_at=_now())
        if not (qdir / snap.PASSAGES).exists():
            snap.write_passages(qdir, [])
        snap.write_json(qdir / snap.MANIFEST, manifest)
        res.seconds = time.perf_counter() - t0
        emit("done", res.summary())
        return res
    manifest["date"] = date
    res.results = len(results)
    emit("search", {"results": len(results), "from_cache": res.search_from_cache})

    # ---- fetch what is not saved yet
    prior = snap.read_log(qdir)
    records: dict[str, dict] = {}
    todo: list[str] = []
    for r in results:
        rec = prior.get(r.url)
        if rec is not None and (rec.get("fetched") and snap.page_path(qdir, r.url).exists()
                                or not rec.get("fetched") and not rec.get("transient")):
            records[r.url] = rec  # saved page (extracted again below) or a lasting failure
        else:
            todo.append(r.url)
    res.requested = len(todo)
    done = [0]

    def on_page(i: int, page: PageResult) -> None:
        rec = page.log_record()
        rec.setdefault("fetched_at", _now())
        if page.ok:
            snap.write_page(qdir, page.url, page.text)
        snap.append_log(qdir, rec)
        records[page.url] = rec
        done[0] += 1
        emit("page", {"done": done[0], "total": len(todo), "record": rec})

    if todo:  # a replayed search answers from its recording, with no request
        (getattr(backend, "fetch_pages", None) or fetch_pages)(todo, opts.fetch, on_page)

    # ---- extract and split, in search-rank order
    extractor = EXTRACTORS.create(opts.extractor)
    builder = CorpusBuilder(opts.passage_words)
    rows: list[dict] = []
    first_rank: dict[str, int] = {}
    fetched, failed, skipped = [], [], []
    for r in results:
        rec = records[r.url]
        if rec.get("fetched"):
            rec = records[r.url] = _passages_of_page(qdir, r, rec, extractor, builder, rows, first_rank)
        entry = {"url": r.url, "status": rec.get("status"), "reason": rec.get("reason")}
        if rec.get("outcome") == "ok":
            fetched.append({"url": r.url, "final_url": rec.get("final_url", r.url), "status": rec.get("status"),
                            "title": rec.get("title", ""), "passages": rec.get("passages", 0),
                            "content_type": rec.get("content_type"), "charset": rec.get("charset"),
                            "bytes": rec.get("bytes")})
        elif rec.get("outcome") == "skipped":
            skipped.append(entry)
        else:
            failed.append(entry)

    snap.write_passages(qdir, rows)
    log = [records[r.url] for r in results]
    snap.write_log(qdir, log)
    counts = {"results": len(results), "fetched": len(fetched), "failed": len(failed), "skipped": len(skipped),
              "passages": len(rows), "duplicates_dropped": builder.dropped}
    manifest.update(complete=True, search_error=None, counts=counts, fetched=fetched, failed=failed,
                    skipped=skipped, built_at=_now())
    snap.write_json(qdir / snap.MANIFEST, manifest)
    res.passages, res.fetched, res.failed, res.skipped = len(rows), len(fetched), len(failed), len(skipped)
    res.log = log
    res.seconds = time.perf_counter() - t0
    emit("done", res.summary())
    return res


def _passages_of_page(qdir: Path, r: SearchResult, rec: dict, extractor, builder, rows: list[dict],
                      first_rank: dict[str, int]) -> dict:
    """Extract and split one saved page into ``rows``; returns its (possibly updated) log record."""
    rec = {k: v for k, v in rec.items() if k not in ("passages", "title")}
    rec.update(outcome="ok", reason="ok")
    body = snap.read_page(qdir, r.url)
    if body is None:  # the page file vanished: fetch it on the next build
        return {**rec, "outcome": "failed", "reason": "saved page missing", "transient": True, "fetched": False}
    final = urldefrag(rec.get("final_url") or r.url)[0]
    if final in first_rank:
        return {**rec, "outcome": "skipped", "reason": f"skipped: same page as rank {first_rank[final]}"}
    page = extract_page(body, rec.get("content_type") or "text/html", final, extractor)
    if not page.text.split():
        return {**rec, "outcome": "skipped", "reason": "skipped: no text extracted"}
    title = page.title or r.title or final
    before = len(builder.passages)
    builder.add(page.text, title, None, final, (final, None), always_suffix=True)
    if len(builder.passages) == before:
        return {**rec, "outcome": "skipped", "reason": "skipped: its text repeats earlier pages"}
    first_rank[final] = r.rank
    for p in builder.passages[before:]:
        rows.append({"id": p.id, "title": p.title, "text": p.text, "url": final})
    return {**rec, "title": title, "passages": len(builder.passages) - before}


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")
