"""``berds corpus web``: one web corpus per question (search, fetch, extract, split), saved as a snapshot;
``berds corpus ingest``: a large corpus streamed into the on-disk store (:mod:`._corpus_ingest`).

::

    berds corpus web --questions q.jsonl --search searxng:http://127.0.0.1:8888 --top 100 --out web/
    berds retrieve --questions q.jsonl --corpus-per-question web/ --out run.jsonl

Progress goes to stderr: a bar per question and one line per page that failed or
was skipped. Running the command again resumes: finished questions are kept,
saved pages are not fetched again (see :mod:`berds_core.web.build`).
"""
from __future__ import annotations

import sys
import time

from ..errors import InputError
from ._parsing import declare


def register(sub) -> None:
    from ..web.extract import EXTRACTORS
    from ..web.search import SEARCH
    from . import add_common_args

    p = sub.add_parser("corpus", help="build corpora ('berds corpus web': a web corpus per question)")
    kinds = p.add_subparsers(dest="corpus_kind", required=True, parser_class=type(p))
    w = kinds.add_parser("web", help="search the web for each question, fetch and split the pages, save a snapshot",
                         description="Search the web for each question, fetch the top pages, extract their text "
                                     "and split it into passages: DIR/<question>/passages.jsonl + manifest.json.")
    add_common_args(w)
    w.add_argument("--questions", required=True, help="questions file (jsonl, csv, qe, debate-sites, ...)")
    w.add_argument("--format", default=None, help="questions format (default: guessed from the file)")
    w.add_argument("--search", required=True, metavar="SPEC",
                   help=f"search backend: {SEARCH.choices()}. Keys from the environment "
                        "(SERPER_API_KEY, BRAVE_API_KEY, BING_SUBSCRIPTION_KEY, GOOGLE_API_KEY + GOOGLE_CSE_ID)")
    w.add_argument("--top", type=int, default=100, help="search results (pages) per question (default 100)")
    w.add_argument("--out", required=True, metavar="DIR", help="snapshot folder: one sub-folder per question")
    w.add_argument("--extract", default="trafilatura", choices=EXTRACTORS.names(),
                   help="trafilatura (default) or readability (readability-lxml + html2text, as in the paper)")
    w.add_argument("--passage-words", type=int, default=100, help="words per passage (default 100)")
    w.add_argument("--concurrency", type=int, default=16, help="pages fetched at once (default 16)")
    w.add_argument("--per-host", type=int, default=2, help="pages fetched at once from one host (default 2)")
    w.add_argument("--timeout", type=float, default=10.0, help="seconds per connect/read (default 10)")
    w.add_argument("--page-timeout", type=float, default=30.0, help="seconds for a whole page (default 30)")
    w.add_argument("--max-bytes", type=int, default=5_000_000, help="largest page kept, in bytes (default 5 MB)")
    w.add_argument("--retries", type=int, default=2,
                   help="retries on HTTP 429 and 5xx, for pages and searches (default 2)")
    w.add_argument("--refresh", action="store_true", help="search again even where the snapshot has results")
    w.add_argument("--retry-failed", action="store_true",
                   help="re-open finished questions to retry pages that timed out or met a server error")
    w.add_argument("--limit", type=int, default=None, help="only the first N questions")
    w.add_argument("--skip-missing", action="store_true", dest="skip_missing",
                   help="go on when a question gets no search results (a recording without it, a search that "
                        "failed): its folder stays empty (default: exit 2 saying which)")
    w.set_defaults(func=run_web)
    declare(w, inputs=("questions",), out_dirs=("out",), dir_files=snapshot_files, servers=("search",))
    from ._corpus_ingest import add_ingest

    add_ingest(kinds)


def snapshot_files(args) -> list:
    """The files a snapshot of these questions writes at the top of their folders (none may be an input)."""
    from pathlib import Path

    from ..datasets import load_questions
    from ..web.snapshot import FETCH_LOG, MANIFEST, PASSAGES, SEARCH_FILE, question_dir

    if not Path(args.questions).is_file():
        return []  # the verb says what is wrong with it
    questions = load_questions(args.questions, args.format)
    return [question_dir(args.out, q.id) / name for q in questions for name in (PASSAGES, MANIFEST, FETCH_LOG, SEARCH_FILE)]


def _options(args):
    from ..web import FetchConfig, WebOptions

    for name in ("top", "passage_words", "concurrency", "per_host", "max_bytes"):
        if getattr(args, name) < 1:
            raise InputError(f"--{name.replace('_', '-')}", None, None, "must be at least 1")
    for name in ("timeout", "page_timeout"):
        if getattr(args, name) <= 0:
            raise InputError(f"--{name.replace('_', '-')}", None, None, "must be positive")
    if args.retries < 0:
        raise InputError("--retries", None, None, "must be 0 or more")
    if args.limit is not None and args.limit < 1:
        raise InputError("--limit", None, None, "must be at least 1")
    fetch = FetchConfig(concurrency=args.concurrency, per_host=args.per_host, timeout=args.timeout,
                        page_timeout=args.page_timeout, max_bytes=args.max_bytes, retries=args.retries)
    return WebOptions(top=args.top, extractor=args.extract, passage_words=args.passage_words, fetch=fetch,
                      refresh=args.refresh, retry_failed=args.retry_failed)


def open_search(spec: str, **opts):
    """The backend a ``--search`` spec names, or an InputError naming ``--search``."""
    from ..specs import SpecError
    from ..web import SearchError, get_search

    try:
        return get_search(spec, **opts)
    except (SpecError, SearchError) as e:
        raise InputError("--search", None, None, str(e)) from None


def _check_recording(backend, questions, skip: bool) -> None:
    """A replayed search: every question must be in the recording (checked before any work), unless
    ``--skip-missing``; then the missing ones are named on stderr and their folders stay empty."""
    entry = getattr(backend, "entry", None)
    if not getattr(backend, "is_recording", False) or entry is None:
        return
    missing = [q for q in questions if entry(q.question.strip()) is None]
    if not missing:
        return
    what = (f"{len(missing)} of {len(questions)} questions are not in the recording {backend.name} "
            f"(first: {missing[0].id!r}, {missing[0].question.strip()[:60]!r})")
    if not skip:
        raise InputError("--search", None, None, what + "; record them, or pass --skip-missing to leave their "
                                                        "folders empty")
    sys.stderr.write(f"warning: {what}; their folders stay empty (--skip-missing)\n")


def _no_results(args, n: int, failed: list[str], errors: list[str]) -> None:
    """Questions whose search failed: one line; exit 2 unless ``--skip-missing``. The snapshot keeps what
    was built, so a rerun retries only those questions."""
    what = (f"{len(failed)} of {n} questions got no search results (first: {failed[0]!r}: "
            f"{str(errors[0]).splitlines()[0][:160]})")
    if not args.skip_missing:
        raise InputError("--search", None, None, what + "; rerun to retry them, or pass --skip-missing to accept")
    sys.stderr.write(f"warning: {what}; their folders stay empty (--skip-missing)\n")


def run_web(args) -> dict:
    from pathlib import Path

    from tqdm import tqdm

    from ..datasets import load_questions
    from ..web import SearchError, build_question_corpus

    opts = _options(args)
    out = Path(args.out)
    if out.exists() and not out.is_dir():
        raise InputError(out, None, None, "exists and is not a folder")
    questions = load_questions(args.questions, args.format)
    if not questions:
        raise InputError(args.questions, None, None, "no questions found")
    questions = questions[: args.limit] if args.limit else questions
    backend = open_search(args.search, retries=args.retries)
    _check_recording(backend, questions, args.skip_missing)
    out.mkdir(parents=True, exist_ok=True)

    t0 = time.perf_counter()
    totals = {"fetched": 0, "failed": 0, "skipped": 0, "requested": 0, "passages": 0, "reused": 0}
    search_failed, errors, no_text = [], [], []
    for n, q in enumerate(questions, 1):
        bar = tqdm(total=None, desc=f"[{n}/{len(questions)}] {q.id}", unit="page", file=sys.stderr,
                   disable=args.quiet, leave=False, dynamic_ncols=True)

        def on_event(kind, info, bar=bar):
            if kind == "search":
                bar.reset(total=info["results"])
            elif kind == "page":
                if bar.total != info["total"]:
                    bar.reset(total=info["total"])
                bar.update(1)
                rec = info["record"]
                if rec["outcome"] != "ok" and not args.quiet:
                    bar.write(f"  {rec['outcome']} {rec['url']}: {rec['reason']}", file=sys.stderr)

        try:
            res = build_question_corpus(q, backend, out, opts, on_event=on_event)
        except SearchError as e:  # a refused key or a wrong endpoint: no other question will do better
            bar.close()
            raise InputError("--search", None, None, str(e)) from None
        bar.close()
        for key in ("fetched", "failed", "skipped", "requested", "passages"):
            totals[key] += getattr(res, key)
        totals["reused"] += int(res.reused)
        if res.search_error:
            search_failed.append(q.id)
            errors.append(res.search_error)
        elif not res.passages:
            no_text.append(q.id)
        if not args.quiet:
            what = ("kept (already complete)" if res.reused else
                    f"search failed: {res.search_error}" if res.search_error else
                    f"{res.results} results, {res.fetched} pages with text, {res.failed} failed, "
                    f"{res.skipped} skipped, {res.passages} passages")
            sys.stderr.write(f"[{n}/{len(questions)}] {q.id} done: {what}\n")
    seconds = time.perf_counter() - t0
    if search_failed:
        _no_results(args, len(questions), search_failed, errors)
    if no_text:
        sys.stderr.write(f"warning: {len(no_text)} of {len(questions)} questions have no passages (first: "
                         f"{no_text[0]!r}: no page gave text); 'berds retrieve --corpus-per-question' refuses "
                         "them unless --skip-empty\n")
    return {"out": str(out), "backend": backend.name, "questions": len(questions),
            "complete": len(questions) - len(search_failed), "search_failed": search_failed,
            "questions_reused": totals["reused"], "pages_requested": totals["requested"],
            "pages_fetched": totals["fetched"], "pages_failed": totals["failed"],
            "pages_skipped": totals["skipped"], "passages": totals["passages"], "seconds": round(seconds, 3)}
