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

Version 6 (:data:`SCHEMA_V6`): ``check_pool``, the pairs each task set's gold checks are drawn from, with their
stratum (the set's ``by``: subset or retriever). Built with the task set from its own candidates (the same
distribution as its task pairs); adjudicated labels and answers a lead types join the pool of every set that
holds the pair. A check is drawn from it with one statement whose work does not grow with the store's reference
labels (:meth:`berds_core.lab.round_tables.CheckTables.candidates`). Upgrading a file gives each task set
with gold checks or a qualification the pool it drew from before: every known answer outside its tasks.
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

# The stratum of a pair in a task set, as the set's queue was stratified (``params.by``: subset or retriever)
STRATUM_SQL = ("COALESCE(CASE WHEN json_extract({t}.params, '$.by') = 'retriever' THEN {p}.retriever "
               "ELSE {p}.subset END, '(none)')")

SCHEMA_V6 = """
CREATE TABLE IF NOT EXISTS check_pool (
    task_set TEXT NOT NULL,
    pair_id  TEXT NOT NULL REFERENCES pairs(pair_id),
    stratum  TEXT NOT NULL,
    source   TEXT NOT NULL,
    at       TEXT NOT NULL,
    PRIMARY KEY (task_set, pair_id)
);
INSERT OR IGNORE INTO check_pool (task_set, pair_id, stratum, source, at)
SELECT t.name, k.pair_id, """ + STRATUM_SQL.format(t="t", p="p") + """, 'upgrade', strftime('%Y-%m-%dT%H:%M:%f+00:00', 'now')
FROM task_sets t JOIN settings s ON s.key = 'round:' || t.name
JOIN (SELECT pair_id FROM reference_labels UNION SELECT pair_id FROM gold) k
JOIN pairs p ON p.pair_id = k.pair_id
WHERE (json_extract(s.value, '$.check_rate') > 0 OR json_extract(s.value, '$.qualification_n') > 0)
AND NOT EXISTS (SELECT 1 FROM assignments a WHERE a.task_set = t.name AND a.pair_id = k.pair_id AND a.kind != 'check')
"""
