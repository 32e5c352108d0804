"""Agreement: the judge against human labels, humans against each other, calibration, adjudication.

Every figure with a 95% interval from a bootstrap over *questions* (pairs of
one question are not independent): Cohen's kappa, PABAK, Gwet's AC1 (kappa
alone misleads at BERDS' 17% positives), precision / recall / F1 of
"supports", positive rates; breakdowns per annotator, subset, perspective
side and question; the paper-style table (human vs each judge, human vs
human); Krippendorff's alpha; each annotator against reference labels.
Lab mode: reviewers and admins only (refused and logged for annotators).
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # standalone: streamlit run pages/agreement.py
    sys.path.insert(0, str(ROOT))

import plotly.graph_objects as go  # noqa: E402
import streamlit as st  # noqa: E402

from berds_core.lab.access import AccessDenied, Lab  # noqa: E402
from berds_core.lab.store import Store, StoreError  # noqa: E402
from studio_ui.shell import ensure_shell
from studio_ui.text import esc, judge_caveat  # noqa: E402

ensure_shell()

from studio_ui.lab_ui import account_bar, error_line, lab_for_page, page_store, refuse  # noqa: E402

BY = {"annotators": "annotator", "subsets": "dataset subset", "sides": "perspective side",
      "per_question": "question"}


def fmt(x, digits: int = 3) -> str:
    """A figure, rounded; never ``-0.000``; ``–`` when undefined."""
    if x is None:
        return "–"
    v = round(float(x), digits)
    if v == 0:
        v = 0.0  # -0.0 prints as -0.000
    return f"{v:.{digits}f}"


def ci(block: dict, key: str) -> str:
    """``[lo, hi]``, or ``–`` when there is no interval (fewer than two questions), never ``[x, x]``."""
    lo, hi = (block.get("ci95") or {}).get(key, [None, None])
    return "–" if lo is None or hi is None else f"[{fmt(lo, 2)}, {fmt(hi, 2)}]"


def metric_row(name: str, b: dict, *, first: str = "labels") -> dict:
    return {first: name, "n": b["n"], "questions": b.get("questions"), "kappa": fmt(b["kappa"]),
            "kappa 95% CI": ci(b, "kappa"), "PABAK": fmt(b["pabak"]), "AC1": fmt(b["ac1"]),
            "AC1 95% CI": ci(b, "ac1"), "accuracy": fmt(b["accuracy"]), "precision": fmt(b["precision"]),
            "recall": fmt(b["recall"]), "F1": fmt(b["f1"]), "F1 95% CI": ci(b, "f1"),
            "positive rate (judge)": fmt(b["positive_rate"]),
            "positive rate (human)": fmt(b.get("human_positive_rate"))}


def table4_rows(report: dict) -> list[dict]:
    """One row per annotator, then pooled, adjudicated gold and reference labels."""
    rows = [metric_row(a, b) for a, b in report.get("annotators", {}).items()]
    if report.get("n"):
        rows.append(metric_row("pooled", report))
    if report.get("gold"):
        rows.append(metric_row("adjudicated gold", report["gold"]))
    if report.get("reference"):
        rows.append(metric_row("reference labels", report["reference"]))
    return rows


def paper_rows(report: dict) -> list[dict]:
    return [metric_row(r["comparison"], r, first="comparison") for r in report["table"]]


def breakdown_rows(blocks: dict, by: str) -> list[dict]:
    rows = []
    for key, b in blocks.items():
        row = metric_row(b.get("text", key) if by == "per_question" else key, b, first=BY[by])
        rows.append(row)
    return rows


def run_judge_on_labels(store: Store, spec: str) -> dict:
    from berds_core.lab.judging import judge_labelled_pairs
    from studio_ui.engines import cached_judge

    done = judge_labelled_pairs(store, cached_judge(spec))  # stored once, under the judge's stable name
    st.session_state["agr_pick"] = done["judge"]  # selected on the next run (the select box exists already)
    return done


def adjudicate(lab: Lab, pair_id: str, label: int) -> None:
    ss = st.session_state
    if lab.actor.open_mode:
        who = (ss.get("agr_adjudicator") or "").strip()
        if not who:
            ss["agr_flash"] = "Type your name as adjudicator first."
            return
        from berds_core.lab.access import Actor

        lab = Lab(lab.store, Actor(who, "admin", open_mode=True))
    try:
        lab.adjudicate(pair_id, label)  # saved before the page acknowledges it
    except AccessDenied as e:
        ss["agr_flash"] = f"Refused: {e}"
        return
    ss["agr_flash"] = f"Gold label saved: {'supports' if label else 'does not support'}"


def main() -> None:
    st.title("Agreement")
    store = page_store("agr", must_exist=True, allow_upload=True)
    if store is None:
        return
    lab = lab_for_page(store, ask_name=False)
    if not lab.actor.open_mode:
        account_bar(lab)
    try:
        lab.require("agreement", "agreement page", what="open the Agreement page (reviewers and admins only)")
    except AccessDenied as e:
        refuse(e)
        return
    flash = st.session_state.pop("agr_flash", None)
    if flash:
        st.toast(esc(flash))
    from berds_core.lab.agreement import distinct_judges

    judges = list(distinct_judges(store))
    if "agr_pick" in st.session_state:
        st.session_state["agr_judge"] = st.session_state.pop("agr_pick")
    if st.session_state.get("agr_judge") not in judges + ["(none stored)"]:
        st.session_state.pop("agr_judge", None)  # an alias or a judge of another database
    c = st.columns([2, 2, 1])
    judge = c[0].selectbox("Judge", judges or ["(none stored)"], key="agr_judge")
    judge = judge if judges else None
    spec = c[1].text_input("Run a judge on the labelled pairs", value="embedded", key="agr_spec",
                           help="Judge spec; its answers are stored under the judge's name.")
    if c[2].button("Run judge", key="agr_run"):
        try:
            with st.spinner("Judging the labelled pairs…"):
                done = run_judge_on_labels(store, spec.strip())
            st.session_state["agr_flash"] = (f"{done['judge']}: {done['labelled']} labelled pairs judged "
                                             f"({done['judged']} new)")
            st.rerun()
        except Exception as e:
            error_line(f"This judge is not usable: {type(e).__name__}: {e}")
    n_boot = st.select_slider("Bootstrap resamples (over questions)", [200, 500, 1000, 2000], value=1000,
                              key="agr_boot")
    report = lab.agreement_report(judge, n_boot=n_boot)
    if report["warnings"]:  # one box, one line per figure resting on few comparisons
        st.warning("\n".join(f"- {esc(w)}" for w in report["warnings"]), icon=":material/warning:")

    tabs = st.tabs(["Paper table", "Human vs judge", "Breakdowns", "Between humans", "Calibration",
                    "Disagreements", "Export"])
    with tabs[0]:
        if report["table"]:
            st.caption("Human labels as reference; the judge (or the second human) as prediction. 95% intervals: "
                       f"percentile bootstrap over questions, {n_boot} resamples; – where fewer than two questions.")
            st.dataframe(paper_rows(report), hide_index=True, key="agr_paper")
        else:
            st.info("Nothing to compare yet: label pairs, and run a judge above or build task sets from a judged run.")
    with tabs[1]:
        judge_tab(report, judge, n_boot)
    with tabs[2]:
        by = st.radio("Break down by", list(BY), format_func=BY.get, horizontal=True, key="agr_by")
        blocks = report.get(by) or {}
        if blocks:
            st.dataframe(breakdown_rows(blocks, by), hide_index=True, key="agr_breakdown")
        else:
            st.caption("No comparisons with a judge yet.")
    with tabs[3]:
        humans_tab(report)
    with tabs[4]:
        calibration_tab(report)
    with tabs[5]:
        browse(lab, judge)
    with tabs[6]:
        export_tab(lab, report)


def judge_tab(report: dict, judge: str | None, n_boot: int) -> None:
    if not judge:
        st.info("No judge answers stored yet: run a judge above, or build task sets from a run with "
                "`<judge>-preds` (`berds annotations tasks`).")
        return
    if not report["n"]:
        st.info("No human labels to compare yet.")
        return
    m = st.columns(5)
    m[0].metric("Cohen's kappa (pooled)", fmt(report["kappa"]), help=f"95% CI {ci(report, 'kappa')}")
    m[1].metric("PABAK", fmt(report["pabak"]), help=f"95% CI {ci(report, 'pabak')}")
    m[2].metric("Gwet's AC1", fmt(report["ac1"]), help=f"95% CI {ci(report, 'ac1')}")
    m[3].metric("Accuracy", fmt(report["accuracy"]))
    m[4].metric("F1 (supports)", fmt(report["f1"]), help=f"95% CI {ci(report, 'f1')}")
    judge_caveat(judge)
    st.dataframe(table4_rows(report), hide_index=True, key="agr_table4")
    left, right = st.columns(2)
    (tn, fp), (fn, tp) = report["confusion"]
    with left:
        st.markdown("**Confusion matrix (pooled)**")
        st.dataframe([{"human \\ judge": "supports", "supports": tp, "does not": fn},
                      {"human \\ judge": "does not", "supports": fp, "does not": tn}], hide_index=True)
    with right:
        st.markdown("**Judge probability vs human positive rate**")
        cal = report["calibration"]
        if cal:
            fig = go.Figure()
            fig.add_trace(go.Scatter(x=[0, 1], y=[0, 1], mode="lines", name="perfect", line=dict(dash="dot", color="#999")))
            fig.add_trace(go.Scatter(x=[b["mean_prob"] for b in cal], y=[b["human_rate"] for b in cal],
                                     mode="lines+markers", name="judge", text=[f"n = {b['n']}" for b in cal],
                                     marker=dict(size=[6 + min(b["n"], 60) / 3 for b in cal])))
            fig.update_layout(xaxis_title="judge probability (bin mean)", yaxis_title="human positive rate",
                              height=320, margin=dict(l=10, r=10, t=10, b=10))
            st.plotly_chart(fig, key="agr_calibration")
        else:
            st.caption("This judge stored labels only (no probabilities).")


def humans_tab(report: dict) -> None:
    iaa = report["iaa"]
    lo, hi = iaa["alpha_ci95"]
    st.metric("Krippendorff's alpha (nominal)", fmt(iaa["alpha"]),
              help=f"over {iaa['alpha_units']} pairs labelled by two or more annotators; 95% CI "
                   + ("–" if lo is None else f"[{fmt(lo, 2)}, {fmt(hi, 2)}]"))
    if iaa["pairs"]:
        st.dataframe([{"annotators": f"{v['a']} / {v['b']}", "shared pairs": v["n"], "questions": v["questions"],
                       "kappa": fmt(v["kappa"]), "kappa 95% CI": ci(v, "kappa"), "PABAK": fmt(v["pabak"]),
                       "AC1": fmt(v["ac1"]), "AC1 95% CI": ci(v, "ac1"), "raw agreement": fmt(v["agreement"])}
                      for v in iaa["pairs"].values()], hide_index=True, key="agr_iaa")
    else:
        st.caption("No pair was labelled by two annotators yet (use overlap when building task sets).")


def calibration_tab(report: dict) -> None:
    scores = report["calibration_scores"]
    if not scores:
        st.caption("No reference labels, or no annotator labelled a pair that has one. Import reference labels "
                   "(a TSV's labels as reference) and mix calibration pairs into a task set.")
        return
    st.caption("Each annotator against the reference labels (pairs whose label was known in advance).")
    st.dataframe([{"annotator": a, "pairs": s["n"], "calibration items": s["calibration_items"],
                   "accuracy": fmt(s["accuracy"]), "kappa": fmt(s["kappa"]), "AC1": fmt(s["ac1"])}
                  for a, s in scores.items()], hide_index=True, key="agr_calib")


def browse(lab: Lab, judge: str | None) -> None:
    store = lab.store
    rows = lab.disagreements(judge)
    kinds = st.multiselect("Show", ["humans", "judge"], default=["humans", "judge"], key="agr_kinds",
                           help="humans: two annotators differ; judge: a human and the judge differ")
    rows = [r for r in rows if any(k in r["kind"].split("+") for k in kinds)]
    if st.checkbox("Only pairs without a gold label", value=False, key="agr_open"):
        rows = [r for r in rows if r["gold"] is None]
    st.caption(f"{len(rows)} pairs")
    if not rows:
        return
    ids = [r["pair_id"] for r in rows]
    pid = st.selectbox("Pair", ids, key="agr_pair")
    r = rows[ids.index(pid)]
    try:
        pair = store.pair(pid)
    except StoreError as e:
        error_line(e)
        return
    st.markdown("**Question**")
    st.markdown(esc(pair.question))
    st.markdown("**Perspective**")
    st.info(esc(pair.perspective))
    with st.container(border=True, height=260):
        if pair.title:
            st.markdown(f"**{esc(pair.title)}**")
        st.markdown(esc(pair.document))
    st.dataframe([{"who": a, "label": "supports" if v else "does not", "unsure": a in r["unsure"]}
                  for a, v in r["labels"].items()]
                 + ([{"who": f"judge {judge}", "label": "supports" if r["judge"] else "does not", "unsure": False}]
                    if r["judge"] is not None else [])
                 + ([{"who": "gold", "label": "supports" if r["gold"] else "does not", "unsure": False}]
                    if r["gold"] is not None else []), hide_index=True)
    if lab.actor.open_mode:
        st.text_input("Adjudicator", key="agr_adjudicator", value=st.query_params.get("annotator", ""))
    b = st.columns(2)
    b[0].button("Gold: supports", key="agr_gold_yes", on_click=adjudicate, args=(lab, pid, 1))
    b[1].button("Gold: does not support", key="agr_gold_no", on_click=adjudicate, args=(lab, pid, 0))


def export_tab(lab: Lab, report: dict) -> None:
    from berds_core.lab.exports import EXPORT_COLUMNS, to_csv, to_jsonl

    st.caption("Tables as CSV, the whole report as JSON; labels (admins) as CSV or JSON Lines. No account data.")
    c = st.columns(3)
    c[0].download_button("Paper table (CSV)", to_csv(paper_rows(report)), file_name="agreement-table.csv",
                         mime="text/csv", key="agr_dl_table", disabled=not report["table"])
    per_q = breakdown_rows(report.get("per_question") or {}, "per_question")
    c[1].download_button("Per question (CSV)", to_csv(per_q), file_name="agreement-per-question.csv",
                         mime="text/csv", key="agr_dl_questions", disabled=not per_q)
    c[2].download_button("Report (JSON)", json.dumps(report, ensure_ascii=False, indent=1),
                         file_name="agreement-report.json", mime="application/json", key="agr_dl_report")
    if lab.allowed("export_labels"):
        rows = lab.export_rows("labels", include_skips=True)
        c = st.columns(3)
        c[0].download_button("Labels (CSV)", to_csv(rows, EXPORT_COLUMNS), file_name="labels.csv", mime="text/csv",
                             key="agr_dl_labels_csv", disabled=not rows)
        c[1].download_button("Labels (JSONL)", to_jsonl(rows), file_name="labels.jsonl", mime="application/jsonl",
                             key="agr_dl_labels_jsonl", disabled=not rows)
        gold = lab.export_rows("gold")
        c[2].download_button("Adjudicated gold (CSV)", to_csv(gold, EXPORT_COLUMNS), file_name="gold.csv",
                             mime="text/csv", key="agr_dl_gold", disabled=not gold)


main()
