"""The store's statements on a round's qualification tables (``qualification``, ``qualification_results``,
:mod:`berds_core.lab.round_schema`): :class:`QualificationTables`, one of the classes
:class:`berds_core.lab.store.Store` is composed of. :mod:`berds_core.lab.qualification` decides (draws,
scores, passes); these read and write. A write joins the caller's transaction (``store.batch()``) when
there is one.
"""
from __future__ import annotations

from .db import Database


class QualificationTables(Database):
    """Qualification attempts (one row per pair drawn) and their results, per task set and annotator."""

    def qualification_results(self, task_set: str, annotator: str) -> list[dict]:
        return [dict(r) for r in self.query("SELECT * FROM qualification_results WHERE task_set = ? AND annotator = ? "
                                            "ORDER BY attempt", (task_set, annotator))]

    def qualification_result(self, task_set: str, annotator: str, attempt: int) -> dict | None:
        rows = self.query("SELECT * FROM qualification_results WHERE task_set = ? AND annotator = ? AND attempt = ?",
                          (task_set, annotator, int(attempt)))
        return dict(rows[0]) if rows else None

    def qualification_items(self, task_set: str, annotator: str, attempt: int) -> list[dict]:
        return [dict(r) for r in self.query("SELECT * FROM qualification WHERE task_set = ? AND annotator = ? AND "
                                            "attempt = ? ORDER BY position", (task_set, annotator, int(attempt)))]

    def qualification_item(self, task_set: str, annotator: str, attempt: int, position: int) -> dict | None:
        rows = self.query("SELECT * FROM qualification WHERE task_set = ? AND annotator = ? AND attempt = ? AND "
                          "position = ?", (task_set, annotator, int(attempt), int(position)))
        return dict(rows[0]) if rows else None

    def latest_qualification_attempt(self, task_set: str, annotator: str) -> int:
        rows = self.query("SELECT MAX(attempt) FROM qualification WHERE task_set = ? AND annotator = ?",
                          (task_set, annotator))
        return rows[0][0] or 0

    def has_qualification_items(self, task_set: str) -> bool:
        return bool(self.query("SELECT 1 FROM qualification WHERE task_set = ? LIMIT 1", (task_set,)))

    def add_qualification_item(self, task_set: str, annotator: str, attempt: int, position: int, pair_id: str,
                               expected: int) -> None:
        with self.transaction() as c:
            c.execute("INSERT INTO qualification (task_set, annotator, attempt, position, pair_id, expected) "
                      "VALUES (?, ?, ?, ?, ?, ?)", (task_set, annotator, int(attempt), int(position), pair_id, expected))

    def answer_qualification_item(self, task_set: str, annotator: str, attempt: int, position: int, label: int,
                                  correct: bool, time_ms: int | None) -> None:
        """Store the first answer to an item (the caller checks that it has none yet)."""
        with self.transaction() as c:
            c.execute("UPDATE qualification SET label = ?, correct = ?, at = ?, time_ms = ? WHERE task_set = ? AND "
                      "annotator = ? AND attempt = ? AND position = ?",
                      (int(label), int(bool(correct)), self.now(), time_ms, task_set, annotator, int(attempt),
                       int(position)))

    def add_qualification_result(self, task_set: str, annotator: str, attempt: int, passed: bool, correct: int,
                                 n: int) -> None:
        with self.transaction() as c:
            c.execute("INSERT INTO qualification_results (task_set, annotator, attempt, passed, correct, n, at) "
                      "VALUES (?, ?, ?, ?, ?, ?, ?)", (task_set, annotator, int(attempt), int(bool(passed)), int(correct),
                                                       int(n), self.now()))

    def allow_qualification_retry(self, task_set: str, annotator: str, attempt: int, by: str) -> None:
        with self.transaction() as c:
            c.execute("UPDATE qualification_results SET retry_by = ?, retry_at = ? WHERE task_set = ? AND annotator = ? "
                      "AND attempt = ?", (by, self.now(), task_set, annotator, int(attempt)))

    def set_annotators(self, task_set: str) -> list[str]:
        """Everyone with a queue in the task set."""
        return [r[0] for r in self.query("SELECT DISTINCT annotator FROM assignments WHERE task_set = ? ORDER BY 1",
                                         (task_set,))]

    def qualification_answer_rows(self, task_set: str | None = None) -> list:
        """Every qualification item with its pair's text and its attempt's outcome (``attempt_passed``)."""
        sql = ("SELECT q.*, r.passed AS attempt_passed, p.question, p.perspective, p.document, p.title FROM "
               "qualification q JOIN pairs p ON p.pair_id = q.pair_id LEFT JOIN qualification_results r ON "
               "r.task_set = q.task_set AND r.annotator = q.annotator AND r.attempt = q.attempt")
        return self.query(sql + (" WHERE q.task_set = ?" if task_set else "") + " ORDER BY q.task_set, q.annotator, "
                          "q.attempt, q.position", (task_set,) if task_set else ())
