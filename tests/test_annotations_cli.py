"""``berds annotations ...`` and ``berds agreement``: in-process and one real subprocess."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from berds_core.cli import main
from berds_core.lab import rounds
from berds_core.lab.store import Store
from berds_core.lab.tasks import read_pairs_tsv

ROOT = Path(__file__).resolve().parents[1]

PAIRS = ('question\tid\tdocument\tperspective\tlabel\n'
         'Is X good?\t101\t"He said ""X is great""\nand left."\tX is good.\t1\n'
         'Is X good?\t102\tX wastes money.\tX is good.\t0\n'
         'Is X good?\t103\tX wastes money.\tX is bad.\t1\n'
         'Is Y fair?\t104\tNothing about it.\tY is fair.\t0\n')


def run_cli(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def jcall(capsys, *argv):
    code, out, err = run_cli(capsys, *argv, "--json")
    assert code == 0, err
    lines = out.strip().splitlines()
    assert len(lines) == 1  # exactly one JSON object on stdout
    return json.loads(lines[0])


@pytest.fixture()
def tsv(tmp_path):
    p = tmp_path / "pairs.tsv"
    p.write_text(PAIRS, encoding="utf-8")
    return p


def _run_file(tmp_path, name="bm25"):
    entries = []
    for q in range(6):
        subset = "kialo" if q < 3 else "opinionqa"
        ctxs = [{"id": f"d{q}{i}", "title": "", "text": f"passage {i} of question {q}", "score": 1.0 - i / 10}
                for i in range(4)]
        entries.append({"id": f"q{q}", "question": f"Question {q}?", "perspectives": ["pro", "con"],
                        "subset": subset, "ctxs": ctxs,
                        "jj-preds": [[i == 0, i == 1] for i in range(4)]})
    path = tmp_path / f"{name}.jsonl"
    path.write_text("".join(json.dumps(e) + "\n" for e in entries), encoding="utf-8")
    return path


def test_import_keeps_ids_and_labels_then_export_roundtrip(tmp_path, tsv, capsys):
    db = tmp_path / "a.db"
    res = jcall(capsys, "annotations", "import", "--db", str(db), "--pairs", str(tsv), "--annotator", "paper")
    assert res["pairs"] == 4 and res["labels"] == 4 and res["task_set"] == "pairs"
    with Store(db) as s:
        assert [p.pair_id for p in s.pairs()] == ["101", "102", "103", "104"]
        assert s.pair("101").document == 'He said "X is great"\nand left.'
        assert {l.pair_id: l.label for l in s.labels("paper")} == {"101": 1, "102": 0, "103": 1, "104": 0}
    # re-import is idempotent and never overwrites a decision made since
    with Store(db) as s:
        s.label("paper", "102", 1)
    res = jcall(capsys, "annotations", "import", "--db", str(db), "--pairs", str(tsv), "--annotator", "paper")
    assert res["new_pairs"] == 0 and res["labels"] == 0
    with Store(db) as s:
        assert s.get_label("paper", "102").label == 1
        s.undo("paper")
    out = tmp_path / "export.tsv"
    res = jcall(capsys, "annotations", "export", "--db", str(db), "--format", "tsv", "--out", str(out),
                "--annotator", "paper")
    assert res["rows"] == 4
    back = read_pairs_tsv(out)  # the export reads back as a human-pairs TSV
    assert [(p.pair_id, p.document, lab) for _, p, lab in back] == [
        (p.pair_id, p.document, lab) for _, p, lab in read_pairs_tsv(tsv)]
    jl = tmp_path / "export.jsonl"
    jcall(capsys, "annotations", "export", "--db", str(db), "--format", "jsonl", "--out", str(jl))
    rows = [json.loads(l) for l in jl.read_text().splitlines()]
    assert rows[0]["id"] == "101" and rows[0]["annotator"] == "paper" and rows[0]["label"] == 1
    code, out_text, _ = run_cli(capsys, "annotations", "export", "--db", str(db), "--format", "tsv")
    assert code == 0 and out_text.startswith("question\tid\tdocument\tperspective\tlabel\t")


def test_label_undo_adjudicate_progress_and_agreement(tmp_path, tsv, capsys):
    db = str(tmp_path / "a.db")
    jcall(capsys, "annotations", "import", "--db", db, "--pairs", str(tsv), "--annotator", "paper")
    for pid, lab in [("101", "1"), ("102", "1"), ("103", "0"), ("104", "0")]:
        res = jcall(capsys, "annotations", "label", "--db", db, "--annotator", "second", "--pair", pid, "--label", lab,
                    "--unassigned")  # "second" has no queue: the import gave pairs to "paper" only
        assert res["pair"] == pid
    assert jcall(capsys, "annotations", "undo", "--db", db, "--annotator", "second")["undone"] == "104"
    jcall(capsys, "annotations", "label", "--db", db, "--annotator", "second", "--pair", "104", "--label", "0",
          "--unsure", "--note", "unclear", "--unassigned")
    rep = jcall(capsys, "agreement", "--db", db)
    # paper 1 0 1 0 vs second 1 1 0 0: p_o = 2/4; marginals 1/2 and 1/2 -> p_e = 1/2; kappa = 0
    assert rep["iaa"]["pairs"]["paper|second"]["kappa"] == pytest.approx(0.0)
    assert rep["iaa"]["pairs"]["paper|second"]["n"] == 4
    with Store(db) as s:  # a judge that stored labels only
        s.set_judge_preds("jj", {"101": (None, 1), "102": (None, 0), "103": (None, 0), "104": (None, 0)})
    rep = jcall(capsys, "agreement", "--db", db, "--judge", "jj", "--n-boot", "200")
    assert set(rep) >= {"n", "kappa", "accuracy", "f1", "positive_rate", "annotators", "iaa"}
    # paper vs jj: human 1 0 1 0, judge 1 0 0 0: TP 1 FN 1 TN 2; p_o = 3/4,
    # p_e = 1/2*1/4 + 1/2*3/4 = 1/2 -> kappa = 0.5; F1 = 2/(2+0+1) = 2/3
    assert rep["annotators"]["paper"]["kappa"] == pytest.approx(0.5)
    assert rep["annotators"]["paper"]["f1"] == pytest.approx(2 / 3)
    assert rep["n"] == 8 and len(rep["annotators"]["paper"]["ci95"]["kappa"]) == 2
    jcall(capsys, "annotations", "adjudicate", "--db", db, "--pair", "102", "--label", "0", "--adjudicator", "lead")
    assert jcall(capsys, "agreement", "--db", db, "--judge", "jj")["gold"]["n"] == 1
    prog = jcall(capsys, "annotations", "progress", "--db", db, "--annotator", "paper")
    assert prog["done"] == 4 and prog["next"] is None


def test_tasks_from_run_stratified_with_overlap(tmp_path, capsys):
    db = str(tmp_path / "a.db")
    run = _run_file(tmp_path)
    res = jcall(capsys, "annotations", "tasks", "--db", db, "--run", str(run), "--n", "20", "--strategy",
                "stratified", "--annotators", "a,b,c", "--overlap", "0.25", "--k", "3")
    assert res["pairs"] == 20 and res["candidates"] == 6 * 3 * 2 and res["shared"] == 5
    assert sum(res["assignments"].values()) == 25
    with Store(db) as s:
        pairs = s.pairs()
        assert sum(p.subset == "kialo" for p in pairs) == 10  # equal shares per subset
        assert all(p.pair_id.startswith("bm25:") for p in pairs)
        stored = s.judge_preds("jj")  # the run's jj-preds came along for the sampled pairs
        assert len(stored) == 20 and all(prob is None for prob, _ in stored.values())
        q = s.tasks.queue("a", res["task_set"])
        assert len(q) in (8, 9) and rounds.summary(s, "a")["next"] == q[0]


@pytest.mark.parametrize("body, where", [
    ("question\tid\tdocument\tperspective\tlabel\nq\t1\td\tp\tmaybe\n", ":2: field 'label':"),
    ("question\tid\tdocument\tperspective\tlabel\nq\t1\td\tp\t1\nq\t1\td\tp\t1\n", ":3: field 'id':"),
    ("question\tid\tdoc\tperspective\tlabel\nq\t1\td\tp\t1\n", ":1: field 'document':"),
])
def test_bad_tsv_exits_2_with_file_line_field(tmp_path, capsys, body, where):
    p = tmp_path / "bad.tsv"
    p.write_text(body, encoding="utf-8")
    code, out, err = run_cli(capsys, "annotations", "import", "--db", str(tmp_path / "a.db"), "--pairs", str(p),
                             "--annotator", "x")
    assert code == 2 and out == ""
    assert len(err.strip().splitlines()) == 1 and f"{p}{where}" in err


def test_bad_input_errors(tmp_path, tsv, capsys):
    db = str(tmp_path / "a.db")
    jcall(capsys, "annotations", "import", "--db", db, "--pairs", str(tsv), "--labels-are", "ignore")
    code, _, err = run_cli(capsys, "annotations", "label", "--db", db, "--annotator", "a", "--pair", "999", "--label", "1")
    assert code == 2 and "field 'pair'" in err and "999" in err
    # the same id with a different document is refused, and nothing is overwritten
    other = tmp_path / "other.tsv"
    other.write_text("question\tid\tdocument\tperspective\tlabel\nIs X good?\t101\tchanged\tX is good.\t1\n")
    code, _, err = run_cli(capsys, "annotations", "import", "--db", db, "--pairs", str(other), "--annotator", "a")
    assert code == 2 and f"{other}:2: field 'document'" in err
    with Store(db) as s:
        assert s.pair("101").document.startswith("He said")
    code, _, err = run_cli(capsys, "annotations", "tasks", "--db", db, "--pairs", str(tsv), "--n", "2",
                           "--annotators", "a", "--overlap", "0.5")
    assert code == 2 and "overlap" in err
    code, _, err = run_cli(capsys, "annotations", "tasks", "--db", db, "--pairs", str(tsv), "--n", "0",
                           "--annotators", "a")
    assert code == 2 and "--n" in err
    notdb = tmp_path / "not.db"
    notdb.write_text("this is not sqlite " * 100)
    code, _, err = run_cli(capsys, "annotations", "progress", "--db", str(notdb), "--annotator", "a")
    assert code == 2 and str(notdb) in err
    code, _, err = run_cli(capsys, "annotations", "import", "--db", db, "--pairs", str(tmp_path / "missing.tsv"))
    assert code == 2 and "file not found" in err


def test_tasks_uncertain_with_the_embedded_judge(tmp_path, capsys):
    from berds_core import judges

    db = str(tmp_path / "a.db")
    run = _run_file(tmp_path)
    res = jcall(capsys, "annotations", "tasks", "--db", db, "--run", str(run), "--n", "6", "--strategy",
                "uncertain", "--annotators", "a,b", "--judge", "embedded", "--k", "2")
    assert res["pairs"] == 6 and res["judge"]
    with Store(db) as s:
        chosen = {p.pair_id: p.judge_prob for p in s.pairs()}
        preds = s.judge_preds(res["judge"])
        assert set(preds) == set(chosen)
        # the chosen pairs are the judge's least certain among all candidates
        judge = judges.get_judge("embedded")
        from berds_core.runs import read_run
        from berds_core.lab.tasks import judge_probabilities, pairs_from_runs
        cands, _ = pairs_from_runs([("bm25", read_run(run))], k=2)
        allp = judge_probabilities(cands, judge.predict)
        worst_chosen = max(abs(p - 0.5) for p in chosen.values())
        assert sum(abs(p - 0.5) < worst_chosen for p, _ in allp.values()) <= 5


def test_cli_subprocess_json_stdout_only(tmp_path, tsv):
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    out = subprocess.run([sys.executable, "-m", "berds_core", "annotations", "import", "--db", str(tmp_path / "a.db"),
                          "--pairs", str(tsv), "--annotator", "p", "--json"],
                         capture_output=True, text=True, env=env, cwd=str(tmp_path), timeout=120)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["labels"] == 4


def _sub(*argv, cwd):
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, "-m", "berds_core", *argv], capture_output=True, text=True, env=env,
                          cwd=str(cwd), timeout=120)


def test_bad_tsv_import_leaves_no_database_behind(tmp_path):
    """issue 18: a bad TSV must not create an (empty) database or its folder."""
    bad = tmp_path / "bad.tsv"
    bad.write_text("question\tid\tdocument\tperspective\tlabel\nq\t1\td\tp\tmaybe\n", encoding="utf-8")
    db = tmp_path / "new" / "dir" / "ann.db"
    out = _sub("annotations", "import", "--db", str(db), "--pairs", str(bad), "--annotator", "x", cwd=tmp_path)
    assert out.returncode == 2 and out.stdout == ""
    assert f"{bad}:2: field 'label':" in out.stderr and len(out.stderr.strip().splitlines()) == 1
    assert "maybe" not in out.stderr  # the file's contents are not quoted
    assert not db.exists() and not (tmp_path / "new").exists()
    # a file with labels but no say on what they are: refused before anything is created
    lab = tmp_path / "lab.tsv"
    lab.write_text("question\tid\tdocument\tperspective\tlabel\nq\t1\td\tp\t1\n", encoding="utf-8")
    out = _sub("annotations", "import", "--db", str(db), "--pairs", str(lab), cwd=tmp_path)
    assert out.returncode == 2 and "--labels-are" in out.stderr and not db.exists()


def test_bad_import_never_changes_an_existing_database(tmp_path, tsv, capsys):
    db = str(tmp_path / "a.db")
    jcall(capsys, "annotations", "import", "--db", db, "--pairs", str(tsv), "--annotator", "paper")
    before = (Path(db).read_bytes(), json.dumps([e for e in Store(db).history()]))
    # 2 good new rows, then a row whose id clashes with a stored pair: nothing of the file is stored
    clash = tmp_path / "clash.tsv"
    clash.write_text("question\tid\tdocument\tperspective\tlabel\nQ\tn1\td\tp\t1\nQ\tn2\td\tp\t0\n"
                     "Is X good?\t101\tchanged\tX is good.\t1\n", encoding="utf-8")
    code, _, err = run_cli(capsys, "annotations", "import", "--db", db, "--pairs", str(clash), "--annotator", "paper")
    assert code == 2 and f"{clash}:4: field 'document'" in err
    with Store(db) as s:
        assert not s.has_pair("n1") and s.count_pairs() == 4
        assert json.dumps(s.history()) == before[1]


def test_import_reference_labels_and_export_formats(tmp_path, tsv, capsys):
    db = str(tmp_path / "a.db")
    res = jcall(capsys, "annotations", "import", "--db", db, "--pairs", str(tsv), "--labels-are", "reference")
    assert res["labels"] == 4 and res["labels_as"] == "reference" and res["task_set"] is None
    with Store(db) as s:
        assert s.reference_labels() == {"101": 1, "102": 0, "103": 1, "104": 0} and s.labels() == []
        from berds_core.lab.accounts import Accounts
        from argon2 import PasswordHasher
        Accounts(s, hasher=PasswordHasher(time_cost=1, memory_cost=1024, parallelism=1)).add(
            "paper", "annotator", "a long password")
    out = tmp_path / "ref.csv"
    assert jcall(capsys, "annotations", "export", "--db", db, "--what", "reference", "--format", "csv",
                 "--out", str(out))["rows"] == 4
    text = out.read_text()
    assert text.startswith("question,id,document,perspective,label,annotator") and ",reference," in text
    for fmt in ("tsv", "csv", "jsonl"):
        for what in ("labels", "gold", "reference"):
            code, dumped, _ = run_cli(capsys, "annotations", "export", "--db", db, "--what", what, "--format", fmt)
            assert code == 0 and "$argon2" not in dumped and "a long password" not in dumped


def test_tasks_redundancy_routing_flags_and_demo(tmp_path, capsys):
    db = str(tmp_path / "a.db")
    run = _run_file(tmp_path)
    res = jcall(capsys, "annotations", "tasks", "--db", db, "--run", str(run), "--n", "8", "--annotators", "a,b,c",
                "--redundancy", "2", "--route-unsure", "--k", "2")
    assert res["shared"] == 8 and sum(res["assignments"].values()) == 16
    with Store(db) as s:
        info = s.tasks.info(res["task_set"])
        assert info["params"]["route_unsure"] is True and info["params"]["per_shared"] == 2
    code, _, err = run_cli(capsys, "annotations", "tasks", "--db", db, "--run", str(run), "--n", "8",
                           "--annotators", "a,b", "--redundancy", "3")
    assert code == 2 and "--redundancy" in err
    res = jcall(capsys, "annotations", "demo", "--db", db, "--annotators", "me,you", "--n", "12", "--overlap", "0.5",
                "--calibration", "2")
    assert res["task_set"] == "demo" and res["pairs"] == 12 and res["calibration"] == 2
    res = jcall(capsys, "annotations", "guidelines", "--db", db, "--define", "1=backs the view")
    assert res["definitions"]["1"] == "backs the view" and res["text"] == ""
    md = tmp_path / "g.md"
    md.write_text("# Read the whole passage\n", encoding="utf-8")
    assert jcall(capsys, "annotations", "guidelines", "--db", db, "--set", str(md))["text"].startswith("# Read")
    code, _, err = run_cli(capsys, "annotations", "guidelines", "--db", db, "--define", "maybe=x")
    assert code == 2
    code, _, err = run_cli(capsys, "annotations", "progress", "--db", str(tmp_path / "none.db"), "--annotator", "a")
    assert code == 2 and not (tmp_path / "none.db").exists()


def test_agreement_cli_reports_every_figure(tmp_path, tsv, capsys):
    db = str(tmp_path / "a.db")
    jcall(capsys, "annotations", "import", "--db", db, "--pairs", str(tsv), "--annotator", "paper")
    for pid, lab in [("101", "1"), ("102", "1"), ("103", "0"), ("104", "0")]:
        jcall(capsys, "annotations", "label", "--db", db, "--annotator", "second", "--pair", pid, "--label", lab,
              "--unassigned")
    with Store(db) as s:
        s.set_judge_preds("jj", {"101": (0.8, 1), "102": (0.3, 0), "103": (0.2, 0), "104": (0.1, 0)})
    rep = jcall(capsys, "agreement", "--db", db, "--judge", "jj", "--n-boot", "100")
    assert {"pabak", "ac1", "precision", "recall", "f1"} <= set(rep)
    assert {r["comparison"] for r in rep["table"]} == {"human vs jj", "human vs human"}
    assert rep["warnings"] and set(rep["per_question"]) == {"Is X good?", "Is Y fair?"}
