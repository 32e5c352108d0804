"""Answers: two retrieval configurations, the RAG answers written from them, and the DebateQA answer metrics."""
from __future__ import annotations

import os

import plotly.graph_objects as go
import streamlit as st

from berds_core.answers import PROMPTS, AnswerConfig
from berds_core.answers.coverage import retrieval_scores
from berds_core.diversify.methods import LABELS
from berds_core.errors import InputError
from berds_core.generators import try_generator
from berds_core.retrieval import CORPUS_RETRIEVERS
from studio_ui.config import embedder_model
from studio_ui.engines import cached_embedder, cached_judge, pool_entries
from studio_ui.shell import ensure_shell
from studio_ui.text import esc, show_error
from studio_ui.warmup import page_engine
from studio_ui.local_server import server_help

ensure_shell()

METHODS = LABELS  # the diversifiers and their names: the registry's (diversify.methods.METHOD_TABLE)
NO_GENERATOR = (
    "No generator is configured, so no answers are written (the passages of both configurations are shown). "
    "Give one above: a local OpenAI-compatible server as `openai:<model>@<url>` (how to start one: below), or a "
    "local model folder as `hf:/path/to/model` (under a folder listed in BERDS_DATA_ROOTS). The P.D. and D.A. "
    "models default to the generator. The environment variable BERDS_GENERATOR pre-fills the field.")


# --------------------------------------------------------------------------- engine glue (no widgets)


@st.cache_data(show_spinner="Retrieving…", max_entries=256)
def passages_for(_data, data_key: str, qids: tuple, config: AnswerConfig, k: int, judge_spec: str | None,
                 embedder: str) -> list[dict]:
    """Run entries (top k) of the questions ``qids`` under one configuration, each question ranked in its own
    pool (the built-in demo, as the other pages; ``Data.corpus_for``) or the dataset's corpus."""
    judge = cached_judge(judge_spec) if judge_spec else None
    qs = [q for q in _data.questions if q.id in set(qids)]
    return pool_entries(_data, qs, config.retriever, embedder_model(embedder), config.method, k, judge=judge,
                        embedder=cached_embedder(embedder_model(embedder)))  # loads at its first text, if any


def to_csv(rows: list[dict]) -> str:
    """The CSV download (formula cells neutralised: ``berds_core.lab.exports``)."""
    from berds_core.lab.exports import to_csv as csv_text

    return csv_text(rows) if rows else ""


def fmt(x, digits: int = 2) -> str:
    return "–" if x is None else f"{x:.{digits}f}"


# --------------------------------------------------------------------------- drawing


def config_picker(col, side: str, default: AnswerConfig) -> AnswerConfig:
    col.markdown(f"**Configuration {side}**")
    kinds = list(CORPUS_RETRIEVERS)
    retr = col.radio("Retriever", kinds, key=f"ans_ret_{side}", horizontal=True,
                     index=kinds.index(default.retriever) if default.retriever in kinds else 0)
    method = col.selectbox("Diversifier", list(METHODS), key=f"ans_method_{side}", format_func=METHODS.get,
                           index=list(METHODS).index(default.method))
    prompt = col.radio("Prompt", list(PROMPTS), key=f"ans_prompt_{side}", horizontal=True,
                       index=list(PROMPTS).index(default.prompt))
    return AnswerConfig(retr, method, prompt)


def covered_line(perspectives, covered) -> str:
    return "".join(f'<div class="an-p">{YES if c else NO} <b>P{j + 1}</b> {esc(p)}</div>'
                   for j, (p, c) in enumerate(zip(perspectives, covered)))


def draw_side(col, config: AnswerConfig, entry: dict, scores: dict, answer: str | None, k: int, labels_from: str):
    with col:
        st.markdown(f"#### {esc(config.label())}")
        m1, m2, m3, m4 = st.columns(4)
        m1.metric(f"MRecall@{k} (passages)", fmt(scores.get("retrieval_mrecall"), 0),
                  help=f"Labels: {labels_from}.")
        m2.metric("MRecall (answer)", fmt(scores.get("answer_mrecall"), 0),
                  help="The judge reads the answer as a document (100-word windows).")
        m3.metric("P.D. (sum)", fmt(scores.get("pd_sum"), 1),
                  help="Sum over perspectives of their perplexity after the answer; lower is better. "
                       f"Mean: {fmt(scores.get('pd_mean'), 1)}.")
        m4.metric("D.A.", fmt(scores.get("da_prob")),
                  help="P(\"Yes\"): the answer acknowledges that the question is debated.")
        if answer is not None:
            st.markdown("**Answer**")
            st.markdown(f'<div class="an-answer">{esc(answer) or "(empty answer)"}</div>', unsafe_allow_html=True)
        if scores.get("answer_covered") is not None:
            st.markdown("**Perspectives the answer covers**")
            st.markdown(covered_line(entry["perspectives"], scores["answer_covered"]), unsafe_allow_html=True)
        if scores.get("retrieval_covered") is not None:
            st.markdown(f"**Perspectives the top {k} passages cover**")
            st.markdown(covered_line(entry["perspectives"], scores["retrieval_covered"]), unsafe_allow_html=True)
        with st.expander(f"The {len(entry['ctxs'])} passages (cited by rank)"):
            for i, c in enumerate(entry["ctxs"], 1):
                st.markdown(f"**[{i}]** {esc(c.get('title') or '')}")
                st.text(c["text"])


YES = '<span class="an-yes" title="covered">✓</span>'
NO = '<span class="an-no" title="not covered">✗</span>'
CSS = """
<style>
.an-answer{border:1px solid #dfe3e8;border-radius:8px;padding:8px 10px;background:#fbfcfd;font-size:0.92rem;
           line-height:1.4;margin-bottom:8px}
.an-p{font-size:0.88rem;margin:1px 0}
.an-yes{color:#1d5b2c;font-weight:700}.an-no{color:#9aa3ad}
</style>
"""


def main() -> None:
    st.title("Answers")
    st.caption("From retrieval to answers: the answer a RAG system writes from each configuration's top k, "
               "which perspectives it covers (the judge reads the answer), DebateQA's Perspective Diversity "
               "(P.D., lower = the perspectives are easier to restate from the answer) and Dispute Awareness "
               "(D.A., does the answer say the question is debated?).")
    st.markdown(CSS, unsafe_allow_html=True)  # static styles only
    cfg, data, _, judge, _ = page_engine(need_judge=False)

    with st.container(border=True):
        c1, c2, c3 = st.columns([2, 1.4, 1.4])
        st.session_state.setdefault("ans_gen", os.environ.get("BERDS_GENERATOR", ""))
        gen_spec = c1.text_input("Generator (writes the answers)", key="ans_gen",
                                 placeholder="openai:<model>@http://127.0.0.1:8000  or  hf:/path/to/model")
        pd_spec = c2.text_input("P.D. model (causal LM)", key="ans_pd", placeholder="same as the generator")
        da_spec = c3.text_input("D.A. model (instruction-tuned)", key="ans_da", placeholder="same as the generator")
    gen, why = try_generator(gen_spec, "generator model path")
    pd_gen, pd_why = try_generator(pd_spec or gen_spec, "P.D. model path")
    da_gen, da_why = try_generator(da_spec or gen_spec, "D.A. model path")
    if why:
        show_error(why, "Generator: ")
    elif gen is None:
        st.info(NO_GENERATOR)
    server_help("ans_gen", expanded=gen is None, needs="P.D. reads prompt log-probabilities: vLLM gives them")
    for label, reason, spec in (("P.D. model", pd_why, pd_spec), ("D.A. model", da_why, da_spec)):
        if reason and spec:
            show_error(reason, f"{label}: ")

    a_col, b_col = st.columns(2)
    conf_a = config_picker(a_col, "A", AnswerConfig(cfg.retriever, "none", "basic"))
    conf_b = config_picker(b_col, "B", AnswerConfig("dense", "preset", "comprehensive"))
    o1, o2 = st.columns(2)
    k = o1.number_input("k (passages per answer)", 1, 20, 5, key="ans_k")
    max_tokens = o2.number_input("Max new tokens", 8, 2048, 256, step=8, key="ans_max_tokens")
    judge_spec = cfg.judge if judge is not None else None
    compare_tab, batch_tab = st.tabs(["Compare one question", "Batch"])

    with compare_tab:
        by_id = {q.id: q for q in data.questions}
        qid = st.selectbox("Question", list(by_id), key="ans_q", format_func=lambda i: by_id[i].question)
        use_gold = bool(data.gold) and qid in data.gold
        labels_from = "gold labels" if use_gold else f"judge {cfg.judge}"
        sides = {}
        for side, conf in (("A", conf_a), ("B", conf_b)):
            try:
                sides[side] = passages_for(data, data.key, (qid,), conf, int(k), judge_spec, cfg.embedder)[0]
            except Exception as e:  # one failing configuration must not take the page down
                show_error(f"{type(e).__name__}: {e}", f"Configuration {side}: ")
        go_clicked = st.button("Write both answers", key="ans_go", type="primary", disabled=gen is None)
        sig = (data.key, qid, conf_a, conf_b, int(k), int(max_tokens), gen_spec, pd_spec, da_spec, judge_spec)
        if go_clicked and gen is not None and len(sides) == 2:
            from berds_core.answers import AnswerScoring, answer_config
            from berds_core.generators import GenerationError

            out = {}
            with st.spinner("Writing and scoring the answers…"):
                for side, conf in (("A", conf_a), ("B", conf_b)):
                    try:
                        scoring = AnswerScoring(judge=judge, gold=data.gold if use_gold else None,
                                                pd_generator=pd_gen, da_generator=da_gen, n_boot=1)
                        res = answer_config([sides[side]], gen, conf.prompt, int(k), scoring,
                                            max_new_tokens=int(max_tokens))
                        out[side] = {"answer": res["rows"][0]["generation"], "scores": res["per_question"][0]}
                    except (GenerationError, InputError, ValueError) as e:
                        out[side] = {"error": " ".join(str(e).split())}
            st.session_state["ans_result"] = (sig, out)
        stored = st.session_state.get("ans_result")
        result = stored[1] if stored and stored[0] == sig else {}
        cols = st.columns(2)
        for col, (side, conf) in zip(cols, (("A", conf_a), ("B", conf_b))):
            if side not in sides:
                continue
            got = result.get(side, {})
            if "error" in got:
                col.error(esc(f"Configuration {side}: {got['error']}"))
            scores = got.get("scores") or retrieval_scores(sides[side], int(k), judge=None if use_gold else judge,
                                                           gold=data.gold if use_gold else None)
            draw_side(col, conf, sides[side], scores, got.get("answer"), int(k), labels_from)

    with batch_tab:
        draw_batch(data, cfg, conf_a, conf_b, int(k), int(max_tokens), gen, pd_gen, da_gen, judge, judge_spec)


def draw_batch(data, cfg, conf_a, conf_b, k, max_tokens, gen, pd_gen, da_gen, judge, judge_spec) -> None:
    st.caption("Both configurations over a subset of questions: one row each with retrieval MRecall@k, answer "
               "MRecall and coverage, P.D. and D.A. (means over questions). Answers are cached on disk: a second "
               "run is fast.")
    subsets = sorted({q.subset or "all" for q in data.questions})
    b1, b2 = st.columns([2, 1])
    chosen = b1.multiselect("Subsets", subsets, default=subsets, key="ans_batch_subsets")
    pool = [q for q in data.questions if (q.subset or "all") in chosen]
    if not pool:
        st.info("Choose at least one subset.")
        return
    n = b2.number_input("Questions", 1, len(pool), min(10, len(pool)), key="ans_batch_n")
    qs = pool[: int(n)]
    if not st.button("Run the batch", key="ans_batch_go", disabled=gen is None):
        stored = st.session_state.get("ans_batch")
        if stored is None:
            return
        rows = stored
    else:
        from berds_core.answers import AnswerScoring, answer_config, table_row
        from berds_core.generators import GenerationError

        gold = data.gold if data.gold and all(q.id in data.gold for q in qs) else None
        rows = []
        with st.spinner(f"Writing and scoring {2 * len(qs)} answers…"):
            for conf in (conf_a, conf_b):
                try:
                    entries = passages_for(data, data.key, tuple(q.id for q in qs), conf, k, judge_spec, cfg.embedder)
                    scoring = AnswerScoring(judge=judge, gold=gold, pd_generator=pd_gen, da_generator=da_gen, n_boot=200)
                    res = answer_config(entries, gen, conf.prompt, k, scoring, max_new_tokens=max_tokens)
                except (GenerationError, InputError, ValueError) as e:
                    show_error(' '.join(str(e).split()), f"{conf.label()}: ")
                    return
                rows.append(table_row(conf.label(), res["summary"]))
        st.session_state["ans_batch"] = rows
    st.dataframe(rows, hide_index=True, width="stretch", key="ans_batch_table")
    fig = go.Figure()
    for key, name in (("retrieval_mrecall", f"MRecall@{k} (passages)"), ("answer_mrecall", "MRecall (answer)"),
                      ("answer_coverage", "perspectives covered by the answer"), ("da", "D.A.")):
        fig.add_bar(x=[r["configuration"] for r in rows], y=[r[key] if r[key] is not None else 0 for r in rows],
                    name=name)
    fig.update_layout(barmode="group", yaxis_range=[0, 1], height=340, margin=dict(l=10, r=10, t=10, b=10),
                      legend=dict(orientation="h", y=-0.25))
    st.plotly_chart(fig, width="stretch", key="ans_batch_chart")
    st.download_button("Table (CSV)", to_csv(rows), "answers.csv", "text/csv", key="ans_batch_csv")


main()
