"""The annotation store: one SQLite file that never loses an acknowledged label (:mod:`berds_core.lab.db`: the
connection, the schema and its migrations; :mod:`berds_core.lab.records`: ``Pair``, ``Label``, ``StoreError``).

:class:`Store` is the one face every caller opens. It is composed of one class per concern, each over the same
:class:`~berds_core.lab.db.Database` (one connection, one lock, one write transaction at a time):

- :class:`PairsAndJudges`: the (passage, perspective) pairs and judges' predictions on them;
- :class:`ReferenceLabels`: labels known in advance (calibration, the pool of gold checks);
- :class:`Labelling`: labels, skips, undo, unsure pairs routed to one more annotator, imports, history, the labels'
  version (what an annotator model's fit is cached on);
- :class:`Adjudication`: the gold label of a pair;

and it holds one :class:`~berds_core.lab.db.Table` object per table group of the task sets, the settings, the round
and the accounts, with the queries each needs, over the same connection:

- ``store.tasks`` (:class:`TaskSets`): task sets, who labels which pair in which order (``create``, ``names``,
  ``info``, ``assignments``, ``queue``, ...);
- ``store.rounds`` (:class:`RoundReads`): what one request reads of an annotator's round (two statements);
- ``store.settings`` (:class:`Settings`): the project's settings (guidelines, label definitions, round controls);
- ``store.audit`` (:class:`AuditLog`): the log of allowed and refused actions;
- ``store.qualification`` (:class:`~berds_core.lab.round_tables.QualificationTables`): qualification attempts
  and results;
- ``store.checks`` (:class:`~berds_core.lab.round_tables.CheckTables`): gold checks placed in queues, their pool,
  paused queues;
- ``store.reports`` (:class:`~berds_core.lab.round_tables.ReportReads`): what the lead's reports and a simulated
  round read;
- ``store.accounts`` (:class:`~berds_core.lab.account_tables.AccountTables`): users, sessions and login attempts.

The store (these modules, :mod:`berds_core.lab.db` and its schema) holds every SQL statement on the annotation
database; the other lab modules, the CLI and the pages call its methods (``tests/test_store_owns_sql.py``).

Each label is one ``BEGIN IMMEDIATE`` transaction, on disk (WAL, ``synchronous=FULL``) once
:meth:`Labelling.label` returns; :meth:`~berds_core.lab.db.Database.batch` groups writes (all or nothing).
"""
from __future__ import annotations

import json
from typing import Iterable

from .db import SCHEMA_VERSION, Database, Table, default_db_path, now  # noqa: F401
from .account_tables import AccountTables
from .round_tables import CheckTables, QualificationTables, ReportReads
from .records import (LABEL_COLS, PAIR_COLS, SKIP, Label, Pair, StoreError, app_version,  # noqa: F401
                      check_annotator, label_of_row, ms_between, pair_of_row)

# re-exported (noqa above): callers import Store, Pair, Label, StoreError, SKIP, SCHEMA_VERSION,
# default_db_path and app_version from here, as before the split


class PairsAndJudges(Database):
    """The (passage, perspective) pairs to judge, in insertion order, and each judge's probability and label."""

    def add_pairs(self, pairs: Iterable[Pair], *, replace: bool = False) -> int:
        """Insert pairs (one transaction); existing ids are kept unless ``replace``. Returns new rows."""
        added = 0
        with self.transaction() as c:
            seq = c.execute("SELECT COALESCE(MAX(seq), 0) FROM pairs").fetchone()[0]
            verb = "INSERT OR REPLACE" if replace else "INSERT OR IGNORE"
            for p in pairs:
                seq += 1
                cur = c.execute(
                    f"{verb} INTO pairs ({', '.join(PAIR_COLS)}, seq) VALUES ({', '.join('?' * len(PAIR_COLS))}, ?)",
                    (*(getattr(p, k) for k in PAIR_COLS), seq))
                added += cur.rowcount
        return added

    def pair(self, pair_id: str) -> Pair:
        rows = self.query(f"SELECT {', '.join(PAIR_COLS)} FROM pairs WHERE pair_id = ?", (str(pair_id),))
        if not rows:
            raise StoreError(f"no pair with id {pair_id!r}")
        return pair_of_row(rows[0])

    def has_pair(self, pair_id: str) -> bool:
        return bool(self.query("SELECT 1 FROM pairs WHERE pair_id = ?", (str(pair_id),)))

    def pairs(self, pair_ids: Iterable[str] | None = None) -> list[Pair]:
        if pair_ids is None:
            rows = self.query(f"SELECT {', '.join(PAIR_COLS)} FROM pairs ORDER BY seq")
            return [pair_of_row(r) for r in rows]
        wanted = [str(p) for p in pair_ids]
        by_id = {}
        uniq = sorted(set(wanted))
        for i in range(0, len(uniq), 500):
            chunk = uniq[i:i + 500]
            rows = self.query(f"SELECT {', '.join(PAIR_COLS)} FROM pairs WHERE pair_id IN ({', '.join('?' * len(chunk))})",
                              chunk)
            by_id.update((r["pair_id"], pair_of_row(r)) for r in rows)
        return [by_id[p] for p in wanted if p in by_id]

    def count_pairs(self) -> int:
        return self.query("SELECT COUNT(*) FROM pairs")[0][0]

    def set_judge_preds(self, judge: str, preds: dict[str, tuple[float | None, int]]) -> None:
        """Store ``{pair_id: (probability or None, 0/1)}`` for ``judge`` (one transaction)."""
        with self.transaction() as c:
            c.executemany("INSERT OR REPLACE INTO judge_preds VALUES (?, ?, ?, ?)",
                          [(str(pid), judge, None if p is None else float(p), int(bool(lab)))
                           for pid, (p, lab) in preds.items()])

    def judge_preds(self, judge: str) -> dict[str, tuple[float | None, int]]:
        rows = self.query("SELECT pair_id, prob, label FROM judge_preds WHERE judge = ?", (judge,))
        return {r["pair_id"]: (r["prob"], r["label"]) for r in rows}

    def judges(self) -> list[str]:
        return [r[0] for r in self.query("SELECT DISTINCT judge FROM judge_preds ORDER BY judge")]


class ReferenceLabels(Database):
    """Labels known in advance (a paper's human labels, a demo's gold): calibration pairs and gold checks."""

    def set_reference_labels(self, labels: dict[str, int], source: str | None = None) -> int:
        """Store labels known in advance (e.g. a paper's human labels) for calibration; returns how many."""
        at = now()
        with self.transaction() as c:
            for pid, lab in labels.items():
                if lab not in (0, 1, "0", "1", True, False):
                    raise StoreError(f"reference label must be 0 or 1, got {lab!r}")
                if not c.execute("SELECT 1 FROM pairs WHERE pair_id = ?", (str(pid),)).fetchone():
                    raise StoreError(f"no pair with id {pid!r}")
                c.execute("INSERT OR REPLACE INTO reference_labels VALUES (?, ?, ?, ?)", (str(pid), int(lab), source, at))
        return len(labels)

    def reference_labels(self) -> dict[str, int]:
        return {r[0]: r[1] for r in self.query("SELECT pair_id, label FROM reference_labels")}


class Settings(Table):
    """``store.settings``: the project's settings (guidelines, label definitions, round controls, sample weights),
    one JSON value per key."""

    def get(self, key: str, default=None):
        rows = self.query("SELECT value FROM settings WHERE key = ?", (key,))
        return json.loads(rows[0][0]) if rows else default

    def set(self, key: str, value, by: str | None = None) -> None:
        with self.transaction() as c:
            c.execute("INSERT OR REPLACE INTO settings VALUES (?, ?, ?, ?)", (key, json.dumps(value), now(), by))


class AuditLog(Table):
    """``store.audit``: the log of allowed and refused actions."""

    def add(self, actor: str | None, role: str | None, action: str, target: str | None = None, *,
            allowed: bool, detail: str | None = None) -> None:
        """Append one line to the audit log (no secrets: callers pass names and actions only)."""
        with self.transaction() as c:
            c.execute("INSERT INTO audit (at, actor, role, action, target, allowed, detail) VALUES (?, ?, ?, ?, ?, ?, ?)",
                      (now(), actor, role, action, target, int(bool(allowed)), detail))

    def rows(self, *, refused_only: bool = False, limit: int | None = None) -> list[dict]:
        sql = "SELECT * FROM audit" + (" WHERE allowed = 0" if refused_only else "") + " ORDER BY id"
        rows = [dict(r) for r in self.query(sql)]
        return rows[-limit:] if limit else rows


class TaskSets(Table):
    """``store.tasks``: task sets, which annotator labels which pair, in which order. What is next and how far an
    annotator is has one answer, the round's (:func:`berds_core.lab.rounds.summary`), which counts checks and pauses."""

    def create(self, name: str, assignments: dict[str, list[str]], *, source: str | None = None,
                        strategy: str | None = None, params: dict | None = None,
                        calibration: Iterable[str] = ()) -> None:
        """Assign pairs to annotators: ``{annotator: [pair_id, ...]}`` in queue order.

        Pair ids in ``calibration`` are stored as calibration assignments (the
        annotator is not told). Re-creating an existing set appends new
        assignments after the old ones; nothing already assigned or labelled is removed.
        """
        calib = {str(p) for p in calibration}
        with self.transaction() as c:
            c.execute("INSERT OR IGNORE INTO task_sets VALUES (?, ?, ?, ?, ?)",
                      (name, source, strategy, json.dumps(params or {}), now()))
            for annotator, pids in assignments.items():
                annotator = check_annotator(annotator)
                pos = c.execute("SELECT COALESCE(MAX(position), -1) FROM assignments WHERE task_set = ? AND annotator = ?",
                                (name, annotator)).fetchone()[0]
                for pid in pids:
                    pos += 1
                    c.execute("INSERT OR IGNORE INTO assignments (task_set, pair_id, annotator, position, kind) "
                              "VALUES (?, ?, ?, ?, ?)",
                              (name, str(pid), annotator, pos, "calibration" if str(pid) in calib else "task"))

    def names(self, annotator: str | None = None) -> list[str]:
        if annotator is None:
            return [r[0] for r in self.query("SELECT name FROM task_sets ORDER BY created_at, name")]
        return [r[0] for r in self.query(
            "SELECT DISTINCT a.task_set FROM assignments a JOIN task_sets t ON t.name = a.task_set "
            "WHERE a.annotator = ? ORDER BY t.created_at, t.name", (annotator,))]

    def info(self, name: str) -> dict | None:
        rows = self.query("SELECT * FROM task_sets WHERE name = ?", (name,))
        if not rows:
            return None
        info = dict(rows[0])
        info["params"] = json.loads(info["params"] or "{}")
        return info

    def assignments(self, task_set: str | None = None) -> list[dict]:
        """Every assignment: ``task_set, pair_id, annotator, position, kind``."""
        sql = "SELECT task_set, pair_id, annotator, position, kind FROM assignments"
        rows = self.query(sql + (" WHERE task_set = ?" if task_set else "") + " ORDER BY task_set, annotator, position",
                          (task_set,) if task_set else ())
        return [dict(r) for r in rows]

    def annotators(self) -> list[str]:
        rows = self.query("SELECT annotator FROM assignments UNION SELECT annotator FROM labels ORDER BY 1")
        return [r[0] for r in rows]

    def queue(self, annotator: str, task_set: str | None = None) -> list[str]:
        """The annotator's assigned pair ids in stable order (task set creation, then position)."""
        if task_set is not None:
            rows = self.query("SELECT pair_id FROM assignments WHERE annotator = ? AND task_set = ? ORDER BY position",
                              (annotator, task_set))
        else:
            rows = self.query(
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
        return bool(self.query("SELECT 1 FROM assignments LIMIT 1"))

    def is_assigned(self, annotator: str, pair_id: str) -> bool:
        return bool(self.query("SELECT 1 FROM assignments WHERE annotator = ? AND pair_id = ? LIMIT 1",
                               (annotator, str(pair_id))))


class RoundReads(Table):
    """``store.rounds``: what one request reads of an annotator's round, in two statements
    (:mod:`berds_core.lab.round_view` builds the view the gate, the queue and the progress share)."""

    QUEUE_SQL = ("SELECT a.task_set, a.pair_id, a.kind, a.position, l.skipped FROM assignments a "
                 "JOIN task_sets t ON t.name = a.task_set LEFT JOIN labels l ON l.pair_id = a.pair_id "
                 "AND l.annotator = a.annotator WHERE a.annotator = ? ORDER BY t.created_at, t.name, a.position")
    # one row per fact, tagged: (what, task_set, a, b, c, d, e)
    STATE_SQL = (
        "SELECT 'setting', NULL, key, value, NULL, NULL, NULL FROM settings "
        "WHERE key IN ('guidelines', 'label_definitions') OR key LIKE 'round:%' "
        "UNION ALL SELECT 'pause', task_set, id, message, NULL, NULL, NULL FROM pauses "
        "WHERE annotator = :a AND resumed_at IS NULL "
        "UNION ALL SELECT 'resumed', task_set, MAX(resumed_at), NULL, NULL, NULL, NULL FROM pauses "
        "WHERE annotator = :a GROUP BY task_set "
        "UNION ALL SELECT 'qresult', task_set, attempt, passed, correct, n, retry_by FROM qualification_results "
        "WHERE annotator = :a "
        "UNION ALL SELECT 'qattempt', task_set, attempt, COUNT(*), SUM(label IS NOT NULL), "
        "SUM(CASE WHEN label IS NOT NULL AND correct THEN 1 ELSE 0 END), NULL FROM qualification "
        "WHERE annotator = :a GROUP BY task_set, attempt "
        "UNION ALL SELECT 'slot', task_set, k, NULL, NULL, NULL, NULL FROM check_slots WHERE annotator = :a "
        "UNION ALL SELECT 'seen', NULL, target, NULL, NULL, NULL, NULL FROM audit "
        "WHERE actor = :a AND action = 'judge.view' AND allowed = 1 GROUP BY target")

    def queue(self, annotator: str) -> list[tuple]:
        """``[(task_set, pair_id, kind, position, skipped or None when undecided)]`` of the annotator's
        assignments, in queue order (task set creation, name, position)."""
        return [tuple(r) for r in self.query(self.QUEUE_SQL, (annotator,))]

    def rows(self, annotator: str) -> dict:
        """Everything a request reads of the annotator's round: ``queue`` (:meth:`queue`) and ``state``,
        tagged rows of the settings (guidelines, label definitions, each set's round controls), open pauses and
        last resumes, qualification results and attempts, filled check slots, and the pairs whose judge
        answer they were shown."""
        with self.db._lock:  # no write of this process between the two reads
            queue = self.queue(annotator)
            state = [tuple(r) for r in self.query(self.STATE_SQL, {"a": annotator})]
        return {"queue": queue, "state": state}


def put_label(c, values: dict) -> None:
    """Write one ``labels`` row (the columns of :data:`~berds_core.lab.records.LABEL_COLS` that ``values`` has) on
    connection ``c`` (inside a transaction)."""
    cols = [k for k in LABEL_COLS if k in values]
    c.execute(f"INSERT OR REPLACE INTO labels ({', '.join(cols)}) VALUES ({', '.join('?' * len(cols))})",
              [values[k] for k in cols])


class Labelling(Database):
    """An annotator's decisions: label, skip, undo (each kept in the append-only history), unsure pairs
    routed to one more annotator, labels imported from a file."""

    def applied_client_ids(self, client_ids: Iterable[str]) -> set[str]:
        """Which of these browser event ids are already stored (labels, skips or undos)."""
        ids = [str(x) for x in client_ids]
        out = set()
        for i in range(0, len(ids), 500):
            chunk = ids[i:i + 500]
            rows = self.query(f"SELECT client_id FROM events WHERE client_id IN ({', '.join('?' * len(chunk))})", chunk)
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
        annotator = check_annotator(annotator)
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
        with self.transaction() as c:
            if client_id is not None:
                row = c.execute("SELECT event_id FROM events WHERE client_id = ?", (str(client_id),)).fetchone()
                if row:
                    return row[0]
            if not c.execute("SELECT 1 FROM pairs WHERE pair_id = ?", (pair_id,)).fetchone():
                raise StoreError(f"no pair with id {pair_id!r}")
            prev = c.execute("SELECT * FROM labels WHERE pair_id = ? AND annotator = ?", (pair_id, annotator)).fetchone()
            last = c.execute("SELECT at FROM events WHERE annotator = ? AND kind IN ('label', 'skip', 'undo') "
                             "ORDER BY event_id DESC LIMIT 1", (annotator,)).fetchone()
            server_ms = ms_between(last[0], at) if last else None
            put_label(c, {"pair_id": pair_id, "annotator": annotator, "label": value, "skipped": int(skipped),
                           "unsure": int(bool(unsure)), "note": note or None, "updated_at": at, "time_ms": time_ms,
                           "judge_visible": jv, "app_version": version, "server_ms": server_ms})
            cur = c.execute(
                "INSERT INTO events (at, kind, pair_id, annotator, label, unsure, note, previous, time_ms, "
                "judge_visible, app_version, client_id, server_ms) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (at, SKIP if skipped else "label", pair_id, annotator, value, int(bool(unsure)), note or None,
                 json.dumps(dict(prev)) if prev else None, time_ms, jv, version,
                 None if client_id is None else str(client_id), server_ms))
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

    def last_undoable(self, annotator: str) -> str | None:
        """The pair of this annotator's latest label or skip that is not undone yet (what :meth:`undo` would undo)."""
        ev = self.query("SELECT pair_id FROM events e WHERE annotator = ? AND kind IN ('label', 'skip') AND NOT EXISTS "
                        "(SELECT 1 FROM events u WHERE u.kind = 'undo' AND u.target = e.event_id) "
                        "ORDER BY event_id DESC LIMIT 1", (annotator,))
        return ev[0][0] if ev else None

    def undo(self, annotator: str, *, client_id: str | None = None) -> str | None:
        """Undo this annotator's latest label or skip that is not undone yet.

        Restores the state it replaced (the earlier label, or no label) and
        appends an ``undo`` event. Returns the pair id, or None when there is
        nothing to undo. A ``client_id`` already stored is a no-op (returns None).
        """
        return self.undo_restoring(annotator, client_id=client_id)[0]

    def undo_restoring(self, annotator: str, *, client_id: str | None = None) -> tuple[str | None, dict | None]:
        """:meth:`undo`, returning ``(pair id or None, the label row it restored or None when the pair is
        undecided again)``."""
        with self.transaction() as c:
            if client_id is not None and c.execute("SELECT 1 FROM events WHERE client_id = ?", (str(client_id),)).fetchone():
                return None, None
            ev = c.execute(
                "SELECT * FROM events e WHERE annotator = ? AND kind IN ('label', 'skip') AND NOT EXISTS "
                "(SELECT 1 FROM events u WHERE u.kind = 'undo' AND u.target = e.event_id) "
                "ORDER BY event_id DESC LIMIT 1", (annotator,)).fetchone()
            if ev is None:
                if client_id is not None:  # remember the request, so a resent copy never undoes a later label
                    c.execute("INSERT INTO events (at, kind, annotator, client_id) VALUES (?, 'undo', ?, ?)",
                              (self.now(), annotator, str(client_id)))
                return None, None
            cur = c.execute("SELECT * FROM labels WHERE pair_id = ? AND annotator = ?", (ev["pair_id"], annotator)).fetchone()
            if ev["previous"]:
                put_label(c, json.loads(ev["previous"]))
            else:
                c.execute("DELETE FROM labels WHERE pair_id = ? AND annotator = ?", (ev["pair_id"], annotator))
            c.execute("INSERT INTO events (at, kind, pair_id, annotator, target, previous, client_id) "
                      "VALUES (?, 'undo', ?, ?, ?, ?, ?)",
                      (self.now(), ev["pair_id"], annotator, ev["event_id"], json.dumps(dict(cur)) if cur else None,
                       None if client_id is None else str(client_id)))
            return ev["pair_id"], (json.loads(ev["previous"]) if ev["previous"] else None)

    def import_labels(self, annotator: str, labels: dict[str, int], source: str) -> int:
        """Store labels read from a file as ``annotator``'s, in one transaction (one event each).

        A decision the annotator already made is never overwritten by a file;
        returns the number of labels stored.
        """
        annotator = check_annotator(annotator)
        at = now()
        stored = 0
        with self.transaction() as c:
            for pid, lab in labels.items():
                if c.execute("SELECT 1 FROM labels WHERE pair_id = ? AND annotator = ?", (pid, annotator)).fetchone():
                    continue
                put_label(c, {"pair_id": pid, "annotator": annotator, "label": int(lab), "skipped": 0, "unsure": 0,
                               "note": None, "updated_at": at})
                c.execute("INSERT INTO events (at, kind, pair_id, annotator, label, note) VALUES (?, 'import', ?, ?, ?, ?)",
                          (at, pid, annotator, int(lab), source))
                stored += 1
        return stored

    def labels_version(self) -> tuple:
        """Changes whenever the labels an annotator model reads can change: a label, skip, undo or import (an
        event), an assignment (a check placed, a pair routed) or a label row removed."""
        row = self.query("SELECT (SELECT MAX(event_id) FROM events), (SELECT MAX(rowid) FROM assignments), "
                         "(SELECT COUNT(*) FROM assignments), (SELECT COUNT(*) FROM labels)")[0]
        return (str(self.path), *tuple(row))

    def get_label(self, annotator: str, pair_id: str) -> Label | None:
        rows = self.query("SELECT * FROM labels WHERE annotator = ? AND pair_id = ?", (annotator, str(pair_id)))
        return label_of_row(rows[0]) if rows else None

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
        return [label_of_row(r) for r in self.query(sql, params)]

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
        return [dict(r) for r in self.query(sql + " ORDER BY event_id", params)]


class Adjudication(Database):
    """The gold label of a pair, set by an adjudicator (kept in the history; a later call overrides)."""

    def adjudicate(self, pair_id: str, label: int, adjudicator: str, note: str | None = None) -> None:
        """Set the gold label of a pair (kept in history; a later call overrides); the pair joins the gold
        checks' pool of every task set that holds it, in the same transaction."""
        adjudicator = check_annotator(adjudicator)
        if label not in (0, 1, "0", "1"):
            raise StoreError(f"gold label must be 0 or 1, got {label!r}")
        label = int(label)
        at = now()
        with self.transaction() as c:
            if not c.execute("SELECT 1 FROM pairs WHERE pair_id = ?", (str(pair_id),)).fetchone():
                raise StoreError(f"no pair with id {pair_id!r}")
            prev = c.execute("SELECT * FROM gold WHERE pair_id = ?", (str(pair_id),)).fetchone()
            c.execute("INSERT OR REPLACE INTO gold VALUES (?, ?, ?, ?, ?)", (str(pair_id), label, adjudicator, note, at))
            c.execute("INSERT INTO events (at, kind, pair_id, annotator, label, note, previous) VALUES (?, 'adjudicate', ?, ?, ?, ?, ?)",
                      (at, str(pair_id), adjudicator, label, note, json.dumps(dict(prev)) if prev else None))
            self.checks.join_pools([pair_id], "adjudicated")  # a gold check of the sets that hold it (CheckTables)

    def gold(self) -> dict[str, int]:
        return {r["pair_id"]: r["label"] for r in self.query("SELECT pair_id, label FROM gold")}


class Store(PairsAndJudges, ReferenceLabels, Labelling, Adjudication):
    """An annotation database (:class:`~berds_core.lab.db.Database`): the pairs, the judges' answers, the labels
    and the gold as its own methods, and the task sets', settings', round's and accounts' tables as
    :class:`~berds_core.lab.db.Table` objects over the same connection: :attr:`tasks`, :attr:`rounds`, :attr:`settings`,
    :attr:`audit`, :attr:`qualification`, :attr:`checks`, :attr:`reports`, :attr:`accounts`.
    Thread-safe; any number of processes may share the file.

    ``create=False`` refuses a path where no database exists yet (nothing is
    created, not even its folder).
    """

    def __init__(self, path=None, *, create: bool = True):
        super().__init__(path, create=create)
        self.tasks = TaskSets(self)
        self.rounds = RoundReads(self)
        self.settings = Settings(self)
        self.audit = AuditLog(self)
        self.qualification = QualificationTables(self)
        self.checks = CheckTables(self)
        self.reports = ReportReads(self)
        self.accounts = AccountTables(self)
