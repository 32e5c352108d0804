"""Agreement: the judge against human labels (Table 4 layout), between humans, and adjudication."""
from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # standalone: streamlit run pages/agreement.py
    sys.path.insert(0, str(ROOT))

import plotly.graph_objects as go  # noqa: E402
import streamlit as st  # noqa: E402

from berds_core.agreement import agreement_report, disagreements  # noqa: E402
from berds_core.store import Store, default_db_path  # noqa: E402
from pages.common import ensure_shell, esc, judge_caveat  # noqa: E402

ensure_shell()


@st.cache_resource(show_spinner=False)
def get_store(path: str) -> Store:
    return Store(path)


def fmt(x, digits=3) -> str:
    return "–" if x is None else f"{x:.{digits}f}"


def ci(block: dict, key: str) -> str:
    lo, hi = (block.get("ci95") or {}).get(key, [None, None])
    return "–" if lo is None else f"[{lo:.2f}, {hi:.2f}]"


def table4_rows(report: dict) -> list[dict]:
    """One row per annotator, then pooled and gold: n, kappa (95% CI), accuracy, F1, positive rate."""
    def row(name, b):
        return {"labels": name, "n": b["n"], "kappa": fmt(b["kappa"]), "kappa 95% CI": ci(b, "kappa"),
                "accuracy": fmt(b["accuracy"]), "F1": fmt(b["f1"]), "F1 95% CI": ci(b, "f1"),
                "positive rate (judge)": fmt(b["positive_rate"]),
                "positive rate (human)": fmt(b.get("human_positive_rate"))}
    rows = [row(a, b) for a, b in report.get("annotators", {}).items()]
    if report.get("n"):
        rows.append(row("pooled", report))
    if report.get("gold"):
        rows.append(row("adjudicated gold", report["gold"]))
    return rows


def run_judge_on_labels(store: Store, spec: str) -> int:
    from berds_core.tasks import judge_probabilities
    from pages.common import cached_judge

    judge = cached_judge(spec)
    ids = sorted({l.pair_id for l in store.labels(include_skips=False)} | set(store.gold()))
    preds = judge_probabilities(store.pairs(ids), judge.predict) if ids else {}
    store.set_judge_preds(spec, preds)
    if judge.name != spec:
        store.set_judge_preds(judge.name, preds)
    return len(preds)


def adjudicate(store: Store, pair_id: str, label: int) -> None:
    who = (st.session_state.get("agr_adjudicator") or "").strip()
    if not who:
        st.session_state["agr_flash"] = "Type your name as adjudicator first."
        return
    store.adjudicate(pair_id, label, who)  # saved before the page acknowledges it
    st.session_state["agr_flash"] = f"Gold label of pair {pair_id}: {label}"


def main() -> None:
    st.title("Agreement")
    path = st.text_input("Annotation database", value=str(default_db_path()), key="agr_db")
    try:
        store = get_store(path)
    except Exception as e:
        st.error(f"{path}: cannot open annotation database ({e})", icon="⚠️")
        return
    flash = st.session_state.pop("agr_flash", None)
    if flash:
        st.toast(flash)
    judges = store.judges()
    c = st.columns([2, 2, 1])
    judge = c[0].selectbox("Judge", judges or ["(none stored)"], key="agr_judge")
    judge = judge if judges else None
    spec = c[1].text_input("Run a judge on the labelled pairs", value="embedded", key="agr_spec",
                           help="Judge spec; its answers are stored under the spec and the judge's name.")
    if c[2].button("Run judge", key="agr_run"):
        try:
            with st.spinner(f"Judging the labelled pairs with {spec}…"):
                n = run_judge_on_labels(store, spec.strip())
            st.session_state["agr_flash"] = f"Judged {n} pairs"
            st.rerun()
        except Exception as e:
            st.error(f"Judge {spec!r} is not usable: {e}".splitlines()[0], icon="⚠️")
    n_boot = st.select_slider("Bootstrap resamples", [200, 500, 1000, 2000], value=1000, key="agr_boot")
    report = agreement_report(store, judge, n_boot=n_boot)

    tabs = st.tabs(["Human vs judge", "Per subset", "Between humans", "Disagreements"])
    with tabs[0]:
        if not judge:
            st.info("No judge answers stored yet: run a judge above, or build task sets from a run with "
                    "`<judge>-preds` (`berds annotations tasks`).")
        elif not report["n"]:
            st.info("No human labels to compare yet.")
        else:
            m = st.columns(4)
            m[0].metric("Cohen's kappa (pooled)", fmt(report["kappa"]), help=f"95% CI {ci(report, 'kappa')}")
            m[1].metric("Accuracy", fmt(report["accuracy"]))
            m[2].metric("F1 (supports)", fmt(report["f1"]), help=f"95% CI {ci(report, 'f1')}")
            m[3].metric("Positive rate (judge)", fmt(report["positive_rate"]))
            st.caption("Table 4 layout: human labels as reference, the judge as prediction; percentile bootstrap "
                       f"95% intervals over {n_boot} resamples. Skips are not labels.")
            judge_caveat(judge)
            st.dataframe(table4_rows(report), hide_index=True, key="agr_table4")
            left, right = st.columns(2)
            (tn, fp), (fn, tp) = report["confusion"]
            with left:
                st.markdown("**Confusion matrix (pooled)**")
                st.dataframe([{"human \\ judge": "supports", "supports": tp, "does not": fn},
                              {"human \\ judge": "does not", "supports": fp, "does not": tn}], hide_index=True)
            with right:
                st.markdown("**Calibration**")
                cal = report["calibration"]
                if cal:
                    fig = go.Figure()
                    fig.add_trace(go.Scatter(x=[0, 1], y=[0, 1], mode="lines", name="perfect",
                                             line=dict(dash="dot", color="#999")))
                    fig.add_trace(go.Scatter(x=[b["mean_prob"] for b in cal], y=[b["human_rate"] for b in cal],
                                             mode="lines+markers", name="judge",
                                             text=[f"n = {b['n']}" for b in cal],
                                             marker=dict(size=[6 + min(b["n"], 60) / 3 for b in cal])))
                    fig.update_layout(xaxis_title="judge probability (bin mean)", yaxis_title="human positive rate",
                                      height=320, margin=dict(l=10, r=10, t=10, b=10))
                    st.plotly_chart(fig, key="agr_calibration")
                else:
                    st.caption("This judge stored labels only (no probabilities).")
    with tabs[1]:
        subs = report.get("subsets") or {}
        if subs:
            st.dataframe(table4_rows({"annotators": subs}), hide_index=True, key="agr_subsets")
        else:
            st.caption("No comparisons yet.")
    with tabs[2]:
        iaa = report["iaa"]
        alpha = iaa["alpha"]
        st.metric("Krippendorff's alpha (nominal)", fmt(alpha),
                  help=f"over {iaa['alpha_units']} pairs labelled by two or more annotators")
        if iaa["pairs"]:
            st.dataframe([{"annotators": f"{v['a']} / {v['b']}", "shared pairs": v["n"], "kappa": fmt(v["kappa"]),
                           "95% CI": "–" if v["ci95"][0] is None else f"[{v['ci95'][0]:.2f}, {v['ci95'][1]:.2f}]",
                           "raw agreement": fmt(v["agreement"])} for v in iaa["pairs"].values()],
                         hide_index=True, key="agr_iaa")
        else:
            st.caption("No pair was labelled by two annotators yet (use --overlap when building task sets).")
    with tabs[3]:
        browse(store, judge)


def browse(store: Store, judge: str | None) -> None:
    rows = disagreements(store, judge)
    kinds = st.multiselect("Show", ["humans", "judge"], default=["humans", "judge"], key="agr_kinds",
                           help="humans: two annotators differ; judge: a human and the judge differ")
    rows = [r for r in rows if any(k in r["kind"].split("+") for k in kinds)]
    only_open = st.checkbox("Only pairs without a gold label", value=False, key="agr_open")
    if only_open:
        rows = [r for r in rows if r["gold"] is None]
    st.caption(f"{len(rows)} pairs")
    if not rows:
        return
    ids = [r["pair_id"] for r in rows]
    pid = st.selectbox("Pair", ids, key="agr_pair")
    r = rows[ids.index(pid)]
    pair = store.pair(pid)
    st.markdown("**Question**")
    st.markdown(esc(pair.question))
    st.markdown("**Perspective**")
    st.info(esc(pair.perspective))
    with st.container(border=True, height=260):
        st.markdown(esc(pair.document))
    st.dataframe([{"who": a, "label": "supports" if v else "does not"} for a, v in r["labels"].items()]
                 + ([{"who": f"judge {judge}", "label": "supports" if r["judge"] else "does not"}]
                    if r["judge"] is not None else [])
                 + ([{"who": "gold", "label": "supports" if r["gold"] else "does not"}]
                    if r["gold"] is not None else []), hide_index=True)
    st.text_input("Adjudicator", key="agr_adjudicator", value=st.query_params.get("annotator", ""))
    b = st.columns(2)
    b[0].button("Gold: supports", key="agr_gold_yes", on_click=adjudicate, args=(store, pid, 1))
    b[1].button("Gold: does not support", key="agr_gold_no", on_click=adjudicate, args=(store, pid, 0))


main()
