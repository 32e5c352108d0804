"""What the server serves an annotator in a round with quality controls: open queues only, checks placed.

:class:`~berds_core.lab.access.Lab` calls these instead of the store's plain queue
functions, so the server decides (a page can only draw what it is given):

- :func:`set_state`: a task set is ``open`` for an annotator, or waiting for
  their qualification (``qualify``), closed after a failed qualification
  (``failed``), or ``paused`` by the gold checks or the lead; with the message
  to show them (which never says which pairs were checks).
- :func:`next_pairs`: the next undecided pairs of the open sets, after placing
  the gold checks the annotator is about to reach
  (:func:`berds_core.lab.checks.ensure_checks`).
- :func:`progress`: the store's progress plus the check slots still to be
  filled, so the total an annotator sees never grows when a check arrives.
- :func:`refusal`: why a label for a pair is refused (all its sets closed).
"""
from __future__ import annotations

from . import checks, qualification

OPEN = "open"


def set_state(store, task_set: str, annotator: str) -> dict:
    """``{task_set, state, message}`` for one task set and one annotator."""
    q = qualification.status(store, task_set, annotator)
    if q["state"] in ("pending", "in_progress"):
        return {"task_set": task_set, "state": "qualify",
                "message": f"This task set starts with a short qualification: {q['n']} pairs, each shown with the "
                           "guidelines; once you have answered all of them, your score and the expected answers."}
    if q["state"] == "failed":
        return {"task_set": task_set, "state": "failed",
                "message": f"You answered {q['correct']} of {q['answered']} qualification pairs as expected; this "
                           f"task set needs {q['pass_mark']:.0%}. Your lead has been told and may allow another "
                           "attempt."}
    p = checks.open_pause(store, task_set, annotator)
    if p is not None:
        return {"task_set": task_set, "state": "paused", "message": p["message"]}
    return {"task_set": task_set, "state": OPEN, "message": ""}


def states(store, annotator: str, task_set: str | None = None) -> list[dict]:
    sets = [task_set] if task_set else store.task_sets(annotator)
    return [set_state(store, ts, annotator) for ts in sets]


def next_pairs(store, annotator: str, n: int = 1, task_set: str | None = None, *, lookahead: int = 6) -> list[str]:
    """The first ``n`` undecided pairs of the annotator's open task sets (checks placed first)."""
    out, seen = [], set()
    decided = None
    for st in states(store, annotator, task_set):
        if st["state"] != OPEN:
            continue
        ts = st["task_set"]
        checks.ensure_checks(store, annotator, ts, lookahead=max(n, lookahead))
        if decided is None:
            decided = {r[0] for r in store.query("SELECT pair_id FROM labels WHERE annotator = ?", (annotator,))}
        for pid in store.queue(annotator, ts):
            if pid not in decided and pid not in seen:
                seen.add(pid)
                out.append(pid)
                if len(out) >= n:
                    return out
    return out


def progress(store, annotator: str, task_set: str | None = None) -> dict:
    """:meth:`Store.progress` with the check slots still to be filled counted in ``total`` and ``remaining``."""
    out = dict(store.progress(annotator, task_set))
    extra = sum(checks.pending_slots(store, annotator, ts) for ts in ([task_set] if task_set else
                                                                        store.task_sets(annotator)))
    out["total"] += extra
    out["remaining"] += extra
    return out


def refusal(store, annotator: str, pair_id: str) -> str | None:
    """Why this annotator may not label this pair now (every task set giving it to them is closed), or None."""
    sets = [r[0] for r in store.query("SELECT DISTINCT task_set FROM assignments WHERE annotator = ? AND pair_id = ?",
                                      (annotator, str(pair_id)))]
    if not sets:
        return None
    got = [set_state(store, ts, annotator) for ts in sets]
    if any(s["state"] == OPEN for s in got):
        return None
    return {"paused": "your queue in this round is paused", "qualify": "this task set starts with its qualification",
            "failed": "this task set needs its qualification first"}[got[0]["state"]]


def after_label(store, annotator: str, pair_id: str) -> list[int]:
    """What a label sets off: the floor of the gold checks (:func:`berds_core.lab.checks.after_label`)."""
    return checks.after_label(store, annotator, pair_id)
