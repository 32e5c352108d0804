"""The annotation database: one SQLite file that never loses an acknowledged label.

The connection (:class:`Database`, the base of :class:`berds_core.lab.store.Store`), its schema and the
migrations that upgrade an older file, and where the file lives (:func:`default_db_path`).

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
- ``check_slots``, ``check_pool``, ``pauses``, ``qualification``, ``qualification_results``: the
  round's quality controls (:mod:`berds_core.lab.round_schema`).
- ``users``, ``sessions``, ``login_attempts``, ``audit``: lab accounts (see
  :mod:`berds_core.lab.accounts`) and the log of allowed and refused actions (see
  :mod:`berds_core.lab.access`).

Durability: WAL journal, ``synchronous=FULL`` (every commit is fsynced before
it returns), a busy timeout, and one ``BEGIN IMMEDIATE`` transaction per
label, so a label is on disk once ``Store.label`` returns and concurrent
writers queue instead of failing with "database is locked". :meth:`Database.batch`
groups several writes into one transaction (all or nothing).
"""
from __future__ import annotations

import os
import sqlite3
import threading
import time
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import Iterator

from ..files.lab_folder import DEFAULT_DB, ENV_DB, default_db_path  # noqa: F401 (re-exported: where the file lives)
from .records import StoreError
from .round_schema import SCHEMA_V4, SCHEMA_V5, SCHEMA_V6

BUSY_TIMEOUT_MS = 60_000

SCHEMA_V1 = """
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
SCHEMA_V2 = """
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
SCHEMA_V3 = """
ALTER TABLE users ADD COLUMN uid TEXT;
UPDATE users SET uid = lower(hex(randomblob(16))) WHERE uid IS NULL;
CREATE UNIQUE INDEX IF NOT EXISTS users_uid ON users(uid);
ALTER TABLE sessions ADD COLUMN uid TEXT;
UPDATE sessions SET uid = (SELECT uid FROM users WHERE users.name = sessions.user) WHERE uid IS NULL
"""

# version -> SQL that upgrades from version-1; applied in order inside one transaction each.
# Version 4: gold checks placed as the round runs, paused queues, qualification rounds (lab/round_schema.py).
# Version 5: the server's time per label, the index of first answers (lab/round_schema.py).
# Version 6: each task set's pool of gold checks (lab/round_schema.py).
MIGRATIONS: dict[int, str] = {1: SCHEMA_V1, 2: SCHEMA_V2, 3: SCHEMA_V3, 4: SCHEMA_V4, 5: SCHEMA_V5, 6: SCHEMA_V6}
SCHEMA_VERSION = max(MIGRATIONS)
ASSIGNMENT_KINDS = ("task", "calibration", "routed", "check")


def create_private(path: Path) -> None:
    """Create an empty database file readable by its owner only (0600: it may hold password hashes).

    SQLite creates the WAL and shared-memory files with the database file's
    permissions, so they are private too. An existing file is left as it is.
    """
    try:
        fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
    except FileExistsError:
        return
    os.close(fd)


def now() -> str:
    """The time the store records (UTC, ISO 8601 to the millisecond): labels, events, settings, audit lines."""
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds")


class Database:
    """The connection to an annotation database: WAL, ``synchronous=FULL``, one lock, one write transaction
    at a time (:meth:`transaction`, :meth:`batch`), the schema migrated on open. Thread-safe; any number of processes
    may share the file.

    ``create=False`` refuses a path where no database exists yet (nothing is
    created, not even its folder).
    """

    def __init__(self, path=None, *, create: bool = True):
        self.path = Path(path) if path is not None else default_db_path()
        if not create and not self.path.is_file():
            raise StoreError(f"{self.path}: no annotation database here")
        # a folder made for the database is its owner's alone, like the file (an existing one is left as it is)
        self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        create_private(self.path)
        self._lock = threading.RLock()
        self._depth = 0
        self.now = now  # the clock of labels and round events (a simulated round sets its own)
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
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """One write transaction, taken up front (BEGIN IMMEDIATE) so it never deadlocks; the lab modules
        (checks, qualification, accounts, ...) write through it.

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
        return self.transaction()

    @contextmanager
    def attempt(self) -> Iterator[None]:
        """``with store.attempt(): ...`` inside a transaction: the writes inside are kept or, when it raises, undone
        alone (a SQLite savepoint), and the exception goes on; what the transaction wrote before stays (a label
        is never lost to a gold check that could not be placed in its transaction). Outside a transaction: one
        transaction of its own."""
        with self._lock:
            if not self._depth:
                with self.transaction():
                    yield
                return
            self._conn.execute("SAVEPOINT berds_attempt")
            try:
                yield
            except BaseException:
                self._conn.execute("ROLLBACK TO berds_attempt")
                self._conn.execute("RELEASE berds_attempt")
                raise
            self._conn.execute("RELEASE berds_attempt")

    def query(self, sql: str, params=()) -> list[sqlite3.Row]:
        """Rows of one read statement, under the store's lock (the lab modules' way in besides the methods)."""
        with self._lock:
            return self._conn.execute(sql, params).fetchall()

    def set_trace(self, callback) -> None:
        """Call ``callback(sql)`` for every statement this connection executes (``None``: stop); what the
        lab's statement counts (tests, benches) are measured with (``sqlite3.Connection.set_trace_callback``)."""
        with self._lock:
            self._conn.set_trace_callback(callback)

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def _migrate(self) -> None:
        with self.transaction() as c:
            c.execute("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL, applied_at TEXT NOT NULL)")
            row = c.execute("SELECT MAX(version) FROM schema_version").fetchone()
            have = row[0] or 0
            if have > SCHEMA_VERSION:
                raise StoreError(f"{self.path}: schema version {have} is newer than this program ({SCHEMA_VERSION})")
            for version in range(have + 1, SCHEMA_VERSION + 1):
                for stmt in MIGRATIONS[version].split(";"):
                    if stmt.strip():
                        c.execute(stmt)
                c.execute("INSERT INTO schema_version VALUES (?, ?)", (version, now()))

    @property
    def schema_version(self) -> int:
        return self.query("SELECT MAX(version) FROM schema_version")[0][0]


class Table:
    """One concern's statements on the annotation database, over the store's :class:`Database`: the same
    connection, lock, transactions (a write joins the caller's ``store.batch()``) and clock (``store.now``).
    :class:`berds_core.lab.store.Store` holds one of each (``store.checks``, ``store.qualification``, ...)."""

    def __init__(self, db: Database):
        self.db = db

    def query(self, sql: str, params=()) -> list[sqlite3.Row]:
        return self.db.query(sql, params)

    def transaction(self):
        return self.db.transaction()

    def now(self) -> str:
        return self.db.now()

