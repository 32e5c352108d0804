"""One key-value cache on SQLite: what the judge predictions, the generated texts, the
embeddings and the web search results share (``judges.base.PredictionCache``,
``generators.base.GenerationCache``, ``embeddings.text_encoders.EmbeddingStore``,
``web.search.SearchCache``).

A cache is one table ``(namespace, key..., value)`` whose primary key is the namespace
and the key columns: the namespace is the judge / generator / model name, the key one or
more sha1 columns, the value one column. Subclasses name the table and its columns (the
names of the files written before this base existed, so those files load as they are) and
may encode / decode the value (``EmbeddingStore``: float32 bytes).

Contract:

- one connection per object, ``check_same_thread=False``, every use under one lock, so
  threads of one process share it; WAL journal, so other processes read while one writes
  (SQLite's busy ``timeout`` waits out another process's write);
- ``get_many(ns, keys)`` returns ``{key: value}`` for the keys that are there, asked in
  chunks that stay under SQLite's parameter limit; ``put_many(ns, items)`` writes and
  commits at once (``INSERT OR REPLACE``), so an interrupted batch keeps what was written;
- ``shared(path)``: the process-wide object of a class for a path (one connection per
  cache directory, as each cache had before).
"""
from __future__ import annotations

import sqlite3
import threading
from pathlib import Path
from typing import Any, ClassVar, Hashable, Iterable, Sequence

_SHARED: dict[tuple[type, str], "KeyValueCache"] = {}
_SHARED_LOCK = threading.Lock()


class KeyValueCache:
    """``(namespace, key) -> value`` in one SQLite table; see the module docstring."""

    table: ClassVar[str]
    namespace: ClassVar[str]  # column of the namespace
    keys: ClassVar[tuple[str, ...]]  # key columns (a key is a str, or a tuple of str for several columns)
    value: ClassVar[str]  # column of the value
    value_type: ClassVar[str] = "REAL"
    timeout: ClassVar[float] = 30.0  # seconds to wait for another process's write
    synchronous: ClassVar[str | None] = None  # PRAGMA synchronous (None: SQLite's default)
    chunk: ClassVar[int] = 500  # keys per SELECT

    def __init__(self, path: Path | str):
        self.path = Path(path)
        self._lock = threading.Lock()
        self._conn = sqlite3.connect(str(self.path), timeout=self.timeout, check_same_thread=False)
        self._conn.execute("PRAGMA journal_mode=WAL")
        if self.synchronous:
            self._conn.execute(f"PRAGMA synchronous={self.synchronous}")
        key_cols = ", ".join(f"{c} TEXT" for c in self.keys)
        self._conn.execute(f"CREATE TABLE IF NOT EXISTS {self.table} ({self.namespace} TEXT, {key_cols}, "
                           f"{self.value} {self.value_type}, PRIMARY KEY ({self.namespace}, {', '.join(self.keys)}))")
        self._conn.commit()

    @classmethod
    def shared(cls, path: Path | str):
        """The one object of this class for ``path`` in this process."""
        slot = (cls, str(path))
        with _SHARED_LOCK:
            if slot not in _SHARED:
                _SHARED[slot] = cls(Path(path))
            return _SHARED[slot]

    # -- values (subclasses convert) -------------------------------------
    def encode(self, value: Any) -> Any:
        return value

    def decode(self, stored: Any) -> Any:
        return stored

    # -- reads and writes --------------------------------------------------
    def _where(self, n: int) -> str:
        if len(self.keys) == 1:
            return f"{self.keys[0]} IN ({','.join('?' * n)})"
        # row values: one membership test per row (SQLite 3.15+); an OR of n (a=? AND b=?) terms was planned
        # term by term: 5,000 two-column keys took 6.1 s against 0.25 s (bench/kvcache_lookup.py)
        one = "(" + ",".join("?" * len(self.keys)) + ")"
        return f"({', '.join(self.keys)}) IN (VALUES {','.join([one] * n)})"

    def get_many(self, namespace: str, keys: Sequence[Hashable]) -> dict:
        """``{key: value}`` for the ``keys`` stored under ``namespace`` (absent keys are left out)."""
        width = len(self.keys)
        step = max(1, self.chunk // width)
        cols = ", ".join(self.keys)
        out: dict = {}
        with self._lock:
            for i in range(0, len(keys), step):
                chunk = list(keys[i:i + step])
                args: list = [namespace]
                for k in chunk:
                    args.extend(k if width > 1 else (k,))
                sql = f"SELECT {cols}, {self.value} FROM {self.table} WHERE {self.namespace}=? AND ({self._where(len(chunk))})"
                for row in self._conn.execute(sql, args):
                    out[tuple(row[:width]) if width > 1 else row[0]] = self.decode(row[width])
        return out

    def put_many(self, namespace: str, items: Iterable[tuple[Hashable, Any]]) -> None:
        """Write ``(key, value)`` items under ``namespace`` and commit (a key written again is replaced)."""
        width = len(self.keys)
        rows = [(namespace, *(k if width > 1 else (k,)), self.encode(v)) for k, v in items]
        if not rows:
            return
        marks = ", ".join("?" * (width + 2))
        with self._lock:
            self._conn.executemany(f"INSERT OR REPLACE INTO {self.table} VALUES ({marks})", rows)
            self._conn.commit()

    def count(self, namespace: str | None = None) -> int:
        """How many values are stored (under ``namespace``, or in all)."""
        with self._lock:
            if namespace is None:
                return self._conn.execute(f"SELECT COUNT(*) FROM {self.table}").fetchone()[0]
            return self._conn.execute(f"SELECT COUNT(*) FROM {self.table} WHERE {self.namespace}=?",
                                      (namespace,)).fetchone()[0]
