"""Passage vectors on disk, in resumable, checksummed shards.

Encoding 21M passages takes hours on CPUs (or minutes per GPU); a run killed
half-way must not start again from zero. The vectors of a corpus (one encoder,
one precision, one max length) are written in shards of ``SHARD_ROWS`` rows::

    <cache>/vectors/<corpus name>-<hash>-<encoder key>/
        shard-00000.npy    float32 [rows, dim], unit length, corpus rows start..stop-1
        shard-00000.json   {start, stop, dim, sha256, corpus_hash, encoder}: written after the .npy,
                           so a shard without its .json is not done
        complete.json      written when every shard is done

A shard is encoded, written to a temporary file, checksummed (SHA-256),
renamed into place, and only then is its ``.json`` written. A resumed run
(``complete.json`` absent) re-reads every finished shard and checks its
checksum; a shard that fails (a torn write, a flipped bit) is encoded again,
the rest is kept. Once complete, the shards are opened memory-mapped
(``np.load(mmap_mode="r")``): ``get(rows)`` gathers rows (exact re-ranking),
``chunks()`` streams them (index builds, exact search). Nothing holds all
vectors in memory.

Vectors that come from elsewhere (``bench/scale.py``'s synthetic ones) are
written with :meth:`VectorShards.write` under their own encoder key and read the
same way.
"""
from __future__ import annotations

import mmap
import queue
import re
import threading
from contextlib import closing
from pathlib import Path

import numpy as np

from ..errors import InputError
from ..files.cache import cache_dir, slug
from ..files.shard_files import FORMAT, SHARD_ROWS, ShardSet, read_json, save_npy


def _safe(text: str, n: int = 60) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", str(text))[-n:] or "x"


def vectors_folder(corpus, encoder_key: str) -> Path:
    return cache_dir("vectors") / f"{_safe(corpus.name, 40)}-{corpus.hash[:20]}-{slug(encoder_key)}"


class VectorShards(ShardSet):
    """The vectors of ``n`` corpus rows under ``folder``, ``shard_rows`` rows a shard (the shard files of
    ``files.shard_files``; a complete folder keeps the shard size it was written with)."""

    def __init__(self, folder, n: int, corpus_hash: str, encoder_key: str, shard_rows: int | None = None):
        super().__init__(folder, n, SHARD_ROWS if shard_rows is None else shard_rows, "npy",
                         {"corpus_hash": corpus_hash, "encoder": encoder_key})
        self.corpus_hash = corpus_hash
        self.encoder_key = encoder_key
        self._arrays: list[np.ndarray] | None = None
        self.n_encoded = 0  # rows encoded by this object (0 when everything came from disk)
        self.shards_reencoded = 0  # shards found corrupt on resume and encoded again
        done = self._complete_info()
        if done is not None:
            self.shard_rows = int(done["shard_rows"])

    # ------------------------------------------------------------ layout
    def _npy(self, i: int) -> Path:
        return self.path(i)

    def shard_dim(self, i: int) -> int:
        """The vector size of a written shard ``i`` (read from its header)."""
        return int(np.load(self._npy(i), mmap_mode="r").shape[1])

    def _complete_info(self) -> dict | None:
        info = read_json(self.folder / "complete.json")
        if not info or info.get("format") != FORMAT or info.get("n") != self.n or \
                info.get("corpus_hash") != self.corpus_hash or not info.get("shard_rows"):
            return None
        return info

    @property
    def complete(self) -> bool:
        return self._complete_info() is not None

    def shard_ok(self, i: int, dim: int | None = None) -> bool:
        """Shard ``i`` is finished, for this corpus and encoder, and its checksum holds (reads the shard)."""
        if dim is not None and (read_json(self.meta(i)) or {}).get("dim") != dim:
            return False
        return self.ok(i)

    # ------------------------------------------------------------ writing
    def write(self, i: int, vectors: np.ndarray) -> None:
        """Write shard ``i`` (its rows' vectors): temporary file, checksum, rename, then the .json."""
        a, b = self.bounds(i)
        vectors = np.ascontiguousarray(vectors, dtype=np.float32)
        if vectors.shape[0] != b - a:
            raise ValueError(f"shard {i} holds rows {a}..{b - 1}: {b - a} vectors, got {vectors.shape[0]}")
        save_npy(self, i, vectors, dim=int(vectors.shape[1]))

    def finish(self, dim: int) -> None:
        super().finish(dim=int(dim))

    def encode(self, texts_of, encode=None, *, dim: int, progress: bool = False, on_progress=None,
               desc: str = "Encoding", stream=None):
        """Encode every shard not yet done; ``texts_of(start, stop)`` gives the rows' texts and
        ``encode(texts)`` their unit vectors, or ``stream(parts)`` (``TextEncoder.encode_stream``)
        turns ``(shard, texts)`` parts into ``(shard, vectors)`` in order, reading the next shards'
        texts while it encodes. A finished shard is written by a writer thread while the next one
        is encoded (at most one shard waits to be written); whatever stops the run, the shards
        handed to the writer are written first. Returns self (complete)."""
        if self.complete:
            return self
        if stream is None:
            if encode is None:
                raise TypeError("VectorShards.encode needs encode or stream")

            def stream(parts):
                return ((i, encode(texts)) for i, texts in parts)
        from tqdm.auto import tqdm

        self.remove_torn_writes()
        todo = []
        for i in range(self.n_shards):
            if self.meta(i).is_file():
                if self.shard_ok(i, dim):
                    continue
                self.shards_reencoded += 1  # written once, but its checksum fails now
            todo.append(i)
        done_rows = self.n - sum(self.bounds(i)[1] - self.bounds(i)[0] for i in todo)
        parts = ((i, texts_of(*self.bounds(i))) for i in todo)
        with tqdm(total=self.n, initial=done_rows, desc=desc, unit="passage", disable=not progress) as bar, \
                _ShardWriter(self) as writer, closing(stream(parts)) as encoded:
            for i, vecs in encoded:
                a, b = self.bounds(i)
                if vecs.shape != (b - a, dim):
                    raise ValueError(f"encoder gave {vecs.shape} for rows {a}..{b - 1}, expected {(b - a, dim)}")
                writer.put(i, vecs)
                self.n_encoded += b - a
                done_rows += b - a
                bar.update(b - a)
                if on_progress is not None:
                    on_progress(done_rows, self.n)
        self.finish(dim)
        return self

    # ------------------------------------------------------------ reading
    @property
    def arrays(self) -> list[np.ndarray]:
        if self._arrays is None:
            if not self.complete:
                raise InputError(self.folder, None, None, "the passage vectors are not complete (encoding was "
                                                          "interrupted): run 'berds index' again to resume it")
            self._arrays = [np.load(self._npy(i), mmap_mode="r") for i in range(self.n_shards)]
        return self._arrays

    @property
    def dim(self) -> int:
        return int(self.arrays[0].shape[1]) if self.n else 0

    def chunks(self, release: bool = False):
        """``(start, vectors)`` shard by shard (memory-mapped). ``release``: a shard's pages leave the process's
        resident set once the caller asks for the next (the page cache keeps them), so a pass over 21M vectors
        holds one shard, not all it has read (index builds; a search that passes again keeps them)."""
        for i, arr in enumerate(self.arrays):
            yield self.bounds(i)[0], arr
            if release:
                release_pages(arr)

    def get(self, rows, release: bool = False) -> np.ndarray:
        """The vectors of ``rows`` (any order), gathered shard by shard. ``release``: each shard's pages leave the
        process's resident set once its rows are copied (an index's training sample: a page fault maps its
        neighbours too, the kernel's fault-around, so 262,144 rows sampled from 21M mapped 10 GB of 21.5)."""
        rows = np.asarray(rows, dtype=np.int64)
        out = np.empty((len(rows), self.dim), dtype=np.float32)
        if not len(rows):
            return out
        shard = rows // self.shard_rows
        for s in np.unique(shard):
            sel = np.flatnonzero(shard == s)
            local = rows[sel] - s * self.shard_rows
            order = np.argsort(local)  # ascending reads from the mapped file
            out[sel[order]] = self.arrays[int(s)][local[order]]
            if release:
                release_pages(self.arrays[int(s)])
        return out

    def nbytes(self) -> int:
        return sum(self._npy(i).stat().st_size for i in range(self.n_shards) if self._npy(i).is_file())


def release_pages(arr) -> None:
    """Drop a memory-mapped array's pages from this process (``MADV_DONTNEED``; read again from the file when
    touched); nothing for an array in memory or where the platform cannot."""
    m = getattr(arr, "_mmap", None)
    if m is not None and hasattr(mmap, "MADV_DONTNEED"):
        try:
            m.madvise(mmap.MADV_DONTNEED)
        except (OSError, ValueError):
            pass


class _ShardWriter:
    """One thread writing finished shards (``VectorShards.write``: .npy, fsync, checksum, .json) while the
    encoder goes on; ``put`` waits while a shard is already waiting. Leaving the ``with`` block writes
    every shard handed over, then raises the first write error (unless another error is on its way)."""

    def __init__(self, shards: VectorShards):
        self.shards = shards
        self.q: queue.Queue = queue.Queue(maxsize=1)
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._run, name="berds-shard-writer", daemon=True)

    def _run(self) -> None:
        while True:
            item = self.q.get()
            if item is None:
                return
            if self.error is None:
                try:
                    self.shards.write(*item)
                except BaseException as e:  # noqa: BLE001 - raised in the encoding thread
                    self.error = e

    def put(self, i: int, vectors) -> None:
        if self.error is not None:
            raise self.error
        self.q.put((i, vectors))

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, kind, value, tb):
        self.q.put(None)
        self.thread.join()
        if self.error is not None and kind is None:
            raise self.error
        return False


class ArrayVectors:
    """Vectors already in memory, with the reading interface of :class:`VectorShards`."""

    def __init__(self, emb: np.ndarray):
        self.emb = np.ascontiguousarray(emb, dtype=np.float32)
        self.n = len(self.emb)
        self.folder = None
        self.n_encoded = 0
        self.shards_reencoded = 0

    @property
    def dim(self) -> int:
        return int(self.emb.shape[1])

    def chunks(self, size: int = SHARD_ROWS, release: bool = False):  # in memory: nothing to release
        for a in range(0, self.n, size):
            yield a, self.emb[a:a + size]

    def get(self, rows, release: bool = False) -> np.ndarray:  # in memory: nothing to release
        return self.emb[np.asarray(rows, dtype=np.int64)]

    def nbytes(self) -> int:
        return int(self.emb.nbytes)
