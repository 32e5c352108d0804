"""AppTest of the Answers page on the built-in demo: no generator (a clear message, nothing broken), a tiny
local model as generator (two answers side by side with P.D. and D.A.), a refused path, and the batch mode."""
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from tiny_models import make_tiny_causal_lm

APP = str(Path(__file__).resolve().parents[1] / "app.py")
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def model_root(tmp_path_factory):
    root = tmp_path_factory.mktemp("models")
    return root, make_tiny_causal_lm(root, arch="llama")


@pytest.fixture(scope="module")
def page(model_root):
    mp = pytest.MonkeyPatch()
    mp.setenv("BERDS_DATA_ROOTS", str(model_root[0]))
    mp.delenv("BERDS_GENERATOR", raising=False)
    at = AppTest.from_file(APP, default_timeout=600)
    at.run()
    at.switch_page("pages/answers.py")
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    yield at
    mp.undo()


def metrics(at) -> dict:
    return [(m.label, m.value) for m in at.metric]


def test_without_a_generator_the_page_says_what_to_configure(page):
    from berds_core.generators import local_server as ls

    infos = [i.value for i in page.info]
    assert any("No generator is configured" in i and "openai:<model>@<url>" in i
               and "hf:/path/to/model" in i for i in infos)
    # the exact command that starts a local server, and the spec to paste (copyable code blocks)
    codes = [c.value for c in page.code]
    assert ls.COMMAND in codes and ls.SPEC in codes and ls.CPU_COMMAND in codes
    assert ls.COMMAND == "vllm serve Qwen/Qwen2-1.5B-Instruct --host 127.0.0.1 --port 8000"
    assert ls.SPEC == "openai:Qwen/Qwen2-1.5B-Instruct@http://127.0.0.1:8000"
    assert not page.error
    assert page.button(key="ans_go").disabled
    labels = [m[0] for m in metrics(page)]
    assert labels.count("MRecall@5 (passages)") == 2  # both configurations still retrieve and score
    assert all(v in ("0", "1") for lab, v in metrics(page) if lab == "MRecall@5 (passages)")


def test_a_demo_question_retrieves_from_its_own_pool(page):
    """Both configurations rank the chosen demo question's own pool of 40 passages, as the other pages do, not
    the union of every demo pool (a basic-income passage in the chatbot question's top 5)."""
    from berds_core import datasets

    bundle = datasets.load_demo()
    qid = page.selectbox(key="ans_q").value
    pool = {p.text for p in bundle.passages if p.id in set(bundle.pools[qid])}
    shown = [t.value for t in page.text]
    assert len(shown) == 2 * page.number_input(key="ans_k").value
    assert all(t in pool for t in shown), [t[:60] for t in shown if t not in pool]


def test_paste_this_spec_fills_the_generator_field(page):
    from berds_core.generators import local_server as ls

    page.button(key="ans_gen_paste").click().run()
    assert page.text_input(key="ans_gen").value == ls.SPEC
    # nothing listens there here: one line, no traceback, the page still draws
    assert not page.exception
    page.text_input(key="ans_gen").set_value("").run()


def test_a_path_outside_the_allowed_folders_is_refused(page, tmp_path):
    page.text_input(key="ans_gen").set_value(f"hf:{tmp_path}/elsewhere").run()
    assert not page.exception
    (err,) = [e.value for e in page.error]
    assert "outside the folders this app may open" in err and "\n" not in err
    page.text_input(key="ans_gen").set_value("").run()


def test_two_answers_side_by_side_with_their_scores(page, model_root):
    page.text_input(key="ans_gen").set_value(f"hf:{model_root[1]}").run()
    page.number_input(key="ans_max_tokens").set_value(8).run()
    assert not page.exception and not page.error, [e.value for e in page.error]
    page.button(key="ans_go").click().run()
    assert not page.exception, [e.value for e in page.exception]
    assert not page.error, [e.value for e in page.error]
    md = "\n".join(m.value for m in page.markdown)
    assert md.count('class="an-answer"') == 2
    vals = dict()
    for lab, v in metrics(page):
        vals.setdefault(lab, []).append(v)
    assert len(vals["P.D. (sum)"]) == 2 and all(v != "–" and float(v) > 0 for v in vals["P.D. (sum)"])
    assert all(0 <= float(v) <= 1 for v in vals["D.A."])
    assert all(v in ("0", "1") for v in vals["MRecall (answer)"])


def test_batch_mode_gives_one_row_per_configuration(page):
    page.number_input(key="ans_batch_n").set_value(2).run()
    page.button(key="ans_batch_go").click().run()
    assert not page.exception, [e.value for e in page.exception]
    assert not page.error, [e.value for e in page.error]
    df = next(d.value for d in page.dataframe if "configuration" in d.value.columns)
    assert len(df) == 2 and set(df["questions"]) == {2}
    assert df["pd_sum"].notna().all() and df["da"].between(0, 1).all()


def test_pool_entries_rank_each_demo_question_in_its_own_pool():
    """The helper the Answers and Convincing pages retrieve with: every passage of a demo question's run line
    comes from that question's pool."""
    from berds_core import datasets
    from berds_core.studio.data import load_data
    from studio_ui.config import Config
    from studio_ui.engines import pool_entries

    b = datasets.load_demo()
    data = load_data(Config())  # the sidebar's default: the built-in demo
    entries = pool_entries(data, data.questions, "bm25", None, "none", 5)
    assert [e["id"] for e in entries] == [q.id for q in data.questions]
    for e in entries:
        assert len(e["ctxs"]) == 5 and {c["id"] for c in e["ctxs"]} <= set(b.pools[e["id"]]), e["id"]
