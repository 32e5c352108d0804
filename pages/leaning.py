"""Leaning: stance leaning, retriever sycophancy and corpus coverage (BERDS section 8), interactive."""
from __future__ import annotations

import plotly.graph_objects as go
import streamlit as st

from berds_core.eval.evaluation import passages_needed, union_coverage
from berds_core.eval.leaning import (BUCKETS, QUERY_FORMS, Sides, infer_sides, infer_sides_llm, leaning_table,
                                    rank_table)
from berds_core.experiment import Labels, side_rows as question_rows, sycophancy_summary, top_labels
from berds_core.diversify.methods import LABELS
from berds_core.retrieval import CORPUS_RETRIEVERS
from berds_core.studio.columns import column_pipeline
from studio_ui.config import choose_policy, embedder_model
from studio_ui.engines import cached_judge, cached_retriever
from studio_ui.shell import ensure_shell
from studio_ui.text import esc
from studio_ui.warmup import page_engine, retriever_job, wait_for

ensure_shell()

BUCKET_LABELS = {"support_only": "supporting side only", "oppose_only": "opposing side only",
                 "both": "both sides", "neither": "neither side"}
BUCKET_COLORS = {"support_only": "#2e7d4f", "oppose_only": "#b23b3b", "both": "#1f5f8b", "neither": "#b8c0c8"}
FORM_LABELS = {"question": "the question", "support": "the supporting perspective",
               "oppose": "the opposing perspective"}
DIVERSIFIERS = LABELS  # the diversifiers and their names: the registry's (diversify.methods.METHOD_TABLE)
COVERAGE_DEPTH = 100


# --------------------------------------------------------------------------- computations (no widgets)


@st.cache_data(show_spinner="Retrieving and labelling…", max_entries=64)
def config_results(_data, data_key: str, retriever_kind: str, method: str, form: str, k: int,
                   use_gold: bool, judge_spec: str, embedder: str, sides_key: tuple, policy: str) -> list[dict]:
    """Per two-perspective question: bucket, p, n for one configuration and query form
    (``berds_core.experiment.side_rows``, what ``berds sycophancy`` computes)."""
    model = embedder_model(embedder)  # read by the retrievers that take one (cached_retriever)
    return question_rows(_data.questions, {qid: Sides(*s) for qid, s in sides_key}, form, k,
                         corpus_for=lambda q: _data.corpus_for(q.id),  # its own pool (the demo), else the corpus
                         retriever_for=lambda c: cached_retriever(retriever_kind, c.hash, model, c),
                         pipeline=column_pipeline(method), labels=page_labels(_data, use_gold, judge_spec, policy))


def page_labels(data, use_gold: bool, judge_spec: str, policy: str) -> Labels:
    """The page's labels: the dataset's gold labels, or the sidebar's judge under ``policy``."""
    return Labels(gold=data.gold, policy="threshold") if use_gold else Labels(judge=cached_judge(judge_spec),
                                                                               policy=policy)


@st.cache_data(show_spinner="Asking the LLM which perspective answers yes…", max_entries=1024)
def llm_sides(judge_spec: str, question: str, perspectives: tuple[str, ...]) -> tuple:
    """The LLM's side decision for one question, asked once per (judge, question)."""
    s = infer_sides_llm(question, list(perspectives), cached_judge(judge_spec).yes_probability)
    return s.support, s.oppose, s.source, s.confidence


def sycophancy_rows(results: dict[tuple[str, str], list[dict]]) -> list[dict]:
    rows = []
    for (label, form), res in results.items():
        summ = sycophancy_summary(res)
        rows.append({"configuration": label, "query": FORM_LABELS[form], "p": summ["p"] or 0.0,
                     "n": summ["n_share"] or 0.0, "delta": summ["delta"], "questions": len(res)})
    return rows


def to_csv(rows: list[dict]) -> str:
    """The CSV download (formula cells neutralised: ``berds_core.lab.exports``)."""
    from berds_core.lab.exports import to_csv as csv_text

    return csv_text(rows) if rows else ""


def chart_config(name: str, fmt: str) -> dict:
    """Plotly's modebar camera button exports the chart in the chosen format."""
    return {"displaylogo": False, "toImageButtonOptions": {"format": fmt.lower(), "filename": name, "scale": 2}}


# --------------------------------------------------------------------------- page

st.title("Leaning and sycophancy")
st.caption("Does a retriever favour the side that supports the question, and does phrasing the query as one "
           "side pull the results to that side? (BERDS, section 8.)")

cfg, data, retriever0, judge0, _ = page_engine(need_judge=False)

two = [q for q in data.questions if len(q.perspectives) == 2]
if not two:
    st.info("The leaning analyses need questions with exactly two perspectives; this dataset has none.")
    st.stop()
left_out = len(data.questions) - len(two)
if left_out:
    counts = {}
    for q in data.questions:
        if len(q.perspectives) != 2:
            counts[len(q.perspectives)] = counts.get(len(q.perspectives), 0) + 1
    detail = ", ".join(f"{c} with {m} perspective{'s' if m != 1 else ''}" for m, c in sorted(counts.items()))
    st.caption(f"{len(two)} of {len(data.questions)} questions are analysed here; {left_out} are left out "
               f"({detail}): leaning and sycophancy compare a supporting and an opposing side, so they need "
               "exactly two perspectives. The coverage section below uses every question.")

with st.container(border=True):
    c1, c2, c3, c4 = st.columns([1, 1.3, 2, 1.3])
    k = c1.number_input("k", 1, 50, 5, key="ln_k")
    label_choices = (["gold labels"] if data.gold else []) + ([f"judge ({cfg.judge})"] if judge0 else [])
    if not label_choices:
        st.error("No labels: this dataset has no gold labels and the judge is not usable.")
        st.stop()
    label_src = c2.radio("Labels", label_choices, key="ln_labels", format_func=esc)  # the judge spec, literally
    use_gold = label_src == "gold labels"
    policy = "gold" if use_gold else choose_policy(c2, "ln_policy")
    kind0 = cfg.retriever if cfg.retriever in CORPUS_RETRIEVERS else CORPUS_RETRIEVERS[0]  # an index folder: the kinds
    configs = c3.multiselect(
        "Configurations (retriever × diversifier)",
        [f"{r} {d}" for r in CORPUS_RETRIEVERS for d in DIVERSIFIERS.values()],
        default=[f"{kind0} {DIVERSIFIERS['none']}", f"{kind0} {DIVERSIFIERS['mmr']}"], key="ln_configs")
    subsets = sorted({q.subset or "all" for q in two})
    chosen_subsets = c4.multiselect("Subsets", subsets, default=subsets, key="ln_subsets")
    fmt = st.radio("Chart export format (camera button)", ["PNG", "SVG"], horizontal=True, key="ln_fmt")

two = [q for q in two if (q.subset or "all") in chosen_subsets]
st.caption("Labels: the dataset's gold labels." if use_gold else
           f"Labels: judge {esc(cfg.judge)}, policy {policy} (`berds leaning --policy {policy}`, "
           f"`berds sycophancy --policy {policy}` count them the same way).")
if not configs or not two:
    st.info("Choose at least one configuration and one subset.")
    st.stop()

# ---- sides: which perspective supports the question (correctable) ----
st.subheader("Which perspective supports the question?")
side_method = st.radio("Decide with", ["dataset stances, else the offline rule", "offline rule", "dataset order",
                                       "LLM (hf / openai judge)"], horizontal=True, key="ln_side_method")
method_arg = {"dataset stances, else the offline rule": "auto", "offline rule": "rule",
              "dataset order": "order"}.get(side_method)
llm = judge0 if side_method.startswith("LLM") else None
if side_method.startswith("LLM") and not hasattr(judge0, "yes_probability"):
    st.warning("The selected judge cannot answer free prompts; choose an `hf:` or `openai:` judge in the sidebar. "
               "Using the offline rule instead.")
    method_arg, llm = "auto", None
swaps = st.session_state.setdefault("ln_swaps", {})
sides, side_rows = {}, []
for q in two:
    s = (Sides(*llm_sides(cfg.judge, q.question, tuple(q.perspectives))) if llm is not None
         else infer_sides(q.question, q.perspectives, q.stances, method=method_arg))
    if swaps.get(q.id):
        s = s.swapped()
    sides[q.id] = s
    side_rows.append({"id": q.id, "question": q.question, "supporting": q.perspectives[s.support],
                      "opposing": q.perspectives[s.oppose], "decided by": s.source,
                      "swap": bool(swaps.get(q.id))})
with st.expander(f"Sides of {len(two)} questions (tick *swap* to correct one)", expanded=False):
    edited = st.data_editor(
        side_rows, key="ln_side_editor", hide_index=True, width="stretch",
        disabled=["id", "question", "supporting", "opposing", "decided by"],
        column_order=["swap", "question", "supporting", "opposing", "decided by", "id"],  # swap first: always visible
        column_config={"swap": st.column_config.CheckboxColumn("swap", width="small"),
                       "question": st.column_config.TextColumn("question", width="medium"),
                       "supporting": st.column_config.TextColumn("supporting", width="medium"),
                       "opposing": st.column_config.TextColumn("opposing", width="medium"),
                       "decided by": st.column_config.TextColumn("decided by", width="small"),
                       "id": st.column_config.TextColumn("id", width="small")})
    new_swaps = {r["id"]: bool(r["swap"]) for r in edited}
    if new_swaps != {q.id: bool(swaps.get(q.id)) for q in two}:
        st.session_state["ln_swaps"] = new_swaps
        st.rerun()
st.session_state["ln_sides"] = {qid: (s.support, s.oppose, s.source) for qid, s in sides.items()}
sides_key = tuple(sorted((qid, (s.support, s.oppose, s.source, s.confidence)) for qid, s in sides.items()))


def parse_config(label: str) -> tuple[str, str]:
    kind, rest = label.split(" ", 1)
    return kind, {v: key for key, v in DIVERSIFIERS.items()}[rest]


for kind in dict.fromkeys(parse_config(label)[0] for label in configs):  # other indexes: a progress bar
    wait_for(retriever_job(kind, data, cfg.embedder), note="Building an index this configuration needs (once).")


def results_for(label: str, form: str) -> list[dict]:
    kind, method = parse_config(label)
    return config_results(data, data.key, kind, method, form, int(k), use_gold, cfg.judge, cfg.embedder, sides_key,
                          "threshold" if use_gold else policy)


# ---- leaning chart ----
st.subheader(f"Leaning: what the top {k} covers")
lean = {label: results_for(label, "question") for label in configs}
rows = leaning_table(lean)  # the engine counts the buckets; the page draws them
fig = go.Figure()
for b in BUCKETS:
    fig.add_bar(
        y=[r["configuration"] for r in rows], x=[r[b] for r in rows], name=BUCKET_LABELS[b], orientation="h",
        marker_color=BUCKET_COLORS[b], customdata=[[r["configuration"], b, r[f"{b}_count"], r["questions"]]
                                                   for r in rows],
        hovertemplate="%{customdata[0]}<br>" + BUCKET_LABELS[b] + ": %{x:.0%} (%{customdata[2]} of "
                      "%{customdata[3]} questions)<extra></extra>")
fig.update_layout(barmode="stack", xaxis_tickformat=".0%", height=120 + 50 * len(rows), margin=dict(l=10, r=10, t=10, b=10),
                  legend=dict(orientation="h", y=-0.25), clickmode="event+select")
event = st.plotly_chart(fig, width="stretch", on_select="rerun", selection_mode="points",
                        key="ln_lean_chart", config=chart_config("leaning", fmt))
st.download_button("Leaning data (CSV)", to_csv(rows), "leaning.csv", "text/csv", key="ln_csv_lean")

points = (event or {}).get("selection", {}).get("points", []) if event else []
if points:
    cd = points[0].get("customdata") or []
    if len(cd) >= 2:
        label, b = cd[0], cd[1]
        picked = [r for r in lean.get(label, []) if r["bucket"] == b]
        st.markdown(f"**{esc(label)} · {esc(BUCKET_LABELS[b])}: {len(picked)} questions**")
        for r in picked:
            st.text(f"[{r['subset']}] {r['question']}")
else:
    st.caption("Click a bar segment to list the questions behind it.")

# ---- rank-aware leaning ----
st.subheader(f"Rank-aware leaning: which side the top {k} shows first")
st.caption("RL = (E_s − E_o) / (E_s + E_o), E = Σ over the top k of [the passage supports the side] / log2(rank + 1): "
           "+1 only the supporting side is shown, −1 only the opposing side, 0 equal discounted exposure. "
           "Mean over the questions where some passage supports a side, with a 95% bootstrap interval.")
rrows = rank_table(lean, int(k))
fig_rl = go.Figure(go.Bar(
    y=[r["configuration"] for r in rrows], x=[r["rank_leaning"] or 0.0 for r in rrows], orientation="h",
    marker_color=["#2e7d4f" if (r["rank_leaning"] or 0) >= 0 else "#b23b3b" for r in rrows],
    error_x=dict(type="data", symmetric=False,
                 array=[(r["hi"] - r["rank_leaning"]) if r["hi"] is not None else 0 for r in rrows],
                 arrayminus=[(r["rank_leaning"] - r["lo"]) if r["lo"] is not None else 0 for r in rrows]),
    customdata=[[r["defined"], r["questions"], r["exposure_support"] or 0, r["exposure_oppose"] or 0] for r in rrows],
    hovertemplate="RL %{x:.2f} over %{customdata[0]} of %{customdata[1]} questions<br>exposure: supporting "
                  "%{customdata[2]:.0%}, opposing %{customdata[3]:.0%} of the top k<extra></extra>"))
fig_rl.update_layout(xaxis=dict(range=[-1, 1], title="← opposing side first · supporting side first →"),
                     height=120 + 50 * len(rrows), margin=dict(l=10, r=10, t=10, b=10))
st.plotly_chart(fig_rl, width="stretch", key="ln_rank_chart", config=chart_config("rank_leaning", fmt))
st.dataframe(rrows, hide_index=True, width="stretch", key="ln_rank_table")
st.download_button("Rank-aware leaning data (CSV)", to_csv(rrows), "rank_leaning.csv", "text/csv", key="ln_csv_rank")

# ---- sycophancy ----
st.subheader("Sycophancy: does the query's phrasing pull the results to its side?")
st.caption("Δ = (p − n) / p, with p and n the shares of top-k passages supporting the supporting and the opposing "
           "perspective. Δ is undefined when p = 0.")
syc = {(label, form): results_for(label, form) for label in configs for form in QUERY_FORMS}
srows = sycophancy_rows(syc)
fig2 = go.Figure()
for form in QUERY_FORMS:
    sub = [r for r in srows if r["query"] == FORM_LABELS[form]]
    fig2.add_bar(x=[r["configuration"] for r in sub], y=[r["delta"] if r["delta"] is not None else 0 for r in sub],
                 name=f"query = {FORM_LABELS[form]}",
                 customdata=[[r["p"], r["n"], "undefined" if r["delta"] is None else f"{r['delta']:.3f}"]
                             for r in sub],
                 hovertemplate="Δ = %{customdata[2]}<br>p = %{customdata[0]:.2f}, n = %{customdata[1]:.2f}"
                               "<extra>%{fullData.name}</extra>")
fig2.update_layout(barmode="group", yaxis_title="Δ", height=380, margin=dict(l=10, r=10, t=10, b=10),
                   legend=dict(orientation="h", y=-0.2))
st.plotly_chart(fig2, width="stretch", key="ln_syc_chart", config=chart_config("sycophancy", fmt))
st.dataframe([{**r, "delta": None if r["delta"] is None else round(r["delta"], 3),  # numbers only (Arrow)
               "note": "Δ undefined (p = 0)" if r["delta"] is None else ""} for r in srows],
             hide_index=True, width="stretch",
             column_config={"configuration": st.column_config.TextColumn(width="medium"),
                            "query": st.column_config.TextColumn(width="medium"),
                            "p": st.column_config.NumberColumn(format="%.3f"),
                            "n": st.column_config.NumberColumn(format="%.3f"),
                            "delta": st.column_config.NumberColumn("Δ", format="%.3f")})
st.download_button("Sycophancy data (CSV)", to_csv(srows), "sycophancy.csv", "text/csv", key="ln_csv_syc")

# ---- coverage ----
st.subheader("Coverage of the corpus")
st.caption(f"MRecall over the union of the top N of several retrievers (BERDS Table 6) and the number of passages "
           f"plain retrieval needs to cover every perspective within its top {COVERAGE_DEPTH} (Table 17). "
           "All questions of the chosen subsets.")
cov_n = st.select_slider("N (passages per retriever)", [5, 10, 20, 50, 100], value=10, key="ln_cov_n")
all_qs = [q for q in data.questions if (q.subset or "all") in chosen_subsets]


@st.cache_data(show_spinner="Scoring the union of retrievers…", max_entries=16)
def coverage_tables(_data, data_key: str, n: int, use_gold: bool, judge_spec: str, embedder: str, qids: tuple,
                    policy: str):
    qs = [q for q in _data.questions if q.id in set(qids)]
    per_kind = {}
    for kind in CORPUS_RETRIEVERS:
        model = embedder_model(embedder)
        per_kind[kind] = []
        for q in qs:
            corpus = _data.corpus_for(q.id)
            retr = cached_retriever(kind, corpus.hash, model, corpus)
            per_kind[kind].append(top_labels(q, q.question, corpus, retr, column_pipeline("none"), COVERAGE_DEPTH,
                                             page_labels(_data, use_gold, judge_spec, policy)))
    union = union_coverage([[(ids[:n], L[:n]) for ids, L in per_kind[kd]] for kd in per_kind], n)
    needed = {kd: passages_needed([L for _, L in per_kind[kd]]) for kd in per_kind}
    return union, needed


for kind in CORPUS_RETRIEVERS:
    wait_for(retriever_job(kind, data, cfg.embedder), note="Building the indexes the coverage needs (once).")
union, needed = coverage_tables(data, data.key, int(cov_n), use_gold, cfg.judge, cfg.embedder,
                                tuple(q.id for q in all_qs), "threshold" if use_gold else policy)
crow = [{"runs": "bm25", "MRecall": union["mrecall_single"][0]},
        {"runs": "dense", "MRecall": union["mrecall_single"][1]},
        {"runs": "bm25 ∪ dense", "MRecall": union["mrecall_union"]}]
cc1, cc2 = st.columns([2, 3])
fig3 = go.Figure(go.Bar(x=[r["runs"] for r in crow], y=[r["MRecall"] for r in crow], marker_color="#1f5f8b",
                        hovertemplate="%{x}: MRecall %{y:.1%}<extra></extra>"))
fig3.update_layout(yaxis_tickformat=".0%", yaxis_range=[0, 1], height=300, margin=dict(l=10, r=10, t=30, b=10),
                   title=f"MRecall over the top {cov_n} (union: budget {2 * cov_n})")
cc1.plotly_chart(fig3, width="stretch", key="ln_cov_chart", config=chart_config("coverage", fmt))
nrows = [{"retriever": kd, "covered in top 100": v["covered_share"], "mean": v["mean"],
          "median": v["median"], "max": v["max"]} for kd, v in needed.items()]
cc2.caption(f"Passages plain retrieval needs to cover every perspective (within its top {COVERAGE_DEPTH})")
cc2.dataframe(nrows, hide_index=True, width="stretch",
              column_config={"covered in top 100": st.column_config.NumberColumn(format="percent"),
                             "mean": st.column_config.NumberColumn(format="%.1f"),
                             "median": st.column_config.NumberColumn(format="%.1f")})
cc2.download_button("Coverage data (CSV)", to_csv(crow + nrows), "coverage.csv", "text/csv", key="ln_csv_cov")
