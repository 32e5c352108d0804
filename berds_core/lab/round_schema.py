"""Schema version 4 of the annotation store: the round's quality controls.

Kept apart from :mod:`berds_core.lab.store` (which applies it as one more
migration, in one transaction, adding tables only: nothing of a version 2
file is changed or lost):

- ``check_slots``: where each annotator's gold checks go. Slot ``k`` of an
  annotator in a task set is filled with a pair whose answer is known
  (``placed``; the pair is then an assignment of kind ``check``), or was left
  empty because no unseen pair with a known answer was left (``dry``), or
  because the annotator had already passed that point (``missed``).
- ``pauses``: an annotator's queue in a task set paused (by the checks or by
  the lead), with the message shown to them and the one shown to the lead;
  resuming fills ``resumed_at`` / ``resumed_by`` (rows are never deleted).
- ``qualification`` / ``qualification_results``: the gold pairs of each
  qualification attempt, the annotator's answers, and the outcome.

Version 5 (:data:`SCHEMA_V5`): ``server_ms`` beside the browser's ``time_ms`` on labels and events (the time
per label measured on the server: since the annotator's previous decision), and an index that finds an
annotator's first answer to a pair (a gold check is scored on it: undo never removes it).
"""

SCHEMA_V4 = """
CREATE TABLE IF NOT EXISTS check_slots (
    task_set  TEXT NOT NULL,
    annotator TEXT NOT NULL,
    k         INTEGER NOT NULL,
    pair_id   TEXT REFERENCES pairs(pair_id),
    state     TEXT NOT NULL CHECK (state IN ('placed', 'dry', 'missed')),
    at        TEXT NOT NULL,
    PRIMARY KEY (task_set, annotator, k)
);
CREATE TABLE IF NOT EXISTS pauses (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    task_set     TEXT NOT NULL,
    annotator    TEXT NOT NULL,
    at           TEXT NOT NULL,
    reason       TEXT NOT NULL CHECK (reason IN ('checks', 'lead')),
    message      TEXT NOT NULL,
    lead_message TEXT NOT NULL,
    accuracy     REAL,
    checks       INTEGER,
    resumed_at   TEXT,
    resumed_by   TEXT,
    resume_note  TEXT
);
CREATE INDEX IF NOT EXISTS pauses_open ON pauses(task_set, annotator, resumed_at);
CREATE TABLE IF NOT EXISTS qualification (
    task_set  TEXT NOT NULL,
    annotator TEXT NOT NULL,
    attempt   INTEGER NOT NULL,
    position  INTEGER NOT NULL,
    pair_id   TEXT NOT NULL REFERENCES pairs(pair_id),
    expected  INTEGER NOT NULL CHECK (expected IN (0, 1)),
    label     INTEGER CHECK (label IN (0, 1)),
    correct   INTEGER,
    at        TEXT,
    time_ms   INTEGER,
    PRIMARY KEY (task_set, annotator, attempt, position)
);
CREATE TABLE IF NOT EXISTS qualification_results (
    task_set   TEXT NOT NULL,
    annotator  TEXT NOT NULL,
    attempt    INTEGER NOT NULL,
    passed     INTEGER NOT NULL,
    correct    INTEGER NOT NULL,
    n          INTEGER NOT NULL,
    at         TEXT NOT NULL,
    retry_by   TEXT,
    retry_at   TEXT,
    PRIMARY KEY (task_set, annotator, attempt)
);
"""

SCHEMA_V5 = """
ALTER TABLE labels ADD COLUMN server_ms INTEGER;
ALTER TABLE events ADD COLUMN server_ms INTEGER;
CREATE INDEX IF NOT EXISTS events_by_pair ON events(annotator, pair_id, kind, event_id);
"""
