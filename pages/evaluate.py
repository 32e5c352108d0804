"""Evaluate: a configuration over every question, per subset and macro, with intervals and a failure browser."""
from __future__ import annotations

import hashlib
import json

import plotly.graph_objects as go
import streamlit as st

from berds_core.diversify.methods import PERSPECTIVE_METHODS, slider_lambda
from berds_core.eval.measures import Measure, parse_measures
from berds_core.eval.report import HEADLINE, significance, with_diversity
from berds_core.experiment import score
from berds_core.studio.columns import METHOD_NAMES as METHODS, QE_LABELS, column_pipeline, method_label, run_entry
from studio_ui.config import LABEL_SOURCES, choose_policy
from studio_ui.engines import question_engine
from studio_ui.shell import ensure_shell
from studio_ui.text import esc, judge_caveat
from studio_ui.warmup import page_engine

ensure_shell()

LABEL_MEASURES = parse_measures("MRecall@5 MRecall@10 P@5 P@10 P@1")
# TREC diversity measures (ndeval via ir_measures; perspectives as subtopics, the labels as qrels)
NDEVAL_MEASURES = parse_measures("alpha_nDCG@5 alpha_nDCG@10 ERR_IA@5 ERR_IA@10 P_IA@5 P_IA@10 StRecall@5 StRecall@10")
METRICS = [(m.key, m.label) for m in LABEL_MEASURES + NDEVAL_MEASURES]
CHART_DEFAULT = [m.key for m in parse_measures("MRecall@5 P@5 alpha_nDCG@5 StRecall@5")]
DEPTH = 10  # passages kept per question (k = 5 and 10 are scored)


def run_key(cfg, pipeline) -> str:
    """The key of a configuration's runs: the sidebar's settings and the pipeline's string (what runs)."""
    return hashlib.sha1(json.dumps([cfg.as_dict(), str(pipeline)]).encode()).hexdigest()[:16]


def config_label(cfg, method, pipeline, labels) -> str:
    return method_label(cfg.retriever, method, pipeline, labels)


def interval_text(m: dict, n: int) -> str:
    """``mean [lo, hi]``; with fewer than two questions there is no interval: the mean alone (the note under
    the table, :func:`too_few_note`, says why)."""
    if n < 2:
        return f"{m['mean']:.3f}"
    return f"{m['mean']:.3f} [{m['lo']:.3f}, {m['hi']:.3f}]"


def too_few_note(table: list[dict]) -> str | None:
    """One note for the rows of fewer than two questions (their cells show the mean, no interval)."""
    small = [f"{s['subset']} (n = {s['n']})" for s in table if s["n"] < 2]
    if not small:
        return None
    return (f"No interval for {', '.join(small)}: too few questions for an interval (a 95% interval over "
            "questions needs at least two).")


def table_rows(table: list[dict]) -> list[dict]:
    """The Report's table (``Report.to_table``) as the page shows it: ``mean [lo, hi]`` per measure."""
    rows = []
    for s in table:
        row = {"subset": s["subset"], "n": s["n"]}
        for key, label in METRICS:
            row[label] = interval_text(s[key], s["n"])
        rows.append(row)
    return rows


def table_csv(table: list[dict], label: str) -> str:
    """The table as CSV (formula cells neutralised: ``berds_core.lab.exports``)."""
    from berds_core.lab.exports import to_csv

    cols = ["configuration", "subset", "n"] + [f"{lab} {part}" for _, lab in METRICS for part in ("mean", "lo", "hi")]
    parts = [(key, part) for key, _ in METRICS for part in ("mean", "lo", "hi")]
    rows = [dict(zip(cols, [label, s["subset"], s["n"]] + [f"{s[key][part]:.6f}" if part == "mean" or s["n"] >= 2
                                                           else "" for key, part in parts]))
            for s in table]
    return to_csv(rows, cols)


def comparison_chart(tables: dict, chosen: list[str], metric_keys: list[str],
                     marks: dict | None = None) -> go.Figure:
    """Grouped bars of the means over questions (the Report's :data:`HEADLINE` row) with their intervals;
    ``marks[label][metric]``: the significance stars of that configuration against the baseline, drawn above
    its bar."""
    fig = go.Figure()
    for label in chosen:
        head = next(row for row in tables[label] if row["subset"] == HEADLINE)
        names = [dict(METRICS)[k] for k in metric_keys]
        means = [head[k]["mean"] for k in metric_keys]
        text = [(marks or {}).get(label, {}).get(k, "") for k in metric_keys]
        fig.add_bar(name=label, x=names, y=means, text=text, textposition="outside", cliponaxis=False,
                    error_y=dict(type="data", symmetric=False,
                                 array=[head[k]["hi"] - head[k]["mean"] for k in metric_keys],
                                 arrayminus=[head[k]["mean"] - head[k]["lo"] for k in metric_keys]))
    fig.update_layout(barmode="group", yaxis=dict(range=[0, 1.1], title="mean over questions (95% interval)"),
                      legend=dict(orientation="h", y=-0.2), margin=dict(l=10, r=10, t=10, b=10), height=380)
    return fig


def main() -> None:
    st.title("Evaluate")
    st.caption("Run one configuration over every question of the chosen subsets. MRecall@k: share of questions "
               "whose top k cover all perspectives (at least k of them when there are more than k). Precision@k: "
               "share of the top k passages that support any perspective. Intervals: 95% bootstrap over questions. "
               "The row *all questions* (and the chart) is the mean over questions, as `berds evaluate` gives it; "
               "*macro* is the mean of the subset means (every subset weighs the same).")
    ss = st.session_state
    ss.setdefault("eval_runs", {})   # run key -> {qid: entry}
    ss.setdefault("eval_done", {})   # configuration label -> {"summary", "key", ...}
    ss.setdefault("eval_active", None)

    cfg, data, retriever, judge, embedder = page_engine()

    subsets = data.subsets
    chosen_subsets = st.multiselect("Subsets", subsets, default=subsets, key="ev_subsets") if subsets else []
    c2, c3, c4 = st.columns(3)
    method = c2.selectbox("Diversifier", list(METHODS), format_func=METHODS.get, key="ev_method")
    lam = c3.slider("MMR λ", 0.0, 1.0, 0.75, 0.05, key="ev_lam", disabled=not slider_lambda(method))
    qe_source = c3.selectbox("QE perspectives", list(QE_LABELS), format_func=QE_LABELS.get, key="ev_qe",
                             disabled=method not in PERSPECTIVE_METHODS)
    label_opts = LABEL_SOURCES if data.gold else ["judge"]
    labels = c4.radio("Labels from", label_opts, key="ev_labels", horizontal=True,
                      help="gold: the dataset's labels; judge: the judge chosen in the sidebar.")
    policy = choose_policy(c4, "ev_policy") if labels == "judge" else "gold"
    if labels == "judge":
        judge_caveat(cfg.judge)

    questions = [q for q in data.questions if not subsets or q.subset in chosen_subsets]
    if not questions:
        st.info("Pick at least one subset.")
        return
    pipeline = column_pipeline(method, lam if slider_lambda(method) else None, qe_source)  # λ: the MMR slider's
    key = run_key(cfg, pipeline)
    store = ss.eval_runs.setdefault(key, {})
    todo = [q for q in questions if q.id not in store]
    label = config_label(cfg, method, pipeline, labels if labels == "gold" else f"judge, {policy}")

    b1, b2, _ = st.columns([1, 1, 4])
    if b1.button("Run evaluation", type="primary", key="ev_run", disabled=not todo and ss.eval_active != key):
        ss.eval_active = key
    if ss.eval_active == key and todo:
        cancel_slot = b2.empty()
        if cancel_slot.button("Cancel", key="ev_cancel"):
            ss.eval_active = None
            st.warning(f"Cancelled: {len(questions) - len(todo)} of {len(questions)} questions done; "
                       "press Run to continue where it stopped.")
        else:
            bar = st.progress(0.0, text="Retrieving and judging…")
            done_n = len(questions) - len(todo)
            for i, q in enumerate(todo):  # one question at a time: the bar moves and Cancel stops between them
                engine = question_engine(cfg, data.corpus_for(q.id), pipeline, judge=judge, embedder=embedder)
                store[q.id] = run_entry(engine, q, pipeline, DEPTH)
                bar.progress((done_n + i + 1) / len(questions),  # question text shown literally
                             text=esc(f"{done_n + i + 1} / {len(questions)} questions · {q.question[:70]}"))
            ss.eval_active = None
            bar.empty()
            cancel_slot.empty()
            todo = []
    if todo:
        st.info(f"{len(questions) - len(todo)} of {len(questions)} questions evaluated for “{esc(label)}”. "
                "Press **Run evaluation**; results are kept for this configuration.")
        if len(todo) == len(questions):
            _show_compare(ss.eval_done)
            return

    entries = [store[q.id] for q in questions if q.id in store]
    report = (score(entries, gold=data.gold) if labels == "gold" else
              score(entries, judge=judge.name, policy=policy))  # the figures `berds evaluate` gives this run
    label_args = {"gold": data.gold} if labels == "gold" else {"judge": judge.name}
    (report,) = with_diversity([report], gold=data.gold if labels == "gold" else None)  # ndeval, its own pool
    summary = report.to_table([k for k, _ in METRICS])
    if not todo:
        if label not in ss.eval_done and "ev_compare" in ss:  # a newly finished configuration joins the comparison
            ss.ev_compare = [c for c in ss.ev_compare if c in ss.eval_done] + [label]
        ss.eval_done[label] = {"summary": summary, "report": report, "key": key, "labels": label_args,
                               "policy": report.policy, "ids": report.ids,
                               "per_q": {k: report.per_question[k].tolist() for k, _ in METRICS},
                               "subsets": report.subsets}
        st.subheader(f"Results · {esc(label)}")
    else:  # cancelled part-way: not the configuration's result
        st.subheader(f"Partial results · {esc(label)} · {len(entries)} of {len(questions)} questions")
        st.caption("Evaluation was stopped before every question was done; these figures cover only the questions "
                   "done so far. Press **Run evaluation** to finish.")
    st.dataframe(table_rows(summary), hide_index=True, width="stretch")
    note = too_few_note(summary)
    if note:
        st.caption(note)
    st.caption(policy_note(report))
    d1, d2, _ = st.columns([1, 1, 3])
    run_text = "".join(json.dumps(e, ensure_ascii=False) + "\n" for e in entries)
    d1.download_button("Download run (JSONL)", run_text, file_name=f"run-{key}.jsonl", mime="application/jsonl",
                       key="ev_dl_run")
    d2.download_button("Download table (CSV)", table_csv(summary, label), file_name=f"table-{key}.csv",
                       mime="text/csv", key="ev_dl_csv")

    _show_compare(ss.eval_done)
    _failure_browser(entries, report)


def policy_note(report) -> str:
    """One line naming the labels and the policy the figures were scored with."""
    if report.policy == "gold":
        return "Labels: the dataset's gold labels (policy gold: every label counts)."
    note = (f"Labels: judge {report.labels}, policy {report.policy} (`berds evaluate --labels {report.labels} "
            f"--policy {report.policy}` gives these figures for the downloaded run).")
    if report.policy == "confident":
        note += (f" {report.unsure:,} (passage, perspective) pairs at or above the judge's threshold are inside its "
                 "unsure band and count as not supporting (the downloaded run keeps the threshold's decisions, "
                 "its probabilities and band).")
    return note


def _show_compare(done: dict) -> None:
    if not done:
        return
    st.subheader("Compare configurations")
    ss = st.session_state
    if "ev_compare" in ss:  # the widget's own state (a finished configuration is added when it finishes)
        ss.ev_compare = [c for c in ss.ev_compare if c in done]
    chosen = st.multiselect("Configurations", list(done), default=None if "ev_compare" in ss else list(done)[-4:],
                            key="ev_compare")
    metric_keys = st.multiselect("Metrics", [k for k, _ in METRICS], default=CHART_DEFAULT, key="ev_compare_metrics",
                                 format_func=dict(METRICS).get)
    if not chosen or not metric_keys:
        return
    tables = {label: done[label]["summary"] for label in chosen}
    marks, sig = {}, None
    if len(chosen) > 1:
        baseline = st.selectbox("Baseline (each other configuration is tested against it)", chosen,
                                key="ev_baseline")
        sig, tables = _significance(done, chosen, baseline, metric_keys)
        if sig is not None:
            marks = {c["b"]: {m: r["stars"] for m, r in c["metrics"].items()} for c in sig["comparisons"]}
    st.plotly_chart(comparison_chart(tables, chosen, metric_keys, marks), width="stretch", key="ev_chart")
    if sig is not None:
        st.caption(f"Stars above a bar: its difference from “{sig['baseline']}” over the same questions, paired "
                   f"randomisation test ({sig['n_resamples']} sign patterns, exact for small sets), "
                   f"{sig['correction'].capitalize()}-corrected per metric across {len(sig['comparisons'])} "
                   "comparison(s): * p < 0.05, ** p < 0.01, *** p < 0.001. Means over questions, as `berds evaluate` "
                   "tests them. d_z: mean difference / its standard deviation. " + sig["pool"])
        st.dataframe(significance_rows(sig), hide_index=True, width="stretch", key="ev_sig_table")


def _significance(done: dict, chosen: list[str], baseline: str, metric_keys: list[str]):
    """Paired tests of every chosen configuration against ``baseline`` on their common questions.

    With judge labels the ndeval measures are scored again on the shared pool (the union of the
    configurations' judged passages), so every configuration has the same ideal ranking; the bars
    then show those figures. Returns (result or None, the Reports' tables for the chart).
    """
    tables = {label: done[label]["summary"] for label in chosen}
    if any(done[c]["labels"].keys() != done[baseline]["labels"].keys() or
           done[c]["labels"].get("judge") != done[baseline]["labels"].get("judge") or
           done[c].get("policy") != done[baseline].get("policy") for c in chosen):
        st.warning("These configurations were scored with different labels (gold / judge) or label policies; "
                   "significance needs the same labels.")
        return None, tables
    common = [q for q in done[baseline]["ids"] if all(q in set(done[c]["ids"]) for c in chosen)]
    if len(common) < 2:
        st.info("Significance needs at least two questions evaluated by every chosen configuration.")
        return None, tables
    cache_key = json.dumps([chosen, baseline, metric_keys, [done[c]["key"] for c in chosen]])
    cache = st.session_state.setdefault("eval_sig", {})
    if cache_key not in cache:
        reports = {c: done[c]["report"].only(common) for c in chosen}
        pool = "Gold labels: every gold-labelled passage is in the pool."
        if "judge" in done[baseline]["labels"]:  # a shared pool: the union of the configurations' judged passages
            reports = dict(zip(chosen, with_diversity(list(reports.values()))))
            pool = ("Judge labels: the diversity measures are scored on the shared pool of these configurations "
                    "(their judged passages together).")
        sig = significance(reports, baseline, metrics=metric_keys)
        sig["pool"] = pool
        cache[cache_key] = (sig, {c: reports[c].to_table([k for k, _ in METRICS]) for c in chosen})
    return cache[cache_key]


def significance_rows(sig: dict) -> list[dict]:
    rows = []
    for c in sig["comparisons"]:
        for m, r in c["metrics"].items():
            dz = "undefined" if r["d_z"] is None else (
                f"{r['d_z']:+.2f}" + (f" [{r['d_z_ci'][0]:+.2f}, {r['d_z_ci'][1]:+.2f}]" if r["d_z_ci"] else ""))
            rows.append({"configuration": c["b"], "metric": dict(METRICS).get(m, m), "questions": r["n"],
                         "difference [95% CI]": f"{r['diff']:+.3f} [{r['ci'][0]:+.3f}, {r['ci'][1]:+.3f}]",
                         "d_z [95% CI]": dz, "p (randomisation)": round(r["p_permutation"], 4),
                         "p (paired t)": round(r["p_t"], 4), f"p ({sig['correction']})": round(r["p"], 4),
                         "": r["stars"], "wins / losses / ties": f"{r['wins']} / {r['losses']} / {r['ties']}"})
    return rows


def _excerpt(text: str, words: int = 70) -> str:
    tokens = text.split()
    return " ".join(tokens[:words]) + (" …" if len(tokens) > words else "")


def _failure_browser(entries, report) -> None:
    st.subheader("Failure browser")
    k = st.radio("Questions with MRecall@k = 0 for k =", [5, 10], horizontal=True, key="ev_fail_k")
    missed = report.per_question[Measure.parse(f"MRecall@{k}").key]
    fails = [(e, L) for e, L, m in zip(entries, report.matrices, missed) if m == 0]
    subsets = sorted({e.get("subset") or "all" for e, _ in fails})
    pick = st.multiselect("Filter by subset", subsets, default=subsets, key="ev_fail_subsets") if len(subsets) > 1 else subsets
    fails = [(e, L) for e, L in fails if (e.get("subset") or "all") in pick]
    st.caption(f"{len(fails)} question(s) miss a perspective in their top {k}.")
    for e, L in fails[:50]:
        covered = L[:k].any(axis=0)
        missing = [p for p, c in zip(e["perspectives"], covered) if not c]
        with st.expander(esc(f"{e['question']}  —  {len(missing)} missing")):  # question text, literally
            parts = []
            for j, p in enumerate(e["perspectives"]):
                mark = ('<span style="color:#1d7a3a;font-weight:600">covered</span>' if covered[j] else
                        '<span style="color:#b42318;font-weight:600">missing</span>')
                parts.append(f'<div style="margin:2px 0"><b>P{j + 1}</b> {mark} · {esc(p)}</div>')
            parts.append(f'<div style="margin-top:8px;font-weight:600">Retrieved instead (top {k}):</div>')
            for i, c in enumerate(e["ctxs"][:k]):
                sup = ", ".join(f"P{j + 1}" for j in range(L.shape[1]) if L[i, j]) or "none"
                parts.append(f'<div style="margin:4px 0;font-size:0.88rem"><b>#{i + 1}</b> '
                             f'<span style="color:#5b6470">supports: {sup}</span><br>{esc(_excerpt(c["text"]))}</div>')
            st.markdown("".join(parts), unsafe_allow_html=True)
    if len(fails) > 50:
        st.caption(f"… and {len(fails) - 50} more (download the run for all of them).")


main()
