"""Annotate: one (passage, perspective) pair per screen, keyboard first, every label saved at once.

Keys: y = supports, n = does not support, s = skip, u = undo. The keyboard
widget holds the next pairs already, so a keypress shows the next pair
without waiting for the server; the status line says when every decision is
saved. ``?ui=simple`` (or the Interface switch) uses plain Streamlit buttons,
one server round trip per decision.

Open mode (default): no login, the annotator name lives in the URL
(``?annotator=...&task=...``). Lab mode (``BERDS_AUTH=lab``): sign in; an
annotator sees only their own queue and labels, never the judge's answer
before deciding a pair, never pair ids or judge names; admins get the
import, task-set, guidelines and export panel.
"""
from __future__ import annotations

import hashlib
import secrets
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # standalone: streamlit run pages/annotate.py
    sys.path.insert(0, str(ROOT))

import streamlit as st  # noqa: E402

from berds_core.lab.access import AccessDenied, Lab  # noqa: E402
from berds_core.lab.labelling import MAX_NOTE  # noqa: E402
from berds_core.lab.store import SKIP, StoreError  # noqa: E402
from studio_ui.shell import ensure_shell
from studio_ui.pair_card import show_pair  # noqa: E402
from studio_ui.text import esc, judge_caveat  # noqa: E402

ensure_shell()

from studio_ui.lab_ui import account_bar, error_line, lab_for_page, page_store, refuse, safe_markdown  # noqa: E402

ALL = "All my tasks"
UIS = {"keyboard": "Keyboard (next pair ready at once)", "simple": "Simple buttons"}


# --------------------------------------------------------------------------- actions (store first, then the UI)

def widget_ref(pair_id: str) -> str:
    """An opaque per-session reference of a pair for widget keys (Streamlit puts keys into the page's element
    ids and classes: a pair id there would tell a check's source apart)."""
    ss = st.session_state
    salt = ss.setdefault("ann_ref_salt", secrets.token_hex(16))
    return hashlib.sha256(f"{salt}\x1f{pair_id}".encode("utf-8")).hexdigest()[:16]


def do_label(pair_id: str, value) -> None:
    """Button callback: the decision and what goes with it (note, unsure, time on the pair), stored by
    :func:`apply_pending` with this run's :class:`Lab` (the one request that also draws the next pair)."""
    ss = st.session_state
    ref = widget_ref(pair_id)
    note = (ss.get(f"note_{ref}", "") or "")[:MAX_NOTE]
    shown = ss.get("ann_shown", {}).get(pair_id)
    ss["ann_pending"] = {"kind": "label", "pair": pair_id, "value": value, "note": note.strip() or None,
                         "unsure": bool(ss.get(f"unsure_{ref}", False)),
                         "time_ms": int((time.monotonic() - shown) * 1000) if shown else None,
                         "judge_visible": bool(ss.get("ann_show_judge"))}


def do_undo() -> None:
    st.session_state["ann_pending"] = {"kind": "undo"}


def apply_pending(lab: Lab, pending: dict | None) -> None:
    """Store the decision a button sent in this run (on disk before anything is drawn), or undo the last one."""
    if not pending:
        return
    ss = st.session_state
    if pending["kind"] == "undo":
        try:
            pid = lab.undo()
        except StoreError as e:  # the queue is paused: nothing is taken back from it
            ss["ann_flash"] = f"Not undone: {e}"
            return
        ss["ann_last"] = None
        ss["ann_flash"] = "Undone: the last decision" if pid else "Nothing to undo"
        return
    pair_id, value = pending["pair"], pending["value"]
    try:
        lab.label(pair_id, value, unsure=pending["unsure"], note=pending["note"], time_ms=pending["time_ms"],
                  judge_visible=pending["judge_visible"])
    except AccessDenied as e:
        ss["ann_flash"] = f"Refused: {e}"
        return
    except StoreError as e:  # the queue was paused meanwhile, or the pair is gone
        ss["ann_flash"] = f"Not saved: {e}"
        return
    ss["ann_last"] = {"pair": pair_id, "value": value}
    ss["ann_flash"] = f"Saved: {'skipped' if value == SKIP else ('supports' if value == 1 else 'does not support')}"


# --------------------------------------------------------------------------- panels


def guidelines_panel(lab: Lab) -> None:
    g = lab.guidelines()
    with st.expander("Guidelines", expanded=not st.session_state.get("ann_seen_guidelines")):
        st.session_state["ann_seen_guidelines"] = True
        if g["text"].strip():
            st.markdown(safe_markdown(g["text"]))
        else:
            st.caption("Decide whether the passage supports the perspective, as a reader of the passage alone would.")
        for key in ("1", "0", "skip"):
            st.text(g["definitions"][key])


def other_annotator(lab: Lab, name: str) -> None:
    """A request for another annotator's work: refused (and logged) unless the role sees all labels."""
    try:
        labels = lab.labels(name)
    except AccessDenied as e:
        refuse(e)
        return
    st.subheader("Labels of another annotator")
    st.text(f"Annotator: {name}")  # a name from the address: plain text, never Markdown (no link, no image)
    st.caption("Read only. You label as yourself.")
    st.dataframe([{"pair": l.pair_id, "label": l.value, "unsure": l.unsure, "at": l.updated_at} for l in labels],
                 hide_index=True)


def reveal_last(lab: Lab) -> None:
    """The previous pair's decision, with the judge's answer behind an expander (no anchoring)."""
    from studio_ui.annotator_widget import judge_line

    last = st.session_state.get("ann_last")
    if not last:
        return
    value = last["value"]
    said = "skipped" if value == SKIP else ("supports" if value == 1 else "does not support")
    with st.expander(f"Previous pair: you said {said}. Reveal the automatic judge's answer"):
        if st.button("Show the judge's answer", key="ann_reveal"):
            try:
                line = judge_line(lab, last["pair"], log=True)
            except (AccessDenied, StoreError) as e:
                error_line(e)
                return
            st.text(line or "No judge answer is stored for this pair.")
            judge_caveat(lab.store.judges())


def my_downloads(lab: Lab) -> None:
    from berds_core.lab.exports import to_csv, to_jsonl

    box = st.expander("My labels", key="ann_mine", on_change="rerun")
    if not box.open:  # read only when asked for: not on every keypress
        return
    rows = [r for r in lab.export_rows("labels", include_skips=True) if r["annotator"] == lab.actor.name]
    with box:
        st.caption(f"{len(rows)} decisions (labels and skips)")
        c = st.columns(2)
        c[0].download_button("Download my labels (CSV)", to_csv(rows), file_name="my-labels.csv", mime="text/csv",
                             key="ann_dl_mine_csv", disabled=not rows)
        c[1].download_button("Download my labels (JSONL)", to_jsonl(rows), file_name="my-labels.jsonl",
                             mime="application/jsonl", key="ann_dl_mine_jsonl", disabled=not rows)


def simple_annotator(lab: Lab, task: str | None) -> None:
    """One server round trip per decision: Streamlit buttons with keyboard shortcuts."""
    ss = st.session_state
    prog = lab.progress(task)
    frac = prog["done"] / prog["total"] if prog["total"] else 1.0
    st.progress(frac, text=f"{prog['done']} of {prog['total']} done · {prog['labelled']} labelled · "
                           f"{prog['skipped']} skipped · {prog['remaining']} left")
    flash = ss.pop("ann_flash", None)
    if flash:
        st.toast(esc(flash))
    nxt = lab.next_pairs(1, task)
    if not nxt:
        st.success("All pairs of this task set are done. Thank you! (u undoes the last label.)")
        st.button("Undo last", key="btn_undo", shortcut="u", on_click=do_undo)
        return
    pid = nxt[0]
    view = lab.pair_view(pid)
    ss.setdefault("ann_shown", {}).setdefault(pid, time.monotonic())
    show_pair(view, to_decide=True)
    if ss.get("ann_show_judge"):
        from studio_ui.annotator_widget import judge_line

        st.caption(esc(judge_line(lab, pid, log=False)))
    cols = st.columns(4)
    cols[0].button("Supports", key="btn_yes", shortcut="y", type="primary", width="stretch",
                   on_click=do_label, args=(pid, 1))
    cols[1].button("Does not support", key="btn_no", shortcut="n", width="stretch",
                   on_click=do_label, args=(pid, 0))
    cols[2].button("Skip", key="btn_skip", shortcut="s", width="stretch",
                   on_click=do_label, args=(pid, SKIP))
    cols[3].button("Undo", key="btn_undo", shortcut="u", width="stretch", on_click=do_undo)
    extra = st.columns([1, 3])
    ref = widget_ref(pid)
    extra[0].checkbox("Unsure", key=f"unsure_{ref}")
    extra[1].text_input("Note (optional)", key=f"note_{ref}", label_visibility="collapsed", max_chars=MAX_NOTE,
                        placeholder="Note (optional)")


DEMO_GUEST = "guest"  # the name of one-click demo labelling in open mode (changeable from the account bar)


def start_demo_now() -> None:
    """Button callback (open mode, no name yet): label the demo now, as ``guest``; the task set is built on
    this same run, so one click opens a ready demo queue."""
    st.session_state["ann_annotator"] = DEMO_GUEST
    st.query_params["annotator"] = DEMO_GUEST
    st.session_state["ann_build_demo"] = True


def ensure_demo_task_set(lab: Lab) -> None:
    """After the one click: the built-in demo's task set for this annotator, unless they already have one."""
    if not st.session_state.pop("ann_build_demo", False) or lab.task_sets():
        return
    from studio_ui.annotate_admin import start_demo

    start_demo(lab)


# --------------------------------------------------------------------------- a round's gates


def round_gate(lab: Lab, task: str | None) -> bool:
    """Qualification first, then the queue: False when nothing can be labelled here now (and says why).

    The server decides (:meth:`Lab.round_states`); the messages never say which pairs were checks.
    """
    states = lab.round_states(task)
    qual = next((s for s in states if s["state"] == "qualify"), None)
    if qual is not None or st.session_state.get("qual_feedback"):
        return not qualification_screen(lab, qual["task_set"] if qual else st.session_state["qual_feedback"]["ts"])
    for s in states:
        if s["state"] in ("paused", "failed"):
            st.warning(esc(s["message"]), icon=":material/pause_circle:")
    return any(s["state"] == "open" for s in states)


def _answer_qualification(lab: Lab, ts: str, item: dict, value: int) -> None:
    ss = st.session_state
    shown = ss.pop("qual_shown", None)
    spent = int((time.monotonic() - shown) * 1000) if shown else None
    try:
        res = lab.qualification_answer(ts, item["attempt"], item["position"], value, time_ms=spent)
    except (AccessDenied, ValueError) as e:
        ss["qual_error"] = str(e)
        return
    if res["done"]:  # feedback only once the attempt is over
        ss["qual_feedback"] = {"ts": ts, **res}


def qualification_screen(lab: Lab, ts: str) -> bool:
    """One qualification pair with the guidelines beside it; after the attempt's last answer, the score and
    each pair's expected answer (never one answer at a time).

    Returns True while the qualification holds the screen.
    """
    ss = st.session_state
    g = lab.guidelines()
    said = {1: g["definitions"]["1"], 0: g["definitions"]["0"]}
    st.subheader("Qualification")
    if ss.get("qual_error"):
        error_line(ss.pop("qual_error"))
    fb = ss.get("qual_feedback")
    if fb and fb["ts"] == ts:  # the attempt is over: the score, then each pair's expected answer
        word = {1: "supports", 0: "does not support"}
        score = fb["score"] or {}
        if fb["passed"]:
            st.success(f"You passed the qualification ({score.get('correct')} of {score.get('n')} as expected). "
                       "Your queue is open.")
        else:
            st.warning(f"{score.get('correct')} of {score.get('n')} as expected: below this task set's pass mark. "
                       "Your lead has been told and may allow another attempt.")
        for i, it in enumerate(fb.get("items") or [], start=1):
            mark = "right" if it["correct"] else f"expected \"{word[it['expected']]}\""
            st.text(f"{i}. {it['perspective'][:120]}: you said \"{word[it['label']]}\", {mark}.")
        for k in ("1", "0"):
            st.text(said[int(k)])
        if st.button("Start labelling" if fb["passed"] else "Close", key="qual_next", type="primary"):
            ss.pop("qual_feedback", None)
            st.rerun()
        return True
    item = lab.qualification_next(ts)
    if item is None:
        ss.pop("qual_feedback", None)
        return False
    ss.setdefault("qual_shown", time.monotonic())
    st.caption(f"Pair {item['index'] + 1} of {item['n']}. Decide as you would in the task set; the expected answers "
               "are shown once you have answered all of them.")
    left, right = st.columns([3, 2])
    with left:
        show_pair(item, to_decide=True)
        b = st.columns(2)
        b[0].button("Supports", key="qual_yes", type="primary", width="stretch", on_click=_answer_qualification,
                    args=(lab, ts, item, 1))
        b[1].button("Does not support", key="qual_no", width="stretch", on_click=_answer_qualification,
                    args=(lab, ts, item, 0))
    with right:
        st.markdown("**Guidelines**")
        with st.container(border=True, height=420):
            if g["text"].strip():
                st.markdown(safe_markdown(g["text"]))
            for key in ("1", "0", "skip"):
                st.text(g["definitions"][key])
    return True


def main() -> None:
    from berds_core.runtime.mode import lab_mode
    from studio_ui.annotate_admin import admin_panel, quick_start

    pending = st.session_state.pop("ann_pending", None)  # a decision sent by a button in this run
    st.title("Annotate")
    store = page_store("ann", must_exist=False)
    if store is None:
        return
    if not lab_mode() and not (st.query_params.get("annotator") or st.session_state.get("ann_annotator")):
        st.button("Label the demo now (40 pairs, keyboard: y / n / s, u to undo)", key="ann_demo_now",
                  type="primary", on_click=start_demo_now,
                  help=f"Opens a ready task set of the built-in demo as '{DEMO_GUEST}'; or give your own name below.")
    lab = lab_for_page(store)
    apply_pending(lab, pending)
    ensure_demo_task_set(lab)
    account_bar(lab)
    other = (st.query_params.get("annotator") or "").strip()
    if not lab.actor.open_mode and other and other != lab.actor.name:
        other_annotator(lab, other)
        return
    guidelines_panel(lab)
    sets = lab.task_sets()
    if not sets:
        slot = st.empty()  # the warning goes once an import or a build below has made a task set
        slot.warning("No pairs are assigned to you yet." + (" Start the demo task set, or import pairs or build a "
                                                           "task set below." if lab.allowed("build_task_set") else
                                                           " Ask an admin for a task set."))
        if lab.allowed("build_task_set"):
            quick_start(lab)
            admin_panel(lab)
            if lab.task_sets():
                slot.empty()
        return
    head = st.columns([3, 2])
    options = [ALL] + sets
    wanted = st.query_params.get("task")
    choice = head[0].selectbox("Task set", options, index=options.index(wanted) if wanted in options else 0,
                               key="ann_task")
    task = None if choice == ALL else choice
    if st.query_params.get("task") != (task or ALL):
        st.query_params["task"] = task or ALL
    ui_default = "simple" if st.query_params.get("ui") == "simple" else "keyboard"
    ui = head[1].radio("Interface", list(UIS), format_func=UIS.get, index=list(UIS).index(ui_default),
                       key="ann_ui", horizontal=True)
    if lab.allowed("see_judge_before_labelling"):
        st.toggle("Show the judge's answer while I label (recorded with each label)", key="ann_show_judge")
    if ui == "keyboard":  # the labels the browser sent are stored before the gate is asked (a label may pause)
        from studio_ui.annotator_widget import keyboard_annotator

        applied = keyboard_annotator(lab, task, gate=lambda: round_gate(lab, task),
                                     show_judge=bool(st.session_state.get("ann_show_judge")))
        for why in applied.rejected.values():
            error_line(f"A decision was not saved: {why}")
    elif round_gate(lab, task):
        simple_annotator(lab, task)
    reveal_last(lab)
    my_downloads(lab)
    if lab.allowed("import"):
        admin_panel(lab)


main()
