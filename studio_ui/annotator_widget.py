"""The keyboard widget of the Annotate page: the next pairs are in the page before the key is pressed.

A Streamlit custom component (``st.components.v2``, rendered in the page, no
iframe) shows one pair; y / n / s / u decide, skip or undo. The server sends
the next :data:`PREFETCH` undecided pairs with each run, so a keypress shows
the next pair from that buffer without waiting for the server; the decision
travels in the component's ``outbox`` state, is stored by
:func:`berds_core.lab.labelling.apply_events` (role and queue checks, once per
event id) and acknowledged in the next run; the widget sends unacknowledged
events again every few seconds and says when the server does not answer, or
when a restarted server (:data:`SERVER_ID`) could not get the decisions made
while it was down. Pairs reach the browser under
opaque per-tab references, never their ids; all text is set as text
(``assets/annotator.js``).
"""
from __future__ import annotations

import secrets
from pathlib import Path
from typing import Callable

import streamlit as st

from berds_core.lab.access import Lab
from berds_core.lab.labelling import Applied, apply_events

ASSETS = Path(__file__).resolve().parent / "assets"
PREFETCH = 5
SERVER_ID = secrets.token_hex(6)  # this server process: the widget tells a restart from a reconnect by it

_widget = st.components.v2.component(
    "berds_annotator",
    js=(ASSETS / "annotator.js").read_text(encoding="utf-8"),
    css=(ASSETS / "annotator.css").read_text(encoding="utf-8"),
    isolate_styles=False,
)


def _noop() -> None:
    """The component's state must have a change callback to rerun the page; the work happens in the run."""


def _refs() -> tuple[dict, dict]:
    ss = st.session_state
    return ss.setdefault("ann_refs", {}), ss.setdefault("ann_ref_of", {})


def ref_of(pid: str) -> str:
    refs, rev = _refs()
    if pid not in rev:
        ref = f"r{len(refs) + 1}-{secrets.token_hex(3)}"
        rev[pid] = ref
        refs[ref] = pid
    return rev[pid]


def _outbox(state) -> list:
    if state is None:
        return []
    try:
        box = state.get("outbox") if hasattr(state, "get") else getattr(state, "outbox", None)
    except Exception:
        box = None
    return box if isinstance(box, list) else []


def judge_line(lab: Lab, pid: str, *, log: bool) -> str:
    """The judge's answer as an annotator may read it: no judge names unless the role sees everything."""
    answers = lab.judge_answers(pid, log=log)
    named = lab.allowed("see_all_labels") and not lab.actor.open_mode
    parts = []
    for i, (name, prob, label) in enumerate(answers):
        who = name if named else ("The automatic judge" if len(answers) == 1 else f"Automatic judge {i + 1}")
        p = "" if prob is None else f" (p = {prob:.2f})"
        parts.append(f"{who}: {'supports' if label else 'does not support'}{p}")
    return " · ".join(parts)


def keyboard_annotator(lab: Lab, task: str | None, *, gate: Callable[[], bool], show_judge: bool = False) -> Applied:
    """Store what the browser sent, then ask ``gate`` (the page's round gate, which draws its own notices)
    whether the queue is open, then draw the widget: with the next pairs when it is, closed when it is not.

    The gate is asked after the labels are stored, so a label that pauses the queue (a gold check below the
    floor) shows the pause in the same run; the widget never says "all pairs are done" for a paused queue.
    A closed widget is still drawn, hidden, so the browser hears which decisions were stored or refused.
    Returns what was stored."""
    ss = st.session_state
    scope = (str(lab.store.path), lab.actor.name, task or "")
    nonces = ss.setdefault("ann_nonces", {})
    if scope not in nonces:
        nonces[scope] = secrets.token_hex(6)
    nonce = nonces[scope]
    key = f"ann_widget_{nonce}"
    refs, _ = _refs()
    acked = ss.setdefault("ann_acked", {}).setdefault(nonce, set())  # what this page was told is stored
    if len(acked) > 5000:  # forgotten ones go to the store again, which stores each event once
        acked.clear()
    applied = apply_events(lab, _outbox(ss.get(key)), refs.get, acked)
    acked.update(applied.acked)
    if applied.last:
        ss["ann_last"] = {"pair": applied.last[0], "value": applied.last[1]}
    is_open = bool(gate())
    nxt = lab.next_pairs(PREFETCH + 1, task) if is_open else []
    pairs = []
    for pid, seen in zip(nxt[:PREFETCH], lab.pair_views(nxt[:PREFETCH])):
        view = {"ref": ref_of(pid), **seen}
        if show_judge:
            view["judge"] = judge_line(lab, pid, log=False)
        pairs.append(view)
    g = lab.guidelines()
    data = {"session": nonce, "server": SERVER_ID, "pairs": pairs, "more": len(nxt) > PREFETCH,
            "closed": not is_open, "acked": applied.acked + list(applied.rejected), "progress": lab.progress(task),
            "definitions": g["definitions"], "labels": {},
            "empty_text": "All pairs of this task set are done. Thank you! (u undoes the last label.)"}
    _widget(key=key, data=data, default={"outbox": []}, on_outbox_change=_noop)
    return applied
