"""The on-disk corpus: passages streamed once into SQLite, read back by row or by id.

A corpus too large for memory (the DPR Wikipedia's 21M passages,
``psgs_w100.tsv``) is *ingested*: its shards are read batch by batch
(:mod:`berds_core.files.corpus_readers`), split into passages exactly as the
in-memory loader splits them (same ids, same de-duplication of repeated texts,
same error for a repeated id), and appended to ``passages.sqlite`` in a store
folder of the cache::

    <cache>/corpora/<source slug>-<fingerprint>/
        passages.sqlite   passages(row, id, title, text, shard, line); unique index on id
        manifest.json     the corpus manifest (below); written last: a store without it is not complete

The **manifest** names the corpus: ``name`` (the file or folder name without
format suffixes), ``hash`` (SHA-1 over the ordered ``(id, title, text)``
triples, computed while streaming: the same value ``Corpus.hash`` gives the
same file in memory), ``passages`` (count), ``bytes`` (source size on disk),
``records``, ``duplicates_dropped``, ``passage_words``, the shards read and the
seconds it took. Every index over the corpus is keyed by its name and hash,
and every run line written from it carries ``corpus: {name, hash}``.

The store is found again by the source's **fingerprint** (each shard's path,
size, modification time and a hash of its first and last 64 KiB, plus the
passage length): a changed file makes a new store, with a new content hash, so
an index built on the old content is never used with the new one; the old store
is removed once the new one is complete. A malformed row stops the ingest with
one ``InputError`` line (file, line, field) and nothing is left in the cache;
so does Ctrl-C (:mod:`berds_core.files.build_dir`).

:class:`DiskCorpus` reads the store as a corpus: ``len``, ``corpus[row]``
(one SQLite look-up, the file memory-mapped), ``get_many(rows)``,
``index_of(id)``, ``rows_of(ids)``, ``iter_batches()`` (streaming, for index
builds) and lazy ``ids`` / ``texts`` / ``titles`` columns; nothing loads the
corpus text whole.
"""
from __future__ import annotations

import hashlib
import json
import shutil
import sqlite3
import sys
import threading
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator, Sequence

from ..errors import InputError
from ..files.build_dir import building
from ..files.cache import cache_dir, slug
from ..files.corpus_readers import RecordBatch, Shard, list_shards, read_shard, shard_files, shard_format
from ..files.snapshot_layout import snapshot_passages
from ..records import Passage
from .hashset import HashRuns
from .memory import corpus_name, document_files, passages_of

STORE_FORMAT = "berds-corpus-store/1"
MANIFEST = "manifest.json"
DB = "passages.sqlite"
SAMPLE = 64 * 1024
# storage="auto": sources of at least this many bytes go to the on-disk store (about 100k
# 100-word passages); smaller ones load into memory, where BM25 (bm25s) is faster (bench/scale.py).
DISK_MIN_BYTES = 50 * 1024 * 1024
STORAGES = ("auto", "memory", "disk")


# ---------------------------------------------------------------- fingerprint


def _sample_hash(path: Path, size: int) -> str:
    h = hashlib.sha1()
    with open(path, "rb") as fh:
        h.update(fh.read(SAMPLE))
        if size > 2 * SAMPLE:
            fh.seek(size - SAMPLE)
            h.update(fh.read(SAMPLE))
    return h.hexdigest()[:16]


def fingerprint(shards: Sequence[Shard], passage_words: int | None) -> dict:
    """What identifies a source cheaply (no full read): shards' paths, sizes, mtimes, head+tail hashes."""
    return {"format": STORE_FORMAT, "passage_words": passage_words,
            "shards": [[str(s.path.resolve()), s.size, s.mtime_ns, _sample_hash(s.path, s.size)] for s in shards]}


def _fingerprint_key(fp: dict) -> str:
    return hashlib.sha1(json.dumps(fp, sort_keys=True).encode()).hexdigest()[:16]


def store_folder(path, passage_words: int | None, shards: Sequence[Shard] | None = None) -> tuple[Path, dict]:
    """The store folder of a source (whether built or not) and its fingerprint."""
    shards = list(shards) if shards is not None else list_shards(path)
    fp = fingerprint(shards, passage_words)
    return cache_dir("corpora") / f"{slug(str(Path(path).resolve()))}-{_fingerprint_key(fp)}", fp


# ---------------------------------------------------------------- reading


class _Column:
    """A lazy, read-only column of a disk corpus (``corpus.texts[row]``); iterating streams it."""

    def __init__(self, corpus: "DiskCorpus", col: str):
        self._corpus, self._col = corpus, col

    def __len__(self) -> int:
        return len(self._corpus)

    def __getitem__(self, i):
        if isinstance(i, slice):
            rows = range(*i.indices(len(self)))
            return [getattr(p, self._col) for p in self._corpus.get_many(list(rows))]
        return getattr(self._corpus[i], self._col)

    def __iter__(self):
        for batch in self._corpus.iter_batches():
            yield from getattr(batch, self._col + "s")


class PassageBatch:
    """Consecutive passages ``start .. start+len-1`` of a disk corpus."""

    def __init__(self, start: int, ids, titles, texts):
        self.start, self.ids, self.titles, self.texts = start, ids, titles, texts

    def __len__(self) -> int:
        return len(self.ids)


class DiskCorpus:
    """A corpus in an on-disk store; the same reading interface as :class:`berds_core.corpora.memory.Corpus`."""

    def __init__(self, folder):
        self.folder = Path(folder)
        try:
            self.manifest = json.loads((self.folder / MANIFEST).read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise InputError(self.folder, None, None, "not a complete corpus store (no manifest.json)") from None
        except (OSError, ValueError) as e:
            raise InputError(self.folder / MANIFEST, None, None, f"unreadable corpus manifest ({e})") from None
        if self.manifest.get("format") != STORE_FORMAT:
            raise InputError(self.folder / MANIFEST, None, "format",
                             f"expected {STORE_FORMAT}, got {self.manifest.get('format')!r}")
        self.name = self.manifest["name"]
        self.hash = self.manifest["hash"]
        self.source = self.manifest.get("source")
        self.duplicates_dropped = int(self.manifest.get("duplicates_dropped", 0))
        self._n = int(self.manifest["passages"])
        self._local = threading.local()
        self.ids = _Column(self, "id")
        self.texts = _Column(self, "text")
        self.titles = _Column(self, "title")

    def __repr__(self) -> str:
        return f"<DiskCorpus {self.name} {self._n:,} passages {self.hash[:12]}>"

    @property
    def _db(self) -> sqlite3.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is None:  # one read-only connection per thread (Streamlit serves pages from several)
            uri = f"file:{(self.folder / DB).as_posix()}?mode=ro&immutable=1"
            conn = sqlite3.connect(uri, uri=True, check_same_thread=False)
            conn.execute("PRAGMA mmap_size=1099511627776")  # read through the page cache, not copies
            self._local.conn = conn
        return conn

    def __len__(self) -> int:
        return self._n

    def __getitem__(self, row: int) -> Passage:
        row = int(row)
        if row < 0:
            row += self._n
        if not 0 <= row < self._n:
            raise IndexError(row)
        got = self._db.execute("SELECT id, title, text FROM passages WHERE row=?", (row,)).fetchone()
        return Passage(*got)

    def _where_in(self, cols: str, key: str, values: list):
        """Rows ``(key, *cols)`` whose ``key`` is one of ``values`` (looked up 500 at a time)."""
        uniq = list(dict.fromkeys(values))
        for a in range(0, len(uniq), 500):
            part = uniq[a:a + 500]
            yield from self._db.execute(f"SELECT {key}, {cols} FROM passages WHERE {key} IN "
                                        f"({','.join('?' * len(part))})", part)

    def get_many(self, rows) -> list[Passage]:
        """Passages of ``rows`` (in that order; repeats allowed)."""
        rows = [int(r) for r in rows]
        found = {r: Passage(pid, title, text) for r, pid, title, text in self._where_in("id, title, text", "row", rows)}
        missing = [r for r in rows if r not in found]
        if missing:
            raise IndexError(missing[0])
        return [found[r] for r in rows]

    def __iter__(self) -> Iterator[Passage]:
        for b in self.iter_batches():
            for pid, title, text in zip(b.ids, b.titles, b.texts):
                yield Passage(pid, title, text)

    def iter_batches(self, size: int = 10_000, start: int = 0, stop: int | None = None) -> Iterator[PassageBatch]:
        """Rows ``start .. stop-1`` in order, ``size`` at a time (a fresh connection: safe beside searches)."""
        stop = self._n if stop is None else min(int(stop), self._n)
        conn = sqlite3.connect(f"file:{(self.folder / DB).as_posix()}?mode=ro&immutable=1", uri=True)
        try:
            a = int(start)
            while a < stop:
                b = min(a + size, stop)
                rows = conn.execute("SELECT id, title, text FROM passages WHERE row >= ? AND row < ? ORDER BY row",
                                    (a, b)).fetchall()
                ids, titles, texts = (list(c) for c in zip(*rows)) if rows else ([], [], [])
                yield PassageBatch(a, ids, titles, texts)
                a = b
        finally:
            conn.close()

    def index_of(self, passage_id: str) -> int:
        got = self._db.execute("SELECT row FROM passages WHERE id=?", (str(passage_id),)).fetchone()
        if got is None:
            raise KeyError(passage_id)
        return int(got[0])

    def rows_of(self, ids: Sequence[str]) -> list[int | None]:
        """Rows of passage ids (None where absent), in order."""
        ids = [str(i) for i in ids]
        found = dict(self._where_in("row", "id", ids))
        return [found.get(i) for i in ids]

    def passage_dict(self, row: int) -> dict:
        p = self[row]
        return {"id": p.id, "title": p.title, "text": p.text}

    def source_line(self, row: int) -> tuple[str, int]:
        """(file, line) a passage was read from."""
        shard, line = self._db.execute("SELECT shard, line FROM passages WHERE row=?", (int(row),)).fetchone()
        return self.manifest["shards"][shard]["path"], int(line)


def corpus_label(corpus) -> dict:
    """What names a corpus in an index: ``{name, hash, passages, source}`` (source: the file it was read from)."""
    source = getattr(corpus, "source", None) or (getattr(corpus, "manifest", None) or {}).get("source")
    return {"name": getattr(corpus, "name", "corpus"), "hash": corpus.hash, "passages": len(corpus), "source": source}


# ---------------------------------------------------------------- ingesting


def _normalised(text: str) -> bool:
    """True when ``" ".join(text.split()) == text``, checked in C: every whitespace character but
    the space is non-printable, so a printable text with no double, leading or trailing space is
    already normalised (False may also mean "not sure": the caller then splits)."""
    return text.isprintable() and "  " not in text and text[:1] != " " and text[-1:] != " "


class _Ingest:
    """Streams records into the SQLite store, de-duplicating texts and checking ids in bounded memory."""

    def __init__(self, db: sqlite3.Connection, words: int | None, shards: list[Shard]):
        self.db, self.words, self.shards = db, words, shards
        self.texts, self.ids = HashRuns(), HashRuns()
        self.h = hashlib.sha1()
        self.n = 0
        self.records = 0
        self.dropped = 0

    def _row(self, row: int, cols: str):
        return self.db.execute(f"SELECT {cols} FROM passages WHERE row=?", (row,)).fetchone()

    def add_batch(self, shard_no: int, batch) -> list[tuple]:
        path, base, words = batch.shard.path, batch.shard.base_id, self.words
        cand = []  # (id, title, text, line)
        plain = sys.maxsize if words is None else words  # fewer spaces than this: one passage
        for no, pid, title, text in zip(batch.lines, batch.ids, batch.titles, batch.texts):
            if pid is None:
                pid = f"{base}-{no}"
            if text.count(" ") < plain and _normalised(text):
                cand.append((pid, title, text, no))  # one passage, already normalised: no split needed
            else:
                for p, chunk in passages_of(text, words, pid, (path, no)):
                    cand.append((p, title, chunk, no))
        self.records += len(batch)
        mask = 0xFFFFFFFFFFFFFFFF  # str hashes are cached on the strings; only used inside this process
        th = [hash(c[2]) & mask for c in cand]
        ih = [hash(c[0]) & mask for c in cand]
        old_t, old_i = self.texts.candidates(th), self.ids.candidates(ih)
        local_t: dict[int, list[int]] = {}
        local_i: dict[int, list[int]] = {}
        kept = []
        for pos, (pid, title, text, no) in enumerate(cand):
            t, i = th[pos], ih[pos]
            if pos in old_t or t in local_t:
                if any(self._row(r, "text")[0] == text for r in old_t.get(pos, ())) or \
                        any(cand[q][2] == text for q in local_t.get(t, ())):
                    self.dropped += 1
                    continue
            if pos in old_i or i in local_i:
                for r in old_i.get(pos, ()):
                    other, s_no, line = self._row(r, "id, shard, line")
                    if other == pid:
                        self._dup_id(pid, path, no, self.shards[s_no].path, line)
                for q in local_i.get(i, ()):
                    if cand[q][0] == pid:
                        self._dup_id(pid, path, no, path, cand[q][3])
            local_t.setdefault(t, []).append(pos)
            local_i.setdefault(i, []).append(pos)
            kept.append(pos)
        n0 = self.n
        out = [(n0 + j, *cand[pos][:3], shard_no, cand[pos][3]) for j, pos in enumerate(kept)]
        self.db.executemany("INSERT INTO passages VALUES (?, ?, ?, ?, ?, ?)", out)
        rows = range(n0, n0 + len(kept))
        self.texts.add([th[p] for p in kept], rows)
        self.ids.add([ih[p] for p in kept], rows)
        update = self.h.update
        for _, pid, title, text, _, _ in out:
            for part in (pid, title, text):  # as corpus.hash_passage: length-prefixed UTF-8
                b = part.encode("utf-8")
                update(len(b).to_bytes(8, "little") + b)
        self.n += len(kept)
        return out

    @staticmethod
    def _dup_id(pid, path, line, first_path, first_line):
        where = f"line {first_line}" if Path(first_path) == Path(path) else f"{first_path}:{first_line}"
        raise InputError(path, line, "id", f"duplicate passage id '{pid}' (first at {where})")


def read_in_order(shards: Sequence[Shard]) -> Iterator[tuple[int, RecordBatch]]:
    """``(shard number, batch)`` of every shard, read one after the other in this process."""
    for s_no, shard in enumerate(shards):
        for batch in read_shard(shard):
            yield s_no, batch


@contextmanager
def _cleared_on_error(bar):
    """Close ``bar``; when the block raised, erase it instead of leaving its last state on the screen."""
    try:
        yield bar
    except BaseException:
        bar.leave = False
        bar.close()
        raise
    bar.close()


def ingest(path, dest=None, *, passage_words: int | None = 100, name: str | None = None, progress: bool = False,
           on_batch=None, reader=None) -> "DiskCorpus":
    """Stream a corpus (a shard file or a folder of shards) into an on-disk store; return it.

    ``dest``: the store folder (default: the cache's, by fingerprint; an existing
    complete store there is opened, not rebuilt). ``on_batch(rows_and_passages)``
    sees every batch of kept passages as it is stored (``[(row, id, title, text,
    shard, line), ...]``): an index can be built in the same pass.

    ``reader(shards)``: where the record batches come from, ``(shard number, batch)``
    in shard order and, within a shard, in file order (default :func:`read_in_order`;
    ``berds_core.distributed.ingest.shard_batches`` reads the shards in parallel on
    a Ray cluster). It is called only when the store is built, and whatever reads
    the batches, the passages, the hash and every error are this function's.
    """
    shards = list_shards(path)
    if dest is None:
        dest, fp = store_folder(path, passage_words, shards)
    else:
        dest, fp = Path(dest), fingerprint(shards, passage_words)
    if (dest / MANIFEST).is_file():
        return DiskCorpus(dest)
    total = sum(s.size for s in shards)
    t0 = time.perf_counter()
    from tqdm.auto import tqdm

    with building(dest, "corpus store") as tmp:
        db = sqlite3.connect(str(tmp / DB))
        try:
            for pragma in ("journal_mode=OFF", "synchronous=OFF", "locking_mode=EXCLUSIVE", "cache_size=-65536",
                           "temp_store=FILE"):
                db.execute(f"PRAGMA {pragma}")
            db.execute("CREATE TABLE passages (row INTEGER PRIMARY KEY, id TEXT NOT NULL, title TEXT NOT NULL, "
                       "text TEXT NOT NULL, shard INTEGER NOT NULL, line INTEGER NOT NULL)")
            ing = _Ingest(db, passage_words, shards)
            done_before, current = 0, 0
            # drawn after half a second (a file that fails at once shows no bar) and cleared on an error, so
            # the error is the one line left
            bar = tqdm(total=total, unit="B", unit_scale=True, desc=f"Reading {Path(path).name}",
                       disable=not progress, file=sys.stderr, delay=0.5)
            with _cleared_on_error(bar):
                for s_no, batch in (reader or read_in_order)(shards):
                    if s_no != current:  # the shards before this one are done
                        if s_no < current:
                            raise RuntimeError(f"corpus reader went back from shard {current} to {s_no}")
                        done_before += sum(s.size for s in shards[current:s_no])
                        current = s_no
                        db.commit()
                    out = ing.add_batch(s_no, batch)
                    if on_batch is not None and out:
                        on_batch(out)
                    bar.update(done_before + batch.bytes_done - bar.n)
                db.commit()
            if ing.n == 0:
                raise InputError(path, None, None, "corpus is empty (no passages)")
            if progress:
                sys.stderr.write(f"Indexing {ing.n:,} passage ids\n")
            db.execute("CREATE UNIQUE INDEX passages_id ON passages(id)")
            db.commit()
        finally:
            db.close()
        manifest = {"format": STORE_FORMAT, "name": name or corpus_name(path), "source": str(Path(path).resolve()),
                    "hash": ing.h.hexdigest(), "passages": ing.n, "records": ing.records,
                    "duplicates_dropped": ing.dropped, "bytes": total, "passage_words": passage_words,
                    "shards": [s.to_json() for s in shards], "fingerprint": fp,
                    "seconds": round(time.perf_counter() - t0, 3), "created": time.strftime("%Y-%m-%dT%H:%M:%S")}
        (tmp / MANIFEST).write_text(json.dumps(manifest, indent=1), encoding="utf-8")
    _remove_older_stores(dest)
    return DiskCorpus(dest)


def _remove_older_stores(dest: Path) -> None:
    """Stores of the same source with another fingerprint (the file changed since): superseded."""
    prefix = dest.name.rsplit("-", 1)[0] + "-"
    for p in dest.parent.iterdir():
        if p != dest and p.is_dir() and p.name.startswith(prefix) and not p.name.startswith(".") \
                and len(p.name) == len(dest.name):
            shutil.rmtree(p, ignore_errors=True)


def is_store(path) -> bool:
    p = Path(path)
    return p.is_dir() and (p / MANIFEST).is_file() and (p / DB).is_file()


def source_bytes(path) -> int:
    p = Path(path)
    if p.is_dir():
        return sum(f.stat().st_size for f in shard_files(p))
    return p.stat().st_size if p.exists() else 0


def streamable(path) -> bool:
    """True when the on-disk store can read this source: a shard file or a folder of shards
    (not a web snapshot, a JSON array or a folder of .txt/.html documents)."""
    p = Path(path)
    if p.is_dir():
        return not snapshot_passages(p) and bool(shard_files(p)) and not document_files(p)
    return shard_format(p) is not None


def is_disk_corpus(corpus) -> bool:
    return isinstance(corpus, DiskCorpus)


__all__ = ["DiskCorpus", "PassageBatch", "corpus_label", "fingerprint", "ingest", "is_disk_corpus", "is_store",
           "read_in_order", "source_bytes", "store_folder", "streamable", "DISK_MIN_BYTES", "STORAGES"]
