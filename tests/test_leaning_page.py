"""AppTest of the Leaning page on the built-in demo (gold labels)."""
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from berds_core.diversify.methods import LABELS

APP = str(Path(__file__).resolve().parents[1] / "app.py")


def sycophancy_table(at):
    return next(df.value for df in at.dataframe if "delta" in df.value.columns)


@pytest.fixture(scope="module")
def page():
    at = AppTest.from_file(APP, default_timeout=600)
    at.run()
    at.switch_page("pages/leaning.py")
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def test_leaning_page_draws_the_three_analyses(page):
    heads = [s.value for s in page.subheader]
    assert any(h.startswith("Leaning") for h in heads)
    assert any(h.startswith("Sycophancy") for h in heads)
    assert any(h.startswith("Coverage") for h in heads)
    assert page.radio(key="ln_labels").value == "gold labels"
    # the sycophancy table: one row per configuration and query form, Δ consistent with p and n
    syc = sycophancy_table(page)
    assert len(syc) == 2 * 3
    for _, row in syc.iterrows():
        if row["p"] > 0:
            assert float(row["delta"]) == pytest.approx((row["p"] - row["n"]) / row["p"], abs=1e-3)
        else:
            assert row["delta"] == "undefined (p = 0)"


def test_swapping_a_side_changes_the_supporting_perspective(page):
    from berds_core.datasets import load_demo

    q = next(q for q in load_demo().questions if len(q.perspectives) == 2)
    support, oppose, source = page.session_state["ln_sides"][q.id]
    assert {support, oppose} == {0, 1} and source == "stances"  # the demo ships stance labels
    page.session_state["ln_swaps"] = {q.id: True}
    page.run()
    assert not page.exception, [e.value for e in page.exception]
    assert page.session_state["ln_sides"][q.id] == (oppose, support, "user")


def test_subset_filter_limits_the_questions(page):
    from berds_core.datasets import load_demo

    two = [q for q in load_demo().questions if len(q.perspectives) == 2]
    one_subset = two[0].subset
    page.multiselect(key="ln_subsets").set_value([one_subset]).run()
    assert not page.exception, [e.value for e in page.exception]
    syc = sycophancy_table(page)
    expected = sum(q.subset == one_subset for q in two)
    assert set(syc["questions"]) == {expected}


@pytest.mark.slow
def test_rank_aware_leaning_table_matches_the_engine(page):
    """The page's RL for plain BM25 equals exposure_leaning on the same top 5 with gold labels."""
    from berds_core.corpora.memory import corpus_from_passages
    from berds_core.datasets import load_demo
    from berds_core.eval.leaning import exposure_leaning, infer_sides
    from berds_core.retrieval import get_retriever
    from berds_core.runs import gold_matrix

    page.session_state["ln_swaps"] = {}  # undo the swap of the test above
    page.multiselect(key="ln_subsets").set_value(page.multiselect(key="ln_subsets").options).run()
    assert not page.exception, [e.value for e in page.exception]
    assert any(h.startswith("Rank-aware leaning") for h in (s.value for s in page.subheader))
    table = next(df.value for df in page.dataframe if "rank_leaning" in df.value.columns)
    assert len(table) == 2  # the two default configurations
    for _, row in table.iterrows():
        assert -1 <= row["lo"] <= row["rank_leaning"] <= row["hi"] <= 1
    demo = load_demo()
    by_id = {p.id: p for p in demo.passages}
    two = [q for q in demo.questions if len(q.perspectives) == 2]
    mats = []
    for q in two:  # each demo question in its own pool, as the page ranks it
        pool = corpus_from_passages([by_id[i] for i in demo.pools[q.id]], f"demo:{q.id}")
        hits = get_retriever("bm25", pool, progress=False).search([q.question], 5)[0]
        mats.append(gold_matrix(demo.gold, q.id, 2, [pool.ids[r] for r, _ in hits]))
    sides = [infer_sides(q.question, q.perspectives, q.stances) for q in two]
    expected = exposure_leaning(mats, sides, 5)
    row = table[table["configuration"] == f"bm25 {LABELS['none']}"].iloc[0]  # the registry's name of plain
    assert row["rank_leaning"] == pytest.approx(expected["mean"])
    assert row["defined"] == expected["defined"] and row["questions"] == len(two)
    assert row["exposure_support"] == pytest.approx(expected["exposure_support"])
