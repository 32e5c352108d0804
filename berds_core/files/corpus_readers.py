"""Streaming corpus readers: a corpus is a list of shards, each read as an iterator of record batches.

A *shard* is one file: JSON Lines (``.jsonl``, ``.ndjson``), a table with a
header line (``.tsv``, ``.csv``; DPR's ``psgs_w100.tsv`` is ``id, text,
title``), each optionally gzip-compressed (``.gz``), or Parquet (``.parquet``).
A corpus path is one shard file or a folder of them (``corpus/*.jsonl.gz``,
``*.parquet``; sub-folders included, hidden names skipped, sorted by relative
path so the order is stable).

``read_shard(shard)`` yields :class:`RecordBatch` es of at most ``batch_rows``
records, each record checked (``text`` a non-blank string, ``id`` a string or
an integer or absent, ``title`` a string or absent); a bad record is an
``InputError`` naming the file, the line (the data row for Parquet, 1-based)
and the field. Nothing is read whole: lines are decoded one at a time, Parquet
row groups batch by batch. The readers know nothing about passages, ids or
storage; the in-memory loader (:func:`berds_core.corpora.memory.load_corpus`) and the
on-disk store (:mod:`berds_core.corpora.disk`) consume the same batches, and
so can a cluster (issue 27: one Ray Data task per shard, ``list_shards`` then
``read_shard``).
"""
from __future__ import annotations

import csv
import gzip
import json
import sys
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

from ..errors import InputError
from ..files.csvio import explain

BATCH_ROWS = 10_000
FORMATS = {".jsonl": "jsonl", ".ndjson": "jsonl", ".tsv": "tsv", ".csv": "csv", ".parquet": "parquet"}
TABLE_DELIMITERS = {"tsv": "\t", "csv": ","}
COLUMNS = ("id", "title", "text")


@dataclass(frozen=True)
class Shard:
    """One corpus file: where it is, how to read it, and the prefix of the ids derived from its lines."""

    path: Path
    format: str  # jsonl | tsv | csv | parquet
    gzip: bool = False
    base_id: str = ""  # derived ids are "<base_id>-<line>"
    size: int = 0  # bytes on disk
    mtime_ns: int = 0

    def to_json(self) -> dict:
        return {"path": str(self.path), "format": self.format, "gzip": self.gzip, "base_id": self.base_id,
                "bytes": self.size, "mtime_ns": self.mtime_ns}


@dataclass
class RecordBatch:
    """Checked records of one shard: parallel lists, ``lines`` 1-based (Parquet: data rows)."""

    shard: Shard
    lines: list[int] = field(default_factory=list)
    ids: list[str | None] = field(default_factory=list)
    titles: list[str] = field(default_factory=list)
    texts: list[str] = field(default_factory=list)
    bytes_done: int = 0  # bytes of the shard's file read so far (compressed bytes for .gz)

    def __len__(self) -> int:
        return len(self.texts)

    def to_dict(self) -> dict[str, list]:
        """Columns ``line, id, title, text`` (what a dataframe or a Ray Data batch takes)."""
        return {"line": self.lines, "id": self.ids, "title": self.titles, "text": self.texts}

    def append(self, line: int, pid, title, text) -> None:
        self.lines.append(line)
        self.ids.append(pid)
        self.titles.append(title)
        self.texts.append(text)


def shard_format(path) -> tuple[str, bool] | None:
    """``(format, gzip)`` of a shard file name, or None when it is not one."""
    name = Path(path).name.lower()
    gz = name.endswith(".gz")
    if gz:
        name = name[:-3]
    suffix = Path(name).suffix
    fmt = FORMATS.get(suffix)
    if fmt is None or (gz and fmt == "parquet"):
        return None
    return fmt, gz


def strip_suffixes(rel: str) -> str:
    lower = rel.lower()
    if lower.endswith(".gz"):
        rel, lower = rel[:-3], lower[:-3]
    for suffix in FORMATS:
        if lower.endswith(suffix):
            return rel[: -len(suffix)]
    return rel


def make_shard(path, base_id: str | None = None) -> Shard:
    p = Path(path)
    kind = shard_format(p)
    if kind is None:
        raise InputError(p, None, None, "not a corpus shard (expected .jsonl, .ndjson, .tsv, .csv, "
                                        "each optionally .gz, or .parquet)")
    try:
        st = p.stat()
    except FileNotFoundError:
        raise InputError(p, None, None, "file not found") from None
    if p.is_dir():
        raise InputError(p, None, None, "is a directory, expected a file")
    return Shard(p, kind[0], kind[1], base_id if base_id is not None else strip_suffixes(p.name),
                 st.st_size, st.st_mtime_ns)


def shard_files(folder) -> list[Path]:
    """The shard files under ``folder`` (recursive, hidden names skipped), sorted by relative path."""
    root = Path(folder)
    return sorted((p for p in root.rglob("*") if p.is_file() and shard_format(p) is not None
                   and not any(part.startswith(".") for part in p.relative_to(root).parts)),
                  key=lambda p: p.relative_to(root).as_posix())


def list_shards(path) -> list[Shard]:
    """The shards of a corpus path: the file itself, or every shard file of a folder.

    Ids derived from lines are ``<file stem>-<line>`` for a single file and
    ``<relative path without suffixes>-<line>`` for a folder's shards.
    """
    p = Path(path)
    if not p.exists():
        raise InputError(p, None, None, "file not found")
    if p.is_dir():
        files = shard_files(p)
        if not files:
            raise InputError(p, None, None, "folder has no corpus shards (.jsonl, .tsv, .csv, .gz, .parquet)")
        return [make_shard(f, strip_suffixes(f.relative_to(p).as_posix())) for f in files]
    return [make_shard(p)]


# ---------------------------------------------------------------- value checks


def as_id(val, path, line) -> str | None:
    if val is None or val == "":
        return None
    if isinstance(val, bool) or not isinstance(val, (str, int)):
        raise InputError(path, line, "id", f"expected a string or integer, got {type(val).__name__}")
    return str(val)


def as_title(val, path, line) -> str:
    if val is None:
        return ""
    if not isinstance(val, str):
        raise InputError(path, line, "title", f"expected a string, got {type(val).__name__}")
    return val.strip()


def as_text(val, path, line, present: bool = True) -> str:
    if not present or val is None:
        raise InputError(path, line, "text", "missing")
    if not isinstance(val, str):
        raise InputError(path, line, "text", f"expected a string, got {type(val).__name__}")
    if not val.strip():
        raise InputError(path, line, "text", "must not be empty")
    return val


# ---------------------------------------------------------------- raw lines


class _Lines:
    """Numbered, decoded lines of a (gzipped) text file; ``bytes_done`` follows the file on disk."""

    def __init__(self, shard: Shard):
        self.shard = shard
        self.line = 0
        self.offset = 0  # decompressed bytes before the current line

    def __iter__(self) -> Iterator[str]:
        path = self.shard.path
        try:
            raw = open(path, "rb")
        except FileNotFoundError:
            raise InputError(path, None, None, "file not found") from None
        except IsADirectoryError:
            raise InputError(path, None, None, "is a directory, expected a file") from None
        self._raw = raw
        with raw:
            fh = gzip.GzipFile(fileobj=raw, mode="rb") if self.shard.gzip else raw
            it = iter(fh)
            while True:
                try:
                    b = next(it)
                except StopIteration:
                    return
                except (OSError, EOFError, zlib.error) as e:  # BadGzipFile is an OSError
                    raise InputError(path, self.line + 1, None, f"corrupt gzip data ({e})") from None
                self.line += 1
                try:
                    s = b.decode("utf-8-sig" if self.line == 1 else "utf-8")
                except UnicodeDecodeError as e:
                    raise InputError(path, self.line, None,
                                     f"not valid UTF-8 (byte {self.offset + e.start})") from None
                self.offset += len(b)
                yield s

    @property
    def bytes_done(self) -> int:
        try:
            return self._raw.tell()
        except (AttributeError, ValueError, OSError):
            return self.shard.size


def _read_jsonl(shard: Shard, batch_rows: int) -> Iterator[RecordBatch]:
    path = shard.path
    lines = _Lines(shard)
    batch = RecordBatch(shard)
    loads = json.loads
    for s in lines:
        if not s.strip():
            continue
        no = lines.line
        try:
            obj = loads(s)
        except json.JSONDecodeError as e:
            raise InputError(path, no, None, f"malformed JSON ({e.msg}, column {e.colno})") from None
        if not isinstance(obj, dict):
            raise InputError(path, no, None, "expected a JSON object")
        batch.append(no, as_id(obj.get("id"), path, no), as_title(obj.get("title"), path, no),
                     as_text(obj.get("text"), path, no, "text" in obj))
        if len(batch) >= batch_rows:
            batch.bytes_done = lines.bytes_done
            yield batch
            batch = RecordBatch(shard)
    batch.bytes_done = shard.size
    if len(batch):
        yield batch


def _read_table(shard: Shard, batch_rows: int) -> Iterator[RecordBatch]:
    path = shard.path
    csv.field_size_limit(sys.maxsize)
    lines = _Lines(shard)
    delimiter = TABLE_DELIMITERS[shard.format]
    # strict quoting (files/csvio.py): an unterminated quote is an error at the line it opens, not merged lines
    reader = csv.reader(lines, delimiter=delimiter, quotechar='"', doublequote=True, strict=True)
    try:
        header = next(reader)
    except StopIteration:
        raise InputError(path, None, None, "corpus is empty (no header line)") from None
    except csv.Error as e:
        raise InputError(path, 1, None, explain(e, 1, reader.line_num, delimiter)) from None
    header = [h.strip().lower() for h in header]
    if "text" not in header:
        raise InputError(path, 1, "text", f"header must name a 'text' column (its first line has {len(header)} "
                                          "cells, none named 'text'; e.g. id, title, text)")  # cells never quoted
    id_i = header.index("id") if "id" in header else None
    title_i = header.index("title") if "title" in header else None
    text_i = header.index("text")
    width = len(header)
    batch = RecordBatch(shard)
    append_line, append_id, append_title, append_text = (batch.lines.append, batch.ids.append,
                                                         batch.titles.append, batch.texts.append)
    start = reader.line_num + 1  # where the next record begins (for errors)
    try:
        for row in reader:
            no = reader.line_num  # the physical line where the row ends
            start = no + 1
            if len(row) != width or not row[text_i].strip():
                if not row or all(not c.strip() for c in row):
                    continue  # a blank line
                if len(row) != width:
                    raise InputError(path, no, None, f"expected {width} columns, got {len(row)}")
                as_text(row[text_i], path, no)  # raises: a blank text
            append_line(no)
            append_id(row[id_i] or None if id_i is not None else None)
            append_title(row[title_i].strip() if title_i is not None else "")
            append_text(row[text_i])
            if len(batch.texts) >= batch_rows:
                batch.bytes_done = lines.bytes_done
                yield batch
                batch = RecordBatch(shard)
                append_line, append_id, append_title, append_text = (batch.lines.append, batch.ids.append,
                                                                     batch.titles.append, batch.texts.append)
    except csv.Error as e:
        raise InputError(path, start, None, explain(e, start, reader.line_num, delimiter)) from None
    batch.bytes_done = shard.size
    if len(batch):
        yield batch


def _read_parquet(shard: Shard, batch_rows: int) -> Iterator[RecordBatch]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = shard.path
    try:
        pf = pq.ParquetFile(str(path))
    except (pa.ArrowException, OSError) as e:
        raise InputError(path, None, None, f"not a readable Parquet file ({str(e).splitlines()[0]})") from None
    names = {n.lower(): n for n in pf.schema_arrow.names}
    if "text" not in names:
        raise InputError(path, None, "text", f"no 'text' column (columns: {', '.join(pf.schema_arrow.names)})")
    cols = [(c, names[c]) for c in COLUMNS if c in names]
    for c, real in cols:
        typ = pf.schema_arrow.field(real).type
        ok = (pa.types.is_string(typ) or pa.types.is_large_string(typ) or
              (c == "id" and pa.types.is_integer(typ)) or pa.types.is_null(typ))
        if not ok:
            raise InputError(path, None, c, f"expected a string column{' (or integers)' if c == 'id' else ''}, "
                                            f"got {typ}")
    row = 0
    total = max(pf.metadata.num_rows, 1)
    try:
        for rb in pf.iter_batches(batch_size=batch_rows, columns=[real for _, real in cols]):
            data = {c: rb.column(i).to_pylist() for i, (c, _) in enumerate(cols)}
            n = rb.num_rows
            batch = RecordBatch(shard)
            ids, titles, texts = data.get("id", [None] * n), data.get("title", [None] * n), data["text"]
            for j in range(n):
                no = row + j + 1
                batch.append(no, as_id(ids[j], path, no), as_title(titles[j], path, no), as_text(texts[j], path, no))
            row += n
            batch.bytes_done = int(shard.size * min(row / total, 1.0))
            yield batch
    except (pa.ArrowException, OSError) as e:
        raise InputError(path, row + 1, None, f"unreadable Parquet data ({str(e).splitlines()[0]})") from None


_READERS = {"jsonl": _read_jsonl, "tsv": _read_table, "csv": _read_table, "parquet": _read_parquet}


def read_shard(shard: Shard, batch_rows: int = BATCH_ROWS) -> Iterator[RecordBatch]:
    """The checked records of one shard, ``batch_rows`` at a time, in file order."""
    if batch_rows < 1:
        raise ValueError("batch_rows must be at least 1")
    return _READERS[shard.format](shard, batch_rows)


def read_corpus(path, batch_rows: int = BATCH_ROWS) -> Iterator[RecordBatch]:
    """Every shard of a corpus path, in order (see :func:`list_shards`)."""
    for shard in list_shards(path):
        yield from read_shard(shard, batch_rows)
