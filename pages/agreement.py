"""Agreement: the judge against human labels, humans against each other, calibration, adjudication,
and who to trust while a round runs.

Every figure with a 95% interval from a bootstrap over *questions* (pairs of
one question are not independent): Cohen's kappa, PABAK, Gwet's AC1 (kappa
alone misleads at BERDS' 17% positives), precision / recall / F1 of
"supports", positive rates; breakdowns per annotator, subset, perspective
side and question; the paper-style table (human vs each judge, human vs
human); Krippendorff's alpha; each annotator against reference labels.
Annotators: each one's estimated competence (MACE / Dawid-Skene), gold checks,
agreement with the others, time per label, drift. Round health: pace, queues,
checks failed and skipped, paused queues (resume), qualification, the round's controls.
Judge failures: per passage source, perspective length and question.
Disagreements: ordered by judge vs reliability-weighted humans.
Lab mode: reviewers and admins only (refused and logged for annotators).
"""
from __future__ import annotations

import html
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
from studio_ui.pair_card import show_pair  # noqa: E402
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

    judges = list(distinct_judges(lab.reads()))  # the judges' answers, read once for the whole page
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

    # the selected tab is in the address (?tab=...); the four tabs that fit annotator models are drawn only
    # when open, so the other tabs cost what they did before
    tabs = st.tabs(["Paper table", "Human vs judge", "Breakdowns", "Between humans", "Calibration",
                    "Annotators", "Round health", "Judge failures", "Disagreements", "Export", "Teach the judge"],
                   key="tab", bind="query-params")
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
    for tab, draw in ((tabs[5], lambda: annotators_tab(lab)), (tabs[6], lambda: health_tab(lab)),
                      (tabs[7], lambda: judge_failures_tab(lab, judge)), (tabs[8], lambda: browse(lab, judge))):
        with tab:
            if tab.open:
                draw()
    with tabs[9]:
        export_tab(lab, report, judge)
    with tabs[10]:
        if tabs[10].open:
            from studio_ui.teach_judge import teach_tab

            teach_tab(lab)


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
    w = report.get("weighted")
    if w:  # a round built with --strategy active: the unbiased figures count each pair's weight
        st.caption(esc(f"Pairs chosen actively (the judge's unsure pairs first): weighted by each pair's inverse "
                       f"inclusion probability, kappa {fmt(w['kappa'])} {ci(w, 'kappa')}, F1 {fmt(w['f1'])}, "
                       f"judge says supports {fmt(w['positive_rate'])} against {fmt(w['human_positive_rate'])}."))
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


# --------------------------------------------------------------------------- who to trust: annotators, round, judge

METHODS = {"mace": "MACE (θ)", "dawid-skene": "Dawid-Skene (J)"}


def plot_text(name) -> str:
    """A name as a plotly label: plotly reads a few HTML tags (<b>, <a href>) in text; entities show literally."""
    return html.escape(str(name), quote=True)


def pct_ci(block: dict | None, key: str = "accuracy") -> str:
    if not block or block.get(key) is None:
        return "–"
    lo, hi = block.get("ci95") or [None, None]
    return f"{fmt(block[key], 2)} [{fmt(lo, 2)}, {fmt(hi, 2)}]" if lo is not None else fmt(block[key], 2)


def annotators_tab(lab: Lab) -> None:
    method = st.radio("Annotator model", list(METHODS), format_func=METHODS.get, horizontal=True, key="agr_method",
                      help="Competence from redundant labels: MACE's θ (probability of knowing the label) or "
                           "Dawid-Skene's Youden J (P(1|1) + P(0|0) − 1). 0: labels at random or always the same.")
    rep = lab.reliability_report(method=method)
    for w in rep["warnings"]:
        st.warning(esc(w), icon=":material/warning:")
    if not rep["annotators"]:
        st.info("No labels yet.")
        return
    other = next(m for m in METHODS if m != method)
    a = rep["annotators"]
    rows = [{"annotator": n, "competence": fmt(a[n]["competence"], 2),
             METHODS[other]: fmt(a[n]["competence_by_model"][other], 2), "labels": a[n]["labels"],
             "gold checks": pct_ci(a[n]["checks"]), "checks": (a[n]["checks"] or {}).get("n", 0),
             "agreement with others": pct_ci(a[n]["agreement_with_others"], "agreement"),
             "median s / label": fmt(None if a[n]["time"]["median_ms"] is None else a[n]["time"]["median_ms"] / 1000, 1),
             "browser's s / label": fmt(None if a[n]["time"].get("browser_median_ms") is None
                                        else a[n]["time"]["browser_median_ms"] / 1000, 1),
             f"under {rep['time_floor_ms'] / 1000:g} s": fmt(a[n]["time"]["under_floor_share"], 2),
             "drift (first → last)": "–" if a[n]["drift"]["first"] is None else
             f"{fmt(a[n]['drift']['first'], 2)} → {fmt(a[n]['drift']['last'], 2)}",
             "paused": ", ".join(a[n]["paused_in"])} for n in rep["order"]]
    st.caption(f"{rep['labels']} labels on {rep['pairs']} pairs ({rep['redundant_pairs']} with two or more); "
               "each annotator's own gold checks are scored apart and left out of the model. Gold checks and "
               "agreement: 95% Wilson intervals.")
    st.dataframe(rows, hide_index=True, key="agr_annotators")
    names = rep["order"]
    fig = go.Figure()
    shown = [plot_text(n) for n in names]
    fig.add_trace(go.Bar(x=shown, y=[a[n]["competence"] for n in names], name=f"competence ({METHODS[method]})"))
    fig.add_trace(go.Bar(x=shown, y=[(a[n]["checks"] or {}).get("accuracy") for n in names],
                         name="gold-check accuracy"))
    fig.update_layout(barmode="group", height=300, yaxis_title="share", margin=dict(l=10, r=10, t=10, b=10))
    st.plotly_chart(fig, key="agr_competence")
    drift = go.Figure()
    for n in names:
        series = a[n]["drift"]["series"]
        if series:
            drift.add_trace(go.Scatter(x=[p["label"] for p in series], y=[p["agreement"] for p in series],
                                       mode="lines+markers", marker=dict(size=3), name=plot_text(n)))
    drift.update_layout(height=280, xaxis_title="labels made", yaxis_title=f"agreement (last {rep['window']})",
                        margin=dict(l=10, r=10, t=10, b=10))
    st.markdown("**Drift: rolling agreement with the others**")
    st.plotly_chart(drift, key="agr_drift")
    qual = lab.export_rows("qualification")
    if qual:
        with st.expander(f"Qualification answers ({len(qual)})"):
            st.dataframe([{k: r[k] for k in ("task_set", "annotator", "attempt", "item", "id", "expected", "label",
                                             "correct", "attempt_passed")} for r in qual], hide_index=True,
                         key="agr_qual")


def _lead_action(act, done_text: str, nothing_text: str) -> None:
    """A lead's button (resume a queue, allow a retry): the action, then one flash line (a refusal says so)."""
    try:
        done = act()
    except AccessDenied as e:
        st.session_state["agr_flash"] = f"Refused: {e}"
        return
    st.session_state["agr_flash"] = done_text if done else nothing_text


def _resume(lab: Lab, ts: str, who: str) -> None:
    _lead_action(lambda: lab.resume(ts, who), f"Resumed {who} in {ts}", "That queue was not paused")


def _retry(lab: Lab, ts: str, who: str) -> None:
    _lead_action(lambda: lab.allow_retry(ts, who), f"{who} may try the qualification of {ts} again",
                 "Nothing to retry")


def health_tab(lab: Lab) -> None:
    sets = lab.store.tasks.names()
    pick = st.selectbox("Task set", ["(all)"] + sets, key="agr_health_set")
    ts = None if pick == "(all)" else pick
    h = lab.round_health(ts)
    m = st.columns(5)
    m[0].metric("Decisions", h["labels"])
    m[1].metric("Queue left", h["queue_left"])
    m[2].metric("Checks failed", h["checks_failed"])
    m[3].metric("Paused queues", len(h["pauses"]))
    m[4].metric("Waiting for adjudication", h["adjudication"]["waiting"])
    for p in h["pauses"]:
        c = st.columns([5, 1])
        c[0].warning(esc(p["lead_message"]), icon=":material/pause_circle:")
        c[1].button("Resume", key=f"agr_resume_{p['id']}", on_click=_resume, args=(lab, p["task_set"], p["annotator"]))
    for q in h["qualification"]:
        if q["state"] == "failed":
            c = st.columns([5, 1])
            c[0].warning(esc(f"{q['annotator']} did not pass the qualification of {q['task_set']} ({q['correct']} of "
                             f"{q['answered']}; pass mark {q['pass_mark']:.0%})."))
            c[1].button("Allow a retry", key=f"agr_retry_{q['task_set']}_{q['annotator']}", on_click=_retry,
                        args=(lab, q["task_set"], q["annotator"]))
    pace = h["pace"]
    if pace["hours"]:
        fig = go.Figure()
        for who, counts in pace["per_annotator"].items():
            fig.add_trace(go.Bar(x=pace["hours"], y=counts, name=plot_text(who)))
        fig.update_layout(barmode="stack", height=300, yaxis_title="decisions per hour", margin=dict(l=10, r=10, t=10, b=10))
        st.markdown("**Labels per hour per annotator**")
        st.plotly_chart(fig, key="agr_pace")
    st.dataframe([{"annotator": a, "done": q["done"], "total": q["total"], "left": q["remaining"],
                   "last hour": pace["last_hour"].get(a, 0),
                   "checks decided": h["checks"].get(a, {}).get("answered", 0),
                   "checks failed": h["checks"].get(a, {}).get("failed", 0),
                   "checks skipped": h["checks"].get(a, {}).get("skipped", 0),
                   "check slots without a pair": h["checks"].get(a, {}).get("dry", 0),
                   "state": ", ".join(f"{k}: {v}" for k, v in q["sets"].items())} for a, q in h["queues"].items()],
                 hide_index=True, key="agr_health")
    if ts and lab.round_controls(ts).checks_on and not h["check_pool"].get(ts):
        st.warning(esc(f"{ts} has an empty pool of gold checks: every check slot runs dry until an "
                       "adjudication or a typed answer of one of its pairs joins the pool."))
    if ts and lab.allowed("run_round"):
        controls_form(lab, ts)


def controls_form(lab: Lab, ts: str) -> None:
    c = lab.round_controls(ts)
    with st.expander("Round controls (gold checks, floor, qualification)"):
        with st.form(f"agr_controls_{ts}"):
            cols = st.columns(4)
            rate = cols[0].number_input("Check rate", 0.0, 0.5, float(c.check_rate), 0.01, help="0.05 = one item in 20")
            use_floor = cols[1].checkbox("Pause below a floor", value=c.check_floor is not None)
            floor = cols[1].number_input("Floor (accuracy)", 0.0, 1.0, float(c.check_floor or 0.7), 0.05)
            cmin = cols[2].number_input("Checks before the floor applies", 1, 100, int(c.check_min))
            conf = cols[2].number_input("Confidence to pause", 0.5, 0.99, float(c.check_confidence), 0.01)
            tfloor = cols[3].number_input("Time floor (s)", 0.0, 60.0, c.time_floor_ms / 1000, 0.5)
            qn = cols[3].number_input("Qualification pairs", 0, 50, int(c.qualification_n))
            qpass = cols[3].number_input("Pass mark", 0.0, 1.0, float(c.qualification_pass), 0.05)
            if st.form_submit_button("Save the controls"):
                try:
                    lab.set_round_controls(ts, check_rate=rate, check_floor=floor if use_floor else None,
                                           check_min=cmin, check_confidence=conf, time_floor_ms=int(tfloor * 1000),
                                           qualification_n=qn, qualification_pass=qpass)
                    st.session_state["agr_flash"] = f"Saved the controls of {ts}"
                    st.rerun()
                except (AccessDenied, ValueError) as e:
                    error_line(e)


def judge_failures_tab(lab: Lab, judge: str | None) -> None:
    if not judge:
        st.info("No judge answers stored yet: run a judge above.")
        return
    f = lab.judge_failures(judge)
    o = f["overall"]
    if not o["n"]:
        st.info("No pair has both this judge's answer and a label to check it against yet.")
        return
    st.caption(f"The judge against the best label each pair has: {esc(', '.join(f'{k} {v}' for k, v in f['truth_sources'].items()))} "
               f"(model labels only where their posterior is at least {f['min_posterior']}). Worst first; error "
               "rates with 95% Wilson intervals.")
    st.metric("Judge error rate", pct_ci(o, "error_rate"), help=f"{o['errors']} of {o['n']} pairs")
    for key, title in (("per_source", "passage source"), ("per_perspective_length", "perspective length"),
                       ("per_question", "question")):
        blocks = f[key]
        st.markdown(f"**Per {title}**")
        st.dataframe([{title: b.get("text", k), "pairs": b["n"], "errors": b["errors"],
                       "error rate": pct_ci(b, "error_rate"), "false +": b["false_positives"],
                       "false −": b["false_negatives"], "mean p": fmt(b["mean_prob"], 2)} for k, b in blocks.items()],
                     hide_index=True, key=f"agr_fail_{key}")


def browse(lab: Lab, judge: str | None) -> None:
    store = lab.store
    rows = lab.review_queue(judge)
    kinds = st.multiselect("Show", ["humans", "judge"], default=["humans", "judge"], key="agr_kinds",
                           help="humans: two annotators differ; judge: a human and the judge differ")
    rows = [r for r in rows if any(k in r["kind"].split("+") for k in kinds)]
    if st.checkbox("Only pairs without a gold label", value=False, key="agr_open"):
        rows = [r for r in rows if r["gold"] is None]
    st.caption(f"{len(rows)} pairs, most urgent first: how far the judge's probability is from the share of "
               "\"supports\" among the humans, each weighted by their estimated competence (a spammer's label "
               "weighs about nothing); pairs without a judge probability follow, the most split first.")
    if not rows:
        return
    ids = [r["pair_id"] for r in rows]
    st.dataframe([{"pair": r["pair_id"], "priority": fmt(r["priority"], 2), "judge p": fmt(r["judge_prob"], 2),
                   "weighted humans": fmt(r["weighted_majority"], 2), "kind": r["kind"],
                   "gold": "" if r["gold"] is None else str(r["gold"])} for r in rows[:200]],  # one type a column
                 hide_index=True, key="agr_queue", height=220)
    pid = st.selectbox("Pair", ids, key="agr_pair")
    r = rows[ids.index(pid)]
    try:
        pair = store.pair(pid)
    except StoreError as e:
        error_line(e)
        return
    show_pair(pair, height=260)
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


def export_tab(lab: Lab, report: dict, judge: str | None = None) -> None:
    from berds_core.lab.exports import EXPORT_COLUMNS, columns_for, to_csv, to_jsonl

    st.caption("Tables as CSV, the whole report as JSON; labels (admins) as CSV or JSON Lines. No account data.")
    c = st.columns(3)
    c[0].download_button("Paper table (CSV)", to_csv(paper_rows(report)), file_name="agreement-table.csv",
                         mime="text/csv", key="agr_dl_table", disabled=not report["table"])
    per_q = breakdown_rows(report.get("per_question") or {}, "per_question")
    c[1].download_button("Per question (CSV)", to_csv(per_q), file_name="agreement-per-question.csv",
                         mime="text/csv", key="agr_dl_questions", disabled=not per_q)
    c[2].download_button("Report (JSON)", json.dumps(report, ensure_ascii=False, indent=1),
                         file_name="agreement-report.json", mime="application/json", key="agr_dl_report")
    qual = lab.export_rows("qualification")
    st.download_button("Qualification answers (CSV)", to_csv(qual, columns_for(qual)), file_name="qualification.csv",
                       mime="text/csv", key="agr_dl_qual", disabled=not qual)
    if lab.allowed("export_labels"):
        rows = lab.export_rows("labels", include_skips=True, judge=judge)
        c = st.columns(3)
        c[0].download_button("Labels (CSV)" + (", with the judge's probability" if judge else ""),
                             to_csv(rows, columns_for(rows)), file_name="labels.csv", mime="text/csv",
                             key="agr_dl_labels_csv", disabled=not rows)
        c[1].download_button("Labels (JSONL)", to_jsonl(rows), file_name="labels.jsonl", mime="application/jsonl",
                             key="agr_dl_labels_jsonl", disabled=not rows)
        gold = lab.export_rows("gold")
        c[2].download_button("Adjudicated gold (CSV)", to_csv(gold, EXPORT_COLUMNS), file_name="gold.csv",
                             mime="text/csv", key="agr_dl_gold", disabled=not gold)
        st.caption("The round's label sets beside adjudication: majority vote and each annotator model's most "
                   "likely label, with its confidence.")
        c = st.columns(3)
        for i, (what, name) in enumerate((("majority", "Majority vote"), ("mace", "MACE"),
                                          ("dawid-skene", "Dawid-Skene"))):
            got = lab.export_rows(what)
            c[i].download_button(f"{name} labels (CSV)", to_csv(got, columns_for(got)), file_name=f"{what}.csv",
                                 mime="text/csv", key=f"agr_dl_{what}", disabled=not got)


main()
