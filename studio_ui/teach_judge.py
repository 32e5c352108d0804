"""The Agreement page's "Teach the judge" tab: a lead refits the judge on the round's labels
(:meth:`berds_core.lab.access.Lab.fit_judge`, the engine call behind ``berds agreement --fit``) and sees the
agreement before and after, out of fold, with intervals; the judge it writes is picked in the sidebar as
``lab:NAME``."""
from __future__ import annotations

import streamlit as st

from berds_core.lab.access import AccessDenied, Lab
from studio_ui.lab_ui import error_line
from studio_ui.text import esc


def _fmt(v, ci=None) -> str:
    if v is None:
        return "–"
    out = f"{v:.3f}"
    if ci and ci[0] is not None:
        out += f" [{ci[0]:.3f}, {ci[1]:.3f}]"
    return out


def result_rows(out: dict) -> list[dict]:
    """Before and after, one row each: kappa and F1 with their intervals, positive rates."""
    rows = []
    for label, b in (("base judge (as shipped)", out["before"]), ("refitted, out of fold (fold seed 0)", out["after"])):
        ci = b.get("ci95") or {}
        rows.append({"judge": label, "kappa [95%]": _fmt(b["kappa"], ci.get("kappa")),
                     "F1 [95%]": _fmt(b["f1"], ci.get("f1")), "says supports": _fmt(b["positive_rate"]),
                     "labels say supports": _fmt(b["human_positive_rate"])})
    m = out["after_median"]
    rows.append({"judge": f"refitted, median of {out['fold_seeds']} fold seeds", "kappa [95%]": _fmt(m["kappa"]),
                 "F1 [95%]": _fmt(m["f1"]), "says supports": _fmt(m["positive_rate"]), "labels say supports": ""})
    return rows


def teach_tab(lab: Lab) -> None:
    from berds_core.judges import JudgeError
    from berds_core.lab.judge_fit import MIN_POSITIVES, MIN_QUESTIONS, FitRefused

    if not lab.allowed("fit_judge"):
        st.info("A lead (admin) fits the judge on the round's labels.")
        return
    st.caption(f"Refit the judge's map, threshold and unsure band on this database's adjudicated labels (or its "
               f"reference labels): question-grouped cross-validation inside the round, the agreement before and "
               f"after out of fold. Needs {MIN_QUESTIONS}+ questions and {MIN_POSITIVES}+ positive labels. The "
               f"encoders stay frozen; the judge is written beside the database and picked in the sidebar as "
               f"lab:NAME.")
    with st.form("agr_fit"):
        c = st.columns(4)
        name = c[0].text_input("Name", value="my-lab", key="agr_fit_name")
        base = c[1].selectbox("Base judge", ["embedded", "embedded:v4"], key="agr_fit_base")
        source = c[2].selectbox("Labels", ["auto", "adjudicated", "reference"], key="agr_fit_labels")
        keep = c[3].checkbox("Write even if it does not beat the base", key="agr_fit_keep")
        go = st.form_submit_button("Fit the judge")
    if go:
        try:
            with st.spinner("The base judge reads the labelled pairs, then the refit runs…"):
                st.session_state["agr_fit_out"] = lab.fit_judge(name.strip(), base=base, source=source,
                                                                keep_anyway=keep)
        except (FitRefused, JudgeError, AccessDenied, ValueError) as e:
            st.session_state.pop("agr_fit_out", None)
            error_line(f"Not fitted: {e}")
    out = st.session_state.get("agr_fit_out")
    if out:
        r = out["round"]
        st.markdown(esc(f"{out['name']}: {out['base']} refitted on {r['pairs']} pairs of {r['questions']} questions "
                        f"({r['labels']} labels, {r['positives']} supports)."))
        st.dataframe(result_rows(out), hide_index=True, key="agr_fit_table")
        (st.success if out["written"] else st.warning)(esc(out["why"] + (f": {out['written']}" if out["written"]
                                                                        else "")))
        curve = [c for c in out.get("curve") or [] if c["kappa"] is not None]
        if len(curve) > 1:
            st.plotly_chart(curve_figure(curve), key="agr_fit_curve")
        elif out.get("curve"):
            st.caption("The curve of agreement against labels needs two sizes the fit accepts.")


def curve_figure(curve: list[dict]):
    """Out-of-fold kappa of the refit (and the base judge's kappa) on the first n labels, as they came in."""
    import plotly.graph_objects as go

    n = [c["labels"] for c in curve]
    fig = go.Figure([go.Scatter(x=n, y=[c["kappa"] for c in curve], mode="lines+markers",
                                name="refitted (out of fold)"),
                     go.Scatter(x=n, y=[c["base_kappa"] for c in curve], mode="lines+markers", name="base judge",
                                line={"dash": "dot"})])
    fig.update_layout(title="Kappa with the round's labels as they came in", xaxis_title="labels",
                      yaxis_title="kappa", xaxis_type="log", height=320, margin={"t": 40, "b": 40})
    return fig
