"""AppTest tests of the Annotate and Agreement pages: click, then check the database."""
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from berds_core.store import Pair, Store

ROOT = Path(__file__).resolve().parents[1]
EVIL = '<img src=x onerror="alert(1)"> **bold** [link](http://x)'


@pytest.fixture()
def db(tmp_path, monkeypatch):
    path = tmp_path / "ann.db"
    monkeypatch.setenv("BERDS_ANNOTATIONS_DB", str(path))
    with Store(path) as s:
        s.add_pairs([Pair(f"p{i}", f"Question {i}?", f"document {i} {EVIL}", f"perspective {i}",
                          subset="kialo" if i < 3 else "arguana") for i in range(5)])
        s.create_task_set("set1", {"alice": ["p0", "p1", "p2", "p3"], "bob": ["p2", "p3", "p4"]})
        s.set_judge_preds("judgeX", {f"p{i}": (0.2 * i, int(i >= 2)) for i in range(5)})
    return path


def _annotate(annotator="alice"):
    at = AppTest.from_file(str(ROOT / "pages" / "annotate.py"), default_timeout=60)
    if annotator:
        at.query_params["annotator"] = annotator
    return at.run()


def _texts(at):
    return " ".join(str(m.value) for m in at.markdown) + " ".join(str(i.value) for i in at.info)


def test_label_by_clicking_saves_to_db_and_resumes(db):
    at = _annotate()
    assert not at.exception
    assert "Question 0?" in _texts(at)
    assert "<img" not in _texts(at) and "&#60;img" in _texts(at)  # passage escaped
    at.checkbox(key="unsure_p0").check()
    at.text_input(key="note_p0").input("hard one")
    at.button(key="btn_yes").click().run()
    with Store(db) as s:
        lab = s.get_label("alice", "p0")
        assert lab.label == 1 and lab.unsure and lab.note == "hard one"
    assert "Question 1?" in _texts(at)
    at.button(key="btn_no").click().run()
    at.button(key="btn_skip").click().run()
    with Store(db) as s:
        assert s.get_label("alice", "p1").label == 0
        assert s.get_label("alice", "p2").skipped
        assert s.labels("bob") == []  # nobody else's labels touched
    # a new session (closed tab) resumes at the next unlabelled pair
    at2 = _annotate()
    assert "Question 3?" in _texts(at2)
    assert any("3 of 4 done" in p.proto.text for p in at2.get("progress"))
    # undo brings back the skipped pair
    at2.button(key="btn_undo").click().run()
    with Store(db) as s:
        assert s.get_label("alice", "p2") is None
    assert "Question 2?" in _texts(at2)


def test_judge_hidden_until_labelled(db):
    at = _annotate()
    assert not any("judgeX" in str(t.value) for t in at.text)
    at.button(key="btn_yes").click().run()
    assert any("judgeX: does not support" in str(t.value) for t in at.text)  # p0: judge says 0, in the reveal


def test_name_is_asked_once_then_in_url(db):
    at = _annotate(annotator=None)
    assert not at.exception
    at.text_input(key="ann_name_input").input("bob")
    at.button[0].click().run()  # the form's submit button
    assert at.query_params["annotator"] in ("bob", ["bob"])
    assert "Question 2?" in _texts(at)  # bob's queue starts at p2


def test_tsv_import_from_page(db, tmp_path):
    tsv = tmp_path / "more.tsv"
    tsv.write_text("question\tid\tdocument\tperspective\tlabel\nQ?\tx1\td\tp\t1\nQ?\tx2\td2\tp\t\n", encoding="utf-8")
    at = _annotate("carol")
    at.text_input(key="ann_import_path").input(str(tsv))
    at.button(key="ann_import_btn").click().run()
    assert not at.exception
    with Store(db) as s:
        assert s.get_label("carol", "x1").label == 1 and s.queue("carol") == ["x1", "x2"]
    at.run()
    assert any("1 of 2 done" in p.proto.text for p in at.get("progress"))


def test_agreement_page_tables_and_adjudication(db):
    with Store(db) as s:
        for pid, v in zip(["p0", "p1", "p2", "p3"], [0, 0, 1, 0]):
            s.label("alice", pid, v)
        for pid, v in zip(["p2", "p3", "p4"], [1, 1, 1]):
            s.label("bob", pid, v)
    at = AppTest.from_file(str(ROOT / "pages" / "agreement.py"), default_timeout=60).run()
    assert not at.exception
    # pooled: judge 0 0 1 1 | 1 1 1 vs human 0 0 1 0 | 1 1 1 -> 6 of 7 agree
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Accuracy"] == f"{6 / 7:.3f}"
    frames = [d.value for d in at.dataframe]
    table = next(f for f in frames if "kappa 95% CI" in f.columns)
    assert list(table["labels"]) == ["alice", "bob", "pooled"]
    subsets = next(f for i, f in enumerate(frames) if "kappa 95% CI" in f.columns and i > 0)
    assert sorted(subsets["labels"]) == ["arguana", "kialo"]
    # alice: human 0 0 1 0, judge 0 0 1 1: TP 1 FP 1 TN 2; p_o = 3/4, p_e = 1/4*1/2 + 3/4*1/2 = 1/2 -> kappa 0.5
    assert table["kappa"][0] == "0.500"
    # alice and bob share p2 (1, 1) and p3 (0, 1)
    iaa = next(f for f in frames if "shared pairs" in f.columns)
    assert list(iaa["shared pairs"]) == [2]
    at.selectbox(key="agr_pair").set_value("p3").run()
    at.text_input(key="agr_adjudicator").input("lead").run()
    at.button(key="agr_gold_yes").click().run()
    with Store(db) as s:
        assert s.gold() == {"p3": 1}
        assert s.history(pair_id="p3")[-1]["kind"] == "adjudicate"


def test_pages_run_inside_the_app_navigation(db):
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    at.query_params["annotator"] = "alice"
    at.run()
    at.switch_page("pages/annotate.py").run()
    assert not at.exception and [t.value for t in at.title] == ["Annotate"]
    at.button(key="btn_no").click().run()
    with Store(db) as s:
        assert s.get_label("alice", "p0").label == 0
    at.switch_page("pages/agreement.py").run()
    assert not at.exception and [t.value for t in at.title] == ["Agreement"]
