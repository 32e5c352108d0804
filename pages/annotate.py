"""Annotate: one (passage, perspective) pair per screen, keyboard first, every label saved at once.

Keys: y = supports, n = does not support, s = skip, u = undo (Streamlit's
native button shortcuts). The annotator name and task set live in the URL
(``?annotator=...&task=...``) so a closed tab resumes at the next unlabelled
pair. The judge's answer stays hidden until the pair is labelled.
"""
from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # standalone: streamlit run pages/annotate.py
    sys.path.insert(0, str(ROOT))

import streamlit as st  # noqa: E402

from berds_core.errors import InputError  # noqa: E402
from berds_core.store import SKIP, Store, StoreError, default_db_path  # noqa: E402
from pages.common import ensure_shell, esc, judge_caveat  # noqa: E402

ensure_shell()

ALL = "All my tasks"


@st.cache_resource(show_spinner=False)
def get_store(path: str) -> Store:
    """One store per database file, shared by every session of this server (thread-safe)."""
    return Store(path)


def db_path() -> str:
    return st.session_state.get("ann_db") or str(default_db_path())


# --------------------------------------------------------------------------- actions (store first, then the UI)

def do_label(store: Store, annotator: str, pair_id: str, value) -> None:
    note = st.session_state.get(f"note_{pair_id}", "")
    unsure = bool(st.session_state.get(f"unsure_{pair_id}", False))
    store.label(annotator, pair_id, value, unsure=unsure, note=note.strip() or None)  # on disk before the rerun
    st.session_state["ann_last"] = {"pair": pair_id, "value": value}
    st.session_state["ann_flash"] = f"Saved: {'skipped' if value == SKIP else ('supports' if value == 1 else 'does not support')}"


def do_undo(store: Store, annotator: str) -> None:
    pid = store.undo(annotator)
    st.session_state["ann_last"] = None
    st.session_state["ann_flash"] = f"Undone: pair {pid}" if pid else "Nothing to undo"


# --------------------------------------------------------------------------- page

def choose_annotator() -> str | None:
    qp = st.query_params
    name = (qp.get("annotator") or st.session_state.get("ann_annotator") or "").strip()
    if name:
        st.session_state["ann_annotator"] = name
        if qp.get("annotator") != name:
            qp["annotator"] = name
        return name
    st.info("Give your name once; it stays in this page's address so you can come back where you stopped.")
    with st.form("ann_name_form"):
        typed = st.text_input("Annotator name", key="ann_name_input", max_chars=100)
        if st.form_submit_button("Start labelling", type="primary") and typed.strip():
            st.session_state["ann_annotator"] = typed.strip()
            st.query_params["annotator"] = typed.strip()
            st.rerun()
    return None


def setup_panel(store: Store, annotator: str) -> None:
    """Import a human-pairs TSV for this annotator (the CLI builds task sets from runs)."""
    with st.expander("Add pairs (import a human-pairs TSV)", expanded=not store.task_sets(annotator)):
        st.caption("Columns: question, id, document, perspective, label (optional). The file's labels become "
                   "yours. To sample pairs from a run for several annotators: "
                   "`berds annotations tasks --run RUN --n 100 --strategy stratified --annotators a,b --overlap 0.2`.")
        path = st.text_input("TSV path", key="ann_import_path")
        if st.button("Import", key="ann_import_btn") and path.strip():
            from berds_core.tasks import import_pairs_tsv
            try:
                res = import_pairs_tsv(store, path.strip(), annotator)
                st.success(f"Imported {res['pairs']} pairs into task set {res['task_set']!r} "
                           f"({res['labels']} labels from the file).")
            except InputError as e:
                st.error(str(e), icon="⚠️")


def judge_answer(store: Store, pair_id: str) -> list[str]:
    out = []
    for name in store.judges():
        pred = store.judge_preds(name).get(pair_id)
        if pred is not None:
            prob = "" if pred[0] is None else f" (p = {pred[0]:.2f})"
            out.append(f"{name}: {'supports' if pred[1] else 'does not support'}{prob}")
    if not out:
        p = store.pair(pair_id)
        if p.judge_prob is not None:
            out.append(f"judge probability {p.judge_prob:.2f}")
    return out


def main() -> None:
    st.title("Annotate")
    with st.expander("Database", expanded=False):
        st.text_input("Annotation database", value=str(default_db_path()), key="ann_db",
                      help="SQLite file; default from $BERDS_ANNOTATIONS_DB or annotations/berds.db.")
    try:
        store = get_store(db_path())
    except Exception as e:  # not a database / newer schema
        st.error(f"{db_path()}: cannot open annotation database ({e})", icon="⚠️")
        return
    annotator = choose_annotator()
    if not annotator:
        return

    sets = store.task_sets(annotator)
    head = st.columns([3, 3, 1])
    head[0].markdown(f"Annotator: **{esc(annotator)}**")
    if head[2].button("Switch", key="ann_switch", help="Label under another name"):
        st.session_state.pop("ann_annotator", None)
        st.query_params.clear()
        st.rerun()
    if not sets:
        st.warning("No pairs are assigned to you yet. Import a TSV below or ask for a task set.")
        setup_panel(store, annotator)
        return
    options = [ALL] + sets
    wanted = st.query_params.get("task")
    index = options.index(wanted) if wanted in options else 0
    choice = head[1].selectbox("Task set", options, index=index, key="ann_task")
    task = None if choice == ALL else choice
    if st.query_params.get("task") != (task or ALL):
        st.query_params["task"] = task or ALL

    prog = store.progress(annotator, task)
    frac = prog["done"] / prog["total"] if prog["total"] else 1.0
    st.progress(frac, text=f"{prog['done']} of {prog['total']} done · {prog['labelled']} labelled · "
                           f"{prog['skipped']} skipped · {prog['remaining']} left")
    flash = st.session_state.pop("ann_flash", None)
    if flash:
        st.toast(flash)

    pid = store.next_pair(annotator, task)
    if pid is None:
        st.success("All pairs of this task set are done. Thank you! (u undoes the last label.)")
        st.button("Undo last", key="btn_undo", shortcut="u", on_click=do_undo, args=(store, annotator))
        reveal_last(store)
        setup_panel(store, annotator)
        return
    pair = store.pair(pid)
    st.caption(f"Pair {esc(pid)}" + (f" · {esc(pair.subset)}" if pair.subset else ""))
    st.markdown("**Question**")
    st.markdown(esc(pair.question))
    st.markdown("**Perspective**")
    st.info(esc(pair.perspective))
    st.markdown("**Passage** — does it support the perspective?")
    with st.container(border=True):
        st.markdown(esc(pair.document))

    cols = st.columns(4)
    cols[0].button("Supports", key="btn_yes", shortcut="y", type="primary", width="stretch",
                   on_click=do_label, args=(store, annotator, pid, 1))
    cols[1].button("Does not support", key="btn_no", shortcut="n", width="stretch",
                   on_click=do_label, args=(store, annotator, pid, 0))
    cols[2].button("Skip", key="btn_skip", shortcut="s", width="stretch",
                   on_click=do_label, args=(store, annotator, pid, SKIP))
    cols[3].button("Undo", key="btn_undo", shortcut="u", width="stretch",
                   on_click=do_undo, args=(store, annotator))
    extra = st.columns([1, 3])
    extra[0].checkbox("Unsure", key=f"unsure_{pid}")
    extra[1].text_input("Note (optional)", key=f"note_{pid}", label_visibility="collapsed",
                        placeholder="Note (optional)")
    reveal_last(store)
    setup_panel(store, annotator)


def reveal_last(store: Store) -> None:
    """The previous pair's label, with the judge's answer behind a button (no anchoring)."""
    last = st.session_state.get("ann_last")
    if not last:
        return
    try:
        answers = judge_answer(store, last["pair"])
    except StoreError:
        return
    value = last["value"]
    said = "skipped" if value == SKIP else ("supports" if value == 1 else "does not support")
    with st.expander(f"Previous pair: you said {said}. Reveal the judge's answer"):
        judge_caveat(store.judges())
        st.text(f"Pair {last['pair']}")
        if answers:
            for a in answers:
                st.text(a)
        else:
            st.text("No judge answer stored for this pair.")


main()
