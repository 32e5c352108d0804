"""AppTest: the qualification screen and a paused queue on Annotate; Annotators, Round health and Judge
failures on Agreement (lab mode: annotators refused, reviewers resume a queue)."""
import html
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from berds_core.lab.accounts import Accounts
from berds_core.lab.checks import known_answers, pauses
from berds_core.lab.controls import RoundControls
from berds_core.lab.simulate import parse_simulation, simulate_round
from berds_core.lab.store import Pair, Store
from berds_core.lab.tasks import TaskSetSpec, build_task_set

ROOT = Path(__file__).resolve().parents[1]
PASSWORD = "a long enough password"


def _texts(at):
    parts = [m.value for m in at.markdown] + [i.value for i in at.info] + [t.value for t in at.text] \
        + [c.value for c in at.caption] + [e.value for e in at.error] + [w.value for w in at.warning] \
        + [s.value for s in at.success] + [h.value for h in at.subheader]
    return html.unescape(" ".join(str(p) for p in parts))


@pytest.fixture()
def round_db(tmp_path, monkeypatch):
    path = tmp_path / "round.db"
    monkeypatch.setenv("BERDS_ANNOTATIONS_DB", str(path))
    monkeypatch.delenv("BERDS_AUTH", raising=False)
    pairs = [Pair(f"p{i}", f"Question {i // 5}?", f"Passage {i}", f"Perspective {i % 5}", question_id=f"q{i // 5}",
                  source="web" if i % 2 else "corpus") for i in range(80)]
    truth = {p.pair_id: int(i % 3 == 0) for i, p in enumerate(pairs)}
    with Store(path) as s:
        build_task_set(s, pairs, TaskSetSpec(name="r", source="t", n=50, strategy="random",
                                             annotators=("good", "spam", "quiz"), overlap=1.0, per_shared=3, seed=2,
                                             controls=RoundControls(check_rate=0.15, check_floor=0.7, check_min=3,
                                                                    seed=2)),
                       reference=truth)
        stored = {p.pair_id: p for p in s.pairs()}  # the judge is right on corpus passages, wrong on web ones
        s.set_judge_preds("jj", {pid: (0.8, said) if said else (0.2, said) for pid, p in stored.items()
                                 for said in [truth[pid] if p.source == "corpus" else 1 - truth[pid]]})
    return path, truth


def test_a_paused_queue_says_so_on_annotate_and_the_reviewer_resumes_it(round_db):
    path, truth = round_db
    with Store(path) as s:
        simulate_round(s, parse_simulation("good=0.95,spam=spammer", ["good", "spam", "quiz"]), truth, seed=1)
        assert [p["annotator"] for p in pauses(s, open_only=True)] == ["spam"]
    at = AppTest.from_file(str(ROOT / "pages" / "annotate.py"), default_timeout=60)
    at.query_params["annotator"] = "spam"
    at.query_params["ui"] = "simple"
    at.run()
    assert not at.exception
    text = _texts(at)
    assert "paused by the round's quality control" in text and "Nothing you labelled is lost" in text
    assert "Question" not in " ".join(m.value for m in at.markdown)  # no pair is served
    # Agreement: Round health lists the pause with its message to the lead, and Resume reopens the queue
    ag = AppTest.from_file(str(ROOT / "pages" / "agreement.py"), default_timeout=120)
    ag.query_params["tab"] = "Round health"
    ag.run()
    assert not ag.exception
    assert "below the floor of 70%" in _texts(ag)
    metrics = {m.label: m.value for m in ag.metric}
    assert metrics["Paused queues"] == "1" and int(metrics["Queue left"]) > 0
    ag.button(key=f"agr_resume_{pauses(Store(path), open_only=True)[0]['id']}").click().run()
    with Store(path) as s:
        assert pauses(s, open_only=True) == []
    at.run()
    assert "Question" in " ".join(m.value for m in at.markdown)


def test_annotators_and_judge_failures_tabs(round_db):
    path, truth = round_db
    with Store(path) as s:
        simulate_round(s, parse_simulation("good=0.95,spam=spammer,quiz=gamer", ["good", "spam", "quiz"]), truth,
                       seed=3)
    ag = AppTest.from_file(str(ROOT / "pages" / "agreement.py"), default_timeout=120)
    ag.query_params["tab"] = "Annotators"
    ag.run()
    assert not ag.exception
    table = next(d.value for d in ag.dataframe if "competence" in d.value.columns)
    assert list(table["annotator"])[0] == "good"  # highest competence first
    assert set(list(table["annotator"])[1:]) == {"spam", "quiz"}
    assert {"agr_competence", "agr_drift"} <= {c.key for c in ag.get("plotly_chart")}
    ag.query_params["tab"] = "Judge failures"
    ag.run()
    assert not ag.exception
    frames = [d.value for d in ag.dataframe]
    assert any("passage source" in f.columns for f in frames) and any("perspective length" in f.columns for f in frames)


def test_qualification_screen_guidelines_beside_and_answers_at_the_end(round_db, monkeypatch):
    path, _ = round_db
    with Store(path) as s:
        s.settings.set("round:r", {**RoundControls(qualification_n=2, qualification_pass=1.0).to_json()})
        s.settings.set("guidelines", "Read the *whole* passage.")
        answers = known_answers(s)
    at = AppTest.from_file(str(ROOT / "pages" / "annotate.py"), default_timeout=60)
    at.query_params["annotator"] = "quiz"
    at.query_params["ui"] = "simple"
    at.run()
    assert not at.exception
    text = _texts(at)
    assert "Qualification" in text and "Pair 1 of 2" in text and "Read the *whole* passage." in text
    assert "Not quite" not in text and "Right:" not in text  # nothing before the answer
    with Store(path) as s:
        first = s.query("SELECT pair_id FROM qualification WHERE annotator = 'quiz' ORDER BY position")[0][0]
    at.button(key="qual_yes" if answers[first][0] == 0 else "qual_no").click().run()  # wrong on purpose
    text = _texts(at)  # nothing about that answer yet: the next pair at once
    assert "Pair 2 of 2" in text and "expected" not in text.replace("the expected answers", "")
    at.button(key="qual_yes").click().run()
    text = _texts(at)  # the attempt is over: the score and each pair's expected answer
    assert "below this task set's pass mark" in text and "1. " in text and "2. " in text
    assert "expected \"" in text
    at.button(key="qual_next").click().run()
    assert "may allow another attempt" in _texts(at)
    with Store(path) as s:
        assert s.query("SELECT passed FROM qualification_results WHERE annotator = 'quiz'")[0][0] == 0


def test_lab_mode_annotators_never_see_the_round_figures(round_db, monkeypatch):
    path, _ = round_db
    monkeypatch.setenv("BERDS_AUTH", "lab")
    with Store(path) as s:
        Accounts(s).add("spam", "annotator", PASSWORD)
    at = AppTest.from_file(str(ROOT / "pages" / "agreement.py"), default_timeout=60)
    at.query_params["tab"] = "Annotators"
    at.run()
    at.text_input(key="lab_login_name").input("spam")
    at.text_input(key="lab_login_password").input(PASSWORD)
    at.button[0].click().run()
    assert "Refused" in " ".join(e.value for e in at.error) and not at.dataframe
    with Store(path) as s:
        assert s.audit.rows(refused_only=True)[-1]["actor"] == "spam"


def test_the_disagreements_table_has_one_type_per_column(round_db, caplog):
    path, truth = round_db
    with Store(path) as s:
        simulate_round(s, parse_simulation("good=0.95,spam=spammer", ["good", "spam", "quiz"]), truth, seed=1)
        ranked = [r[0] for r in s.query("SELECT DISTINCT pair_id FROM labels ORDER BY pair_id LIMIT 3")]
        s.adjudicate(ranked[0], 1, "lead")  # some pairs with gold, most without
    at = AppTest.from_file(str(ROOT / "pages" / "agreement.py"), default_timeout=90)
    at.query_params["tab"] = "Disagreements"
    at.run()
    assert not at.exception
    frames = [d.value for d in at.dataframe if "gold" in d.value.columns]
    assert frames and {type(v) for v in frames[0]["gold"]} == {str}
    assert "ArrowTypeError" not in caplog.text
