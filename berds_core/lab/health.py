"""A round's health at a glance, for its lead: pace, queues, checks, pauses, adjudication backlog.

:func:`round_health` (the Agreement page's Round health tab and ``berds
annotations health --json``):

- ``pace``: decisions (labels and skips not undone) per annotator per hour,
  from the event log (the last ``max_bins`` hours of the round), and each
  annotator's decisions in the round's last hour;
- ``queues``: per annotator, done / total / left (planned gold checks
  included, :func:`berds_core.lab.rounds.progress`) and the state of each of
  their task sets (open, qualify, failed, paused);
- ``checks``: decided (``answered``, skips included), failed (wrong or
  skipped), ``skipped`` and accuracy (95% Wilson interval) per annotator, and
  the check slots left empty because no unseen pair of the pool fitted
  (``dry``); ``check_pool``: the pool's size per task set;
- ``pauses``: open pauses with the message to the lead; ``resumed``: how many
  were resumed;
- ``qualification``: per (task set, annotator) the state and score;
- ``adjudication``: pairs where humans disagree and no gold label is set yet.
"""
from __future__ import annotations

from collections import defaultdict
from datetime import datetime, timedelta

from . import qualification, rounds
from .checks import check_scores, pauses, slot_summary
from .request_reads import RequestReads


def _hour(ts: str) -> datetime:
    return datetime.fromisoformat(ts).replace(minute=0, second=0, microsecond=0)


def decisions(store, task_set: str | None = None) -> list[tuple[str, str]]:
    """``[(annotator, at)]`` of every label and skip that was not undone (in a task set: its pairs only)."""
    rows = store.reports.standing_decisions()
    if task_set is not None:
        mine = store.reports.set_pair_annotators(task_set)
        rows = [r for r in rows if (r["pair_id"], r["annotator"]) in mine]
    return [(r["annotator"], r["at"]) for r in rows]


def pace(store, task_set: str | None = None, *, max_bins: int = 72) -> dict:
    """Decisions per annotator per hour: ``hours`` (ISO, oldest first), ``per_annotator`` counts, ``last_hour``."""
    got = decisions(store, task_set)
    if not got:
        return {"hours": [], "per_annotator": {}, "last_hour": {}, "total": 0}
    stamps = [(a, datetime.fromisoformat(t)) for a, t in got]
    end = max(t for _, t in stamps)
    last = _hour(end.isoformat())
    first = max(_hour(min(t for _, t in stamps).isoformat()), last - timedelta(hours=max_bins - 1))
    n = int((last - first).total_seconds() // 3600) + 1
    hours = [first + timedelta(hours=i) for i in range(n)]
    per = defaultdict(lambda: [0] * n)
    recent = defaultdict(int)
    for a, t in stamps:
        i = int((_hour(t.isoformat()) - first).total_seconds() // 3600)
        if i >= 0:
            per[a][i] += 1
        if t > end - timedelta(hours=1):
            recent[a] += 1
    return {"hours": [h.isoformat(timespec="minutes") for h in hours], "per_annotator": dict(sorted(per.items())),
            "last_hour": dict(sorted(recent.items())), "total": len(got)}


def adjudication_backlog(store, task_set: str | None = None) -> list[str]:
    """Pairs two or more humans labelled differently and nobody has adjudicated yet (``store``: the store or a
    request's reads)."""
    reads = RequestReads.of(store)
    by = defaultdict(set)
    for lab in reads.labels(include_skips=False):
        by[lab.pair_id].add(int(lab.label))
    gold = reads.gold()
    pids = [p for p, v in by.items() if len(v) > 1 and p not in gold]
    if task_set is not None:
        mine = reads.store.reports.set_pairs(task_set)
        pids = [p for p in pids if p in mine]
    return sorted(pids)


def round_health(store, task_set: str | None = None, *, max_bins: int = 72) -> dict:
    """Everything a lead checks while a round runs (see the module docstring). ``store``: the store, or a
    request's reads (:class:`~berds_core.lab.request_reads.RequestReads`: the labels and gold read once)."""
    reads = RequestReads.of(store)
    store = reads.store
    names = store.reports.assigned_annotators(task_set)
    queues = {}
    for a in names:
        view = rounds.read(store, a)  # their round, read once for both
        queues[a] = {**view.progress(task_set), "sets": {s["task_set"]: s["state"] for s in view.states(task_set)}}
    scores = check_scores(store, task_set)
    dry = slot_summary(store, task_set)
    checks = {a: {"answered": s["n"], "failed": s["failed"], "skipped": s["skipped"], "accuracy": s["accuracy"],
                  "ci95": s["ci95"], **{k: dry.get(a, {}).get(k, 0) for k in ("placed", "dry", "missed")}}
              for a, s in scores.items()}
    for a, d in dry.items():
        checks.setdefault(a, {"answered": 0, "failed": 0, "skipped": 0, "accuracy": None, "ci95": [None, None], **d})
    allp = [p for p in pauses(store) if task_set is None or p["task_set"] == task_set]
    backlog = adjudication_backlog(reads, task_set)
    p = pace(store, task_set, max_bins=max_bins)
    return {"task_set": task_set, "annotators": names, "pace": p, "queues": queues,
            "queue_left": sum(q["remaining"] for q in queues.values()), "checks": dict(sorted(checks.items())),
            "checks_failed": sum(c["failed"] for c in checks.values()),
            "pauses": [x for x in allp if x["resumed_at"] is None], "resumed": sum(x["resumed_at"] is not None
                                                                                   for x in allp),
            "check_pool": store.checks.pool_counts(task_set),
            "qualification": qualification.overview(store, task_set),
            "adjudication": {"waiting": len(backlog), "pairs": backlog[:50]},
            "labels": p["total"]}
