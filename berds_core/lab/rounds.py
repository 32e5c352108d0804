"""What the server serves an annotator in a round with quality controls: open queues only, checks placed.

:class:`~berds_core.lab.access.Lab` calls these instead of the store's plain queue
functions, so the server decides (a page can only draw what it is given):

Each reads a :class:`~berds_core.lab.round_view.RoundView` (the annotator's round read in two statements);
a request passes its one view to all of them.

- :func:`states`: each task set is ``open`` for an annotator, or waiting for
  their qualification (``qualify``), closed after a failed qualification
  (``failed``), or ``paused`` by the gold checks or the lead; with the message
  to show them (which never says which pairs were checks).
- :func:`next_pairs`: the next undecided pairs of the open sets, after placing
  the gold checks the annotator is about to reach
  (:func:`berds_core.lab.checks.ensure_checks`).
- :func:`progress`: the store's progress plus the check slots still to be
  filled, so the total an annotator sees never grows when a check arrives.
- :func:`summary`: the progress, the states and the next task pair, read only (``berds annotations progress``
  answers with it, so the CLI and the annotator's page agree).
- :func:`refusal`: why a label for a pair is refused (all its sets closed).
"""
from __future__ import annotations

from . import checks
from .round_view import OPEN, RoundView, read

__all__ = ["LOOKAHEAD", "OPEN", "RoundView", "after_label", "next_pairs", "progress", "read", "refusal", "states",
           "summary"]

LOOKAHEAD = 6  # undecided items within reach: the keyboard widget's pair on screen and the 5 it holds ahead


def states(store, annotator: str, task_set: str | None = None, *, view: RoundView | None = None) -> list[dict]:
    return (view or read(store, annotator)).states(task_set)


def next_pairs(store, annotator: str, n: int = 1, task_set: str | None = None, *, lookahead: int = LOOKAHEAD,
               view: RoundView | None = None) -> list[str]:
    """The first ``n`` undecided pairs of the annotator's open task sets (checks placed first)."""
    view = view or read(store, annotator)
    out: list[str] = []
    for st in view.states(task_set):
        if st["state"] != OPEN:
            continue
        ts = st["task_set"]
        checks.ensure_checks(store, annotator, ts, lookahead=max(n, lookahead), view=view)
        out += view.undecided(ts, n - len(out), skip=set(out))
        if len(out) >= n:
            break
    return out


def progress(store, annotator: str, task_set: str | None = None, *, view: RoundView | None = None) -> dict:
    """The queue's progress with the check slots still to be filled counted in ``total`` and ``remaining``."""
    return (view or read(store, annotator)).progress(task_set)


def summary(store, annotator: str, task_set: str | None = None, *, view: RoundView | None = None) -> dict:
    """What the annotator's page shows, read only (``berds annotations progress``): :func:`progress` (the check
    slots still to come counted), each task set's state (open, qualify, failed, paused) and the next task pair
    of an open set (None when every set is paused, waiting or done; a gold check may be placed before it)."""
    view = view or read(store, annotator)
    states = view.states(task_set)
    nxt = None
    for st in states:
        got = view.undecided(st["task_set"], 1) if st["state"] == OPEN else []
        if got:
            nxt = got[0]
            break
    return {**view.progress(task_set), "states": {st["task_set"]: st["state"] for st in states}, "next": nxt}


def refusal(store, annotator: str, pair_id: str, *, view: RoundView | None = None) -> str | None:
    """Why this annotator may not label this pair now (every task set giving it to them is closed), or None."""
    return (view or read(store, annotator)).refusal(pair_id)


def after_label(store, annotator: str, pair_id: str, *, view: RoundView | None = None) -> list[int]:
    """What a label sets off: the floor of the gold checks (:func:`berds_core.lab.checks.after_label`)."""
    return checks.after_label(store, annotator, pair_id, view=view)
