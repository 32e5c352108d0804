"""Landing page: what the tool is, the dataset and corpus loaded, counts, how to start."""
from pathlib import Path

import streamlit as st

from studio_ui.config import current_config
from studio_ui.engines import get_data
from studio_ui.shell import ensure_shell
from studio_ui.text import esc

ensure_shell()

st.title("BERDS Studio")
st.markdown(
    "Does a search engine show **more than one side** of a contested question? "
    "BERDS Studio measures whether the retrieved documents cover the different perspectives "
    "of a question (the BERDS benchmark, Chen et al.): retrieve, diversify (MMR, query expansion), "
    "let a judge decide which passage supports which perspective, and score **MRecall@k** "
    "(are all perspectives covered in the top k?) and **Precision@k** (how many passages support any)."
)

cfg = current_config()
data = get_data(cfg)
if data is not None:
    n_persp = sum(len(q.perspectives) for q in data.questions)
    n_gold = sum(len(ps) for by_p in data.gold.values() for ps in by_p.values()) if data.gold else 0
    c1, c2, c3, c4 = st.columns(4)
    c1.metric("Questions", f"{len(data.questions):,}")
    c2.metric("Perspectives", f"{n_persp:,}", help=f"{n_persp / len(data.questions):.1f} per question on average")
    c3.metric("Passages", f"{len(data.corpus):,}" if data.corpus is not None else "no corpus")
    c4.metric("Gold-labelled pairs", f"{n_gold:,}" if data.gold else "none")
    where = "the built-in demo (offline, gold-labelled)" if data.name == "demo" else esc(data.name)
    st.caption(f"Dataset: {where} · retriever {esc(cfg.retriever)} · judge {esc(cfg.judge)}. "
               "Change them in the sidebar.")  # names a visitor typed are shown literally

    st.subheader("Start here")
    st.markdown(
        "1. **Playground** — type a question (or pick one) and compare plain retrieval with MMR, "
        "query expansion and the perspective-aware re-ranker, side by side.\n"
        "2. **Evaluate** — run a configuration over every question, per subset, with intervals, "
        "and browse the questions where a perspective is missing.\n"
        "3. **Annotate / Agreement** — label passage–perspective pairs by hand and compare with the judge.\n"
        "4. **Leaning** — does a retriever favour the supporting side, and does phrasing the query as one "
        "side pull the results to that side?"
    )
    st.page_link(str(Path(__file__).parent / "playground.py"), label="Open the Playground", icon=":material/search:")

    with st.expander("Questions in this dataset", expanded=False):
        st.dataframe(
            [{"id": q.id, "subset": q.subset or "", "question": q.question, "perspectives": len(q.perspectives)}
             for q in data.questions],
            hide_index=True, width="stretch",
        )
