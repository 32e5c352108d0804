"""Labels sent by a browser: validate each event, store it once, report what is stored.

The Annotate page's keyboard widget shows the next pair at once and queues
each decision as an *event* (``{cid, kind, ref, value, unsure, note,
time_ms, judge_visible}``); the queue is resent until the server
acknowledges every event. :func:`apply_events` stores the events in order
through a :class:`~berds_core.lab.access.Lab` (so the role and queue checks run),
skips those already stored (their ``cid`` is unique in the ``events`` table),
and returns the ids to acknowledge. Anything in an event is untrusted input:
wrong types or sizes reject that event, never the page.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from .access import AccessDenied, Lab
from .records import MAX_NOTE
from .store import SKIP, StoreError

MAX_EVENTS = 500
MAX_TIME_MS = 24 * 3600 * 1000
KINDS = ("label", "skip", "undo")


@dataclass
class Applied:
    acked: list[str] = field(default_factory=list)  # stored now or before
    rejected: dict[str, str] = field(default_factory=dict)  # cid -> why (also acknowledged: never resent)
    last: tuple[str, object] | None = None  # (pair id, value) of the last label or skip stored now
    undone: list[str] = field(default_factory=list)


def _clean(ev) -> dict:
    if not isinstance(ev, dict):
        raise ValueError("an event is an object")
    cid = ev.get("cid")
    if not isinstance(cid, str) or not 1 <= len(cid) <= 100:
        raise ValueError("bad event id")
    kind = ev.get("kind")
    if kind not in KINDS:
        raise ValueError("unknown kind")
    out = {"cid": cid, "kind": kind, "ref": ev.get("ref") if isinstance(ev.get("ref"), str) else None}
    if kind == "label":
        if ev.get("value") not in (0, 1) or isinstance(ev.get("value"), bool):
            raise ValueError("a label is 0 or 1")
        out["value"] = int(ev["value"])
    elif kind == "skip":
        out["value"] = SKIP
    if kind != "undo":
        if out["ref"] is None:
            raise ValueError("no pair reference")
        note = ev.get("note") or ""
        if not isinstance(note, str):
            raise ValueError("a note is text")
        out["note"] = note.strip()[:MAX_NOTE] or None
        out["unsure"] = bool(ev.get("unsure"))
        t = ev.get("time_ms")
        out["time_ms"] = int(t) if isinstance(t, (int, float)) and not isinstance(t, bool) and 0 <= t <= MAX_TIME_MS else None
        out["judge_visible"] = bool(ev.get("judge_visible"))
    return out


def apply_events(lab: Lab, events, resolve: Callable[[str], str | None], acked: set[str] | None = None) -> Applied:
    """Store ``events`` in order for the signed-in annotator (``Lab.actor`` of ``berds_core.lab.access``); ``resolve(ref)`` gives the pair id of a page reference.

    ``acked``: the event ids this page was told are stored (the page keeps the set and adds ``Applied.acked``
    to it). With it, those are acknowledged again without a read, and any other event goes to the store, which
    stores an event id once (a label or undo resent from elsewhere changes nothing); without it, one read first
    says which events are stored."""
    res = Applied()
    if not isinstance(events, list):
        return res
    events = events[-MAX_EVENTS:]
    cids = [e.get("cid") for e in events if isinstance(e, dict) and isinstance(e.get("cid"), str)]
    stored = set(acked) if acked is not None else lab.store.applied_client_ids(cids)
    for raw in events:
        try:
            ev = _clean(raw)
        except ValueError as e:
            cid = raw.get("cid") if isinstance(raw, dict) and isinstance(raw.get("cid"), str) else None
            if cid:
                res.rejected[cid] = str(e)
            continue
        if ev["cid"] in stored:
            res.acked.append(ev["cid"])
            continue
        try:
            if ev["kind"] == "undo":
                pid = lab.undo(client_id=ev["cid"])
                if pid:
                    res.undone.append(pid)
            else:
                pid = resolve(ev["ref"])
                if pid is None:
                    raise StoreError("this pair is no longer on the page; reload it")
                lab.label(pid, ev["value"], unsure=ev["unsure"], note=ev["note"], time_ms=ev["time_ms"],
                          judge_visible=ev["judge_visible"], client_id=ev["cid"])
                res.last = (pid, ev["value"])
            res.acked.append(ev["cid"])
        except (AccessDenied, StoreError) as e:
            res.rejected[ev["cid"]] = str(e)
    return res
