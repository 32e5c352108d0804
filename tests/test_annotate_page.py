"""AppTest tests of the Annotate and Agreement pages: click, then check the database."""
import html
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from berds_core.lab.accounts import Accounts
from berds_core.lab import rounds
from berds_core.lab.store import Pair, Store

ROOT = Path(__file__).resolve().parents[1]
EVIL = '<img src=x onerror="alert(1)"> **bold** [link](http://x)'
PASSWORD = "a long enough password"


@pytest.fixture()
def db(annotation_db_path):
    path = annotation_db_path
    with Store(path) as s:
        s.add_pairs([Pair(f"p{i}", f"Question {i}?", f"document {i} {EVIL}", f"perspective {i}",
                          subset="kialo" if i < 3 else "arguana", question_id=f"q{i}", title=f"Title {i}")
                     for i in range(5)])
        s.tasks.create("set1", {"alice": ["p0", "p1", "p2", "p3"], "bob": ["p2", "p3", "p4"]})
        s.set_judge_preds("judgeX", {f"p{i}": (0.2 * i, int(i >= 2)) for i in range(5)})
    return path


def _page(name, annotator="alice", ui="simple"):
    at = AppTest.from_file(str(ROOT / "pages" / f"{name}.py"), default_timeout=60)
    if annotator:
        at.query_params["annotator"] = annotator
    if ui:
        at.query_params["ui"] = ui
    return at.run()


def _annotate(annotator="alice", ui="simple"):
    return _page("annotate", annotator, ui)


def _texts(at):
    parts = [m.value for m in at.markdown] + [i.value for i in at.info] + [t.value for t in at.text] \
        + [c.value for c in at.caption] + [e.value for e in at.error] + [w.value for w in at.warning] \
        + [s.value for s in at.success]
    return " ".join(str(p) for p in parts)


def test_label_by_clicking_saves_to_db_and_resumes(db):
    at = _annotate()
    assert not at.exception
    assert "Question 0?" in _texts(at)
    assert "<img" not in _texts(at) and "&#60;img" in _texts(at)  # passage escaped
    assert not [w for w in list(at.checkbox) + list(at.text_input) if "p0" in str(w.key)]  # opaque keys only
    at.checkbox[0].check()
    at.text_input(key=f"note_{at.checkbox[0].key.split('_', 1)[1]}").input("hard one")
    at.button(key="btn_yes").click().run()
    with Store(db) as s:
        lab = s.get_label("alice", "p0")
        assert lab.label == 1 and lab.unsure and lab.note == "hard one"
        assert lab.time_ms is not None and lab.judge_visible is False and lab.app_version.startswith("berds")
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


def test_title_apart_no_ids_no_judge_names_for_annotators(db):
    """issue 18: the title is shown apart from the passage; no pair ids or judge names on the labelling screen."""
    at = _annotate()
    md = [str(m.value) for m in at.markdown]
    assert "**Title 0**" in md  # its own line, in bold
    assert not any("Title 0" in m and "document 0" in m for m in md)  # not run into the passage text
    text = _texts(at)
    assert "p0" not in text.replace("perspective 0", "") and "judgeX" not in text
    at.button(key="btn_yes").click().run()
    assert "judgeX" not in _texts(at)  # the judge stays hidden after labelling until asked
    at.button(key="ann_reveal").click().run()
    shown = " ".join(str(t.value) for t in at.text)
    assert "The automatic judge: does not support (p = 0.00)" in shown  # p0: judge says 0
    assert "judgeX" not in _texts(at)


def test_name_is_asked_once_then_in_url(db):
    at = _annotate(annotator=None)
    assert not at.exception
    at.text_input(key="ann_name_input").input("bob")
    next(b for b in at.button if b.label == "Start labelling").click().run()  # the form's submit button
    assert at.query_params["annotator"] in ("bob", ["bob"])
    assert "Question 2?" in _texts(at)  # bob's queue starts at p2


def test_one_click_opens_a_ready_demo_queue(tmp_path, monkeypatch):
    """issue 37: from a fresh Annotate page (open mode, no name, no task set) one click labels the demo."""
    path = tmp_path / "fresh.db"
    monkeypatch.setenv("BERDS_ANNOTATIONS_DB", str(path))
    monkeypatch.delenv("BERDS_AUTH", raising=False)
    at = _annotate(annotator=None)
    assert not at.exception
    at.button(key="ann_demo_now").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.query_params["annotator"] in ("guest", ["guest"])
    assert any("0 of 40 done" in p.proto.text for p in at.get("progress"))
    assert "does it support the perspective?" in _texts(at)  # a pair is on screen
    with Store(path) as s:
        assert s.tasks.names() == ["demo"] and len(s.tasks.queue("guest")) == 40
    at.button(key="btn_yes").click().run()  # and the keys label it
    with Store(path) as s:
        assert len(s.labels("guest")) == 1


def _import_path(at, path):
    at.radio(key="ann_import_how").set_value("Path on the server").run()
    at.text_input(key="ann_import_path").input(str(path)).run()
    return at


def test_tsv_import_asks_what_the_labels_are(db, tmp_path):
    tsv = tmp_path / "more.tsv"
    tsv.write_text("question\tid\tdocument\tperspective\tlabel\nQ?\tx1\td\tp\t1\nQ?\tx2\td2\tp\t\n", encoding="utf-8")
    at = _annotate("carol")
    _import_path(at, tsv)
    assert not at.exception
    assert at.button(key="ann_import_btn").disabled  # must say whether the labels are gold or carol's
    at.radio(key="ann_import_labels_as").set_value("reference").run()
    at.button(key="ann_import_btn").click().run()
    with Store(db) as s:
        assert s.reference_labels() == {"x1": 1} and s.get_label("carol", "x1") is None
        assert s.tasks.queue("carol") == ["x1", "x2"]
    # the same file as carol's own labels
    at.radio(key="ann_import_labels_as").set_value("annotator").run()
    at.button(key="ann_import_btn").click().run()
    with Store(db) as s:
        assert s.get_label("carol", "x1").label == 1


def test_import_path_outside_allowed_roots_is_refused_unread(db):
    """issue 18: /etc/passwd is outside the allowed roots: refused, never read, never echoed."""
    at = _annotate()
    _import_path(at, "/etc/passwd")
    assert not at.exception
    errors = " ".join(e.value for e in at.error)
    assert "outside the folders this app may open" in errors
    assert "root:" not in _texts(at) and "root&#58;" not in _texts(at)
    _import_path(at, "../../../../../etc/passwd")
    assert "outside the folders" in " ".join(e.value for e in at.error)


def test_bad_tsv_in_the_page_names_the_line_and_writes_nothing(db, tmp_path):
    bad = tmp_path / "bad.tsv"
    bad.write_text("question\tid\tdocument\tperspective\tlabel\nQ?\tx1\td\tp\tSECRET-CELL\n", encoding="utf-8")
    at = _annotate()
    _import_path(at, bad)
    err = " ".join(e.value for e in at.error)
    assert "2" in err and "label" in err and "SECRET" not in _texts(at)
    with Store(db) as s:
        assert not s.has_pair("x1")


def test_agreement_database_field_cannot_reach_server_files(db, tmp_path):
    """issue 18: the Agreement database field refuses paths outside the allowed roots and creates nothing."""
    outside = tmp_path.parent / "elsewhere-berds" / "new.db"
    at = AppTest.from_file(str(ROOT / "pages" / "agreement.py"), default_timeout=60).run()
    at.text_input(key="agr_db").input(str(outside)).run()
    assert "outside the folders" in " ".join(e.value for e in at.error)
    assert not outside.parent.exists()
    at.text_input(key="agr_db").input("/etc/passwd").run()
    assert "outside the folders" in " ".join(e.value for e in at.error) and "root:" not in _texts(at)
    inside_missing = tmp_path / "missing.db"  # inside the allowed annotations folder, but absent: not created
    at.text_input(key="agr_db").input(str(inside_missing)).run()
    assert "does not exist" in " ".join(e.value for e in at.error) and not inside_missing.exists()


def _label_both(db):
    with Store(db) as s:
        for pid, v in zip(["p0", "p1", "p2", "p3"], [0, 0, 1, 0]):
            s.label("alice", pid, v)
        for pid, v in zip(["p2", "p3", "p4"], [1, 1, 1]):
            s.label("bob", pid, v)


def test_agreement_page_tables_and_adjudication(db):
    _label_both(db)
    at = AppTest.from_file(str(ROOT / "pages" / "agreement.py"), default_timeout=60).run()
    assert not at.exception
    # pooled: judge 0 0 1 1 | 1 1 1 vs human 0 0 1 0 | 1 1 1 -> 6 of 7 agree
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Accuracy"] == f"{6 / 7:.3f}"
    assert {"PABAK", "Gwet's AC1"} <= set(metrics)
    assert metrics["PABAK"] == f"{2 * 6 / 7 - 1:.3f}"  # 2 p_o - 1
    frames = [d.value for d in at.dataframe]
    table = next(f for f in frames if "labels" in f.columns and "kappa 95% CI" in f.columns)
    assert list(table["labels"]) == ["alice", "bob", "pooled"]
    # alice: human 0 0 1 0, judge 0 0 1 1: TP 1 FP 1 TN 2; p_o = 3/4, p_e = 1/4*1/2 + 3/4*1/2 = 1/2 -> kappa 0.5
    assert table["kappa"][0] == "0.500"
    paper = next(f for f in frames if "comparison" in f.columns)
    assert list(paper["comparison"]) == ["human vs judgeX", "human vs human"]
    iaa = next(f for f in frames if "shared pairs" in f.columns)
    assert list(iaa["shared pairs"]) == [2]  # alice and bob share p2 (1, 1) and p3 (0, 1)
    # 2 shared pairs from 2 questions: a small-n warning is shown
    assert any("alice and bob" in html.unescape(w.value) and "only 2 pair(s)" in html.unescape(w.value)
               for w in at.warning)
    at.query_params["tab"] = "Disagreements"  # drawn when open (it fits the annotator model)
    at.run()
    at.selectbox(key="agr_pair").set_value("p3").run()
    at.text_input(key="agr_adjudicator").input("lead").run()
    at.button(key="agr_gold_yes").click().run()
    with Store(db) as s:
        assert s.gold() == {"p3": 1}
        assert s.history(pair_id="p3")[-1]["kind"] == "adjudicate"


def test_agreement_small_n_warning_on_four_shared_pairs_and_no_minus_zero(db):
    """issue 18: 4 shared pairs get a warning; kappa never prints as -0.000; n = 1 intervals are not [x, x]."""
    with Store(db) as s:
        s.add_pairs([Pair(f"z{i}", f"Q{i}?", "d", "p", question_id=f"z{i}") for i in range(6)])
        # human 0 0 0 0 1 1, judge 0 everywhere: kappa = -3.3e-16 in floating point (printed -0.000 before)
        for i, v in enumerate([0, 0, 0, 0, 1, 1]):
            s.label("carol", f"z{i}", v)
        s.set_judge_preds("zero", {f"z{i}": (0.1, 0) for i in range(6)})
        for i, v in enumerate([0, 1, 0, 0]):  # dave shares 4 pairs with carol
            s.label("dave", f"z{i}", v)
        s.label("erin", "z5", 1)  # erin shares one pair with carol and none with dave
    at = AppTest.from_file(str(ROOT / "pages" / "agreement.py"), default_timeout=60).run()
    at.selectbox(key="agr_judge").set_value("zero").run()
    assert not at.exception
    frames = [d.value for d in at.dataframe]
    cells = " ".join(str(v) for f in frames for col in f.columns for v in f[col])
    assert "-0.000" not in cells and "-0.00" not in cells
    table = next(f for f in frames if "labels" in f.columns)
    assert table["kappa"][list(table["labels"]).index("carol")] == "0.000"
    assert any("carol and dave" in html.unescape(w.value) and "only 4 pair(s)" in html.unescape(w.value)
               for w in at.warning)
    iaa = next(f for f in frames if "shared pairs" in f.columns)
    row = list(iaa["annotators"]).index("carol / erin")
    assert iaa["shared pairs"][row] == 1 and iaa["kappa 95% CI"][row] == "–"  # n = 1: no interval, not [x, x]
    assert not any("[1.00, 1.00]" in str(v) for f in frames for col in f.columns for v in f[col])


def test_exports_on_both_pages_hold_no_secrets(db):
    _label_both(db)
    with Store(db) as s:
        Accounts(s).add("alice", "annotator", PASSWORD)
    at = _annotate()
    assert not at.get("download_button")  # nothing read for downloads until asked for (not on every keypress)
    at.session_state["ann_admin_tab"] = "Exports"
    at.session_state["ann_mine"] = True
    at.run()
    keys = {b.proto.label for b in at.get("download_button")}
    assert "Download my labels (CSV)" in keys and "CSV" in keys  # downloads exist on Annotate, once opened
    at2 = AppTest.from_file(str(ROOT / "pages" / "agreement.py"), default_timeout=60).run()
    labels = [b for b in at2.get("download_button") if "Labels (CSV)" in b.proto.label]
    assert labels and len(at2.get("download_button")) >= 5
    from berds_core.lab.exports import export_rows, to_csv, to_jsonl
    with Store(db) as s:
        dumped = to_csv(export_rows(s)) + to_jsonl(export_rows(s))
    assert "$argon2" not in dumped and PASSWORD not in dumped and "alice" in dumped


def test_demo_task_set_from_the_empty_page(db, monkeypatch, tmp_path):
    empty = tmp_path / "empty.db"
    monkeypatch.setenv("BERDS_ANNOTATIONS_DB", str(empty))
    at = _annotate("newcomer")
    assert "No pairs are assigned" in _texts(at)
    at.button(key="ann_demo_btn").click().run()
    assert not at.exception
    with Store(empty) as s:
        assert len(s.tasks.queue("newcomer")) == 40 and len(s.reference_labels()) == 40
        first = s.pair(rounds.summary(s, "newcomer")["next"])
    assert first.question in _texts(at)


def test_build_task_set_from_the_current_evaluate_run(db):
    entries = {f"q{q}": {"id": f"q{q}", "question": f"Eval question {q}?", "perspectives": ["pro", "con"],
                         "subset": "s", "ctxs": [{"id": f"d{q}{i}", "title": f"T{i}", "text": f"text {q} {i}",
                                                  "score": 1.0} for i in range(3)],
                         "jj-preds": [[True, False]] * 3} for q in range(4)}
    at = AppTest.from_file(str(ROOT / "pages" / "annotate.py"), default_timeout=60)
    at.query_params["annotator"] = "alice"
    at.query_params["ui"] = "simple"
    at.session_state["eval_done"] = {"bm25 · gold": {"key": "k1", "summary": {}}}
    at.session_state["eval_runs"] = {"k1": entries}
    at.run()
    assert at.radio(key="ann_build_src").value == "Current Evaluate run"
    at.number_input(key="ann_build_n").set_value(8)
    at.text_input(key="ann_build_annotators").input("alice, bob")
    at.radio(key="ann_build_overlap_mode").set_value("all").run()
    at.text_input(key="ann_build_name").input("from-eval").run()
    at.button(key="ann_build_btn").click().run()
    assert not at.exception, at.exception
    with Store(db) as s:
        assert len(s.tasks.queue("alice", "from-eval")) == 8 and len(s.tasks.queue("bob", "from-eval")) == 8
        assert all(p.title and p.title.startswith("T") for p in s.pairs(s.tasks.queue("bob", "from-eval")))
        assert len(s.judge_preds("jj")) >= 8  # the run's judge labels came along


def test_guidelines_html_is_shown_as_text(db):
    from berds_core.lab.access import Actor, Lab
    with Store(db) as s:
        Lab(s, Actor("lead", "admin")).set_guidelines("# Rules\n<script>alert(1)</script> [x](javascript:alert(2))",
                                                      {"1": "<b>backs</b> it"})
    at = _annotate()
    md = " ".join(str(m.value) for m in at.markdown)
    assert "&lt;script&gt;" in md and "<script>" not in md and "javascript:" not in md
    assert "<b>backs</b> it" in " ".join(str(t.value) for t in at.text)  # st.text: literal


# ---- lab mode: login, roles checked on the server ----

@pytest.fixture()
def lab_db(db, monkeypatch):
    monkeypatch.setenv("BERDS_AUTH", "lab")
    with Store(db) as s:
        acc = Accounts(s)
        acc.add("alice", "annotator", PASSWORD)
        acc.add("bob", "annotator", PASSWORD)
        acc.add("rita", "reviewer", PASSWORD)
        acc.add("lead", "admin", PASSWORD)
    return db


def _login(at, name, password=PASSWORD):
    at.text_input(key="lab_login_name").input(name)
    at.text_input(key="lab_login_password").input(password)
    at.button[0].click().run()
    return at


def test_lab_login_own_queue_and_refusals(lab_db):
    at = _annotate(annotator=None)
    assert "Sign in" in [s.value for s in at.subheader]
    assert "Question" not in _texts(at) and not at.get("download_button")
    _login(at, "alice", "wrong password")
    assert "wrong name or password" in " ".join(e.value for e in at.error)
    _login(at, "alice")
    assert not at.exception
    assert "Signed in as **alice**" in _texts(at) and "Question 0?" in _texts(at)
    assert not any("Admin" in e.label for e in at.expander)  # no admin panel for annotators
    at.button(key="btn_no").click().run()
    with Store(lab_db) as s:
        assert s.get_label("alice", "p0").label == 0
    # ?annotator=bob in lab mode: a request for bob's labels, refused and logged
    at.query_params["annotator"] = "bob"
    at.run()
    assert "Refused" in " ".join(e.value for e in at.error)
    with Store(lab_db) as s:
        refused = s.audit.rows(refused_only=True)
        assert refused[-1]["actor"] == "alice" and refused[-1]["action"] == "labels.other"
        assert refused[-1]["target"] == "bob"


def test_lab_agreement_page_refused_for_annotators_allowed_for_reviewers(lab_db):
    _label_both(lab_db)
    at = AppTest.from_file(str(ROOT / "pages" / "agreement.py"), default_timeout=60).run()
    assert not at.get("text_input") or "agr_db" not in [t.key for t in at.text_input]  # no database field in lab mode
    _login(at, "bob")
    assert "Refused" in " ".join(e.value for e in at.error) and not at.metric
    with Store(lab_db) as s:
        assert s.audit.rows(refused_only=True)[-1]["action"] == "agreement"
    at2 = _login(AppTest.from_file(str(ROOT / "pages" / "agreement.py"), default_timeout=60).run(), "rita")
    assert not at2.exception and at2.metric
    assert "agr_adjudicator" not in [t.key for t in at2.text_input]  # the reviewer adjudicates as themselves
    at2.query_params["tab"] = "Disagreements"
    at2.run()
    at2.selectbox(key="agr_pair").set_value("p3").run()
    at2.button(key="agr_gold_no").click().run()
    with Store(lab_db) as s:
        assert s.gold() == {"p3": 0} and s.history(pair_id="p3")[-1]["annotator"] == "rita"


def test_lab_session_expires(lab_db, monkeypatch):
    at = _login(_annotate(annotator=None), "alice")
    assert "Question 0?" in _texts(at)
    with Store(lab_db) as s:  # the operator disables alice: her open tab loses the session at once
        Accounts(s).disable("alice")
    at.run()
    assert "Sign in" in [s.value for s in at.subheader] and "Question 0?" not in _texts(at)


def test_pages_run_inside_the_app_navigation(db):
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    at.query_params["annotator"] = "alice"
    at.query_params["ui"] = "simple"
    at.run()
    at.switch_page("pages/annotate.py").run()
    assert not at.exception and [t.value for t in at.title] == ["Annotate"]
    at.button(key="btn_no").click().run()
    with Store(db) as s:
        assert s.get_label("alice", "p0").label == 0
    at.switch_page("pages/agreement.py").run()
    assert not at.exception and [t.value for t in at.title] == ["Agreement"]


def test_build_task_set_from_a_run_file(db, tmp_path, monkeypatch):
    """issue 18, item 5: a task set from a run given as a file (the upload's code path minus the widget:
    a file under the allowed roots), judge labels carried along; a bad run is one literal line."""
    import json

    monkeypatch.setenv("BERDS_DATA_ROOTS", str(tmp_path))
    rows = [{"id": f"r{q}", "question": f"Run question {q}?", "perspectives": ["pro", "con"],
             "ctxs": [{"id": f"rd{q}{i}", "title": f"RT{i}", "text": f"run text {q} {i}", "score": 1.0,
                       "jj-preds": [i == 0, False]} for i in range(3)]} for q in range(3)]
    run = tmp_path / "run.jsonl"
    run.write_text("".join(json.dumps(r) + "\n" for r in rows))
    at = AppTest.from_file(str(ROOT / "pages" / "annotate.py"), default_timeout=60)
    at.query_params["annotator"] = "alice"
    at.query_params["ui"] = "simple"
    at.run()
    at.radio(key="ann_build_src").set_value("Upload a run (JSONL)").run()
    at.radio(key="ann_run_how").set_value("Path on the server").run()
    bad = tmp_path / "bad **x**.jsonl"
    bad.write_text('{"question": "Q?", "perspectives": ["a"], "ctxs": [{"text": "t", "score": "high"}]}\n')
    at.text_input(key="ann_run_path").input(str(bad)).run()
    assert not at.exception
    (err,) = [e.value for e in at.error]
    assert "ctxs[0].score" in html.unescape(err) and "**" not in err
    at.text_input(key="ann_run_path").input(str(run)).run()
    at.number_input(key="ann_build_n").set_value(6)
    at.text_input(key="ann_build_annotators").input("alice, bob")
    at.radio(key="ann_build_overlap_mode").set_value("all").run()
    at.text_input(key="ann_build_name").input("from-file").run()
    at.button(key="ann_build_btn").click().run()
    assert not at.exception, at.exception
    with Store(db) as s:
        assert len(s.tasks.queue("alice", "from-file")) == 6 and len(s.tasks.queue("bob", "from-file")) == 6
        assert all(p.title and p.title.startswith("RT") for p in s.pairs(s.tasks.queue("bob", "from-file")))
        assert len(s.judge_preds("jj")) >= 6


def test_agreement_lists_one_row_per_judge(db):
    """issue 24: answers stored under a spec and under the judge's name (earlier versions did) are one judge:
    one row in the paper table, one choice in the Judge box; a judge run from the page is stored once."""
    _label_both(db)
    with Store(db) as s:
        same = s.judge_preds("judgeX")
        s.set_judge_preds("judgeX-long-stable-name", same)  # the same answers under a second name
        s.set_judge_preds("labelsonly", {pid: (None, lab) for pid, (_, lab) in same.items()})  # never merged
    from berds_core.lab.agreement import agreement_report, distinct_judges

    with Store(db) as s:
        assert distinct_judges(s) == {"judgeX-long-stable-name": ["judgeX"], "labelsonly": []}
        rep = agreement_report(s, "judgeX", n_boot=50)
    assert rep["judge"] == "judgeX-long-stable-name" and set(rep["judges"]) == {"judgeX-long-stable-name", "labelsonly"}
    at = AppTest.from_file(str(ROOT / "pages" / "agreement.py"), default_timeout=120).run()
    assert not at.exception
    assert at.selectbox(key="agr_judge").options == ["judgeX-long-stable-name", "labelsonly"]
    paper = next(d.value for d in at.dataframe if "comparison" in d.value.columns)
    assert list(paper["comparison"]).count("human vs judgeX-long-stable-name") == 1
    assert "human vs judgeX" not in list(paper["comparison"])
    # "Run judge" stores the answers once, under the judge's stable name, and selects it
    at.button(key="agr_run").click().run()
    assert not at.exception, [e.value for e in at.exception]
    with Store(db) as s:
        names = s.judges()
    assert "embedded" not in names and any(n.startswith("embedded-") for n in names)
    assert at.selectbox(key="agr_judge").value.startswith("embedded-")
    assert sum(o.startswith("embedded") for o in at.selectbox(key="agr_judge").options) == 1


def test_annotation_database_relative_path_message_says_where_it_starts(db):
    """issue 24: 'annotations/new.db' is refused with a message that says relative paths start in annotations/."""
    at = _annotate()
    at.text_input(key="ann_db").input("annotations/new.db").run()
    err = " ".join(e.value for e in at.error)
    assert "relative paths start in the annotations folder" in html.unescape(err)
    assert "type 'new.db'" in html.unescape(err)
    assert str(db.parent) not in err  # no server folder is named
