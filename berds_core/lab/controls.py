"""A round's quality controls, set by its lead: gold checks, their floor, the time floor, qualification.

One :class:`RoundControls` per task set, kept in the store's ``settings``
table under ``round:<task set>`` (set when the task set is built, changed
later by a lead with ``berds annotations round`` or the Agreement page):

- ``check_rate``: the share of the items an annotator is served that are gold
  checks (0.05 = about 1 in 20), over the whole round, not a fixed count;
- ``check_floor``: the check accuracy below which the annotator's queue in
  the set pauses (None: checks are scored, nothing pauses);
- ``check_min``: how many checks an annotator must have answered (since the
  last resume) before the floor applies;
- ``check_confidence``: how sure the checks must make the lead that the
  annotator's accuracy is below the floor before the queue pauses: the
  posterior probability ``P(accuracy < floor)`` after ``k`` of ``n`` checks right,
  with a uniform prior (Beta(k + 1, n − k + 1)); 0.9 pauses an annotator at
  chance (one half) after a handful of checks and rarely an honest one;
- ``time_floor_ms``: labels faster than this count as "under the floor" (a
  sign of clicking through);
- ``qualification_n`` / ``qualification_pass``: a qualification round of
  ``n`` gold pairs to pass (share correct) before the real queue opens;
- ``seed``: where checks go and which pairs they are (reproducible).
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass, fields, replace

PREFIX = "round:"
DEFAULT_TIME_FLOOR_MS = 2000
MIN_CHECK_RATE = 0.001  # one item in 1,000: rarer checks never reach a queue (and their gaps overflow)
MAX_TIME_FLOOR_MS = 3600 * 1000
MAX_QUALIFICATION = 1000


@dataclass(frozen=True)
class RoundControls:
    check_rate: float = 0.0
    check_floor: float | None = None
    check_min: int = 5
    check_confidence: float = 0.9
    time_floor_ms: int = DEFAULT_TIME_FLOOR_MS
    qualification_n: int = 0
    qualification_pass: float = 0.8
    seed: int = 0

    def __post_init__(self):
        rate = float(self.check_rate)
        if not (rate == 0.0 or MIN_CHECK_RATE <= rate < 1.0):
            raise ValueError(f"check rate is a share between 0 and 1 (0.05 = one item in 20): 0 for none, at least "
                             f"{MIN_CHECK_RATE:g} (one item in {int(round(1 / MIN_CHECK_RATE)):,})")
        if self.check_floor is not None and not 0.0 <= float(self.check_floor) <= 1.0:
            raise ValueError("check floor is an accuracy between 0 and 1")
        if not 0.5 <= float(self.check_confidence) < 1.0:
            raise ValueError("check confidence is a probability from 0.5 to below 1")
        if int(self.check_min) < 1:
            raise ValueError("checks before the floor applies must be 1 or more")
        if not 0 <= int(self.time_floor_ms) <= MAX_TIME_FLOOR_MS:
            raise ValueError(f"time floor must be 0 to {MAX_TIME_FLOOR_MS // 1000} seconds")
        if not 0 <= int(self.qualification_n) <= MAX_QUALIFICATION:
            raise ValueError(f"qualification pairs must be 0 to {MAX_QUALIFICATION}")
        if not 0.0 <= float(self.qualification_pass) <= 1.0:
            raise ValueError("qualification pass mark is a share between 0 and 1")

    @property
    def chance_pass(self) -> float | None:
        """The chance that an annotator who guesses every qualification pair passes (None: no qualification)."""
        n = int(self.qualification_n)
        if n < 1:
            return None
        need = math.ceil(float(self.qualification_pass) * n - 1e-9)
        return sum(math.comb(n, k) for k in range(need, n + 1)) / 2 ** n

    @property
    def checks_on(self) -> bool:
        return self.check_rate > 0

    def to_json(self) -> dict:
        return asdict(self)


_FIELDS = {f.name for f in fields(RoundControls)}


def _coerce(values: dict) -> dict:
    out = {}
    for k, v in values.items():
        if k not in _FIELDS:
            raise ValueError(f"unknown round control {k!r} (choose from {', '.join(sorted(_FIELDS))})")
        if k == "check_floor":
            out[k] = None if v is None else float(v)
        elif k in ("check_rate", "qualification_pass", "check_confidence"):
            out[k] = float(v)
        else:
            out[k] = int(v)
    return out


def get_controls(store, task_set: str) -> RoundControls:
    """The task set's controls (defaults when none were set: no checks, no qualification)."""
    return controls_of(store.settings.get(PREFIX + task_set, None))


def controls_of(raw: dict | None) -> RoundControls:
    """The controls stored as ``raw`` (the setting's value; None: the defaults)."""
    raw = raw or {}
    return RoundControls(**_coerce({k: v for k, v in raw.items() if k in _FIELDS}))


def changed_controls(store, task_set: str, **changes) -> RoundControls:
    """The task set's controls with ``changes`` applied, validated (ValueError, one line), not saved."""
    if store.tasks.info(task_set) is None:
        raise ValueError(f"no task set named {task_set!r}")
    return replace(get_controls(store, task_set), **_coerce(changes))


def set_controls(store, task_set: str, by: str | None = None, **changes) -> RoundControls:
    """Change some controls of a task set (validated first; the others are kept)."""
    new = changed_controls(store, task_set, **changes)
    store.settings.set(PREFIX + task_set, new.to_json(), by=by)
    return new
