"""The annotation store: one SQLite file that never loses an acknowledged label.

Layout (schema version in ``schema_version``; :data:`MIGRATIONS` upgrades old files):

- ``pairs``: one (passage, perspective) pair to judge; ``pair_id`` is a string
  (a human-pairs TSV keeps its ``id``; run pairs get ``<run>:<qid>:<pid>:<j>``).
- ``judge_preds``: a judge's probability / label for a pair, by judge name.
- ``task_sets`` + ``assignments``: which annotator labels which pair, in which
  order (``position``); a pair may go to several annotators (overlap).
- ``labels``: the *current* decision per (pair, annotator): 0, 1 or skip,
  ``unsure``, ``note``, time.
- ``events``: append-only history of every label, skip, undo and adjudication
  (with the state it replaced), so undo and audit work.
- ``gold``: the adjudicated label of a pair.

Durability: WAL journal, ``synchronous=FULL`` (every commit is fsynced before
it returns), a busy timeout, and one ``BEGIN IMMEDIATE`` transaction per
label, so a label is on disk once :meth:`Store.label` returns and concurrent
writers queue instead of failing with "database is locked".
"""
from __future__ import annotations

import json
import os
import sqlite3
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Iterable, Iterator

DEFAULT_DB = Path("annotations") / "berds.db"
ENV_DB = "BERDS_ANNOTATIONS_DB"
BUSY_TIMEOUT_MS = 60_000
SKIP = "skip"

_SCHEMA_V1 = """
CREATE TABLE IF NOT EXISTS pairs (
    pair_id     TEXT PRIMARY KEY,
    question    TEXT NOT NULL,
    question_id TEXT,
    passage_id  TEXT,
    document    TEXT NOT NULL,
    perspective TEXT NOT NULL,
    perspective_index INTEGER,
    subset      TEXT,
    retriever   TEXT,
    source      TEXT,
    judge_prob  REAL,
    seq         INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS judge_preds (
    pair_id TEXT NOT NULL REFERENCES pairs(pair_id),
    judge   TEXT NOT NULL,
    prob    REAL,
    label   INTEGER NOT NULL CHECK (label IN (0, 1)),
    PRIMARY KEY (pair_id, judge)
);
CREATE TABLE IF NOT EXISTS task_sets (
    name       TEXT PRIMARY KEY,
    source     TEXT,
    strategy   TEXT,
    params     TEXT,
    created_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS assignments (
    task_set  TEXT NOT NULL REFERENCES task_sets(name),
    pair_id   TEXT NOT NULL REFERENCES pairs(pair_id),
    annotator TEXT NOT NULL,
    position  INTEGER NOT NULL,
    PRIMARY KEY (task_set, pair_id, annotator)
);
CREATE INDEX IF NOT EXISTS assignments_queue ON assignments(annotator, task_set, position);
CREATE TABLE IF NOT EXISTS labels (
    pair_id    TEXT NOT NULL REFERENCES pairs(pair_id),
    annotator  TEXT NOT NULL,
    label      INTEGER CHECK (label IN (0, 1)),
    skipped    INTEGER NOT NULL DEFAULT 0,
    unsure     INTEGER NOT NULL DEFAULT 0,
    note       TEXT,
    updated_at TEXT NOT NULL,
    PRIMARY KEY (pair_id, annotator),
    CHECK ((skipped = 1 AND label IS NULL) OR (skipped = 0 AND label IS NOT NULL))
);
CREATE TABLE IF NOT EXISTS events (
    event_id  INTEGER PRIMARY KEY AUTOINCREMENT,
    at        TEXT NOT NULL,
    kind      TEXT NOT NULL CHECK (kind IN ('label', 'skip', 'undo', 'adjudicate', 'import')),
    pair_id   TEXT,
    annotator TEXT NOT NULL,
    label     INTEGER,
    unsure    INTEGER,
    note      TEXT,
    target    INTEGER REFERENCES events(event_id),
    previous  TEXT
);
CREATE INDEX IF NOT EXISTS events_by_annotator ON events(annotator, event_id);
CREATE TABLE IF NOT EXISTS gold (
    pair_id     TEXT PRIMARY KEY REFERENCES pairs(pair_id),
    label       INTEGER NOT NULL CHECK (label IN (0, 1)),
    adjudicator TEXT NOT NULL,
    note        TEXT,
    at          TEXT NOT NULL
);
"""

# version -> SQL that upgrades from version-1; applied in order inside one transaction each.
MIGRATIONS: dict[int, str] = {1: _SCHEMA_V1}
SCHEMA_VERSION = max(MIGRATIONS)


def default_db_path() -> Path:
    """``$BERDS_ANNOTATIONS_DB`` or ``annotations/berds.db``."""
    return Path(os.environ.get(ENV_DB) or DEFAULT_DB)


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds")


@dataclass(frozen=True)
class Pair:
    pair_id: str
    question: str
    document: str
    perspective: str
    question_id: str | None = None
    passage_id: str | None = None
    perspective_index: int | None = None
    subset: str | None = None
    retriever: str | None = None
    source: str | None = None
    judge_prob: float | None = None

    def to_json(self) -> dict:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}


@dataclass(frozen=True)
class Label:
    pair_id: str
    annotator: str
    label: int | None  # None when skipped
    skipped: bool
    unsure: bool
    note: str | None
    updated_at: str

    @property
    def value(self) -> int | str:
        return SKIP if self.skipped else self.label


_PAIR_COLS = ("pair_id", "question", "document", "perspective", "question_id", "passage_id",
              "perspective_index", "subset", "retriever", "source", "judge_prob")


def _pair(row) -> Pair:
    return Pair(*(row[c] for c in _PAIR_COLS))


def _label(row) -> Label:
    return Label(row["pair_id"], row["annotator"], row["label"], bool(row["skipped"]),
                 bool(row["unsure"]), row["note"], row["updated_at"])


class StoreError(ValueError):
    """A store operation that cannot be done (unknown pair, nothing to undo...)."""


class Store:
    """An annotation database. Thread-safe; any number of processes may share the file."""

    def __init__(self, path=None):
        self.path = Path(path) if path is not None else default_db_path()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.RLock()
        self._conn = sqlite3.connect(str(self.path), timeout=BUSY_TIMEOUT_MS / 1000,
                                     isolation_level=None, check_same_thread=False)
        self._conn.row_factory = sqlite3.Row
        self._conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        self._set_wal()
        self._conn.execute("PRAGMA synchronous = FULL")
        self._conn.execute("PRAGMA foreign_keys = ON")
        self._migrate()

    # ---- connection plumbing ----

    def _set_wal(self) -> None:
        deadline = time.monotonic() + BUSY_TIMEOUT_MS / 1000
        while True:
            try:
                mode = self._conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
                break
            except sqlite3.OperationalError as e:  # another process is switching it right now
                if "locked" not in str(e) or time.monotonic() > deadline:
                    raise
                time.sleep(0.05)
        if mode.lower() != "wal":
            raise StoreError(f"{self.path}: could not switch to WAL mode (got {mode})")

    @contextmanager
    def _tx(self) -> Iterator[sqlite3.Connection]:
        """One write transaction, taken up front (BEGIN IMMEDIATE) so it never deadlocks."""
        with self._lock:
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                yield self._conn
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise
            self._conn.execute("COMMIT")

    def _read(self, sql: str, params=()) -> list[sqlite3.Row]:
        with self._lock:
            return self._conn.execute(sql, params).fetchall()

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def _migrate(self) -> None:
        with self._tx() as c:
            c.execute("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL, applied_at TEXT NOT NULL)")
            row = c.execute("SELECT MAX(version) FROM schema_version").fetchone()
            have = row[0] or 0
            if have > SCHEMA_VERSION:
                raise StoreError(f"{self.path}: schema version {have} is newer than this program ({SCHEMA_VERSION})")
            for version in range(have + 1, SCHEMA_VERSION + 1):
                for stmt in MIGRATIONS[version].split(";"):
                    if stmt.strip():
                        c.execute(stmt)
                c.execute("INSERT INTO schema_version VALUES (?, ?)", (version, _now()))

    @property
    def schema_version(self) -> int:
        return self._read("SELECT MAX(version) FROM schema_version")[0][0]

    # ---- pairs and judge predictions ----

    def add_pairs(self, pairs: Iterable[Pair], *, replace: bool = False) -> int:
        """Insert pairs (one transaction); existing ids are kept unless ``replace``. Returns new rows."""
        added = 0
        with self._tx() as c:
            seq = c.execute("SELECT COALESCE(MAX(seq), 0) FROM pairs").fetchone()[0]
            verb = "INSERT OR REPLACE" if replace else "INSERT OR IGNORE"
            for p in pairs:
                seq += 1
                cur = c.execute(
                    f"{verb} INTO pairs ({', '.join(_PAIR_COLS)}, seq) VALUES ({', '.join('?' * len(_PAIR_COLS))}, ?)",
                    (*(getattr(p, k) for k in _PAIR_COLS), seq))
                added += cur.rowcount
        return added

    def pair(self, pair_id: str) -> Pair:
        rows = self._read(f"SELECT {', '.join(_PAIR_COLS)} FROM pairs WHERE pair_id = ?", (str(pair_id),))
        if not rows:
            raise StoreError(f"no pair with id {pair_id!r}")
        return _pair(rows[0])

    def has_pair(self, pair_id: str) -> bool:
        return bool(self._read("SELECT 1 FROM pairs WHERE pair_id = ?", (str(pair_id),)))

    def pairs(self, pair_ids: Iterable[str] | None = None) -> list[Pair]:
        if pair_ids is None:
            rows = self._read(f"SELECT {', '.join(_PAIR_COLS)} FROM pairs ORDER BY seq")
            return [_pair(r) for r in rows]
        wanted = [str(p) for p in pair_ids]
        by_id = {p.pair_id: p for p in self.pairs()} if wanted else {}
        return [by_id[p] for p in wanted if p in by_id]

    def count_pairs(self) -> int:
        return self._read("SELECT COUNT(*) FROM pairs")[0][0]

    def set_judge_preds(self, judge: str, preds: dict[str, tuple[float | None, int]]) -> None:
        """Store ``{pair_id: (probability or None, 0/1)}`` for ``judge`` (one transaction)."""
        with self._tx() as c:
            c.executemany("INSERT OR REPLACE INTO judge_preds VALUES (?, ?, ?, ?)",
                          [(str(pid), judge, None if p is None else float(p), int(bool(lab)))
                           for pid, (p, lab) in preds.items()])

    def judge_preds(self, judge: str) -> dict[str, tuple[float | None, int]]:
        rows = self._read("SELECT pair_id, prob, label FROM judge_preds WHERE judge = ?", (judge,))
        return {r["pair_id"]: (r["prob"], r["label"]) for r in rows}

    def judges(self) -> list[str]:
        return [r[0] for r in self._read("SELECT DISTINCT judge FROM judge_preds ORDER BY judge")]

    # ---- task sets and queues ----

    def create_task_set(self, name: str, assignments: dict[str, list[str]], *, source: str | None = None,
                        strategy: str | None = None, params: dict | None = None) -> None:
        """Assign pairs to annotators: ``{annotator: [pair_id, ...]}`` in queue order.

        Re-creating an existing set appends new assignments after the old ones;
        nothing already assigned or labelled is removed.
        """
        with self._tx() as c:
            c.execute("INSERT OR IGNORE INTO task_sets VALUES (?, ?, ?, ?, ?)",
                      (name, source, strategy, json.dumps(params or {}), _now()))
            for annotator, pids in assignments.items():
                pos = c.execute("SELECT COALESCE(MAX(position), -1) FROM assignments WHERE task_set = ? AND annotator = ?",
                                (name, annotator)).fetchone()[0]
                for pid in pids:
                    pos += 1
                    c.execute("INSERT OR IGNORE INTO assignments VALUES (?, ?, ?, ?)", (name, str(pid), annotator, pos))

    def task_sets(self, annotator: str | None = None) -> list[str]:
        if annotator is None:
            return [r[0] for r in self._read("SELECT name FROM task_sets ORDER BY created_at, name")]
        return [r[0] for r in self._read(
            "SELECT DISTINCT a.task_set FROM assignments a JOIN task_sets t ON t.name = a.task_set "
            "WHERE a.annotator = ? ORDER BY t.created_at, t.name", (annotator,))]

    def annotators(self) -> list[str]:
        rows = self._read("SELECT annotator FROM assignments UNION SELECT annotator FROM labels ORDER BY 1")
        return [r[0] for r in rows]

    def queue(self, annotator: str, task_set: str | None = None) -> list[str]:
        """The annotator's assigned pair ids in stable order (task set creation, then position)."""
        if task_set is not None:
            rows = self._read("SELECT pair_id FROM assignments WHERE annotator = ? AND task_set = ? ORDER BY position",
                              (annotator, task_set))
        else:
            rows = self._read(
                "SELECT a.pair_id FROM assignments a JOIN task_sets t ON t.name = a.task_set "
                "WHERE a.annotator = ? ORDER BY t.created_at, t.name, a.position", (annotator,))
        seen, out = set(), []
        for r in rows:
            if r[0] not in seen:
                seen.add(r[0])
                out.append(r[0])
        return out

    def next_pair(self, annotator: str, task_set: str | None = None) -> str | None:
        """The first pair of the queue that this annotator has not decided yet (labels or skips)."""
        done = {r[0] for r in self._read("SELECT pair_id FROM labels WHERE annotator = ?", (annotator,))}
        for pid in self.queue(annotator, task_set):
            if pid not in done:
                return pid
        return None

    def progress(self, annotator: str, task_set: str | None = None) -> dict:
        q = self.queue(annotator, task_set)
        labs = self.labels(annotator=annotator)
        qs = set(q)
        mine = [l for l in labs if l.pair_id in qs]
        return {"total": len(q), "done": len(mine), "labelled": sum(not l.skipped for l in mine),
                "skipped": sum(l.skipped for l in mine), "remaining": len(q) - len(mine)}

    # ---- labelling ----

    def label(self, annotator: str, pair_id: str, label, *, unsure: bool = False, note: str | None = None) -> int:
        """Record ``label`` (0, 1 or ``"skip"``) for one pair; returns the event id.

        One transaction: the current label row and a history event. When this
        returns, the label is on disk (WAL + synchronous=FULL).
        """
        annotator = _check_annotator(annotator)
        pair_id = str(pair_id)
        skipped = label == SKIP
        if not skipped:
            if label in (0, 1, "0", "1", True, False):
                label = int(label)
            else:
                raise StoreError(f"label must be 0, 1 or 'skip', got {label!r}")
        value = None if skipped else label
        at = _now()
        with self._tx() as c:
            if not c.execute("SELECT 1 FROM pairs WHERE pair_id = ?", (pair_id,)).fetchone():
                raise StoreError(f"no pair with id {pair_id!r}")
            prev = c.execute("SELECT * FROM labels WHERE pair_id = ? AND annotator = ?", (pair_id, annotator)).fetchone()
            c.execute("INSERT OR REPLACE INTO labels VALUES (?, ?, ?, ?, ?, ?, ?)",
                      (pair_id, annotator, value, int(skipped), int(bool(unsure)), note or None, at))
            cur = c.execute(
                "INSERT INTO events (at, kind, pair_id, annotator, label, unsure, note, previous) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (at, SKIP if skipped else "label", pair_id, annotator, value, int(bool(unsure)), note or None,
                 json.dumps(dict(prev)) if prev else None))
            return cur.lastrowid

    def undo(self, annotator: str) -> str | None:
        """Undo this annotator's latest label or skip that is not undone yet.

        Restores the state it replaced (the earlier label, or no label) and
        appends an ``undo`` event. Returns the pair id, or None when there is
        nothing to undo.
        """
        with self._tx() as c:
            ev = c.execute(
                "SELECT * FROM events e WHERE annotator = ? AND kind IN ('label', 'skip') AND NOT EXISTS "
                "(SELECT 1 FROM events u WHERE u.kind = 'undo' AND u.target = e.event_id) "
                "ORDER BY event_id DESC LIMIT 1", (annotator,)).fetchone()
            if ev is None:
                return None
            cur = c.execute("SELECT * FROM labels WHERE pair_id = ? AND annotator = ?", (ev["pair_id"], annotator)).fetchone()
            if ev["previous"]:
                p = json.loads(ev["previous"])
                c.execute("INSERT OR REPLACE INTO labels VALUES (?, ?, ?, ?, ?, ?, ?)",
                          (p["pair_id"], p["annotator"], p["label"], p["skipped"], p["unsure"], p["note"], p["updated_at"]))
            else:
                c.execute("DELETE FROM labels WHERE pair_id = ? AND annotator = ?", (ev["pair_id"], annotator))
            c.execute("INSERT INTO events (at, kind, pair_id, annotator, target, previous) VALUES (?, 'undo', ?, ?, ?, ?)",
                      (_now(), ev["pair_id"], annotator, ev["event_id"], json.dumps(dict(cur)) if cur else None))
            return ev["pair_id"]

    def import_labels(self, annotator: str, labels: dict[str, int], source: str) -> int:
        """Store labels read from a file as ``annotator``'s, in one transaction (one event each).

        A decision the annotator already made is never overwritten by a file;
        returns the number of labels stored.
        """
        annotator = _check_annotator(annotator)
        at = _now()
        stored = 0
        with self._tx() as c:
            for pid, lab in labels.items():
                if c.execute("SELECT 1 FROM labels WHERE pair_id = ? AND annotator = ?", (pid, annotator)).fetchone():
                    continue
                c.execute("INSERT INTO labels VALUES (?, ?, ?, 0, 0, NULL, ?)", (pid, annotator, int(lab), at))
                c.execute("INSERT INTO events (at, kind, pair_id, annotator, label, note) VALUES (?, 'import', ?, ?, ?, ?)",
                          (at, pid, annotator, int(lab), source))
                stored += 1
        return stored

    def get_label(self, annotator: str, pair_id: str) -> Label | None:
        rows = self._read("SELECT * FROM labels WHERE annotator = ? AND pair_id = ?", (annotator, str(pair_id)))
        return _label(rows[0]) if rows else None

    def labels(self, annotator: str | None = None, *, include_skips: bool = True) -> list[Label]:
        sql = "SELECT l.* FROM labels l JOIN pairs p ON p.pair_id = l.pair_id"
        cond, params = [], []
        if annotator is not None:
            cond.append("l.annotator = ?")
            params.append(annotator)
        if not include_skips:
            cond.append("l.skipped = 0")
        if cond:
            sql += " WHERE " + " AND ".join(cond)
        sql += " ORDER BY p.seq, l.annotator"
        return [_label(r) for r in self._read(sql, params)]

    def history(self, annotator: str | None = None, pair_id: str | None = None) -> list[dict]:
        sql, cond, params = "SELECT * FROM events", [], []
        if annotator is not None:
            cond.append("annotator = ?")
            params.append(annotator)
        if pair_id is not None:
            cond.append("pair_id = ?")
            params.append(str(pair_id))
        if cond:
            sql += " WHERE " + " AND ".join(cond)
        return [dict(r) for r in self._read(sql + " ORDER BY event_id", params)]

    # ---- adjudication ----

    def adjudicate(self, pair_id: str, label: int, adjudicator: str, note: str | None = None) -> None:
        """Set the gold label of a pair (kept in history; a later call overrides)."""
        adjudicator = _check_annotator(adjudicator)
        if label not in (0, 1, "0", "1"):
            raise StoreError(f"gold label must be 0 or 1, got {label!r}")
        label = int(label)
        at = _now()
        with self._tx() as c:
            if not c.execute("SELECT 1 FROM pairs WHERE pair_id = ?", (str(pair_id),)).fetchone():
                raise StoreError(f"no pair with id {pair_id!r}")
            prev = c.execute("SELECT * FROM gold WHERE pair_id = ?", (str(pair_id),)).fetchone()
            c.execute("INSERT OR REPLACE INTO gold VALUES (?, ?, ?, ?, ?)", (str(pair_id), label, adjudicator, note, at))
            c.execute("INSERT INTO events (at, kind, pair_id, annotator, label, note, previous) VALUES (?, 'adjudicate', ?, ?, ?, ?, ?)",
                      (at, str(pair_id), adjudicator, label, note, json.dumps(dict(prev)) if prev else None))

    def gold(self) -> dict[str, int]:
        return {r["pair_id"]: r["label"] for r in self._read("SELECT pair_id, label FROM gold")}


def _check_annotator(name) -> str:
    name = str(name or "").strip()
    if not name:
        raise StoreError("annotator name must not be empty")
    if len(name) > 100:
        raise StoreError("annotator name is longer than 100 characters")
    return name
