"""The on-disk form of web corpora: one folder per question, readable without the web.

::

    DIR/<question folder>/
        passages.jsonl    {id, title, text, url} per line: the question's corpus
        manifest.json     question, backend, query, search date, settings, the URLs fetched
                          and the URLs that failed or were skipped, each with its reason
        fetch-log.jsonl   one line per search-result URL: {url, outcome, status, reason, ...}
        search.json       the search results used (url, title, snippet, rank)
        pages/<hash>.html.gz   each fetched page, decoded, so extraction can be redone offline

The question folder is the question id when it is a plain name
(``[A-Za-z0-9][A-Za-z0-9._-]*``, at most 100 characters) and a readable slug with
a hash otherwise; ``manifest.json`` keeps the real id. ``passages.jsonl`` is a
corpus file like any other (``--corpus DIR/<q>/passages.jsonl``), and a question
folder or the whole ``DIR`` load as corpora too (:func:`berds_core.corpora.memory.load_corpus`).
"""
from __future__ import annotations

import gzip
import hashlib
import json
import re
from pathlib import Path

from ..files.cache import slug
from ..corpora.memory import load_corpus
from ..errors import InputError
from ..files.jsonio import atomic_write, write_jsonl
from ..files.snapshot_layout import MANIFEST, PASSAGES

FORMAT = "berds-web-snapshot/1"
FETCH_LOG = "fetch-log.jsonl"
SEARCH_FILE = "search.json"
PAGES = "pages"
_PLAIN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")


def dir_name(question_id: str) -> str:
    """The folder name of a question id (the id itself when it is a safe plain name)."""
    qid = str(question_id)
    if _PLAIN.fullmatch(qid) and not qid.endswith("."):
        return qid
    return slug(qid)


def question_dir(root, question_id: str) -> Path:
    return Path(root) / dir_name(question_id)


# --------------------------------------------------------------------------- pages and the fetch log


def page_path(qdir: Path, url: str) -> Path:
    return Path(qdir) / PAGES / f"{hashlib.sha1(url.encode('utf-8')).hexdigest()[:20]}.html.gz"


def write_page(qdir: Path, url: str, text: str) -> Path:
    path = page_path(qdir, url)
    with atomic_write(path, "wb") as fh:
        fh.write(gzip.compress(text.encode("utf-8"), compresslevel=6, mtime=0))
    return path


def read_page(qdir: Path, url: str) -> str | None:
    path = page_path(qdir, url)
    try:
        return gzip.decompress(path.read_bytes()).decode("utf-8")
    except (FileNotFoundError, OSError, EOFError, UnicodeDecodeError):
        return None


def append_log(qdir: Path, record: dict) -> None:
    """Append one record as soon as a page is done (a crash loses at most the line being written)."""
    path = Path(qdir) / FETCH_LOG
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a", encoding="utf-8") as fh:
        fh.write(json.dumps(record, ensure_ascii=False) + "\n")
        fh.flush()


def read_log(qdir: Path) -> dict[str, dict]:
    """The last record per URL (a torn last line from a crash is ignored)."""
    path = Path(qdir) / FETCH_LOG
    out: dict[str, dict] = {}
    if not path.exists():
        return out
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        try:
            rec = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(rec, dict) and isinstance(rec.get("url"), str):
            out[rec["url"]] = rec
    return out


def write_log(qdir: Path, records: list[dict]) -> None:
    write_jsonl(Path(qdir) / FETCH_LOG, records)


# --------------------------------------------------------------------------- search results, passages, manifest


def read_json(path: Path) -> dict | None:
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (FileNotFoundError, json.JSONDecodeError, UnicodeDecodeError):
        return None
    return data if isinstance(data, dict) else None


def write_json(path: Path, obj: dict) -> None:
    with atomic_write(path) as fh:
        json.dump(obj, fh, ensure_ascii=False, indent=1)
        fh.write("\n")


def read_manifest(qdir) -> dict | None:
    return read_json(Path(qdir) / MANIFEST)


def write_passages(qdir: Path, rows: list[dict]) -> int:
    return write_jsonl(Path(qdir) / PASSAGES, rows)


def load_snapshot_corpus(qdir, *, passage_words: int | None = None, name: str | None = None):
    """A question folder's passages as a :class:`~berds_core.corpora.memory.Corpus` (InputError when empty)."""
    qdir = Path(qdir)
    return load_corpus(qdir / PASSAGES, passage_words=passage_words, name=name or qdir.name)


def question_folders(root) -> dict[str, Path]:
    """Question id -> folder for every question corpus under ``root``: the id from ``manifest.json``,
    or the folder name for a plain ``<id>/passages.jsonl`` folder without one."""
    root = Path(root)
    if not root.is_dir():
        raise InputError(root, None, None, "not a folder (expected one sub-folder per question)")
    out: dict[str, Path] = {}
    for sub in sorted(p for p in root.iterdir() if p.is_dir() and not p.name.startswith(".")):
        if not (sub / PASSAGES).is_file():
            continue
        manifest = read_manifest(sub)
        qid = str(manifest.get("question_id")) if manifest and manifest.get("question_id") is not None else sub.name
        if qid in out:
            raise InputError(sub / MANIFEST, None, "question_id", f"question {qid!r} also has folder {out[qid].name}")
        out[qid] = sub
    if not out:
        raise InputError(root, None, None, f"no question folders with a {PASSAGES} inside")
    return out
