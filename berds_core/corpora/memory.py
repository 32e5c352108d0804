"""Corpora in memory: passages loaded from JSONL, TSV/CSV, Parquet (or folders of such shards,
gzipped or not), JSON arrays or folders of text/HTML files.

Records are read by the streaming readers of :mod:`berds_core.files.corpus_readers`
(the on-disk store for corpora too large for memory, :mod:`berds_core.corpora.disk`,
reads the same records and gives the same passages, ids and hash).

Long texts are split into 100-word passages as BERDS does (DPR-style fixed
word windows). Ids are stable: ids given in the file are kept (with ``-<k>``
appended when a text is split into several passages); derived ids are
``<file-stem>-<line>`` for table/JSONL rows and ``<relative-path>-<k>`` for
files in a folder. Passages whose text exactly repeats an earlier one are
dropped. A corpus is identified by ``Corpus.hash``, a SHA-1 over the ordered
``(id, title, text)`` triples.
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Iterable, Iterator

from ..errors import InputError
from ..files.corpus_readers import (as_id, as_text, as_title, list_shards, make_shard, read_shard, shard_files,
                                    shard_format, strip_suffixes)
from ..files.jsonio import read_text
from ..files.snapshot_layout import snapshot_passages
from ..records import Passage

PASSAGE_WORDS = 100
TEXT_SUFFIXES = (".txt",)
HTML_SUFFIXES = (".html", ".htm")


def split_words(text: str, n: int = PASSAGE_WORDS) -> list[str]:
    """Split ``text`` into consecutive windows of ``n`` whitespace-separated words.

    The last window may be shorter. Whitespace is normalised to single spaces;
    an empty or blank text gives ``[]``.
    """
    if n < 1:
        raise ValueError("n must be at least 1")
    words = text.split()
    return [" ".join(words[i:i + n]) for i in range(0, len(words), n)]


def hash_passage(h, pid: str, title: str, text: str) -> None:
    """Feed one passage to a content hash (``Corpus.hash``; the on-disk store streams the same)."""
    for part in (pid, title, text):
        b = part.encode("utf-8")
        h.update(len(b).to_bytes(8, "little"))
        h.update(b)


def passages_of(text: str, words: int | None, base: str, where: tuple, always_suffix: bool = False
                ) -> list[tuple[str, str]]:
    """``(id, text)`` of the passages one record gives: ``words``-word windows (None: the whole
    text, whitespace normalised), ids ``<base>-<k>`` when the text splits (or ``always_suffix``),
    else ``<base>``. ``where`` = (path, line) for the error of a text without words."""
    chunks = split_words(text, words) if words else [" ".join(text.split())]
    chunks = [c for c in chunks if c]
    if not chunks:
        raise InputError(where[0], where[1], "text", "no words in text")
    if len(chunks) == 1 and not always_suffix:
        return [(base, chunks[0])]
    return [(f"{base}-{k}", c) for k, c in enumerate(chunks)]


@dataclass
class Corpus:
    """An ordered list of passages; rows are the positions retrievers return."""

    passages: list[Passage]
    name: str = "corpus"
    duplicates_dropped: int = field(default=0, compare=False)
    source: str | None = field(default=None, compare=False)  # the file or folder it was loaded from

    def __post_init__(self):
        self.passages = list(self.passages)

    def __len__(self) -> int:
        return len(self.passages)

    def __getitem__(self, i: int) -> Passage:
        return self.passages[i]

    def __iter__(self) -> Iterator[Passage]:
        return iter(self.passages)

    @cached_property
    def ids(self) -> list[str]:
        return [p.id for p in self.passages]

    @cached_property
    def texts(self) -> list[str]:
        return [p.text for p in self.passages]

    @cached_property
    def titles(self) -> list[str]:
        return [p.title for p in self.passages]

    @cached_property
    def _row_of(self) -> dict[str, int]:
        return {pid: i for i, pid in enumerate(self.ids)}

    def index_of(self, passage_id: str) -> int:
        """The row of a passage id (KeyError when absent)."""
        return self._row_of[passage_id]

    @cached_property
    def hash(self) -> str:
        """Content hash over the ordered (id, title, text) triples."""
        h = hashlib.sha1()
        for p in self.passages:
            hash_passage(h, p.id, p.title, p.text)
        return h.hexdigest()

    def passage_dict(self, row: int) -> dict:
        p = self.passages[row]
        return {"id": p.id, "title": p.title, "text": p.text}


# ---------------------------------------------------------------- building


class CorpusBuilder:
    """Collects passages: splits, assigns ids, drops duplicate texts, checks id clashes."""

    def __init__(self, words: int | None):
        self.words = words
        self.passages: list[Passage] = []
        self.seen_text: set[str] = set()
        self.id_origin: dict[str, tuple] = {}
        self.dropped = 0

    def add(self, text: str, title: str, given_id: str | None, derived_id: str, where: tuple,
            always_suffix: bool = False) -> None:
        """``where`` = (path, line) for error messages."""
        for pid, chunk in passages_of(text, self.words, given_id if given_id is not None else derived_id,
                                      where, always_suffix):
            if chunk in self.seen_text:
                self.dropped += 1
                continue
            if pid in self.id_origin:
                first = self.id_origin[pid]
                line_info = f" (first at line {first[1]})" if first[1] else ""
                raise InputError(where[0], where[1], "id", f"duplicate passage id '{pid}'{line_info}")
            self.id_origin[pid] = where
            self.seen_text.add(chunk)
            self.passages.append(Passage(pid, title, chunk))

    def corpus(self, path, name: str) -> Corpus:
        if not self.passages:
            raise InputError(path, None, None, "corpus is empty (no passages)")
        return Corpus(self.passages, name, duplicates_dropped=self.dropped)


def _records_json(path: Path) -> Iterator[tuple[int, dict]]:
    text = read_text(path)
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        raise InputError(path, e.lineno, None, f"malformed JSON ({e.msg}, column {e.colno})") from None
    if not isinstance(data, list):
        raise InputError(path, None, None, "expected a JSON array of {id?, title?, text} objects")
    for i, obj in enumerate(data):
        if not isinstance(obj, dict):
            raise InputError(path, None, f"[{i}]", "expected a JSON object")
        # JSON arrays have no meaningful line numbers; report the element index instead.
        yield i + 1, obj


def _add_records(builder: CorpusBuilder, path: Path, records: Iterable[tuple[int, dict]]) -> None:
    stem = path.stem
    for no, obj in records:
        text = as_text(obj.get("text"), path, no, "text" in obj)
        builder.add(text, as_title(obj.get("title"), path, no), as_id(obj.get("id"), path, no),
                    f"{stem}-{no}", (path, no))


def _add_shards(builder: CorpusBuilder, shards) -> None:
    """Records of corpus shards (JSONL, TSV, CSV, gzipped or not, Parquet), streamed batch by batch."""
    for shard in shards:
        for batch in read_shard(shard):
            path, base = shard.path, shard.base_id
            for no, pid, title, text in zip(batch.lines, batch.ids, batch.titles, batch.texts):
                builder.add(text, title, pid, f"{base}-{no}", (path, no))


_BOILERPLATE = ("//nav | //aside | //noscript | //template | //form[@role='search']"
                " | //header[not(ancestor::article) and not(ancestor::main)]"
                " | //footer[not(ancestor::article) and not(ancestor::main)]"
                " | //*[@role='navigation' or @role='banner' or @role='contentinfo' or @role='search']")


def without_boilerplate(html: str):
    """The page (an lxml tree) without the elements its own markup names as boilerplate: navigation,
    the site's header and footer (not an article's), asides, search forms; None when it cannot be parsed."""
    import lxml.etree
    import lxml.html

    try:
        doc = lxml.html.document_fromstring(html)
    except (lxml.etree.ParserError, ValueError):
        return None
    for el in doc.xpath(_BOILERPLATE):
        if el.getparent() is not None:
            el.drop_tree()
    return doc


def html_to_text(html: str, path) -> tuple[str, str]:
    """Main text and title of an HTML page: trafilatura on the page without its boilerplate elements
    (:func:`without_boilerplate`), so that trafilatura's own fallbacks, which take over when its main
    extraction finds too little (an article of one short paragraph), never keep a navigation line;
    then the page as it is; then all visible text."""
    import lxml.html
    import trafilatura

    tree = without_boilerplate(html)
    clean = None if tree is None else lxml.html.tostring(tree, encoding="unicode")  # trafilatura edits trees
    text, title = "", ""
    for source in ([clean] if clean is not None else []) + [html]:
        doc = trafilatura.bare_extraction(source, with_metadata=True, include_comments=False, include_tables=True)
        title = title or ((getattr(doc, "title", None) or "") if doc is not None else "")
        text = (getattr(doc, "text", None) or "") if doc is not None else ""
        if text.strip():
            break
    if not text.strip() and clean is not None:
        text = trafilatura.html2txt(clean) or ""
    if not text.strip():
        text = trafilatura.html2txt(html) or ""
    if not text.strip():
        raise InputError(path, None, "text", "no text could be extracted from this HTML file")
    return text, title.strip()


def document_files(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*") if p.is_file() and p.suffix.lower() in TEXT_SUFFIXES + HTML_SUFFIXES
                  and not any(part.startswith(".") for part in p.relative_to(root).parts))


def _add_folder(builder: CorpusBuilder, root: Path) -> None:
    files = document_files(root)
    if not files:
        raise InputError(root, None, None, "folder has no .txt, .html or .htm files")
    for f in files:
        _add_file(builder, f, f.relative_to(root).with_suffix("").as_posix())


def load_corpus(path, *, passage_words: int | None = PASSAGE_WORDS, name: str | None = None) -> Corpus:
    """Load a corpus into memory from a JSONL/JSON/TSV/CSV/Parquet file (``.gz`` for the text
    formats), a folder of such shards, a folder of .txt/.html files, or a web snapshot
    (``berds corpus web``: one question's folder, or the folder of all questions).

    ``passage_words`` (default 100) splits longer texts into passages of that
    many words; ``None`` keeps texts whole (whitespace normalised). Corpora too
    large for memory go to the on-disk store instead
    (:func:`berds_core.corpora.open_corpus`), which reads the same formats with
    the same ids.
    """
    p = Path(path)
    builder = CorpusBuilder(passage_words)
    if p.is_dir():
        snapshots = snapshot_passages(p)  # a web snapshot's layout (files.snapshot_layout), no web/ import
        for f in snapshots:
            _add_shards(builder, [make_shard(f)])
        if not snapshots:
            _add_folder_or_shards(builder, p)
    elif not p.exists():
        raise InputError(p, None, None, "file not found")
    else:
        suffix = p.suffix.lower()
        if shard_format(p) is not None:
            _add_shards(builder, [make_shard(p)])
        elif suffix == ".json":
            _add_records(builder, p, _records_json(p))
        elif suffix in TEXT_SUFFIXES + HTML_SUFFIXES:
            _add_file(builder, p, p.stem)
        else:
            raise InputError(p, None, None, f"unknown corpus format '{suffix or p.name}' (expected .jsonl, .json, "
                                            ".tsv, .csv, .parquet, .jsonl.gz/.tsv.gz/.csv.gz, .txt, .html or a folder)")
    corpus = builder.corpus(p, name or corpus_name(p))
    corpus.source = str(p.resolve())
    return corpus


def corpus_name(path) -> str:
    """The default name of a corpus: its file name without the format suffixes (``psgs_w100``)."""
    p = Path(path)
    return p.name if p.is_dir() else strip_suffixes(p.name) if shard_format(p) else p.stem


def _add_folder_or_shards(builder: CorpusBuilder, root: Path) -> None:
    """A folder of corpus shards (``*.jsonl.gz``, ``*.parquet``, ...) or of .txt/.html documents."""
    shards = shard_files(root)
    if shards:
        docs = document_files(root)
        if docs:
            raise InputError(root, None, None, f"folder mixes corpus shards ({shards[0].name}) and documents "
                                               f"({docs[0].name}); keep one kind per folder")
        _add_shards(builder, list_shards(root))
    else:
        _add_folder(builder, root)


def _add_file(builder: CorpusBuilder, f: Path, base_id: str) -> None:
    """One .txt/.html file: passages ``<base_id>-<k>``, title from the page or the file name."""
    raw = read_text(f)
    if f.suffix.lower() in HTML_SUFFIXES:
        text, title = html_to_text(raw, f)
        title = title or f.stem
    else:
        text, title = raw, f.stem
    if not text.strip():
        raise InputError(f, None, "text", "file has no text")
    builder.add(text, title, None, base_id, (f, None), always_suffix=True)


def corpus_from_passages(passages: Iterable[Passage], name: str = "corpus") -> Corpus:
    """A corpus from passages already in memory (e.g. a dataset bundle), duplicates dropped."""
    seen: set[str] = set()
    kept, dropped = [], 0
    for p in passages:
        if p.text in seen:
            dropped += 1
            continue
        seen.add(p.text)
        kept.append(p)
    return Corpus(kept, name, duplicates_dropped=dropped)
