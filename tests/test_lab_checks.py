"""Gold checks that act, qualification rounds, and what an annotator is served (lab/checks, qualification, rounds)."""
import sqlite3

import pytest

from berds_core.lab.access import AccessDenied, Actor, Lab
from berds_core.lab.checks import (check_scores, gap_bounds, known_answers, pauses, slot_points, slot_summary,
                                   wilson_interval)
from berds_core.lab.controls import RoundControls, get_controls, set_controls
from berds_core.lab.exports import export_rows
from berds_core.lab.qualification import status
from berds_core.lab.store import SCHEMA_VERSION, Pair, Store, StoreError
from berds_core.lab.tasks import TaskSetSpec, build_task_set


def _pairs(n, prefix="p"):
    return [Pair(f"{prefix}{i}", f"Question {i // 4}?", f"Passage {i}", f"Perspective {i % 4}",
                 question_id=f"q{i // 4}") for i in range(n)]


def _round(tmp_path, *, n_tasks=60, n_pool=40, annotators=("ann", "bob"), controls=None, overlap=0.0):
    """A store with ``n_tasks`` task pairs and ``n_pool`` pairs with a reference label (half positive)."""
    s = Store(tmp_path / "lab.db")
    tasks, pool = _pairs(n_tasks), _pairs(n_pool, "g")
    ref = {p.pair_id: i % 2 for i, p in enumerate(pool)}
    spec = TaskSetSpec(name="r1", source="test", n=n_tasks, strategy="random", annotators=tuple(annotators),
                       overlap=overlap, seed=1, controls=controls or RoundControls(check_rate=0.1, seed=3))
    res = build_task_set(s, tasks + pool, spec, reference=ref)
    assert res["pairs"] == n_tasks and res["check_pool"] >= 1
    return s, res, ref


def _label_all(lab, answer, *, limit=10_000):
    """Label the actor's queue through the server path until nothing is served; returns the totals seen."""
    totals = []
    for _ in range(limit):
        nxt = lab.next_pairs(6)
        totals.append(lab.progress()["total"])
        if not nxt:
            return totals
        lab.label(nxt[0], answer(nxt[0]))
    raise AssertionError("queue never ended")


def test_wilson_interval_matches_published_values():
    lo, hi = wilson_interval(8, 10)  # Newcombe (1998), method 3: 0.4902 to 0.9433
    assert lo == pytest.approx(0.4902, abs=1e-4) and hi == pytest.approx(0.9433, abs=1e-4)
    assert wilson_interval(0, 0) == [None, None]
    assert wilson_interval(10, 10)[1] == 1.0 and wilson_interval(0, 10)[0] == 0.0


def test_gap_bounds_give_the_rate_on_average():
    lo, hi = gap_bounds(0.05)
    assert (lo, hi) == (10, 28) and (lo + hi) / 2 == 19  # 19 other items per check on average
    assert gap_bounds(0.1) == (5, 13) and gap_bounds(0.5) == (1, 1)
    pts = slot_points(RoundControls(check_rate=0.05), "r", "a", 100_000)
    assert len(pts) / (100_000 + len(pts)) == pytest.approx(0.05, rel=0.03)
    assert slot_points(RoundControls(check_rate=0.05), "r", "a", 5) == []


def test_checks_placed_at_the_rate_never_twice_balanced_and_the_total_never_moves(tmp_path):
    s, res, ref = _round(tmp_path)
    for name in ("ann", "bob"):
        lab = Lab(s, Actor(name, "annotator"))
        tasks = set(s.tasks.queue(name))
        totals = _label_all(lab, lambda pid: 1)
        assert len(set(totals)) == 1, "the total an annotator sees never grows when a check arrives"
        got = [a for a in s.tasks.assignments("r1") if a["annotator"] == name and a["kind"] == "check"]
        expected = len(slot_points(get_controls(s, "r1"), "r1", name, len(tasks)))
        assert len(got) == expected >= 2
        ids = [a["pair_id"] for a in got]
        assert len(set(ids)) == len(ids) and not set(ids) & tasks  # never twice, never one of their own tasks
        answers = [ref[p] for p in ids]
        assert abs(sum(answers) - len(answers) / 2) <= 1  # classes alternate
        assert totals[0] == len(tasks) + expected
    assert slot_summary(s)["ann"]["dry"] == 0
    sc = check_scores(s)
    assert sc["ann"]["n"] >= 2 and 0.3 <= sc["ann"]["accuracy"] <= 0.7  # always "supports" scores about a half


def test_floor_pauses_the_queue_with_messages_and_the_lead_resumes(tmp_path):
    s, _, ref = _round(tmp_path, controls=RoundControls(check_rate=0.2, check_floor=0.7, check_min=3, seed=5))
    lab = Lab(s, Actor("ann", "annotator"))
    answers = known_answers(s)
    wrong = lambda pid: 1 - answers[pid][0] if pid in answers else 1  # noqa: E731
    _label_all(lab, wrong)
    st = {x["task_set"]: x for x in lab.round_states()}
    assert st["r1"]["state"] == "paused" and "paused" in st["r1"]["message"]
    assert "check" not in st["r1"]["message"].lower()  # the annotator is never told which pairs were checks
    assert lab.next_pairs(5) == []
    before = {(l.pair_id, l.value) for l in s.labels("ann")}
    left = [p for p in s.tasks.queue("ann", "r1") if p not in {x for x, _ in before}]
    with pytest.raises(StoreError, match="paused"):
        lab.label(left[0], 1)
    assert {(l.pair_id, l.value) for l in s.labels("ann")} == before  # nothing deleted
    (p,) = pauses(s, open_only=True)
    assert p["annotator"] == "ann" and p["reason"] == "checks" and p["checks"] == 3
    assert "below the floor of 70%" in p["lead_message"] and "0 of 3" in p["lead_message"]
    assert any(r["action"] == "pause" for r in s.audit.rows())
    # an annotator cannot resume themselves; the reviewer (lead) can
    with pytest.raises(AccessDenied):
        lab.resume("r1", "ann")
    lead = Lab(s, Actor("rita", "reviewer"))
    assert lead.resume("r1", "ann", note="talked it through") is True
    assert lab.next_pairs(1)
    # after the resume the floor counts only new checks: two more wrong ones are not enough to pause again
    for _ in range(200):
        nxt = lab.next_pairs(6)
        if not nxt or len([a for a in s.tasks.assignments("r1") if a["annotator"] == "ann" and a["kind"] == "check"
                           and s.get_label("ann", a["pair_id"]) is not None]) >= 5:
            break
        lab.label(nxt[0], wrong(nxt[0]))
    assert lab.round_states()[0]["state"] in ("open", "paused")
    got = pauses(s)
    assert got[0]["resumed_by"] == "rita" and got[0]["resume_note"] == "talked it through"


def test_adjudicated_and_typed_answers_join_the_pool(tmp_path):
    s = Store(tmp_path / "lab.db")
    s.add_pairs(_pairs(80))
    s.tasks.create("r1", {"ann": [f"p{i}" for i in range(40)], "bob": [f"p{i}" for i in range(40, 80)]})
    set_controls(s, "r1", check_rate=0.1)
    # no known answer anywhere: slots run dry, the queue goes on
    lab = Lab(s, Actor("ann", "annotator"))
    first = lab.next_pairs(15)
    assert len(first) == 15 and slot_summary(s)["ann"]["dry"] >= 1
    # bob's pairs adjudicated, and a typed answer: they join r1's pool and can be ann's checks (never bob's own)
    Lab(s, Actor("rita", "reviewer")).adjudicate("p45", 1)
    got = Lab(s, Actor("rita", "reviewer")).add_check_answers({"p50": 0})
    assert got == {"stored": 1, "pools": ["r1"]}
    assert known_answers(s)["p45"] == (1, "adjudicated") and known_answers(s)["p50"][1] == "typed by rita"
    assert s.checks.pool_counts() == {"r1": 2}
    with pytest.raises(AccessDenied):
        lab.add_check_answers({"p51": 1})
    _label_all(lab, lambda pid: 1)
    checks = {a["pair_id"] for a in s.tasks.assignments("r1") if a["annotator"] == "ann" and a["kind"] == "check"}
    assert checks == {"p45", "p50"}
    assert not {a["pair_id"] for a in s.tasks.assignments("r1") if a["annotator"] == "bob" and a["kind"] == "check"}


def test_reviewer_figures_are_refused_to_annotators(tmp_path):
    s, _, _ = _round(tmp_path)
    ann = Lab(s, Actor("ann", "annotator"))
    for call in (lambda: ann.reliability_report(), lambda: ann.round_health(), lambda: ann.review_queue(),
                 lambda: ann.judge_failures("j"), lambda: ann.set_round_controls("r1", check_rate=0.2),
                 lambda: ann.pause("r1", "bob"), lambda: ann.allow_retry("r1", "bob"),
                 lambda: ann.export_rows("qualification"), lambda: ann.export_rows("mace")):
        with pytest.raises(AccessDenied):
            call()
    view = ann.pair_view(ann.next_pairs(1)[0])
    assert set(view) == {"question", "title", "document", "perspective"}  # nothing says "check"


def test_qualification_gates_the_queue_and_shows_the_answer_only_after(tmp_path):
    s, _, _ = _round(tmp_path, controls=RoundControls(qualification_n=4, qualification_pass=0.75, seed=2))
    ann = Lab(s, Actor("ann", "annotator"))
    assert ann.round_states()[0]["state"] == "qualify" and ann.next_pairs(3) == []
    with pytest.raises(StoreError, match="qualification"):
        ann.label(s.tasks.queue("ann")[0], 1)
    item = ann.qualification_next("r1")
    assert {"question", "document", "perspective", "attempt", "position"} <= set(item)
    assert "expected" not in item  # the answer comes back only with the annotator's own answer
    answers = known_answers(s)
    seen = []
    while item is not None:
        seen.append(item["pair_id"])
        res = ann.qualification_answer("r1", item["attempt"], item["position"], answers[item["pair_id"]][0])
        item = ann.qualification_next("r1")
        if item is not None:  # nothing about an answer until the attempt's last one
            assert res == {"done": False, "passed": None, "score": None, "items": None}
    assert res["done"] and res["passed"] and ann.round_states()[0]["state"] == "open" and ann.next_pairs(1)
    assert [i["correct"] for i in res["items"]] == [True] * 4 and "pair_id" not in res["items"][0]
    assert sorted(answers[p][0] for p in seen) == [0, 0, 1, 1]  # balanced classes
    assert not set(seen) & set(s.tasks.queue("ann"))  # qualification pairs are never the annotator's tasks
    # bob fails, waits for the lead, gets fresh pairs on retry
    bob = Lab(s, Actor("bob", "annotator"))
    first = []
    while (it := bob.qualification_next("r1")) is not None:
        first.append(it["pair_id"])
        bob.qualification_answer("r1", it["attempt"], it["position"], 1 - answers[it["pair_id"]][0])
    assert bob.round_states()[0]["state"] == "failed" and bob.next_pairs(1) == []
    assert "may allow another attempt" in bob.round_states()[0]["message"]
    with pytest.raises(AccessDenied):
        bob.allow_retry("r1", "bob")
    assert Lab(s, Actor("rita", "reviewer")).allow_retry("r1", "bob")
    second = bob.qualification_next("r1")
    assert second["attempt"] == 2 and second["pair_id"] not in first
    # stored, exported, shown to reviewers
    rows = export_rows(s, what="qualification")
    assert {r["annotator"] for r in rows} == {"ann", "bob"} and {"expected", "label", "correct", "attempt_passed"} <= set(rows[0])
    assert status(s, "r1", "ann")["state"] == "passed"
    health = Lab(s, Actor("rita", "reviewer")).round_health()
    assert {(q["annotator"], q["state"]) for q in health["qualification"]} >= {("ann", "passed"), ("bob", "in_progress")}
    # a second answer to an answered item changes nothing
    again = ann.qualification_answer("r1", 1, 0, 1 - answers[seen[0]][0])
    assert again["items"][0]["correct"] is True and again["score"] == {"correct": 4, "n": 4}


def test_controls_are_validated_and_changed_by_the_lead_only(tmp_path):
    s, _, _ = _round(tmp_path)
    with pytest.raises(ValueError, match="rate"):
        RoundControls(check_rate=1.5)
    with pytest.raises(ValueError, match="no task set"):
        set_controls(s, "nope", check_rate=0.1)
    lead = Lab(s, Actor("lead", "admin"))
    assert lead.set_round_controls("r1", check_floor=0.6).check_floor == 0.6
    assert get_controls(s, "r1").check_rate == 0.1  # the others kept
    with pytest.raises(AccessDenied):
        Lab(s, Actor("ann", "annotator")).set_round_controls("r1", check_floor=None)


def test_a_version_2_database_is_upgraded_without_losing_anything(tmp_path):
    from berds_core.lab.db import SCHEMA_V1, SCHEMA_V2

    path = tmp_path / "v2.db"
    con = sqlite3.connect(path)
    con.executescript("CREATE TABLE schema_version (version INTEGER NOT NULL, applied_at TEXT NOT NULL);"
                      + SCHEMA_V1 + "INSERT INTO schema_version VALUES (1, 'then');")
    for stmt in SCHEMA_V2.split(";"):
        if stmt.strip():
            con.execute(stmt)
    con.execute("INSERT INTO schema_version VALUES (2, 'then')")
    con.execute("INSERT INTO pairs (pair_id, question, document, perspective, seq) VALUES ('p0', 'q', 'd', 'p', 1)")
    con.execute("INSERT INTO task_sets VALUES ('old', 'x', 'random', '{}', 'then')")
    con.execute("INSERT INTO assignments (task_set, pair_id, annotator, position, kind) VALUES ('old', 'p0', 'ann', 0, 'calibration')")
    con.execute("INSERT INTO labels (pair_id, annotator, label, skipped, unsure, note, updated_at, time_ms) "
                "VALUES ('p0', 'ann', 1, 0, 0, 'kept', 'then', 1200)")
    con.execute("INSERT INTO reference_labels VALUES ('p0', 1, 'paper', 'then')")
    con.commit()
    con.close()
    with Store(path) as s:
        assert s.schema_version == SCHEMA_VERSION == 6
        lab = s.get_label("ann", "p0")
        assert lab.note == "kept" and lab.time_ms == 1200
        assert check_scores(s)["ann"]["accuracy"] == 1.0  # an old calibration pair counts as a check
        assert pauses(s) == [] and get_controls(s, "old") == RoundControls()
        tables = {r[0] for r in s.query("SELECT name FROM sqlite_master WHERE type = 'table'")}
        assert {"check_slots", "check_pool", "pauses", "qualification", "qualification_results"} <= tables


def test_check_classes_are_balanced_in_random_order_not_alternating():
    from berds_core.lab.checks import balanced_classes, rng_for, slot_class

    seq = [slot_class(3, "r1", "ann", k) for k in range(1, 601)]
    for b in range(0, 600, 6):
        assert sum(seq[b:b + 6]) == 3  # three of each class in every six slots
    alternations = sum(seq[i] != seq[i + 1] for i in range(599))
    assert 200 < alternations < 400  # about half, as at random (an alternation would be 599)
    assert seq != [seq[0], 1 - seq[0]] * 300
    odd = balanced_classes(rng_for(0, "x"), 5, block=5)
    assert sum(odd) in (2, 3) and len(odd) == 5


def test_a_check_is_scored_on_its_first_answer_and_nothing_is_undone_from_a_paused_queue(tmp_path):
    s, _, ref = _round(tmp_path, controls=RoundControls(check_rate=0.3, check_floor=0.7, check_min=3, seed=3))
    ann = Lab(s, Actor("ann", "annotator"))
    answers = known_answers(s)
    wrong_on_checks = lambda pid: 1 - answers[pid][0] if pid in answers else 0  # noqa: E731
    for _ in range(200):
        nxt = ann.next_pairs(1)
        if not nxt:
            break
        pid = nxt[0]
        ann.label(pid, wrong_on_checks(pid))
        if pid in answers:  # undo the wrong check answer and give the right one: the score keeps the first
            if ann.round_states()[0]["state"] != "open":
                break
            assert ann.undo() == pid
            ann.label(pid, answers[pid][0])
            assert s.get_label("ann", pid).label == answers[pid][0]
    assert ann.round_states()[0]["state"] == "paused"
    sc = check_scores(s)["ann"]
    assert sc["correct"] == 0 and sc["n"] >= 3
    last = s.last_undoable("ann")
    with pytest.raises(StoreError, match="paused; nothing was undone"):
        ann.undo()
    assert s.last_undoable("ann") == last
    with pytest.raises(StoreError, match="paused"):
        ann.label(last, 1)
    Lab(s, Actor("lead", "admin")).resume("r1", "ann")
    assert check_scores(s)["ann"]["correct"] == 0  # relabelling after a resume scores nothing either


def test_the_work_after_a_label_never_reads_every_known_answer(tmp_path, monkeypatch):
    import berds_core.lab.checks as checks_mod

    s, _, _ = _round(tmp_path, controls=RoundControls(check_rate=0.3, check_floor=0.5, seed=3))
    ann = Lab(s, Actor("ann", "annotator"))
    for _ in range(4):
        ann.next_pairs(6)  # places the checks it reaches (reads the pool: a page run, not a label)

        def boom(_store):
            raise AssertionError("known_answers read after a label")

        monkeypatch.setattr(checks_mod, "known_answers", boom)
        ann.label(ann.next_pairs(1)[0], 1)
        monkeypatch.undo()
    assert check_answers_kinds(s) <= {"check"}
    assert s.get_label("ann", s.history("ann")[-1]["pair_id"]).server_ms is not None  # the server's own time


def check_answers_kinds(s):
    from berds_core.lab.checks import check_answers

    return {a["kind"] for a in check_answers(s)}


def test_an_annotators_own_export_carries_nothing_that_marks_a_check(tmp_path):
    s, _, _ = _round(tmp_path, controls=RoundControls(check_rate=0.3, seed=3))
    ann = Lab(s, Actor("ann", "annotator"))
    for _ in range(20):
        ann.label(ann.next_pairs(1)[0], 1)
    rows = ann.export_rows("labels", include_skips=True)
    assert len(rows) == 20 and any(r["pair_id"].startswith("g") for r in [{"pair_id": h["pair_id"]}
                                                                            for h in s.history("ann")])
    banned = {"id", "pair_id", "question_id", "passage_id", "subset", "retriever", "source", "side", "kind"}
    assert not banned & set(rows[0])
    assert all(not r["ref"].startswith(("g", "p")) or len(r["ref"]) == 16 for r in rows)
    assert [r["updated_at"] for r in rows] == sorted(r["updated_at"] for r in rows)  # the order they were made
    assert ann.export_rows("labels")[0]["ref"] == rows[0]["ref"]  # stable for them


def test_stratified_queues_shuffle_strata_within_blocks_and_the_pool_is_judged(tmp_path):
    from berds_core.lab.tasks import sample_pairs

    pairs = [Pair(f"p{i}", "q?", f"d{i}", "persp", subset=f"s{i % 4}") for i in range(200)]
    got = sample_pairs(pairs, 80, "stratified", seed=5)
    blocks = [got[i:i + 4] for i in range(0, 80, 4)]
    assert all(sorted(p.subset for p in b) == ["s0", "s1", "s2", "s3"] for b in blocks)
    assert len({tuple(p.subset for p in b) for b in blocks}) > 5  # not one cycle repeated

    class Judge:
        name = "j"

        def predict(self, items):
            return [0.3] * len(items), [0] * len(items)

    s = Store(tmp_path / "j.db")
    tasks, pool = _pairs(30), _pairs(30, "g")
    spec = TaskSetSpec(name="r1", source="test", n=30, strategy="random", annotators=("ann",), seed=1,
                       controls=RoundControls(check_rate=0.2, seed=3))
    build_task_set(s, tasks + pool, spec, judge=Judge(), reference={p.pair_id: i % 2 for i, p in enumerate(pool)})
    ann = Lab(s, Actor("ann", "annotator"))
    kinds = {}
    for _ in range(40):
        nxt = ann.next_pairs(1)
        if not nxt:
            break
        ann.label(nxt[0], 0)
        kinds[nxt[0]] = bool(ann.judge_answers(nxt[0]))
    assert any(p.startswith("g") for p in kinds) and all(kinds.values())  # the same reveal for a check


def test_the_chance_of_passing_a_qualification_by_guessing_is_reported(tmp_path):
    assert RoundControls(qualification_n=5).chance_pass == pytest.approx(6 / 32)  # 4 or 5 of 5 at 80%
    assert RoundControls(qualification_n=10).chance_pass == pytest.approx(56 / 1024)  # 8, 9 or 10 of 10
    assert RoundControls().chance_pass is None
    _, res, _ = _round(tmp_path, controls=RoundControls(qualification_n=5, seed=2))
    assert any("19% of annotators who guess" in w for w in res["warnings"])


def test_the_cli_progress_and_the_annotators_page_agree_with_checks_and_a_pause(tmp_path, capsys):
    """issue 64: ``berds annotations progress`` answers from the round view the page reads: the check slots still
    to come in the total, and no next pair in a paused queue (it used to count the plain queue and name one)."""
    import json

    from berds_core.cli import main

    s, _, ref = _round(tmp_path, controls=RoundControls(check_rate=0.2, seed=3))
    lab = Lab(s, Actor("ann", "annotator"))

    def cli():
        assert main(["annotations", "progress", "--db", str(s.path), "--annotator", "ann", "--json"]) == 0
        return json.loads(capsys.readouterr().out)

    for _ in range(12):  # label through the server path: checks are placed as the annotator reaches them
        lab.label(lab.next_pairs(6)[0], 1)
    page_next = lab.next_pairs(1)[0]  # what the page shows next (checks within reach placed)
    page = lab.progress()
    got = cli()
    assert {k: got[k] for k in page} == page
    assert got["total"] > len(s.tasks.queue("ann"))  # the check slots still to come counted, as the page counts them
    assert got["states"] == {"r1": "open"} and got["next"] == page_next
    assert got["states"] == {x["task_set"]: x["state"] for x in lab.round_states()}  # the page's gate, the same
    Lab(s, Actor("lead", "admin")).pause("r1", "ann")
    got = cli()
    assert got["states"] == {"r1": "paused"} and got["next"] is None and lab.next_pairs(1) == []
    assert got["states"] == {x["task_set"]: x["state"] for x in lab.round_states()}
    assert {k: got[k] for k in page} == Lab(s, Actor("ann", "annotator")).progress()
    assert main(["annotations", "progress", "--db", str(s.path), "--annotator", "ann", "--task-set", "nope"]) == 2
    assert "no task set named 'nope'" in capsys.readouterr().err
