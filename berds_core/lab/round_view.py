"""One annotator's round as one request sees it: read once (two statements of the store), then asked by the gate,
the queue and the progress.

:meth:`store.rounds.rows <berds_core.lab.store.RoundReads.rows>` reads the annotator's assignments (with whether each pair is
decided) and their round's state (settings, pauses, qualification, check slots, judge answers shown);
:class:`RoundView` answers from those rows what :mod:`berds_core.lab.rounds` serves: each task set's state
(``open``, ``qualify``, ``failed``, ``paused``), the undecided queue, the progress with the check slots still
to come, why a label is refused. A request that writes (a label, an undo, a check placed) updates the view
with what it wrote, so the rest of the request reads no more.
"""
from __future__ import annotations

import json
from collections import defaultdict

from .checks import ANNOTATOR_MESSAGE, slot_points
from .controls import PREFIX, RoundControls, controls_of
from .qualification import status_of

OPEN = "open"
REFUSALS = {"paused": "your queue in this round is paused", "qualify": "this task set starts with its qualification",
            "failed": "this task set needs its qualification first"}


class RoundView:
    """What one request knows of ``annotator``'s round (see the module docstring)."""

    def __init__(self, annotator: str, rows: dict):
        self.annotator = annotator
        self.settings: dict[str, object] = {}
        self.pauses: dict[str, dict] = {}
        self.resumed: dict[str, str | None] = {}
        self.results: dict[str, list[dict]] = defaultdict(list)
        self.attempts: dict[str, dict[int, dict]] = defaultdict(dict)
        self.slots: dict[str, set[int]] = defaultdict(set)
        self.judge_seen: set[str] = set()
        for what, ts, a, b, c, d, e in rows["state"]:
            if what == "setting":
                self.settings[a] = json.loads(b)
            elif what == "pause":
                self.pauses[ts] = {"id": a, "message": b}
            elif what == "resumed":
                self.resumed[ts] = a
            elif what == "qresult":
                self.results[ts].append({"attempt": a, "passed": b, "correct": c, "n": d, "retry_by": e})
            elif what == "qattempt":
                self.attempts[ts][a] = {"n": b, "answered": c or 0, "correct": d or 0}
            elif what == "slot":
                self.slots[ts].add(a)
            elif what == "seen":
                self.judge_seen.add(a)
        for r in self.results.values():
            r.sort(key=lambda x: x["attempt"])
        self.set_queue(rows["queue"])
        self._states: dict[str, dict] = {}

    # ---- what was read ----

    def set_queue(self, rows) -> None:
        """The assignments (``store.rounds.queue``), e.g. again after checks were placed."""
        self.sets: list[str] = []
        self.rows: dict[str, list[tuple[str, str]]] = defaultdict(list)  # task set -> [(pair, kind)] in order
        self.decided: dict[str, bool] = {}  # pair -> skipped, for the pairs of the queue
        for ts, pid, kind, _pos, skipped in rows:
            if ts not in self.rows:
                self.sets.append(ts)
            self.rows[ts].append((pid, kind))
            if skipped is not None:
                self.decided[pid] = bool(skipped)

    def replace_rows(self, task_set: str, rows: list[tuple[str, str]]) -> None:
        """The set's queue, ``[(pair, kind)]`` in order, as a write of this request left it (checks placed)."""
        if task_set not in self.rows:
            self.sets.append(task_set)
        self.rows[task_set] = list(rows)

    def controls(self, task_set: str) -> RoundControls:
        return controls_of(self.settings.get(PREFIX + task_set))

    def guidelines(self, defaults: dict) -> dict:
        defs = dict(defaults)
        defs.update(self.settings.get("label_definitions") or {})
        return {"text": self.settings.get("guidelines") or "", "definitions": defs}

    # ---- the gate ----

    def state(self, task_set: str) -> dict:
        """``{task_set, state, message}`` (from what was read: qualification and open pause)."""
        if task_set not in self._states:
            att = self.attempts.get(task_set, {})
            latest = max(att, default=0)
            q = status_of(task_set, self.annotator, self.controls(task_set), self.results.get(task_set, []),
                          lambda: (latest, att.get(latest)))
            p = self.pauses.get(task_set)
            self._states[task_set] = state_message(task_set, q, p)
        return self._states[task_set]

    def states(self, task_set: str | None = None) -> list[dict]:
        return [self.state(ts) for ts in ([task_set] if task_set else self.sets)]

    def sets_of(self, pair_id: str) -> list[str]:
        """The annotator's task sets that give them this pair."""
        return [ts for ts in self.sets if any(p == pair_id for p, _ in self.rows[ts])]

    def refusal(self, pair_id: str) -> str | None:
        """Why a label (or an undo) of this pair is refused now (every set giving it is closed), or None."""
        got = [self.state(ts) for ts in self.sets_of(str(pair_id))]
        if not got or any(s["state"] == OPEN for s in got):
            return None
        return REFUSALS[got[0]["state"]]

    # ---- the queue and the progress ----

    def queue(self, task_set: str | None = None) -> list[str]:
        seen, out = set(), []
        for ts in ([task_set] if task_set else self.sets):
            for pid, _ in self.rows.get(ts, []):
                if pid not in seen:
                    seen.add(pid)
                    out.append(pid)
        return out

    def undecided(self, task_set: str, n: int, skip: set[str] = frozenset()) -> list[str]:
        return [pid for pid, _ in self.rows.get(task_set, []) if pid not in self.decided and pid not in skip][:n]

    def pending_slots(self, task_set: str) -> int:
        """Check slots planned in the set that are not filled (nor dry, nor missed) yet."""
        c = self.controls(task_set)
        if not c.checks_on:
            return 0
        n_other = sum(kind != "check" for _, kind in self.rows.get(task_set, []))
        return max(0, len(slot_points(c, task_set, self.annotator, n_other)) - len(self.slots.get(task_set, ())))

    def progress(self, task_set: str | None = None) -> dict:
        """Done / total / left of the queue, the check slots still to be filled counted in total and left."""
        q = self.queue(task_set)
        mine = [self.decided[p] for p in q if p in self.decided]
        extra = sum(self.pending_slots(ts) for ts in ([task_set] if task_set else self.sets))
        return {"total": len(q) + extra, "done": len(mine), "labelled": sum(not s for s in mine),
                "skipped": sum(mine), "remaining": len(q) - len(mine) + extra}

    # ---- what the request wrote ----

    def decide(self, pair_id: str, skipped: bool) -> None:
        if pair_id in set(self.queue()):
            self.decided[pair_id] = bool(skipped)

    def undecide(self, pair_id: str | None) -> None:
        self.decided.pop(pair_id, None)

    def paused(self, task_set: str, pause_id: int) -> None:
        self.pauses[task_set] = {"id": pause_id, "message": ANNOTATOR_MESSAGE}
        self._states.pop(task_set, None)


def state_message(task_set: str, q: dict, pause: dict | None) -> dict:
    """``{task_set, state, message}`` from the qualification status ``q`` and the open pause (or None)."""
    if q["state"] in ("pending", "in_progress"):
        return {"task_set": task_set, "state": "qualify",
                "message": f"This task set starts with a short qualification: {q['n']} pairs, each shown with the "
                           "guidelines; once you have answered all of them, your score and the expected answers."}
    if q["state"] == "failed":
        return {"task_set": task_set, "state": "failed",
                "message": f"You answered {q['correct']} of {q['answered']} qualification pairs as expected; this "
                           f"task set needs {q['pass_mark']:.0%}. Your lead has been told and may allow another "
                           "attempt."}
    if pause is not None:
        return {"task_set": task_set, "state": "paused", "message": pause["message"]}
    return {"task_set": task_set, "state": OPEN, "message": ""}


def read(store, annotator: str) -> RoundView:
    """The annotator's round as the store holds it now (two statements)."""
    return RoundView(annotator, store.rounds.rows(annotator))
