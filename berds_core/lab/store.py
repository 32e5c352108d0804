"""The annotation store: one SQLite file that never loses an acknowledged label.

Layout (schema version in ``schema_version``; :data:`MIGRATIONS` upgrades old files):

- ``pairs``: one (passage, perspective) pair to judge; ``pair_id`` is a string
  (a human-pairs TSV keeps its ``id``; run pairs get ``<run>:<qid>:<pid>:<j>``).
  ``title`` is kept apart from the passage text; ``side`` is the perspective's
  side (``support`` / ``oppose`` / ...) when known.
- ``judge_preds``: a judge's probability / label for a pair, by judge name.
- ``task_sets`` + ``assignments``: which annotator labels which pair, in which
  order (``position``); a pair may go to several annotators (overlap). An
  assignment's ``kind`` is ``task``, ``calibration`` (a pair with a reference
  label mixed in silently), ``routed`` (a second opinion asked for later) or
  ``check`` (a gold check placed as the round runs, :mod:`berds_core.lab.checks`).
- ``labels``: the *current* decision per (pair, annotator): 0, 1 or skip,
  ``unsure``, ``note``, time, and provenance: ``time_ms`` spent on the pair,
  ``judge_visible`` (was the judge's answer on screen), ``app_version``.
- ``events``: append-only history of every label, skip, undo and adjudication
  (with the state it replaced), so undo and audit work; ``client_id`` makes a
  browser's resent label idempotent.
- ``gold``: the adjudicated label of a pair; ``reference_labels``: labels known
  in advance (e.g. imported BERDS human labels), used for calibration.
- ``settings``: guidelines and label definitions of the project.
- ``check_slots``, ``pauses``, ``qualification``, ``qualification_results``: the
  round's quality controls (:mod:`berds_core.lab.round_schema`).
- ``users``, ``sessions``, ``login_attempts``, ``audit``: lab accounts (see
  :mod:`berds_core.lab.accounts`) and the log of allowed and refused actions (see
  :mod:`berds_core.lab.access`).

Durability: WAL journal, ``synchronous=FULL`` (every commit is fsynced before
it returns), a busy timeout, and one ``BEGIN IMMEDIATE`` transaction per
label, so a label is on disk once :meth:`Store.label` returns and concurrent
writers queue instead of failing with "database is locked". :meth:`Store.batch`
groups several writes into one transaction (all or nothing).
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

from ..judges import passage_text
from .. import __version__
from .round_schema import SCHEMA_V4

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

# Version 2: titles and sides of pairs, label provenance, idempotent browser events,
# assignment kinds (calibration / routed), reference labels, settings, accounts and audit.
_SCHEMA_V2 = """
ALTER TABLE pairs ADD COLUMN title TEXT;
ALTER TABLE pairs ADD COLUMN side TEXT;
ALTER TABLE labels ADD COLUMN time_ms INTEGER;
ALTER TABLE labels ADD COLUMN judge_visible INTEGER;
ALTER TABLE labels ADD COLUMN app_version TEXT;
ALTER TABLE events ADD COLUMN time_ms INTEGER;
ALTER TABLE events ADD COLUMN judge_visible INTEGER;
ALTER TABLE events ADD COLUMN app_version TEXT;
ALTER TABLE events ADD COLUMN client_id TEXT;
CREATE UNIQUE INDEX IF NOT EXISTS events_client ON events(client_id);
ALTER TABLE assignments ADD COLUMN kind TEXT NOT NULL DEFAULT 'task';
CREATE TABLE IF NOT EXISTS reference_labels (
    pair_id TEXT PRIMARY KEY REFERENCES pairs(pair_id),
    label   INTEGER NOT NULL CHECK (label IN (0, 1)),
    source  TEXT,
    at      TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS settings (
    key        TEXT PRIMARY KEY,
    value      TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    updated_by TEXT
);
CREATE TABLE IF NOT EXISTS users (
    name          TEXT PRIMARY KEY,
    role          TEXT NOT NULL CHECK (role IN ('annotator', 'reviewer', 'admin')),
    password_hash TEXT NOT NULL,
    active        INTEGER NOT NULL DEFAULT 1,
    created_at    TEXT NOT NULL,
    updated_at    TEXT NOT NULL,
    last_login    TEXT
);
CREATE TABLE IF NOT EXISTS sessions (
    token_hash TEXT PRIMARY KEY,
    user       TEXT NOT NULL REFERENCES users(name),
    created_at REAL NOT NULL,
    last_seen  REAL NOT NULL,
    expires_at REAL NOT NULL,
    revoked    INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS login_attempts (
    id     INTEGER PRIMARY KEY AUTOINCREMENT,
    user   TEXT,
    client TEXT,
    at     REAL NOT NULL,
    ok     INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS login_attempts_user ON login_attempts(user, at);
CREATE INDEX IF NOT EXISTS login_attempts_client ON login_attempts(client, at);
CREATE TABLE IF NOT EXISTS audit (
    id      INTEGER PRIMARY KEY AUTOINCREMENT,
    at      TEXT NOT NULL,
    actor   TEXT,
    role    TEXT,
    action  TEXT NOT NULL,
    target  TEXT,
    allowed INTEGER NOT NULL,
    detail  TEXT
);
CREATE INDEX IF NOT EXISTS audit_by_actor ON audit(actor, action, target);
"""

# Version 3: every user row gets a random ``uid`` that is never reused, and a session keeps the uid of the
# row it was opened for (a user deleted and created again does not inherit the old user's sessions).
_SCHEMA_V3 = """
ALTER TABLE users ADD COLUMN uid TEXT;
UPDATE users SET uid = lower(hex(randomblob(16))) WHERE uid IS NULL;
CREATE UNIQUE INDEX IF NOT EXISTS users_uid ON users(uid);
ALTER TABLE sessions ADD COLUMN uid TEXT;
UPDATE sessions SET uid = (SELECT uid FROM users WHERE users.name = sessions.user) WHERE uid IS NULL
"""

# version -> SQL that upgrades from version-1; applied in order inside one transaction each.
# Version 4: gold checks placed as the round runs, paused queues, qualification rounds (lab/round_schema.py).
MIGRATIONS: dict[int, str] = {1: _SCHEMA_V1, 2: _SCHEMA_V2, 3: _SCHEMA_V3, 4: SCHEMA_V4}
SCHEMA_VERSION = max(MIGRATIONS)
ASSIGNMENT_KINDS = ("task", "calibration", "routed", "check")


def _create_private(path: Path) -> None:
    """Create an empty database file readable by its owner only (0600: it may hold password hashes).

    SQLite creates the WAL and shared-memory files with the database file's
    permissions, so they are private too. An existing file is left as it is.
    """
    try:
        fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
    except FileExistsError:
        return
    os.close(fd)


def default_db_path() -> Path:
    """``$BERDS_ANNOTATIONS_DB`` or ``annotations/berds.db``."""
    return Path(os.environ.get(ENV_DB) or DEFAULT_DB)


def app_version() -> str:
    """What the labels' ``app_version`` records: ``$BERDS_APP_VERSION`` or ``berds <package version>``."""
    return os.environ.get("BERDS_APP_VERSION") or f"berds {__version__}"


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
    title: str | None = None
    side: str | None = None

    def to_json(self) -> dict:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}

    @property
    def question_key(self) -> str:
        """What groups pairs by question (bootstrap clusters): the question id, else its text."""
        return self.question_id or self.question

    def judge_text(self, judge=None) -> str:
        """The passage as ``judge`` reads it (:func:`berds_core.judges.passage_text`): the BERDS
        evaluator's ``text + " " + title`` for LLM judges, ``title. text`` for the embedded judge (what the
        stance model reads)."""
        ctx = {"text": self.document} if self.title is None else {"text": self.document, "title": self.title}
        return passage_text(ctx, judge)


@dataclass(frozen=True)
class Label:
    pair_id: str
    annotator: str
    label: int | None  # None when skipped
    skipped: bool
    unsure: bool
    note: str | None
    updated_at: str
    time_ms: int | None = None
    judge_visible: bool | None = None
    app_version: str | None = None

    @property
    def value(self) -> int | str:
        return SKIP if self.skipped else self.label


_PAIR_COLS = ("pair_id", "question", "document", "perspective", "question_id", "passage_id",
              "perspective_index", "subset", "retriever", "source", "judge_prob", "title", "side")
_LABEL_COLS = ("pair_id", "annotator", "label", "skipped", "unsure", "note", "updated_at", "time_ms",
               "judge_visible", "app_version")


def _pair(row) -> Pair:
    return Pair(*(row[c] for c in _PAIR_COLS))


def _label(row) -> Label:
    jv = row["judge_visible"]
    return Label(row["pair_id"], row["annotator"], row["label"], bool(row["skipped"]), bool(row["unsure"]),
                 row["note"], row["updated_at"], row["time_ms"], None if jv is None else bool(jv),
                 row["app_version"])


def _put_label(c, values: dict) -> None:
    cols = [k for k in _LABEL_COLS if k in values]
    c.execute(f"INSERT OR REPLACE INTO labels ({', '.join(cols)}) VALUES ({', '.join('?' * len(cols))})",
              [values[k] for k in cols])


class StoreError(ValueError):
    """A store operation that cannot be done (unknown pair, nothing to undo...)."""


class Store:
    """An annotation database. Thread-safe; any number of processes may share the file.

    ``create=False`` refuses a path where no database exists yet (nothing is
    created, not even its folder).
    """

    def __init__(self, path=None, *, create: bool = True):
        self.path = Path(path) if path is not None else default_db_path()
        if not create and not self.path.is_file():
            raise StoreError(f"{self.path}: no annotation database here")
        self.path.parent.mkdir(parents=True, exist_ok=True)
        _create_private(self.path)
        self._lock = threading.RLock()
        self._depth = 0
        self.now = _now  # the clock of labels and round events (a simulated round sets its own)
        self._conn = sqlite3.connect(str(self.path), timeout=BUSY_TIMEOUT_MS / 1000,
                                     isolation_level=None, check_same_thread=False)
        self._conn.row_factory = sqlite3.Row
        self._conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        self._set_wal()
        self._conn.execute("PRAGMA synchronous = FULL")
        self._conn.execute("PRAGMA foreign_keys = ON")
        self._migrate()

    def restrict_permissions(self) -> bool:
        """Make the database (and its WAL and shared-memory files) readable by the owner only (0600).

        New databases are created so; this tightens an older one, e.g. when a
        password hash goes in. Returns True when a mode changed.
        """
        changed = False
        for p in (self.path, Path(f"{self.path}-wal"), Path(f"{self.path}-shm")):
            try:
                mode = p.stat().st_mode & 0o777
            except FileNotFoundError:
                continue
            if mode & 0o077:
                os.chmod(p, mode & 0o700)
                changed = True
        return changed

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
        """One write transaction, taken up front (BEGIN IMMEDIATE) so it never deadlocks.

        Nested calls (inside :meth:`batch`) join the outer transaction.
        """
        with self._lock:
            if self._depth:
                self._depth += 1
                try:
                    yield self._conn
                finally:
                    self._depth -= 1
                return
            self._conn.execute("BEGIN IMMEDIATE")
            self._depth = 1
            try:
                yield self._conn
            except BaseException:
                self._depth = 0
                self._conn.execute("ROLLBACK")
                raise
            self._depth = 0
            self._conn.execute("COMMIT")

    def batch(self):
        """``with store.batch(): ...``: every write inside is one transaction (all or nothing)."""
        return self._tx()

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

    # ---- reference labels (known in advance) ----

    def set_reference_labels(self, labels: dict[str, int], source: str | None = None) -> int:
        """Store labels known in advance (e.g. a paper's human labels) for calibration; returns how many."""
        at = _now()
        with self._tx() as c:
            for pid, lab in labels.items():
                if lab not in (0, 1, "0", "1", True, False):
                    raise StoreError(f"reference label must be 0 or 1, got {lab!r}")
                if not c.execute("SELECT 1 FROM pairs WHERE pair_id = ?", (str(pid),)).fetchone():
                    raise StoreError(f"no pair with id {pid!r}")
                c.execute("INSERT OR REPLACE INTO reference_labels VALUES (?, ?, ?, ?)", (str(pid), int(lab), source, at))
        return len(labels)

    def reference_labels(self) -> dict[str, int]:
        return {r[0]: r[1] for r in self._read("SELECT pair_id, label FROM reference_labels")}

    # ---- settings (guidelines, label definitions) ----

    def setting(self, key: str, default=None):
        rows = self._read("SELECT value FROM settings WHERE key = ?", (key,))
        return json.loads(rows[0][0]) if rows else default

    def set_setting(self, key: str, value, by: str | None = None) -> None:
        with self._tx() as c:
            c.execute("INSERT OR REPLACE INTO settings VALUES (?, ?, ?, ?)", (key, json.dumps(value), _now(), by))

    # ---- audit log ----

    def audit(self, actor: str | None, role: str | None, action: str, target: str | None = None, *,
              allowed: bool, detail: str | None = None) -> None:
        """Append one line to the audit log (no secrets: callers pass names and actions only)."""
        with self._tx() as c:
            c.execute("INSERT INTO audit (at, actor, role, action, target, allowed, detail) VALUES (?, ?, ?, ?, ?, ?, ?)",
                      (_now(), actor, role, action, target, int(bool(allowed)), detail))

    def audit_log(self, *, refused_only: bool = False, limit: int | None = None) -> list[dict]:
        sql = "SELECT * FROM audit" + (" WHERE allowed = 0" if refused_only else "") + " ORDER BY id"
        rows = [dict(r) for r in self._read(sql)]
        return rows[-limit:] if limit else rows

    # ---- task sets and queues ----

    def create_task_set(self, name: str, assignments: dict[str, list[str]], *, source: str | None = None,
                        strategy: str | None = None, params: dict | None = None,
                        calibration: Iterable[str] = ()) -> None:
        """Assign pairs to annotators: ``{annotator: [pair_id, ...]}`` in queue order.

        Pair ids in ``calibration`` are stored as calibration assignments (the
        annotator is not told). Re-creating an existing set appends new
        assignments after the old ones; nothing already assigned or labelled is removed.
        """
        calib = {str(p) for p in calibration}
        with self._tx() as c:
            c.execute("INSERT OR IGNORE INTO task_sets VALUES (?, ?, ?, ?, ?)",
                      (name, source, strategy, json.dumps(params or {}), _now()))
            for annotator, pids in assignments.items():
                annotator = _check_annotator(annotator)
                pos = c.execute("SELECT COALESCE(MAX(position), -1) FROM assignments WHERE task_set = ? AND annotator = ?",
                                (name, annotator)).fetchone()[0]
                for pid in pids:
                    pos += 1
                    c.execute("INSERT OR IGNORE INTO assignments (task_set, pair_id, annotator, position, kind) "
                              "VALUES (?, ?, ?, ?, ?)",
                              (name, str(pid), annotator, pos, "calibration" if str(pid) in calib else "task"))

    def task_sets(self, annotator: str | None = None) -> list[str]:
        if annotator is None:
            return [r[0] for r in self._read("SELECT name FROM task_sets ORDER BY created_at, name")]
        return [r[0] for r in self._read(
            "SELECT DISTINCT a.task_set FROM assignments a JOIN task_sets t ON t.name = a.task_set "
            "WHERE a.annotator = ? ORDER BY t.created_at, t.name", (annotator,))]

    def task_set_info(self, name: str) -> dict | None:
        rows = self._read("SELECT * FROM task_sets WHERE name = ?", (name,))
        if not rows:
            return None
        info = dict(rows[0])
        info["params"] = json.loads(info["params"] or "{}")
        return info

    def assignments(self, task_set: str | None = None) -> list[dict]:
        """Every assignment: ``task_set, pair_id, annotator, position, kind``."""
        sql = "SELECT task_set, pair_id, annotator, position, kind FROM assignments"
        rows = self._read(sql + (" WHERE task_set = ?" if task_set else "") + " ORDER BY task_set, annotator, position",
                          (task_set,) if task_set else ())
        return [dict(r) for r in rows]

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

    def has_assignments(self) -> bool:
        """Whether any task set gave anyone a queue."""
        return bool(self._read("SELECT 1 FROM assignments LIMIT 1"))

    def is_assigned(self, annotator: str, pair_id: str) -> bool:
        return bool(self._read("SELECT 1 FROM assignments WHERE annotator = ? AND pair_id = ? LIMIT 1",
                               (annotator, str(pair_id))))

    def next_pairs(self, annotator: str, n: int = 1, task_set: str | None = None) -> list[str]:
        """The first ``n`` pairs of the queue that this annotator has not decided yet (labels or skips)."""
        done = {r[0] for r in self._read("SELECT pair_id FROM labels WHERE annotator = ?", (annotator,))}
        out = []
        for pid in self.queue(annotator, task_set):
            if pid not in done:
                out.append(pid)
                if len(out) >= n:
                    break
        return out

    def next_pair(self, annotator: str, task_set: str | None = None) -> str | None:
        """The first pair of the queue that this annotator has not decided yet (labels or skips)."""
        nxt = self.next_pairs(annotator, 1, task_set)
        return nxt[0] if nxt else None

    def progress(self, annotator: str, task_set: str | None = None) -> dict:
        q = self.queue(annotator, task_set)
        labs = self.labels(annotator=annotator)
        qs = set(q)
        mine = [l for l in labs if l.pair_id in qs]
        return {"total": len(q), "done": len(mine), "labelled": sum(not l.skipped for l in mine),
                "skipped": sum(l.skipped for l in mine), "remaining": len(q) - len(mine)}

    # ---- labelling ----

    def applied_client_ids(self, client_ids: Iterable[str]) -> set[str]:
        """Which of these browser event ids are already stored (labels, skips or undos)."""
        ids = [str(x) for x in client_ids]
        out = set()
        for i in range(0, len(ids), 500):
            chunk = ids[i:i + 500]
            rows = self._read(f"SELECT client_id FROM events WHERE client_id IN ({', '.join('?' * len(chunk))})", chunk)
            out.update(r[0] for r in rows)
        return out

    def label(self, annotator: str, pair_id: str, label, *, unsure: bool = False, note: str | None = None,
              time_ms: int | None = None, judge_visible: bool | None = None, version: str | None = None,
              client_id: str | None = None) -> int:
        """Record ``label`` (0, 1 or ``"skip"``) for one pair; returns the event id.

        One transaction: the current label row, a history event and, when the
        annotator is unsure and the pair's task set routes unsure pairs, an
        assignment of the pair to a second annotator. When this returns, the
        label is on disk (WAL + synchronous=FULL). A ``client_id`` already
        stored makes the call a no-op that returns the stored event (a
        browser resending a label it has not seen acknowledged).
        """
        annotator = _check_annotator(annotator)
        pair_id = str(pair_id)
        skipped = label == SKIP
        if not skipped:
            if label in (0, 1, "0", "1", True, False):
                label = int(label)
            else:
                raise StoreError(f"label must be 0, 1 or 'skip', got {label!r}")
        if time_ms is not None:
            time_ms = max(0, int(time_ms))
        value = None if skipped else label
        at = self.now()
        version = version or app_version()
        jv = None if judge_visible is None else int(bool(judge_visible))
        with self._tx() as c:
            if client_id is not None:
                row = c.execute("SELECT event_id FROM events WHERE client_id = ?", (str(client_id),)).fetchone()
                if row:
                    return row[0]
            if not c.execute("SELECT 1 FROM pairs WHERE pair_id = ?", (pair_id,)).fetchone():
                raise StoreError(f"no pair with id {pair_id!r}")
            prev = c.execute("SELECT * FROM labels WHERE pair_id = ? AND annotator = ?", (pair_id, annotator)).fetchone()
            _put_label(c, {"pair_id": pair_id, "annotator": annotator, "label": value, "skipped": int(skipped),
                           "unsure": int(bool(unsure)), "note": note or None, "updated_at": at, "time_ms": time_ms,
                           "judge_visible": jv, "app_version": version})
            cur = c.execute(
                "INSERT INTO events (at, kind, pair_id, annotator, label, unsure, note, previous, time_ms, "
                "judge_visible, app_version, client_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (at, SKIP if skipped else "label", pair_id, annotator, value, int(bool(unsure)), note or None,
                 json.dumps(dict(prev)) if prev else None, time_ms, jv, version,
                 None if client_id is None else str(client_id)))
            if unsure:
                self._route_unsure(c, annotator, pair_id)
            return cur.lastrowid

    @staticmethod
    def _route_unsure(c, annotator: str, pair_id: str) -> None:
        """Give an unsure pair to one more annotator of each task set that routes unsure pairs.

        The new annotator is the least loaded member of the set not yet given
        the pair (ties by name); the pair goes to the end of their queue, as a
        ``routed`` assignment. A set's ``route_max`` (default 2) caps how many
        annotators a pair reaches this way.
        """
        sets = c.execute("SELECT a.task_set, t.params FROM assignments a JOIN task_sets t ON t.name = a.task_set "
                         "WHERE a.pair_id = ? AND a.annotator = ?", (pair_id, annotator)).fetchall()
        for task_set, params in sets:
            params = json.loads(params or "{}")
            if not params.get("route_unsure"):
                continue
            assigned = {r[0] for r in c.execute("SELECT annotator FROM assignments WHERE task_set = ? AND pair_id = ?",
                                                (task_set, pair_id))}
            if len(assigned) >= int(params.get("route_max", 2)):
                continue
            loads = c.execute("SELECT annotator, COUNT(*) FROM assignments WHERE task_set = ? GROUP BY annotator",
                              (task_set,)).fetchall()
            free = sorted((n, a) for a, n in loads if a not in assigned)
            if not free:
                continue
            who = free[0][1]
            pos = c.execute("SELECT COALESCE(MAX(position), -1) + 1 FROM assignments WHERE task_set = ? AND annotator = ?",
                            (task_set, who)).fetchone()[0]
            c.execute("INSERT OR IGNORE INTO assignments (task_set, pair_id, annotator, position, kind) "
                      "VALUES (?, ?, ?, ?, 'routed')", (task_set, pair_id, who, pos))

    def undo(self, annotator: str, *, client_id: str | None = None) -> str | None:
        """Undo this annotator's latest label or skip that is not undone yet.

        Restores the state it replaced (the earlier label, or no label) and
        appends an ``undo`` event. Returns the pair id, or None when there is
        nothing to undo. A ``client_id`` already stored is a no-op (returns None).
        """
        with self._tx() as c:
            if client_id is not None and c.execute("SELECT 1 FROM events WHERE client_id = ?", (str(client_id),)).fetchone():
                return None
            ev = c.execute(
                "SELECT * FROM events e WHERE annotator = ? AND kind IN ('label', 'skip') AND NOT EXISTS "
                "(SELECT 1 FROM events u WHERE u.kind = 'undo' AND u.target = e.event_id) "
                "ORDER BY event_id DESC LIMIT 1", (annotator,)).fetchone()
            if ev is None:
                if client_id is not None:  # remember the request, so a resent copy never undoes a later label
                    c.execute("INSERT INTO events (at, kind, annotator, client_id) VALUES (?, 'undo', ?, ?)",
                              (_now(), annotator, str(client_id)))
                return None
            cur = c.execute("SELECT * FROM labels WHERE pair_id = ? AND annotator = ?", (ev["pair_id"], annotator)).fetchone()
            if ev["previous"]:
                _put_label(c, json.loads(ev["previous"]))
            else:
                c.execute("DELETE FROM labels WHERE pair_id = ? AND annotator = ?", (ev["pair_id"], annotator))
            c.execute("INSERT INTO events (at, kind, pair_id, annotator, target, previous, client_id) "
                      "VALUES (?, 'undo', ?, ?, ?, ?, ?)",
                      (_now(), ev["pair_id"], annotator, ev["event_id"], json.dumps(dict(cur)) if cur else None,
                       None if client_id is None else str(client_id)))
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
                _put_label(c, {"pair_id": pid, "annotator": annotator, "label": int(lab), "skipped": 0, "unsure": 0,
                               "note": None, "updated_at": at})
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
