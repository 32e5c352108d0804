"""Shard files: written once, atomically, checksummed, found again on resume.

A *shard* covers corpus rows ``start..stop-1``. Its payload file (``.npy``
vectors, ``.faiss`` index, ``.npz`` BM25 rows) is written to a temporary name,
checksummed (SHA-256) and renamed into place; only then is its ``.json``
written, so a shard without its ``.json`` is not done. ``complete.json`` marks
a folder whose every shard is done.

One layout for every sharded thing the studio writes: the passage vectors of
a corpus (``retrieval.vector_shards.VectorShards``, one process or a Ray
cluster: the same folder), and the Ray index's HNSW graphs, IVF lists and
BM25 row shards (``distributed/``).
"""
from __future__ import annotations

import hashlib
import json
import os
import time
from pathlib import Path

import numpy as np

from .build_dir import pid_alive

FORMAT = "berds-vector-shards/1"
SHARD_ROWS = 65_536


def sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 22), b""):
            h.update(block)
    return h.hexdigest()


def write_json(path: Path, info: dict) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(info), encoding="utf-8")
    os.replace(tmp, path)


def read_json(path: Path) -> dict | None:
    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


class ShardSet:
    """The shards of ``n`` rows, ``shard_rows`` each, under ``folder`` (``shard-00000.<suffix>`` + ``.json``)."""

    def __init__(self, folder, n: int, shard_rows: int, suffix: str, ident: dict):
        self.folder = Path(folder)
        self.n, self.shard_rows, self.suffix = int(n), int(shard_rows), suffix
        self.ident = dict(ident)  # what the shards must match: corpus hash, encoder or index kind

    @property
    def n_shards(self) -> int:
        return (self.n + self.shard_rows - 1) // self.shard_rows

    def bounds(self, i: int) -> tuple[int, int]:
        return i * self.shard_rows, min((i + 1) * self.shard_rows, self.n)

    def path(self, i: int) -> Path:
        return self.folder / f"shard-{i:05d}.{self.suffix}"

    def meta(self, i: int) -> Path:
        return self.folder / f"shard-{i:05d}.json"

    def ok(self, i: int) -> bool:
        """Shard ``i`` is done, for these rows and this corpus, and its checksum holds."""
        info = read_json(self.meta(i))
        a, b = self.bounds(i)
        if not info or (info.get("start"), info.get("stop")) != (a, b):
            return False
        if any(info.get(k) != v for k, v in self.ident.items()):
            return False
        return self.path(i).is_file() and sha256(self.path(i)) == info.get("sha256")

    def todo(self) -> list[int]:
        return [i for i in range(self.n_shards) if not self.ok(i)]

    def commit(self, i: int, tmp: Path, **extra) -> None:
        """Rename the finished temporary payload ``tmp`` into place, then write the shard's ``.json``."""
        a, b = self.bounds(i)
        self.meta(i).unlink(missing_ok=True)
        digest = sha256(tmp)
        os.replace(tmp, self.path(i))
        write_json(self.meta(i), {"start": a, "stop": b, "sha256": digest, **self.ident, **extra})

    def tmp_path(self, i: int) -> Path:
        self.folder.mkdir(parents=True, exist_ok=True)
        return self.folder / f".shard-{i:05d}.{os.getpid()}.{time.time_ns()}.tmp.{self.suffix}"

    @property
    def complete(self) -> bool:
        info = read_json(self.folder / "complete.json")
        return bool(info) and info.get("n") == self.n and info.get("shard_rows") == self.shard_rows and \
            all(info.get(k) == v for k, v in self.ident.items())

    def finish(self, **extra) -> None:
        write_json(self.folder / "complete.json", {"format": FORMAT, "n": self.n, "shard_rows": self.shard_rows,
                                                   **self.ident, **extra,
                                                   "created": time.strftime("%Y-%m-%dT%H:%M:%S")})

    def remove_torn_writes(self) -> int:
        """Delete temporary shard files of processes that are gone (a run killed while writing); returns
        how many. Files of live processes (another writer) are left alone."""
        if not self.folder.is_dir():
            return 0
        n = 0
        for p in self.folder.glob(".shard-*.tmp*"):
            pid = next((int(x) for x in p.name.split(".")[2:] if x.isdigit()), None)  # .shard-i.<pid>.<ns>.tmp.x
            if pid is not None and not pid_alive(pid):
                p.unlink(missing_ok=True)
                n += 1
        return n

    def specs(self) -> list[dict]:
        """What a worker needs to open each shard: path, first row and row count."""
        return [{"shard": i, "path": str(self.path(i)), "start": self.bounds(i)[0],
                 "rows": self.bounds(i)[1] - self.bounds(i)[0]} for i in range(self.n_shards)]


def save_npy(shards: ShardSet, i: int, array, **extra) -> None:
    """Write shard ``i`` of ``shards`` as a ``.npy`` (fsync'd), atomically."""
    tmp = shards.tmp_path(i)
    try:
        with open(tmp, "wb") as fh:
            np.save(fh, np.ascontiguousarray(array))
            fh.flush()
            os.fsync(fh.fileno())
        shards.commit(i, tmp, **extra)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
