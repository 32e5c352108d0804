"""``berds annotations demo --simulate`` and the round verbs (round, checks, pause, resume, qualification, answer,
reliability, review, judge-failures, health) with --json; label-set and qualification exports."""
import json
import subprocess
import sys
from pathlib import Path

import pytest

from berds_core.cli import main
from berds_core.lab.store import Store

ROOT = Path(__file__).resolve().parents[1]
DEMO_SIM = "ann1=0.95,ann2=0.75,ann3=0.5,ann4=spammer,ann5=gamer"


def jcall(capsys, *argv):
    code = main([*argv, "--json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    lines = out.strip().splitlines()
    assert len(lines) == 1
    return json.loads(lines[0])


def fail(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    assert code == 2 and out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    return lines[0]


@pytest.mark.slow
def test_demo_round_with_simulated_annotators_meets_the_issue(tmp_path, capsys):
    """The round of docs/annotation-lab.md: competence in the order of true quality, the spammer paused by the
    checks, the gamer missed by the checks but not by the estimate, MACE's labels closer to the truth."""
    db = str(tmp_path / "demo.db")
    res = jcall(capsys, "annotations", "demo", "--db", db, "--annotators", "ann1,ann2,ann3,ann4,ann5", "--n", "300",
                "--redundancy", "3", "--check-rate", "0.1", "--check-floor", "0.7", "--simulate", DEMO_SIM)
    # all five in the order of their true quality (the spammer and the gamer, both of quality 0, in either
    # order), by MACE's competence: over 20 held-out seeds in all 20 (bench/lab_reliability.py,
    # docs/annotation-lab.md); the paused spammer's estimate rests on the ~45 labels made before the pause
    assert res["method"] == "mace"
    assert res["ordered_as_true"] is True
    assert res["estimated_order"][:3] == ["ann1", "ann2", "ann3"] and set(res["estimated_order"][3:]) == {"ann4", "ann5"}
    sim_c = {a: v["competence"] for a, v in res["simulation"].items()}
    assert sim_c["ann1"] > sim_c["ann2"] > sim_c["ann3"] > max(sim_c["ann4"], sim_c["ann5"])
    assert res["paused"] == ["ann4"]
    sim = res["simulation"]
    assert sim["ann5"]["check_accuracy"] == 1.0 and sim["ann5"]["competence"] < 0.2 and not sim["ann5"]["paused"]
    vs = res["vs_truth"]
    assert vs["mace"]["accuracy"] > vs["majority"]["accuracy"] and vs["dawid-skene"]["accuracy"] > vs["majority"]["accuracy"]
    # the same figures from the reliability verb
    rep = jcall(capsys, "annotations", "reliability", "--db", db)
    assert rep["order"] == res["estimated_order"]
    assert rep["annotators"]["ann4"]["paused_in"] == ["demo"]
    assert rep["annotators"]["ann4"]["time"]["under_floor_share"] > 0.5


def test_round_verbs_on_a_small_simulated_round(tmp_path, capsys):
    db = str(tmp_path / "r.db")
    res = jcall(capsys, "annotations", "demo", "--db", db, "--annotators", "a,b,c", "--n", "60", "--redundancy", "3",
                "--check-rate", "0.15", "--check-floor", "0.7", "--check-min", "3", "--qualification", "2",
                "--qualification-pass", "0.5", "--simulate", "a=0.9,b=0.8,c=spammer")
    assert res["controls"]["qualification_n"] == 2 and res["check_pool"] > 0
    assert {s["qualification"] for s in res["simulation"].values()} <= {"passed", "failed"}
    # the round's controls: shown, then changed (validated)
    got = jcall(capsys, "annotations", "round", "--db", db, "--task-set", "demo")
    assert got["controls"]["check_rate"] == 0.15 and got["changed"] == []
    got = jcall(capsys, "annotations", "round", "--db", db, "--task-set", "demo", "--check-floor", "none",
                "--time-floor", "1.5")
    assert got["controls"]["check_floor"] is None and got["controls"]["time_floor_ms"] == 1500
    assert "check rate" in fail(capsys, "annotations", "round", "--db", db, "--task-set", "demo", "--check-rate", "2")
    assert "--task-set" in fail(capsys, "annotations", "round", "--db", db, "--task-set", "nope")
    # checks, health, qualification
    checks = jcall(capsys, "annotations", "checks", "--db", db, "--annotator", "a")
    assert "a" in checks["annotators"] and all("expected" in x for x in checks["answers"])
    health = jcall(capsys, "annotations", "health", "--db", db)
    assert set(health["queues"]) == {"a", "b", "c"} and "pace" in health and "adjudication" in health
    qual = jcall(capsys, "annotations", "qualification", "--db", db, "--task-set", "demo")
    assert {q["annotator"] for q in qual["annotators"]} == {"a", "b", "c"}
    failed = [q["annotator"] for q in qual["annotators"] if q["state"] == "failed"]
    if failed:
        again = jcall(capsys, "annotations", "qualification", "--db", db, "--task-set", "demo", "--retry", failed[0])
        assert again["retry"]["allowed"] is True
    # pause and resume by the lead
    p = jcall(capsys, "annotations", "pause", "--db", db, "--task-set", "demo", "--annotator", "a", "--by", "lead")
    assert p["paused"] is True
    assert jcall(capsys, "annotations", "health", "--db", db)["queues"]["a"]["sets"] == {"demo": "paused"}
    r = jcall(capsys, "annotations", "resume", "--db", db, "--task-set", "demo", "--annotator", "a", "--by", "lead")
    assert r["resumed"] is True
    assert "no queue" in fail(capsys, "annotations", "pause", "--db", db, "--task-set", "demo", "--annotator", "zed")
    # a typed answer joins the pool
    with Store(db) as s:
        free = s.pairs()[0].pair_id
    assert jcall(capsys, "annotations", "answer", "--db", db, "--pair", free, "--label", "1", "--by", "lead")["answer"] == 1
    with Store(db) as s:
        from berds_core.lab.checks import known_answers

        assert known_answers(s)[free] in ((1, "typed by lead"), (s.gold().get(free), "adjudicated"))
    assert "no pair" in fail(capsys, "annotations", "answer", "--db", db, "--pair", "nope", "--label", "1")
    # reliability with either model
    for method in ("dawid-skene", "mace"):
        rep = jcall(capsys, "annotations", "reliability", "--db", db, "--method", method, "--window", "5")
        assert rep["method"] == method and set(rep["order"]) <= {"a", "b", "c"}
        assert "c" not in rep["order"] or rep["order"][-1] == "c"  # the spammer, unless the qualification kept them out
    assert "--window" in fail(capsys, "annotations", "reliability", "--db", db, "--window", "1")


def test_review_judge_failures_and_exports(tmp_path, capsys):
    db = str(tmp_path / "j.db")
    jcall(capsys, "annotations", "demo", "--db", db, "--annotators", "a,b,c", "--n", "40", "--redundancy", "3",
          "--simulate", "a=0.9,b=0.9,c=spammer")
    with Store(db) as s:
        s.set_judge_preds("jz", {p.pair_id: (0.9, 1) for p in s.pairs()})  # a judge that always says supports
    q = jcall(capsys, "annotations", "review", "--db", db, "--judge", "jz", "--limit", "5")
    assert len(q["queue"]) <= 5 and q["pairs"] >= len(q["queue"])
    pr = [r["priority"] for r in q["queue"] if r["priority"] is not None]
    assert pr == sorted(pr, reverse=True)
    f = jcall(capsys, "annotations", "judge-failures", "--db", db, "--judge", "jz")
    assert f["overall"]["false_negatives"] == 0 and f["overall"]["false_positives"] > 0
    assert {"per_question", "per_perspective_length", "per_source"} <= set(f)
    assert "judge" in fail(capsys, "annotations", "judge-failures", "--db", db, "--judge", "nobody")
    # exports: labels with the judge's probability, the label sets, qualification answers
    for what in ("majority", "mace", "dawid-skene"):
        out = tmp_path / f"{what}.tsv"
        res = jcall(capsys, "annotations", "export", "--db", db, "--what", what, "--out", str(out))
        header = out.read_text().splitlines()[0].split("\t")
        assert header[:5] == ["question", "id", "document", "perspective", "label"] and header[-2:] == ["confidence",
                                                                                                         "n_labels"]
        assert res["rows"] == 40
    out = tmp_path / "labels.csv"
    jcall(capsys, "annotations", "export", "--db", db, "--format", "csv", "--judge", "jz", "--out", str(out))
    assert out.read_text().splitlines()[0].endswith("judge,judge_prob,judge_label")
    assert "judge" in fail(capsys, "annotations", "export", "--db", db, "--judge", "nobody", "--out",
                           str(tmp_path / "x.tsv"))


@pytest.mark.slow
def test_health_json_from_a_real_subprocess(tmp_path):
    db = tmp_path / "h.db"
    subprocess.run([sys.executable, "-m", "berds_core", "annotations", "demo", "--db", str(db), "--annotators", "x,y",
                    "--n", "20", "--redundancy", "2", "--simulate", "x=0.9,y=spammer", "--json"], cwd=ROOT, check=True,
                   capture_output=True, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    got = subprocess.run([sys.executable, "-m", "berds_core", "annotations", "health", "--db", str(db), "--json"],
                         cwd=ROOT, capture_output=True, text=True, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    assert got.returncode == 0, got.stderr
    data = json.loads(got.stdout)
    assert data["labels"] == 40 and data["queue_left"] == 0 and set(data["pace"]["per_annotator"]) == {"x", "y"}
