"""AppTest of the "Which side wins?" page on the built-in demo: no model (a clear message, nothing broken), then
a REAL localhost OpenAI-style server as the model: win-rates by side, position bias, correlations, edits."""
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

import answer_server

APP = str(Path(__file__).resolve().parents[1] / "app.py")
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def server():
    srv = answer_server.start()
    srv.decide = lambda text: True  # this "model" always answers Yes
    yield srv
    answer_server.stop(srv)


@pytest.fixture(scope="module")
def cqa_file(tmp_path_factory):
    import json

    d = tmp_path_factory.mktemp("cqa")
    rows = [{"category": "c", "search_query": "Is X good?", "search_type": "q", "url": "u", "title": "t",
             "text_window": f"{'support' if i < 4 else 'oppose'} text {i}", "stance": "yes" if i < 4 else "no"}
            for i in range(8)]
    (d / "cqa.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return d / "cqa.jsonl"


@pytest.fixture(scope="module")
def page(cqa_file):
    mp = pytest.MonkeyPatch()
    mp.setenv("BERDS_DATA_ROOTS", str(cqa_file.parent))
    at = AppTest.from_file(APP, default_timeout=600)
    at.run()
    at.switch_page("pages/convincing.py")
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    yield at
    mp.undo()


def test_without_a_model_the_page_says_what_to_configure(page):
    from berds_core.generators import local_server as ls

    assert any("No model is configured" in i.value and "openai:<model>@<url>" in i.value for i in page.info)
    codes = [c.value for c in page.code]
    assert ls.COMMAND in codes and ls.SPEC in codes
    page.button(key="cv_model_paste").click().run()
    assert page.text_input(key="cv_model").value == ls.SPEC and not page.exception
    page.text_input(key="cv_model").set_value("").run()
    assert page.button(key="cv_go").disabled and not page.error
    assert page.selectbox(key="cv_q").options  # demo questions with passages on both sides


def test_run_against_a_local_server(page, server):
    page.text_input(key="cv_model").set_value(f"openai:m@{server.url}").run()
    page.slider(key="cv_n").set_value(8).run()
    page.number_input(key="cv_min_opp").set_value(1).run()
    page.radio(key="cv_scope").set_value(page.radio(key="cv_scope").options[1]).run()  # all questions
    page.number_input(key="cv_edit_sample").set_value(2).run()
    page.multiselect(key="cv_edits").set_value(["control", "prefix"]).run()
    assert not page.error, [e.value for e in page.error]
    page.button(key="cv_go").click().run()
    assert not page.exception, [e.value for e in page.exception]
    assert not page.error, [e.value for e in page.error]
    metrics = {m.label: m.value for m in page.metric}
    assert int(metrics["Paragraphs kept"]) > 0 and int(metrics["Comparisons"]) > 0
    heads = [s.value for s in page.subheader]
    assert "Features and win-rate" in heads and "Counterfactual edits" in heads
    charts = page.get("plotly_chart")
    assert len(charts) >= 2  # the win-rate bars and at least one of correlations / edits
    import json

    win = json.loads(charts[0].proto.spec)
    assert {t["name"] for t in win["data"]} == {"supports “yes”", "supports “no”"}
    assert {t["marker"]["color"] for t in win["data"]} == {"#2e7d4f", "#b23b3b"}
    rows = page.session_state["cv_result"][1]["rows"]  # what the bars show, for every question in scope
    assert {r["side"] for r in rows} == {"yes", "no"}
    assert all(r["win_rate"] == (1.0 if r["side"] == "yes" else 0.0) for r in rows)  # "Yes" always: yes wins
    assert metrics["Answers “Yes”"] == "100%" and metrics["First paragraph wins"] == "50%"


def test_conflictingqa_file_and_a_relevance_edit(page, server, cqa_file):
    from test_convincing import relevance_decides

    server.decide = relevance_decides  # the paragraph that says it is about the question wins, else the first
    page.radio(key="cv_source").set_value("ConflictingQA file").run()
    page.text_input(key="cv_cqa_path").set_value(str(cqa_file)).run()
    page.number_input(key="cv_min_opp").set_value(4).run()
    page.radio(key="cv_scope").set_value("this question").run()
    assert not page.error, [e.value for e in page.error]
    page.button(key="cv_go").click().run()
    assert not page.exception and not page.error, [e.value for e in page.error]
    import json

    charts = page.get("plotly_chart")
    edit = json.loads(charts[-1].proto.spec)
    assert edit["data"][0]["x"] == ["prefix"] and edit["data"][0]["y"][0] == pytest.approx(0.5)
    metrics = {m.label: m.value for m in page.metric}
    assert metrics["First paragraph wins"] == "100%" and metrics["Paragraphs kept"] == "8"
    page.text_input(key="cv_cqa_path").set_value("/etc/passwd").run()
    assert any("outside the folders" in e.value for e in page.error) and not page.exception
