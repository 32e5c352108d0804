"""The store's statements on a round's quality-control tables (:mod:`berds_core.lab.round_schema`) and on what
the lead's reports read of a round, three of the tables :class:`berds_core.lab.store.Store` holds:
:class:`QualificationTables` (``store.qualification``: ``qualification``, ``qualification_results``),
:class:`CheckTables` (``store.checks``: ``check_slots``, checks among the assignments, their pool, ``pauses``) and
:class:`ReportReads` (``store.reports``: decisions still standing, who has which pair in a task set), each a
:class:`~berds_core.lab.db.Table` over the store's connection. :mod:`berds_core.lab.qualification`,
:mod:`berds_core.lab.checks`, :mod:`berds_core.lab.health`, :mod:`berds_core.lab.reliability` and
:mod:`berds_core.lab.simulate` decide (draw, place, score, pause, report); these read and write. A write joins the caller's transaction (``store.batch()``)
when there is one.
"""
from __future__ import annotations

from .db import Table
from .round_schema import STRATUM_SQL

JUDGED_SQL = ("({p}.judge_prob IS NOT NULL OR EXISTS (SELECT 1 FROM judge_preds j WHERE j.pair_id = {p}.pair_id))")


class QualificationTables(Table):
    """Qualification attempts (one row per pair drawn) and their results, per task set and annotator."""

    def results(self, task_set: str, annotator: str) -> list[dict]:
        return [dict(r) for r in self.query("SELECT * FROM qualification_results WHERE task_set = ? AND annotator = ? "
                                            "ORDER BY attempt", (task_set, annotator))]

    def result(self, task_set: str, annotator: str, attempt: int) -> dict | None:
        rows = self.query("SELECT * FROM qualification_results WHERE task_set = ? AND annotator = ? AND attempt = ?",
                          (task_set, annotator, int(attempt)))
        return dict(rows[0]) if rows else None

    def items(self, task_set: str, annotator: str, attempt: int) -> list[dict]:
        return [dict(r) for r in self.query("SELECT * FROM qualification WHERE task_set = ? AND annotator = ? AND "
                                            "attempt = ? ORDER BY position", (task_set, annotator, int(attempt)))]

    def item(self, task_set: str, annotator: str, attempt: int, position: int) -> dict | None:
        rows = self.query("SELECT * FROM qualification WHERE task_set = ? AND annotator = ? AND attempt = ? AND "
                          "position = ?", (task_set, annotator, int(attempt), int(position)))
        return dict(rows[0]) if rows else None

    def latest_attempt(self, task_set: str, annotator: str) -> int:
        rows = self.query("SELECT MAX(attempt) FROM qualification WHERE task_set = ? AND annotator = ?",
                          (task_set, annotator))
        return rows[0][0] or 0

    def has_items(self, task_set: str) -> bool:
        return bool(self.query("SELECT 1 FROM qualification WHERE task_set = ? LIMIT 1", (task_set,)))

    def add_item(self, task_set: str, annotator: str, attempt: int, position: int, pair_id: str,
                               expected: int) -> None:
        with self.transaction() as c:
            c.execute("INSERT INTO qualification (task_set, annotator, attempt, position, pair_id, expected) "
                      "VALUES (?, ?, ?, ?, ?, ?)", (task_set, annotator, int(attempt), int(position), pair_id, expected))

    def answer_item(self, task_set: str, annotator: str, attempt: int, position: int, label: int,
                                  correct: bool, time_ms: int | None) -> None:
        """Store the first answer to an item (the caller checks that it has none yet)."""
        with self.transaction() as c:
            c.execute("UPDATE qualification SET label = ?, correct = ?, at = ?, time_ms = ? WHERE task_set = ? AND "
                      "annotator = ? AND attempt = ? AND position = ?",
                      (int(label), int(bool(correct)), self.now(), time_ms, task_set, annotator, int(attempt),
                       int(position)))

    def add_result(self, task_set: str, annotator: str, attempt: int, passed: bool, correct: int,
                                 n: int) -> None:
        with self.transaction() as c:
            c.execute("INSERT INTO qualification_results (task_set, annotator, attempt, passed, correct, n, at) "
                      "VALUES (?, ?, ?, ?, ?, ?, ?)", (task_set, annotator, int(attempt), int(bool(passed)), int(correct),
                                                       int(n), self.now()))

    def allow_retry(self, task_set: str, annotator: str, attempt: int, by: str) -> None:
        with self.transaction() as c:
            c.execute("UPDATE qualification_results SET retry_by = ?, retry_at = ? WHERE task_set = ? AND annotator = ? "
                      "AND attempt = ?", (by, self.now(), task_set, annotator, int(attempt)))

    def set_annotators(self, task_set: str) -> list[str]:
        """Everyone with a queue in the task set."""
        return [r[0] for r in self.query("SELECT DISTINCT annotator FROM assignments WHERE task_set = ? ORDER BY 1",
                                         (task_set,))]

    def answer_rows(self, task_set: str | None = None) -> list:
        """Every qualification item with its pair's text and its attempt's outcome (``attempt_passed``)."""
        sql = ("SELECT q.*, r.passed AS attempt_passed, p.question, p.perspective, p.document, p.title FROM "
               "qualification q JOIN pairs p ON p.pair_id = q.pair_id LEFT JOIN qualification_results r ON "
               "r.task_set = q.task_set AND r.annotator = q.annotator AND r.attempt = q.attempt")
        return self.query(sql + (" WHERE q.task_set = ?" if task_set else "") + " ORDER BY q.task_set, q.annotator, "
                          "q.attempt, q.position", (task_set,) if task_set else ())


class CheckTables(Table):
    """Gold checks placed in queues (``check_slots``, assignments of kind ``check``), the pool they are drawn
    from, and the pauses of queues (``pauses``)."""

    def reference_label_rows(self) -> list:
        """``pair_id, label, source`` of every reference label (a dataset's gold, typed answers)."""
        return self.query("SELECT pair_id, label, source FROM reference_labels")

    def add_to_pool(self, task_set: str, pair_ids, source: str) -> int:
        """Put pairs into the task set's pool of gold checks (with their stratum in the set); returns how many
        were new there."""
        ids = sorted({str(p) for p in pair_ids})
        added = 0
        with self.transaction() as c:
            for pid in ids:
                added += c.execute(
                    "INSERT OR IGNORE INTO check_pool (task_set, pair_id, stratum, source, at) SELECT t.name, "
                    f"p.pair_id, {STRATUM_SQL.format(t='t', p='p')}, ?, ? FROM task_sets t JOIN pairs p ON "
                    "p.pair_id = ? WHERE t.name = ?", (source, self.now(), pid, task_set)).rowcount
        return added

    def join_pools(self, pair_ids, source: str) -> list[str]:
        """Put pairs into the pool of every task set that holds them (as a task of anyone's, or in its pool
        already): an adjudicated label or a typed answer becomes a check of the same round. Returns the sets."""
        sets: set[str] = set()
        with self.transaction() as c:
            for pid in sorted({str(p) for p in pair_ids}):
                for (ts,) in c.execute("SELECT DISTINCT task_set FROM assignments WHERE pair_id = ? AND kind != "
                                       "'check' UNION SELECT task_set FROM check_pool WHERE pair_id = ?",
                                       (pid, pid)).fetchall():
                    sets.add(ts)
                    self.add_to_pool(ts, [pid], source)
        return sorted(sets)

    def known_answer_texts(self) -> list:
        """``question, document, perspective, answer`` of every pair with a known answer (an adjudication over a
        reference label): what a task set's candidates are matched against when their ids differ."""
        return self.query("SELECT p.question, p.document, p.perspective, COALESCE(g.label, r.label) AS answer FROM "
                          "pairs p LEFT JOIN gold g ON g.pair_id = p.pair_id LEFT JOIN reference_labels r ON "
                          "r.pair_id = p.pair_id WHERE COALESCE(g.label, r.label) IS NOT NULL")

    def pool_counts(self, task_set: str | None = None) -> dict[str, int]:
        """``{task_set: pairs in its pool of gold checks}`` (those with a known answer)."""
        sql = ("SELECT c.task_set, COUNT(*) FROM check_pool c WHERE (EXISTS (SELECT 1 FROM gold g WHERE g.pair_id = "
               "c.pair_id) OR EXISTS (SELECT 1 FROM reference_labels r WHERE r.pair_id = c.pair_id))")
        rows = self.query(sql + (" AND c.task_set = ?" if task_set else "") + " GROUP BY c.task_set",
                          (task_set,) if task_set else ())
        return {r[0]: r[1] for r in rows}

    def candidates(self, task_set: str, annotator: str) -> list:
        """``pair_id, answer, stratum, judged`` of the pairs of the set's check pool with a known answer (an
        adjudication over a reference label) that the annotator was never given, labelled or qualified on, by
        pair id: one statement over the set's pool (its primary key), whatever the store's number of reference
        labels."""
        return self.query(
            "SELECT c.pair_id, COALESCE(g.label, r.label) AS answer, c.stratum, "
            f"{JUDGED_SQL.format(p='p')} AS judged FROM check_pool c JOIN pairs p ON p.pair_id = c.pair_id "
            "LEFT JOIN gold g ON g.pair_id = c.pair_id LEFT JOIN reference_labels r ON r.pair_id = c.pair_id "
            "WHERE c.task_set = :ts AND COALESCE(g.label, r.label) IS NOT NULL AND c.pair_id NOT IN "
            "(SELECT pair_id FROM assignments WHERE annotator = :a UNION SELECT pair_id FROM labels WHERE "
            "annotator = :a UNION SELECT pair_id FROM qualification WHERE annotator = :a) ORDER BY c.pair_id",
            {"ts": task_set, "a": annotator})

    def pair_traits(self, task_set: str, pair_id: str):
        """``stratum, judged, strategy`` of a pair in a task set: its stratum as the set's queue was stratified,
        whether a judge answer is stored for it (what the reveal after deciding shows), the set's strategy."""
        rows = self.query(f"SELECT {STRATUM_SQL.format(t='t', p='p')} AS stratum, {JUDGED_SQL.format(p='p')} AS "
                          "judged, t.strategy FROM task_sets t JOIN pairs p ON p.pair_id = ? WHERE t.name = ?",
                          (str(pair_id), task_set))
        return rows[0] if rows else None

    def task_pairs(self, task_set: str, annotator: str) -> list[str]:
        """The annotator's pairs in the set that are not checks."""
        return [r[0] for r in self.query("SELECT pair_id FROM assignments WHERE task_set = ? AND annotator = ? AND "
                                         "kind != 'check'", (task_set, annotator))]

    def pairs_seen_by(self, annotator: str) -> set[str]:
        """Every pair the annotator was given or labelled, and their qualification pairs."""
        rows = self.query("SELECT pair_id FROM assignments WHERE annotator = ? UNION SELECT pair_id FROM labels "
                          "WHERE annotator = ? UNION SELECT pair_id FROM qualification WHERE annotator = ?",
                          (annotator, annotator, annotator))
        return {r[0] for r in rows}

    def queue_rows(self, task_set: str, annotator: str) -> list:
        """``pair_id, kind, position`` of the annotator's assignments in the set, in queue order."""
        return self.query("SELECT pair_id, kind, position FROM assignments WHERE task_set = ? AND annotator = ? "
                          "ORDER BY position", (task_set, annotator))

    def decided_by(self, annotator: str) -> set[str]:
        """The pairs the annotator labelled or skipped."""
        return {r[0] for r in self.query("SELECT pair_id FROM labels WHERE annotator = ?", (annotator,))}

    def sets_giving(self, annotator: str, pair_id: str) -> list[str]:
        """The task sets that give this pair to the annotator."""
        return [r[0] for r in self.query("SELECT DISTINCT task_set FROM assignments WHERE annotator = ? AND "
                                         "pair_id = ?", (annotator, str(pair_id)))]

    def slots_done(self, task_set: str, annotator: str) -> set[int]:
        """The check slots (``k``) filled, dry or missed for the annotator in the set."""
        return {r[0] for r in self.query("SELECT k FROM check_slots WHERE task_set = ? AND annotator = ?",
                                         (task_set, annotator))}

    def mark_slot(self, task_set: str, annotator: str, k: int, state: str, at: str) -> None:
        """A slot with no check in it: ``missed`` (the annotator was past it) or ``dry`` (no pair left)."""
        with self.transaction() as c:
            c.execute("INSERT INTO check_slots VALUES (?, ?, ?, NULL, ?, ?)", (task_set, annotator, k, state, at))

    def place(self, task_set: str, annotator: str, k: int, pair_id: str, position: int,
                    instead_of: str | None, end: int, at: str) -> None:
        """Put a check (slot ``k``) at ``position`` of the annotator's queue in the set, where their item
        ``instead_of`` was, which moves to ``end`` (a position after every other; ``instead_of`` None: the
        check goes at ``position``, the end). Writes only: the caller read the queue in this transaction."""
        with self.transaction() as c:
            if instead_of is not None:
                c.execute("UPDATE assignments SET position = ? WHERE task_set = ? AND annotator = ? AND pair_id = ?",
                          (end, task_set, annotator, instead_of))
            c.execute("INSERT INTO assignments (task_set, pair_id, annotator, position, kind) "
                      "VALUES (?, ?, ?, ?, 'check')", (task_set, pair_id, annotator, position))
            c.execute("INSERT INTO check_slots VALUES (?, ?, ?, ?, 'placed', ?)", (task_set, annotator, k, pair_id, at))

    def slot_count(self, task_set: str, annotator: str) -> int:
        return self.query("SELECT COUNT(*) FROM check_slots WHERE task_set = ? AND annotator = ?",
                          (task_set, annotator))[0][0]

    def slot_state_counts(self, task_set: str | None = None) -> list:
        """``(annotator, state, count)`` of the check slots (one task set, or all)."""
        sql = "SELECT annotator, state, COUNT(*) FROM check_slots" + (" WHERE task_set = ?" if task_set else "")
        return self.query(sql + " GROUP BY annotator, state", (task_set,) if task_set else ())

    def open_pause(self, task_set: str, annotator: str) -> dict | None:
        rows = self.query("SELECT * FROM pauses WHERE task_set = ? AND annotator = ? AND resumed_at IS NULL "
                          "ORDER BY id DESC LIMIT 1", (task_set, annotator))
        return dict(rows[0]) if rows else None

    def pause_rows(self, *, open_only: bool = False, annotator: str | None = None) -> list[dict]:
        sql, cond, params = "SELECT * FROM pauses", [], []
        if open_only:
            cond.append("resumed_at IS NULL")
        if annotator is not None:
            cond.append("annotator = ?")
            params.append(annotator)
        if cond:
            sql += " WHERE " + " AND ".join(cond)
        return [dict(r) for r in self.query(sql + " ORDER BY id", params)]

    def add_pause(self, task_set: str, annotator: str, *, reason: str, message: str, lead_message: str,
                  accuracy: float | None, checks: int | None) -> int:
        with self.transaction() as c:
            cur = c.execute("INSERT INTO pauses (task_set, annotator, at, reason, message, lead_message, accuracy, "
                            "checks) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                            (task_set, annotator, self.now(), reason, message, lead_message, accuracy, checks))
            return cur.lastrowid

    def end_pause(self, pause_id: int, by: str, note: str | None) -> None:
        with self.transaction() as c:
            c.execute("UPDATE pauses SET resumed_at = ?, resumed_by = ?, resume_note = ? WHERE id = ?",
                      (self.now(), by, note, pause_id))

    def last_resume(self, task_set: str, annotator: str) -> str | None:
        return self.query("SELECT MAX(resumed_at) FROM pauses WHERE task_set = ? AND annotator = ?",
                          (task_set, annotator))[0][0]

    def answer_rows(self, annotator: str | None = None, task_set: str | None = None) -> list:
        """Rows of the decided gold checks and calibration pairs (``task_set, annotator, pair_id, kind, label,
        skipped, at, time_ms, server_ms, seq, expected``), each with its first decision (``seq``: its event; a
        skip is a decision, label NULL) where the history has one, in the order they were decided;
        :func:`berds_core.lab.checks.check_answers` keeps the first."""
        sql = ("SELECT a.task_set, a.annotator, a.pair_id, a.kind, "
               "CASE WHEN e.event_id IS NULL THEN l.label ELSE e.label END AS label, "
               "CASE WHEN e.event_id IS NULL THEN l.skipped ELSE e.kind = 'skip' END AS skipped, "
               "COALESCE(e.at, l.updated_at) AS at, COALESCE(e.time_ms, l.time_ms) AS time_ms, "
               "COALESCE(e.server_ms, l.server_ms) AS server_ms, COALESCE(e.event_id, 0) AS seq, "
               "COALESCE(g.label, r.label) AS expected FROM assignments a "
               "LEFT JOIN events e ON e.event_id = (SELECT MIN(x.event_id) FROM events x WHERE x.annotator = "
               "a.annotator AND x.pair_id = a.pair_id AND x.kind IN ('label', 'skip')) "
               "LEFT JOIN labels l ON l.pair_id = a.pair_id AND l.annotator = a.annotator "
               "LEFT JOIN gold g ON g.pair_id = a.pair_id LEFT JOIN reference_labels r ON r.pair_id = a.pair_id "
               "WHERE a.kind IN ('check', 'calibration') AND COALESCE(g.label, r.label) IS NOT NULL "
               "AND (e.event_id IS NOT NULL OR l.pair_id IS NOT NULL)")  # a label without its event: an older file
        params: list = []
        if annotator is not None:
            sql += " AND a.annotator = ?"
            params.append(annotator)
        if task_set is not None:
            sql += " AND a.task_set = ?"
            params.append(task_set)
        return self.query(sql + " ORDER BY seq, at, a.annotator", params)


class ReportReads(Table):
    """What the lead's reports read of the round (:mod:`berds_core.lab.health`, :mod:`berds_core.lab.reliability`)
    and a simulated round asks of a queue (:mod:`berds_core.lab.simulate`): decisions still standing, who has which
    pair in a task set."""

    def standing_decisions(self) -> list:
        """``annotator, at, pair_id`` of every label and skip in the history that no undo took back, in order."""
        return self.query("SELECT e.annotator, e.at, e.pair_id FROM events e WHERE e.kind IN ('label', 'skip') AND "
                          "NOT EXISTS (SELECT 1 FROM events u WHERE u.kind = 'undo' AND u.target = e.event_id) "
                          "ORDER BY e.event_id")

    def assigned_annotators(self, task_set: str | None = None) -> list[str]:
        """Everyone with an assignment (in one task set, or in any), by name."""
        return [r[0] for r in self.query("SELECT DISTINCT annotator FROM assignments" +
                                         (" WHERE task_set = ?" if task_set else "") + " ORDER BY 1",
                                         (task_set,) if task_set else ())]

    def set_pairs(self, task_set: str, *, tasks_only: bool = False) -> set[str]:
        """The pairs assigned in a task set (``tasks_only``: leaving out gold checks and calibration pairs)."""
        sql = "SELECT pair_id FROM assignments WHERE task_set = ?"
        return {r[0] for r in self.query(sql + (" AND kind NOT IN ('check', 'calibration')" if tasks_only else ""),
                                         (task_set,))}

    def set_pair_annotators(self, task_set: str) -> set[tuple[str, str]]:
        """``(pair_id, annotator)`` of every assignment in a task set."""
        return {(r[0], r[1]) for r in self.query("SELECT pair_id, annotator FROM assignments WHERE task_set = ?",
                                                 (task_set,))}

    def assignment_kinds(self) -> dict[tuple[str, str], set[str]]:
        """``{(pair_id, annotator): {kind, ...}}`` over every task set."""
        kinds: dict[tuple[str, str], set[str]] = {}
        for r in self.query("SELECT pair_id, annotator, kind, task_set FROM assignments"):  # the fits' first read
            kinds.setdefault((r[0], r[1]), set()).add(r[2])
        return kinds

    def is_check_for(self, annotator: str, pair_id: str) -> bool:
        """Whether the pair is a gold check or a calibration pair in any of the annotator's queues."""
        return bool(self.query("SELECT 1 FROM assignments WHERE pair_id = ? AND annotator = ? AND "
                               "kind IN ('check', 'calibration')", (str(pair_id), annotator)))
