"""Gold checks no queue shape gives away (issue 63, item 2): a check takes the place of a task of its stratum
(one annotator, every pair to two, part of each block to many), placing one reads what any decision reads,
a skipped check counts against the floor, and checks come from the set's own candidates (an empty pool is
refused when the round is built)."""
from __future__ import annotations

import json
import re
from collections import Counter

import pytest

from berds_core.cli import main
from berds_core.lab.access import Actor, Lab
from berds_core.lab.checks import check_scores
from berds_core.lab.controls import RoundControls
from berds_core.lab.health import round_health
from berds_core.lab.store import SKIP, Pair, Store
from berds_core.lab.tasks import build_demo_task_set

SHAPES = {"one": (["ann"], {}), "pair": (["ann", "bob"], {"overlap": 1.0, "per_shared": 2}),
          "many": (["a1", "a2", "a3", "a4", "a5"], {"overlap": 1.0, "per_shared": 3})}


def _strata(store: Store, pair_ids) -> list[str]:
    by = {p.pair_id: p for p in store.pairs(list(pair_ids))}
    return [by[p].subset for p in pair_ids]


def _label_round(store: Store, names, answer) -> dict[str, list[str]]:
    """Every annotator labels their queue through the server path, in turns; ``answer(name, pid)`` gives the
    value. Returns the pairs each was served, in order."""
    served = {n: [] for n in names}
    busy = list(names)
    while busy:
        for name in list(busy):
            lab = Lab(store, Actor(name, "annotator"))
            nxt = lab.next_pairs(6)
            if not nxt:
                busy.remove(name)
                continue
            served[name].append(nxt[0])
            lab.label(nxt[0], answer(name, nxt[0]))
    return served


@pytest.mark.parametrize("shape", list(SHAPES))
def test_a_check_takes_the_place_of_a_task_of_its_stratum_in_every_queue_shape(tmp_path, shape):
    names, overlap = SHAPES[shape]
    s = Store(tmp_path / "lab.db")
    build_demo_task_set(s, names, n=120, seed=3, controls=RoundControls(check_rate=0.15, seed=3), **overlap)
    planned = {n: s.tasks.queue(n, "demo") for n in names}  # each queue as built, before any check
    served = _label_round(s, names, lambda name, pid: 1)
    for n in names:
        checks = [a["pair_id"] for a in s.tasks.assignments("demo") if a["annotator"] == n and a["kind"] == "check"]
        assert len(checks) >= 3 and set(checks) <= set(served[n])
        assert not set(checks) & set(planned[n])  # never one of their own tasks
        # the strata they met, in order, are those of their queue without checks: nothing to explain away
        assert _strata(s, served[n][:len(planned[n])]) == _strata(s, planned[n])
        # the tasks a check took the place of come at the end, every one of them served
        assert sorted(served[n]) == sorted(planned[n] + checks)
    assert sum(c["dry"] for c in round_health(s)["checks"].values()) == 0


def _normalised(sql: str) -> str:
    sql = re.sub(r"'(?:[^']|'')*'", "?", " ".join(sql.split()))
    return re.sub(r"\b\d+(\.\d+)?\b", "?", sql)


def test_a_decision_that_places_a_check_reads_what_any_decision_reads(tmp_path):
    """The same reads on every decision, whatever the store's reference labels (3,000 here on pairs outside the
    round); the run that places a check only writes more: the check, the task it displaced, the slot."""
    s = Store(tmp_path / "lab.db")
    build_demo_task_set(s, ["ann"], n=60, seed=1, controls=RoundControls(check_rate=0.2, check_floor=0.5, seed=1))
    other = [Pair(f"x{i}", f"Q{i}?", f"passage {i}", f"perspective {i}") for i in range(3000)]
    s.add_pairs(other)
    s.set_reference_labels({p.pair_id: i % 2 for i, p in enumerate(other)}, source="another dataset")
    runs = []
    while True:
        nxt = Lab(s, Actor("ann", "annotator"), per_request=True).next_pairs(6)
        if not nxt:
            break
        placed = len(s.checks.slots_done("demo", "ann"))
        statements: list[str] = []
        s.set_trace(statements.append)
        Lab(s, Actor("ann", "annotator"), per_request=True).label(nxt[0], 1)
        s.set_trace(None)
        runs.append((len(s.checks.slots_done("demo", "ann")) > placed, [_normalised(x) for x in statements]))
    placing = [st for p, st in runs if p]
    assert len(placing) >= 3
    head = {"INSERT", "UPDATE", "DELETE", "BEGIN", "COMMIT", "SAVEPOINT", "RELEASE"}

    def reads(st):
        return Counter(x for x in st if x.split(" ", 1)[0].upper() not in head)

    for i, (was_placing, st) in enumerate(runs):
        if not was_placing or i == 0 or runs[i - 1][0]:
            continue
        before = runs[i - 1][1]  # the decision just before, which placed nothing
        assert reads(st) == reads(before)
        extra = Counter(st) - Counter(before)
        assert sorted(x.split(" ", 2)[:2][0] for x in extra.elements()) == ["INSERT", "INSERT", "UPDATE"]
        assert all("reference_labels" not in x or "r.pair_id" in x for x in st)  # never every reference label


def _jcall(capsys, *argv):
    code = main([*argv, "--json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    return json.loads(out)


def _fail(capsys, *argv) -> str:
    code = main(list(argv))
    out, err = capsys.readouterr()
    assert code == 2 and out == "", (code, out, err)
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    return lines[0]


def test_a_skipped_check_counts_against_the_floor_and_is_reported(tmp_path, capsys):
    """The skipper of the audit: skips exactly the checks and answers the rest; before, never scored nor paused."""
    db = tmp_path / "lab.db"
    with Store(db) as s:
        build_demo_task_set(s, ["skip", "good"], n=80, seed=2, overlap=1.0, per_shared=2,
                            controls=RoundControls(check_rate=0.2, check_floor=0.7, check_min=4, seed=2))
        truth = s.reference_labels()
        _label_round(s, ["skip", "good"],
                     lambda name, pid: SKIP if name == "skip" and s.reports.is_check_for(name, pid) else truth[pid])
        sc = check_scores(s)
        assert sc["skip"]["skipped"] == sc["skip"]["n"] >= 4 and sc["skip"]["correct"] == 0
        assert sc["good"]["skipped"] == 0 and sc["good"]["accuracy"] == 1.0
        h = round_health(s, "demo")
        assert h["checks"]["skip"]["skipped"] == sc["skip"]["n"] and h["checks"]["good"]["skipped"] == 0
        assert [p["annotator"] for p in h["pauses"]] == ["skip"]
        assert "skipped" in h["pauses"][0]["lead_message"]
    got = _jcall(capsys, "annotations", "checks", "--db", str(db), "--annotator", "skip")
    assert got["annotators"]["skip"]["skipped"] == got["annotators"]["skip"]["n"]
    assert all(a["skipped"] and a["label"] is None and not a["correct"] for a in got["answers"])
    assert [p["annotator"] for p in got["paused"]] == ["skip"]


def _run_file(path, n_questions=6, k=4, judged=True):
    with open(path, "w", encoding="utf-8") as fh:
        for q in range(n_questions):
            ctxs = []
            for i in range(k):
                c = {"id": f"d{q}_{i}", "title": f"T{q}.{i}", "text": f"Passage {i} of question {q}: " + "words " * (3 + i),
                     "score": 10.0 - i}
                if judged:
                    c["j-preds"] = [bool((q + i) % 3 == 0), bool((q + i) % 3 == 1)]
                ctxs.append(c)
            fh.write(json.dumps({"id": f"q{q}", "question": f"Question {q}?", "subset": f"s{q % 2}",
                                 "perspectives": [f"Side A of {q}", f"Side B of {q}"], "ctxs": ctxs}) + "\n")


def test_checks_come_from_the_runs_own_candidates_or_the_build_is_refused(tmp_path, capsys):
    """The audit's set-up: reference labels imported for other pairs, then a task set from a run with checks.
    Before, the pool was empty and checks fell back to any reference pair (no judge answer, other texts)."""
    run = tmp_path / "bm25.jsonl"
    _run_file(run)
    other = tmp_path / "other.tsv"
    other.write_text("question\tid\tdocument\tperspective\tlabel\n" +
                     "".join(f"Elsewhere {i}?\tx{i}\tA long other passage {i} {'x ' * 50}\tP{i}\t{i % 2}\n"
                             for i in range(40)), encoding="utf-8")
    db = str(tmp_path / "lab.db")
    _jcall(capsys, "annotations", "import", "--db", db, "--pairs", str(other), "--labels-are", "reference")
    line = _fail(capsys, "annotations", "tasks", "--db", db, "--run", str(run), "--n", "12", "--annotators", "a",
                 "--check-rate", "0.25", "--k", "4")
    assert "no gold checks can be drawn" in line and "known answer" in line
    with Store(db) as s:
        assert s.tasks.names() == []  # nothing was built
    # the same run's pairs labelled elsewhere (other ids, the same question, passage and perspective): they are
    # the pool, from the run's own candidates, with the run's judge answers
    same = tmp_path / "same.tsv"
    rows = []
    for line_ in run.read_text(encoding="utf-8").splitlines():
        e = json.loads(line_)
        for c in e["ctxs"]:
            for j, persp in enumerate(e["perspectives"]):
                rows.append(f"{e['question']}\tref-{e['id']}-{c['id']}-{j}\t{c['text']}\t{persp}\t{(j + len(rows)) % 2}\n")
    same.write_text("question\tid\tdocument\tperspective\tlabel\n" + "".join(rows), encoding="utf-8")
    _jcall(capsys, "annotations", "import", "--db", db, "--pairs", str(same), "--labels-are", "reference")
    res = _jcall(capsys, "annotations", "tasks", "--db", db, "--run", str(run), "--n", "12", "--annotators", "a",
                 "--check-rate", "0.25", "--k", "4", "--strategy", "stratified", "--name", "r")
    assert res["check_pool"] >= 4
    with Store(db) as s:
        served = _label_round(s, ["a"], lambda name, pid: 0)["a"]
        checks = [a["pair_id"] for a in s.tasks.assignments("r") if a["kind"] == "check"]
        assert checks and all(p.startswith("bm25:") for p in checks)  # the run's own pairs
        lab = Lab(s, Actor("a", "annotator"))
        assert all(lab.judge_answers(p) for p in served)  # every pair shows a judge answer after deciding, checks too
    # turning checks on later for a set built without a pool: refused with one line
    _jcall(capsys, "annotations", "tasks", "--db", db, "--run", str(run), "--n", "6", "--annotators", "b",
           "--name", "plain")
    line = _fail(capsys, "annotations", "round", "--db", db, "--task-set", "plain", "--check-rate", "0.2")
    assert "no pool of gold checks" in line


def test_an_upgraded_round_keeps_drawing_its_checks(tmp_path):
    """A version 5 file with gold checks on: upgrading gives the set the pool it drew from before."""
    import sqlite3

    path = tmp_path / "v5.db"
    with Store(path) as s:
        build_demo_task_set(s, ["ann"], n=30, seed=0, controls=RoundControls(check_rate=0.2, seed=0))
        pool = s.checks.pool_counts()["demo"]
    con = sqlite3.connect(path)
    con.execute("DROP TABLE check_pool")
    con.execute("DELETE FROM schema_version WHERE version = 6")
    con.commit()
    con.close()
    with Store(path) as s:
        assert s.schema_version == 6
        known = len(set(s.reference_labels()) | set(s.gold()))
        assert s.checks.pool_counts()["demo"] == known - 30 >= pool  # every known answer outside its tasks
        lab = Lab(s, Actor("ann", "annotator"))
        for _ in range(12):
            lab.label(lab.next_pairs(6)[0], 1)
        assert any(a["kind"] == "check" for a in s.tasks.assignments("demo"))


def test_a_lower_check_rate_mid_round_places_nothing_twice_and_logs_nothing(tmp_path, caplog):
    """Slots filled at the old rate outnumber the new rate's: decisions go on, no slot is filled twice."""
    from berds_core.lab.controls import set_controls

    s = Store(tmp_path / "lab.db")
    build_demo_task_set(s, ["ann"], n=60, seed=5, controls=RoundControls(check_rate=0.3, seed=5))
    lab = Lab(s, Actor("ann", "annotator"))
    for _ in range(30):
        lab.label(lab.next_pairs(6)[0], 1)
    set_controls(s, "demo", check_rate=0.02)
    with caplog.at_level("ERROR", logger="berds.lab.checks"):
        _label_round(s, ["ann"], lambda name, pid: 1)
    assert not caplog.records
    slots = [a for a in s.tasks.assignments("demo") if a["kind"] == "check"]
    assert len(slots) == len(s.checks.slots_done("demo", "ann")) - sum(
        n for a, state, n in s.checks.slot_state_counts("demo") if state != "placed") >= 3
