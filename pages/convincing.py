"""Which side wins? ConflictingQA's convincingness experiments on the retrieved passages (or a ConflictingQA file)."""
from __future__ import annotations

import html

import plotly.graph_objects as go
import streamlit as st

from berds_core.convincing import DETERMINISTIC, EDITS, FEATURES
from berds_core.errors import InputError
from berds_core.generators import try_generator
from studio_ui.config import embedder_model
from studio_ui.engines import cached_judge, pool_entries
from studio_ui.shell import ensure_shell
from studio_ui.text import esc, show_error
from studio_ui.warmup import page_engine
from studio_ui.local_server import server_help

ensure_shell()

SIDE_COLORS = {"yes": "#2e7d4f", "no": "#b23b3b"}
RETRIEVED, CQA = "Retrieved passages (sidebar dataset)", "ConflictingQA file"
NO_MODEL = ("No model is configured. The answers are read from the next-token log-probabilities of \"Yes\" and "
            "\"No\": give a local OpenAI-compatible server that returns them as `openai:<model>@<url>` (how to "
            "start one: below), or a local model folder as `hf:/path/to/model` (under a folder listed in "
            "BERDS_DATA_ROOTS).")


# --------------------------------------------------------------------------- engine glue (no widgets)


@st.cache_data(show_spinner="Retrieving and labelling stances…", max_entries=32)
def retrieved_sets(_data, data_key: str, retriever_kind: str, embedder: str, n: int, judge_spec: str | None,
                   use_gold: bool):
    """Question sets (paragraphs with sides) from the top ``n`` of every two-perspective question."""
    from berds_core.convincing import from_run

    qs = [q for q in _data.questions if len(q.perspectives) == 2]  # each in its own pool, as every page ranks it
    entries = pool_entries(_data, qs, retriever_kind, embedder_model(embedder), "none", n)
    judge = None if use_gold else cached_judge(judge_spec)
    return from_run(entries, gold=_data.gold if use_gold else None, judge=judge)


@st.cache_data(show_spinner="Reading the ConflictingQA file…", max_entries=4)
def cqa_sets(path: str):
    from berds_core.convincing import load_conflictingqa

    return load_conflictingqa(path), {}


def experiment(sets, model, *, min_opponents: int, edits: list[str], edit_sample: int, features: bool):
    from berds_core.convincing import Experiment, run_experiment

    return run_experiment(sets, model, Experiment(min_opponents=min_opponents, edits=tuple(edits),
                                                  edit_sample=edit_sample, features=features, n_boot=500))


# --------------------------------------------------------------------------- drawing


def win_chart(rows: list[dict], question: str):
    """Win-rate bars coloured by side; texts from the data are HTML-escaped (plotly reads tags in labels)."""
    rows = sorted(rows, key=lambda r: -r["win_rate"])
    fig = go.Figure()
    for side in ("yes", "no"):
        sub = [r for r in rows if r["side"] == side]
        fig.add_bar(x=[html.escape(r["id"]) for r in sub], y=[r["win_rate"] for r in sub], name=f"supports “{side}”",
                    marker_color=SIDE_COLORS[side],
                    error_y=dict(type="data", symmetric=False, array=[r["hi"] - r["win_rate"] for r in sub],
                                 arrayminus=[r["win_rate"] - r["lo"] for r in sub]),
                    customdata=[[r["opponents"], html.escape(" ".join(r["text"].split()[:30])) + "…"] for r in sub],
                    hovertemplate="%{x}: win-rate %{y:.0%} over %{customdata[0]} opponents<br>%{customdata[1]}"
                                  "<extra></extra>")
    fig.update_layout(yaxis_tickformat=".0%", yaxis_range=[0, 1.05], height=360, barmode="group",
                      xaxis={"categoryorder": "array", "categoryarray": [html.escape(r["id"]) for r in rows]},
                      margin=dict(l=10, r=10, t=30, b=10), title=html.escape(question[:90]),
                      legend=dict(orientation="h", y=-0.2))
    return fig


def interval_chart(names: list[str], vals: list[float], lo: list[float], hi: list[float], axis: str):
    fig = go.Figure(go.Bar(x=names, y=vals, marker_color="#1f5f8b",
                           error_y=dict(type="data", symmetric=False, array=[h - v for h, v in zip(hi, vals)],
                                        arrayminus=[v - lo_ for v, lo_ in zip(vals, lo)])))
    fig.update_layout(yaxis_title=axis, height=300, margin=dict(l=10, r=10, t=10, b=10))
    return fig


def main() -> None:
    st.title("Which side wins?")
    st.caption("ConflictingQA's experiment (Wan, Wallace, Klein): the model reads two paragraphs with opposite "
               "stances on a yes/no question — in both orders — and answers Yes or No (read from its next-token "
               "log-probabilities). A paragraph's win-rate is how often the answer takes its side. Which features "
               "of a paragraph go with winning, and which edits make it win?")
    cfg, data, _, judge, _ = page_engine(need_judge=False)

    with st.container(border=True):
        c1, c2 = st.columns([2, 1.2])
        model_spec = c1.text_input("Model (answers Yes / No)", key="cv_model",
                                   placeholder="openai:<model>@http://127.0.0.1:8000  or  hf:/path/to/model")
        source = c2.radio("Paragraphs", [RETRIEVED, CQA], key="cv_source")
        d1, d2, d3 = st.columns(3)
        min_opp = d1.number_input("Minimum opponents", 1, 50, 5, key="cv_min_opp",
                                  help="Paragraphs with fewer distinct opponents are dropped (and counted).")
        edits = d2.multiselect("Counterfactual edits", list(EDITS), default=list(DETERMINISTIC), key="cv_edits",
                               help="control, prefix and keywords are deterministic; the others are written by the "
                                    "model.")
        edit_sample = d3.number_input("Paragraphs edited", 1, 200, 10, key="cv_edit_sample")
    model, why = try_generator(model_spec, "model path")
    if why:
        show_error(why, "Model: ")
    elif model is None:
        st.info(NO_MODEL)
    server_help("cv_model", expanded=model is None, needs="the Yes / No answers are read from its log-probabilities")

    try:
        if source == CQA:
            from berds_core.files.safepaths import resolve_user_path

            path = st.text_input("ConflictingQA file (JSONL, CSV or Parquet)", key="cv_cqa_path")
            if not path.strip():
                st.info("Give the path of a ConflictingQA file (columns category, search_query, search_type, url, "
                        "title, text_window, stance). Pickles are refused: convert with pandas to Parquet.")
                return
            sets, counts = cqa_sets(str(resolve_user_path(path, what="ConflictingQA file")))
        else:
            n = st.slider("Passages per question (top n of the sidebar's retriever)", 4, 50, 20, key="cv_n")
            use_gold = bool(data.gold)
            if not use_gold and judge is None:
                st.error("Stances need labels: this dataset has no gold labels and the judge is not usable.")
                return
            st.caption(esc(f"Stances from the {'gold labels' if use_gold else 'judge ' + cfg.judge} and the supporting / "
                           "opposing perspective of each question, decided as on the Leaning page."))
            sets, counts = retrieved_sets(data, data.key, cfg.retriever, cfg.embedder, int(n),
                                          None if use_gold else cfg.judge, use_gold)
    except InputError as e:
        show_error(e)
        return
    usable = [s for s in sets if s.by_side("yes") and s.by_side("no")]
    if not usable:
        st.info("No question has paragraphs on both sides.")
        return
    by_id = {s.id: s for s in usable}
    qid = st.selectbox("Question", list(by_id), key="cv_q", format_func=lambda i: by_id[i].question)
    scope = st.radio("Correlations and edits over", ["this question", f"all {len(usable)} questions"],
                     horizontal=True, key="cv_scope")
    chosen = [by_id[qid]] if scope == "this question" else usable
    n_pairs = sum(2 * len(s.by_side("yes")) * len(s.by_side("no")) for s in chosen)
    sig = (source, tuple(s.id for s in chosen), model_spec, int(min_opp), tuple(edits), int(edit_sample))
    if st.button(f"Run ({n_pairs} ordered pairs, plus the edits)", key="cv_go", type="primary", disabled=model is None):
        from berds_core.generators import GenerationError

        try:
            with st.spinner("Asking the model…"):
                res = experiment(chosen, model, min_opponents=int(min_opp), edits=edits, edit_sample=int(edit_sample),
                                 features=True)
        except (GenerationError, ValueError) as e:
            st.error(" ".join(str(e).split()))
            return
        st.session_state["cv_result"] = (sig, res)
    stored = st.session_state.get("cv_result")
    if not stored or stored[0] != sig:
        if counts.get("passages_without_side"):
            st.caption(f"{counts['passages_without_side']} retrieved passages support neither or both sides and are "
                       "left out.")
        return
    res = stored[1]
    m1, m2, m3, m4 = st.columns(4)
    pb = res["position_bias"]
    m1.metric("First paragraph wins", f"{pb['first_wins']:.0%}" if pb["first_wins"] is not None else "–",
              help=f"95% interval {pb['lo']:.0%}–{pb['hi']:.0%}; 50% = no position bias." if pb["lo"] is not None else None)
    m2.metric("Answers “Yes”", f"{pb['yes_rate']:.0%}" if pb["yes_rate"] is not None else "–")
    m3.metric("Paragraphs kept", res["paragraphs"], help=f"{res['dropped_paragraphs']} dropped: fewer than "
                                                          f"{res['min_opponents']} opponents.")
    m4.metric("Comparisons", res["comparisons"])
    rows = [r for r in res["rows"] if r["question_id"] == qid]
    if rows:
        st.plotly_chart(win_chart(rows, by_id[qid].question), width="stretch", key="cv_win_chart")
    else:
        st.info("No paragraph of this question has enough opponents; lower the minimum.")
    if res["dropped_paragraphs"]:
        st.caption(f"{res['dropped_paragraphs']} paragraph(s) dropped: fewer than {res['min_opponents']} opponents.")
    with st.expander("Paragraphs of this question"):
        for r in sorted(rows, key=lambda r: -r["win_rate"]):
            st.markdown(f"**{esc(r['id'])}** · supports “{r['side']}” · win-rate {r['win_rate']:.0%} "
                        f"({r['lo']:.0%}–{r['hi']:.0%})")
            st.text(r["text"])

    st.subheader("Features and win-rate")
    corr = {k: v for k, v in (res.get("correlations") or {}).items() if v["rho"] is not None}
    if corr:
        names = [k for k in FEATURES if k in corr]
        st.plotly_chart(interval_chart(names, [corr[k]["rho"] for k in names], [corr[k]["lo"] for k in names],
                                       [corr[k]["hi"] for k in names], "Spearman ρ with win-rate"),
                        width="stretch", key="cv_corr_chart")
        st.dataframe([{"feature": k, "rho": round(corr[k]["rho"], 3), "95% interval": f"{corr[k]['lo']:.2f} – "
                       f"{corr[k]['hi']:.2f}", "paragraphs": corr[k]["n"]} for k in names],
                     hide_index=True, width="stretch", key="cv_corr_table")
    else:
        st.caption("Too few paragraphs (or constant features) for a rank correlation.")

    st.subheader("Counterfactual edits")
    cf = (res.get("counterfactuals") or {}).get("edits") or {}
    shown = [k for k in cf if k != "control" and cf[k]["delta"] is not None]
    if shown:
        st.caption("Change in the edited paragraph's win-rate against the control edit (“Thanks for reading!”), "
                   "same opponents, both orders; 95% bootstrap interval over edited paragraphs.")
        st.plotly_chart(interval_chart(shown, [cf[k]["delta"] for k in shown], [cf[k]["lo"] for k in shown],
                                       [cf[k]["hi"] for k in shown], "Δ win-rate vs control"),
                        width="stretch", key="cv_edit_chart")
    else:
        st.caption("Choose edits other than the control to see their effect.")


main()
