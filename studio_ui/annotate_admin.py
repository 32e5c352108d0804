"""The admin panel of the Annotate page: import pairs, build task sets, guidelines, exports.

Every action goes through :class:`berds_core.lab.access.Lab`, which refuses (and
logs) it for any role but admin, whatever the page draws. Files come by
upload, or by a path under the allowed roots (:mod:`berds_core.files.safepaths`);
errors name the uploaded file and never quote its contents.
"""
from __future__ import annotations

import streamlit as st

from berds_core.lab.access import AccessDenied, Lab
from berds_core.errors import InputError
from berds_core.lab.store import StoreError
from berds_core.lab.tasks import TaskSetSpec
from studio_ui.text import esc
from studio_ui.lab_ui import error_line

LABELS_AS = {"reference": "reference labels (gold known in advance; used to calibrate annotators)",
             "annotator": "an annotator's labels", "ignore": "ignore them"}
OVERLAP = {"none": "each pair to one annotator", "share": "a share of pairs to several annotators",
           "all": "every pair to n annotators"}


def _attempt(action):
    """Run an admin action; a refusal or bad input becomes one error line (and None)."""
    try:
        return action()
    except AccessDenied as e:
        error_line(f"Refused: {e}")
    except (InputError, ValueError, StoreError) as e:  # InputError and StoreError are ValueErrors too
        error_line(e)
    return None


def _file(prefix: str, label: str, types: list[str]) -> tuple[str | None, str | None]:
    """(stored path, name shown in errors) from an upload or a path under the allowed roots."""
    from berds_core.files.safepaths import resolve_user_path
    from studio_ui.sidebar import save_upload

    how = st.radio(f"{label} from", ["Upload", "Path on the server"], key=f"{prefix}_how", horizontal=True)
    if how == "Upload":
        up = st.file_uploader(label, type=types, key=f"{prefix}_upload")
        if up is None:
            return None, None
        return save_upload(up, prefix), f"uploaded {up.name}"
    text = st.text_input(f"{label} path", key=f"{prefix}_path",
                         help="Only files under the folders this app may open (the operator's BERDS_DATA_ROOTS, "
                              "annotations/).")
    if not text.strip():
        return None, None
    try:
        path = resolve_user_path(text, what=f"{label} path")
    except InputError as e:
        error_line(e)
        return None, None
    return str(path), text.strip()


def _annotator_choice(lab: Lab, key: str, *, multi: bool, label: str):
    """Annotator names: the lab's active users (lab mode) or typed names (open mode)."""
    if lab.actor.open_mode:
        text = st.text_input(label, value=lab.actor.name, key=key, help="Comma-separated names" if multi else None)
        names = [n.strip() for n in text.split(",") if n.strip()]
        return names if multi else (names[0] if names else None)
    names = lab.accounts().names()
    if multi:
        return st.multiselect(label, names, key=key)
    return st.selectbox(label, names, index=None, key=key)


def import_tab(lab: Lab) -> None:
    from berds_core.lab.tasks import read_pairs_tsv

    st.caption("A human-pairs TSV: question, id, document, perspective, label (optional); optional title, side, "
               "question_id, subset.")
    path, shown = _file("ann_import", "Pairs TSV", ["tsv", "txt"])
    if not path:
        return
    try:
        rows = read_pairs_tsv(path, shown_as=shown)
    except InputError as e:
        error_line(e)
        return
    n_labels = sum(lab_ is not None for _, _, lab_ in rows)
    st.text(f"{len(rows)} pairs, {n_labels} of them with a label.")
    labels_as = None
    if n_labels:
        labels_as = st.radio("The labels in this file are", list(LABELS_AS), format_func=LABELS_AS.get, index=None,
                             key="ann_import_labels_as")
    annotator = _annotator_choice(lab, "ann_import_annotator", multi=False,
                                  label="Queue the pairs for (and, for an annotator's labels, whose they are)")
    ready = not n_labels or labels_as is not None
    if n_labels and labels_as is None:
        st.info("Say what the file's labels are before importing.")
    if st.button("Import", key="ann_import_btn", disabled=not ready):
        res = _attempt(lambda: lab.import_pairs_tsv(path, labels_as=labels_as, annotator=annotator, shown_as=shown))
        if res is None:
            return
        what = {"reference": "reference labels", "annotator": f"labels of {annotator}"}.get(res["labels_as"], "labels")
        st.success(esc(f"Imported {res['pairs']} pairs ({res['new_pairs']} new)"
                       + (f" into task set {res['task_set']}" if res["task_set"] else "")
                       + (f"; {res['labels']} {what}" if res["labels"] else "") + "."))


def _run_source(lab: Lab):
    """(pairs, stored judge labels, source name) from the current Evaluate run, an upload, or the demo."""
    from berds_core.runs import read_run
    from berds_core.lab.tasks import demo_candidates, pairs_from_runs

    ss = st.session_state
    done = ss.get("eval_done") or {}
    runs = ss.get("eval_runs") or {}
    choices = (["Current Evaluate run"] if done else []) + ["Upload a run (JSONL)", "Built-in demo"]
    src = st.radio("Pairs from", choices, key="ann_build_src", horizontal=True)
    k = st.number_input("Top-k passages per question", 1, 100, 5, key="ann_build_k")
    if src == "Built-in demo":
        pairs, ref = demo_candidates()
        return pairs, {}, "built-in demo", ref
    if src == "Current Evaluate run":
        label = st.selectbox("Configuration", list(done), index=len(done) - 1, key="ann_build_eval")
        entries = list((runs.get(done[label]["key"]) or {}).values())
        if not entries:
            st.info("That configuration has no stored run.")
            return None
        pairs, stored = pairs_from_runs([("evaluate", entries)], k=int(k))
        return pairs, stored, f"evaluate: {label}", None
    path, shown = _file("ann_run", "Run file", ["jsonl", "json"])
    if not path:
        return None
    try:
        entries = read_run(path)
    except InputError as e:
        error_line(InputError(shown, e.line, e.field, e.message))
        return None
    pairs, stored = pairs_from_runs([("run", entries)], k=int(k))
    return pairs, stored, shown, None


def build_tab(lab: Lab) -> None:
    from berds_core.lab.tasks import STRATEGIES

    got = _run_source(lab)
    if not got:
        return
    pairs, stored, source, reference = got
    st.text(f"{len(pairs)} candidate pairs.")
    c = st.columns(3)
    n = c[0].number_input("Pairs to label", 1, max(1, len(pairs)), min(40, max(1, len(pairs))), key="ann_build_n")
    strategy = c[1].selectbox("Sampling", STRATEGIES, key="ann_build_strategy",
                              help="random; stratified (equal share per subset); uncertain (the judge's hardest "
                                   "pairs first, needs the sidebar's judge)")
    name = c[2].text_input("Task set name", value=f"round-{len(lab.store.tasks.names()) + 1}", key="ann_build_name")
    annotators = _annotator_choice(lab, "ann_build_annotators", multi=True, label="Annotators")
    c = st.columns(3)
    mode = c[0].radio("Overlap", list(OVERLAP), format_func=OVERLAP.get, key="ann_build_overlap_mode")
    overlap, per_shared = 0.0, 2
    if mode == "share":
        overlap = c[1].slider("Share of pairs", 0.05, 1.0, 0.2, 0.05, key="ann_build_share")
        per_shared = c[2].number_input("Annotators per shared pair", 2, max(2, len(annotators)), 2, key="ann_build_per")
    elif mode == "all":
        overlap = 1.0
        per_shared = c[1].number_input("n annotators per pair", 2, max(2, len(annotators)), 2, key="ann_build_per_all")
    c = st.columns(3)
    route_unsure = c[0].checkbox("Send pairs marked unsure to a second annotator", key="ann_build_unsure")
    route_uncertain = c[1].checkbox("Send judge-uncertain pairs to a second annotator", key="ann_build_uncertain")
    band = c[1].slider("… when |p − 0.5| ≤", 0.0, 0.5, 0.1, 0.05, key="ann_build_band", disabled=not route_uncertain)
    known = len(lab.store.reference_labels()) + len(reference or {})
    calibration = c[2].number_input("Calibration pairs per annotator (reference labels, unmarked)", 0,
                                    max(0, known), 0, key="ann_build_calib", disabled=not known)
    if st.button("Build the task set", key="ann_build_btn", type="primary", disabled=not annotators):
        judge = None
        if strategy == "uncertain" or route_uncertain:
            from studio_ui.config import current_config
            from studio_ui.engines import cached_judge

            judge = cached_judge(current_config().judge)
        with st.spinner("Building the task set…"):
            spec = TaskSetSpec(name=name.strip() or "round", source=source, n=int(n), strategy=strategy,
                               annotators=tuple(annotators), overlap=overlap, per_shared=int(per_shared),
                               route_uncertain=band if route_uncertain else None, route_unsure=route_unsure,
                               calibration=int(calibration))
            res = _attempt(lambda: lab.build_task_set(pairs, spec, judge=judge, stored_preds=stored,
                                                      reference=reference))
        if res is None:
            return
        st.success(esc(f"Task set {res['task_set']}: {res['pairs']} pairs, {res['shared']} shared, "
                       f"{res['routed_uncertain']} routed for the judge's uncertainty, {res['calibration']} "
                       f"calibration pairs; " + ", ".join(f"{a} {k}" for a, k in res["assignments"].items())))


def quick_start(lab: Lab) -> None:
    """One click to a ready demo round for the current user (open mode) or chosen annotators."""
    if st.button("Start the demo task set (40 pairs from the built-in demo)", key="ann_demo_btn", type="primary"):
        if start_demo(lab) is not None:
            st.rerun()


def start_demo(lab: Lab):
    """The built-in demo's task set (40 pairs, stratified) for the current user; None after an error line."""
    from berds_core.lab.tasks import demo_task_set

    pairs, spec, ref = demo_task_set((lab.actor.name,))  # the round `berds annotations demo` builds
    return _attempt(lambda: lab.build_task_set(pairs, spec, reference=ref))


def guidelines_tab(lab: Lab) -> None:
    g = lab.guidelines()
    text = st.text_area("Guidelines (Markdown; HTML is shown as text)", value=g["text"], height=200,
                        key="ann_gl_text")
    defs = {k: st.text_input(f"Definition of {name}", value=g["definitions"][k], key=f"ann_gl_def_{k}")
            for k, name in (("1", "supports"), ("0", "does not support"), ("skip", "skip"))}
    if st.button("Save guidelines", key="ann_gl_save"):
        if _attempt(lambda: lab.set_guidelines(text, defs)):
            st.success("Saved.")


def exports_tab(lab: Lab) -> None:
    from berds_core.lab.exports import EXPORT_COLUMNS, to_csv, to_jsonl

    st.caption("Labels with their provenance (time spent, judge visible, app version). No account data.")
    for what in ("labels", "gold", "reference"):
        try:
            rows = lab.export_rows(what, include_skips=True)
        except AccessDenied as e:
            error_line(f"Refused: {e}")
            return
        c = st.columns([2, 1, 1])
        c[0].text(f"{what}: {len(rows)} rows")
        c[1].download_button("CSV", to_csv(rows, EXPORT_COLUMNS), file_name=f"{what}.csv", mime="text/csv",
                             key=f"ann_dl_{what}_csv", disabled=not rows)
        c[2].download_button("JSONL", to_jsonl(rows), file_name=f"{what}.jsonl", mime="application/jsonl",
                             key=f"ann_dl_{what}_jsonl", disabled=not rows)


def admin_panel(lab: Lab) -> None:
    if not lab.allowed("import"):
        return
    with st.expander("Admin: import pairs, build task sets, guidelines, exports", expanded=False):
        tabs = st.tabs(["Import pairs", "Build a task set", "Guidelines", "Exports"], key="ann_admin_tab",
                       on_change="rerun")
        with tabs[0]:
            import_tab(lab)
        with tabs[1]:
            build_tab(lab)
        with tabs[2]:
            guidelines_tab(lab)
        with tabs[3]:
            if tabs[3].open:  # every label and pair is read for the downloads: only when the tab is open
                exports_tab(lab)
