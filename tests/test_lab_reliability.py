"""Annotator reliability (MACE, berds_core.lab.mace; Dawid-Skene via crowd-kit), the judge as a second opinion, round health."""
import numpy as np
import pytest

from berds_core.lab.access import Actor, Lab
from berds_core.lab.checks import check_scores
from berds_core.lab.controls import RoundControls
from berds_core.lab.exports import columns_for, export_rows, to_tsv
from berds_core.lab.health import round_health
from berds_core.lab.judge_review import judge_failures, length_bin, review_queue
from berds_core.lab.reliability import estimate, label_sets, majority, model_labels, reliability_report
from berds_core.lab.simulate import (SimAnnotator, accuracy_against, parse_simulation, simulate_round,
                                     true_order_agrees)
from berds_core.lab.store import Pair, Store
from berds_core.lab.tasks import TaskSetSpec, build_task_set, read_pairs_tsv


def _simulated_labels(competence: dict, n_items=200, seed=0, spam_const=None, positive=0.3):
    """MACE's generative story (Hovy et al. 2013, section 2): know the truth with prob. theta, else a label
    drawn from one's own strategy (uniform here; ``spam_const`` names an annotator who always says 0)."""
    rng = np.random.default_rng(seed)
    truth = (rng.random(n_items) < positive).astype(int)
    rows = []
    for name, theta in competence.items():
        for i in range(n_items):
            if name == spam_const:
                lab = 0
            elif rng.random() < theta:
                lab = int(truth[i])
            else:
                lab = int(rng.random() < 0.5)
            rows.append((f"i{i}", name, lab))
    return rows, {f"i{i}": int(t) for i, t in enumerate(truth)}


def test_mace_on_simulated_annotators_as_in_the_paper_puts_spammers_near_zero():
    # Hovy et al. (2013): annotators simulated by MACE's own story, some of them spammers, balanced classes;
    # MACE's competence of a spammer goes to about 0, the others follow their competence, and MACE's labels
    # beat the majority vote.
    rows, truth = _simulated_labels({"a": 0.9, "b": 0.7, "c": 0.5, "rand": 0.0, "const": 0.0}, spam_const="const",
                                    positive=0.5, n_items=300)
    est = estimate(rows, "mace")
    c = est.competence
    assert c["rand"] < 0.1 and c["const"] < 0.1  # at random or always the same: both spammers near 0
    assert c["a"] > c["b"] > c["c"] > 0.3
    mace_acc = accuracy_against(truth, est.labels)["accuracy"]
    mv_acc = accuracy_against(truth, {p: v["label"] for p, v in majority(rows).items()})["accuracy"]
    assert mace_acc > mv_acc  # two of five spamming: MACE's labels beat the majority vote


def test_dawid_skene_on_imbalanced_classes_with_two_kinds_of_spammer():
    # a third of the pairs positive (as in BERDS-like rounds): Dawid-Skene's J stays at 0 for both spammers
    rows, truth = _simulated_labels({"a": 0.9, "b": 0.75, "c": 0.6, "rand": 0.0, "const": 0.0}, spam_const="const")
    mv_acc = accuracy_against(truth, {p: v["label"] for p, v in majority(rows).items()})["accuracy"]
    ds = estimate(rows, "dawid-skene")
    assert ds.competence["rand"] < 0.15 and ds.competence["const"] == pytest.approx(0.0, abs=0.02)
    assert ds.competence["c"] < min(ds.competence["a"], ds.competence["b"])
    assert accuracy_against(truth, ds.labels)["accuracy"] > mv_acc


@pytest.mark.parametrize("method", ["mace", "dawid-skene"])
def test_the_estimate_does_not_depend_on_how_annotators_are_named(method):
    # crowd-kit 1.4.2 matches counts sorted by name to parameters in order of appearance; the coded
    # frame (Dawid-Skene) and integer codes (MACE) make the estimate independent of the names
    rows, _ = _simulated_labels({"zed": 0.9, "amy": 0.7, "rand": 0.0, "bob": 0.8}, n_items=200, seed=4,
                                positive=0.5)
    renamed = [(p, {"zed": "a1", "amy": "b2", "rand": "c3", "bob": "d4"}[a], l) for p, a, l in rows]
    one = estimate(rows, method).competence
    two = estimate(renamed, method).competence
    assert one["zed"] == pytest.approx(two["a1"], abs=1e-3) and one["rand"] == pytest.approx(two["c3"], abs=1e-3)
    assert one["rand"] < 0.15 < one["amy"] < one["zed"]


def test_estimate_needs_redundant_labels_and_is_memoised():
    rows = [("p1", "a", 1), ("p2", "b", 0)]
    est = estimate(rows)
    assert est.competence == {"a": None, "b": None} and est.warnings
    rows, _ = _simulated_labels({"a": 0.9, "b": 0.8, "c": 0.1}, n_items=30)
    assert estimate(rows) is estimate(list(reversed(rows)))  # the same labels: computed once
    with pytest.raises(ValueError, match="unknown method"):
        estimate(rows, "glad")


def _round_with(tmp_path, spec_text, *, n=120, redundancy=3, controls=None, seed=0):
    """A round over synthetic pairs with known truth, labelled by simulated annotators."""
    s = Store(tmp_path / "sim.db")
    rng = np.random.default_rng(seed)
    pairs = [Pair(f"p{i}", f"Question {i // 6}?", f"Passage {i}", "A perspective " + "word " * (i % 30),
                  question_id=f"q{i // 6}", source=("web" if i % 2 else "corpus")) for i in range(n + 60)]
    truth = {p.pair_id: int(rng.random() < 0.35) for p in pairs}
    names = [x.split("=")[0] for x in spec_text.split(",")]
    spec = TaskSetSpec(name="sim", source="test", n=n, strategy="random", annotators=tuple(names), overlap=1.0,
                       per_shared=redundancy, seed=seed,
                       controls=controls or RoundControls(check_rate=0.1, check_floor=0.7, check_min=4, seed=seed))
    build_task_set(s, pairs, spec, reference=truth)
    people = parse_simulation(spec_text, names)
    res = simulate_round(s, people, truth, task_set="sim", seed=seed)
    return s, people, truth, res


def test_reliability_singles_out_the_spammer_and_the_gamer_that_checks_alone_miss(tmp_path):
    s, people, truth, res = _round_with(tmp_path, "good=0.95,fair=0.75,spam=spammer,gamer=gamer,ok=0.85", n=150,
                                        seed=1)  # one round of a chance process: the spammer paused (9 in 10)
    rep = reliability_report(s, task_set="sim")
    a = rep["annotators"]
    assert a["gamer"]["checks"]["accuracy"] == 1.0  # every check right: the checks alone trust them ...
    assert not a["gamer"]["paused_in"]
    assert a["gamer"]["competence"] < 0.3  # ... the estimate across redundant labels does not
    assert a["spam"]["competence"] < 0.3 and a["spam"]["paused_in"] == ["sim"]  # the checks paused the spammer
    assert set(rep["order"][-2:]) == {"spam", "gamer"}
    assert true_order_agrees({n: p.quality for n, p in people.items()},
                             {n: a[n]["competence"] for n in people})
    # time per label: the fast clickers are under the 2 s floor most of the time
    assert a["spam"]["time"]["under_floor_share"] > 0.6 and a["good"]["time"]["under_floor_share"] < 0.1
    assert a["good"]["time"]["median_ms"] > 5000
    # agreement with the others and its drift over the round
    assert a["good"]["agreement_with_others"]["agreement"] > a["gamer"]["agreement_with_others"]["agreement"]
    assert a["good"]["drift"]["series"] and a["good"]["drift"]["window"] == 20
    # the three label sets: MACE closer to the truth than majority vote
    sets = label_sets(s, task_set="sim")
    task_truth = {p: truth[p] for p in sets["majority"]}
    mv = accuracy_against(task_truth, {p: v["label"] for p, v in sets["majority"].items()})
    for model in ("mace", "dawid-skene"):
        got = accuracy_against(task_truth, {p: v["label"] for p, v in sets[model].items()})
        assert got["accuracy"] > mv["accuracy"], model
    assert set(a["gamer"]["competence_by_model"]) == {"mace", "dawid-skene"}
    assert a["gamer"]["competence_by_model"]["mace"] < 0.3


def test_model_labels_leave_out_each_annotators_own_checks(tmp_path):
    s, _, _, _ = _round_with(tmp_path, "a=0.9,b=0.9,c=gamer", n=60)
    checks = {(x["pair_id"], x["annotator"]) for x in s.tasks.assignments("sim") if x["kind"] == "check"}
    assert checks
    got = {(p, a) for p, a, _ in model_labels(s)}
    assert not got & checks and len(got) == len(s.labels(include_skips=False)) - len(checks)


def test_label_set_exports_sit_beside_adjudication(tmp_path):
    s, _, _, _ = _round_with(tmp_path, "a=0.9,b=0.8,c=0.2", n=40)
    mace = export_rows(s, what="mace")
    mv = export_rows(s, what="majority")
    ds = export_rows(s, what="dawid-skene")
    assert {r["annotator"] for r in mace} == {"MACE"} and {r["annotator"] for r in mv} == {"majority vote"}
    assert {r["annotator"] for r in ds} == {"Dawid-Skene"} and len(ds) == len(mace) == len(mv)
    assert all(0.5 <= r["confidence"] <= 1 for r in mace)
    cols = columns_for(mace)
    assert cols[-2:] == ["confidence", "n_labels"]
    text = to_tsv(mace, cols)
    path = tmp_path / "mace.tsv"
    path.write_text(text, encoding="utf-8")
    assert len(read_pairs_tsv(path)) == len(mace)  # still a human-pairs TSV
    with pytest.raises(ValueError):
        export_rows(s, what="nonsense")


def test_review_queue_weights_humans_by_reliability_and_judge_failures_break_down(tmp_path):
    s = Store(tmp_path / "j.db")
    pairs = [Pair(f"p{i}", f"Q{i % 3}?", f"D{i}", "short view" if i % 2 else "a much longer perspective " * 3,
                  question_id=f"q{i % 3}", source="web" if i < 20 else "corpus") for i in range(40)]
    s.add_pairs(pairs)
    rng = np.random.default_rng(1)
    truth = {p.pair_id: int(i % 3 == 0) for i, p in enumerate(pairs)}
    for p in pairs:  # two careful annotators and one who answers at random
        s.label("careful1", p.pair_id, truth[p.pair_id])
        s.label("careful2", p.pair_id, truth[p.pair_id] if rng.random() < 0.9 else 1 - truth[p.pair_id])
        s.label("random", p.pair_id, int(rng.random() < 0.5))
    # the judge: right on corpus passages, wrong on web passages
    preds = {}
    for p in pairs:
        said = truth[p.pair_id] if p.source == "corpus" else 1 - truth[p.pair_id]
        preds[p.pair_id] = (0.9 if said else 0.1, said)
    s.set_judge_preds("j", preds)
    q = review_queue(s, "j")
    top = q[0]
    assert top["priority"] == max(r["priority"] for r in q if r["priority"] is not None)
    assert top["weighted_majority"] is not None and abs(top["judge_prob"] - top["weighted_majority"]) == top["priority"]
    # where the careful two agree and the random one dissents, the weighted majority follows the careful two
    one = next(r for r in q if r["labels"]["careful1"] == r["labels"]["careful2"] != r["labels"]["random"])
    assert abs(one["weighted_majority"] - one["labels"]["careful1"]) < 0.2
    f = judge_failures(s, "j")
    assert f["per_source"]["web"]["error_rate"] > 0.9 and f["per_source"]["corpus"]["error_rate"] < 0.1
    assert list(f["per_source"])[0] == "web"  # worst first
    assert set(f["per_perspective_length"]) <= {"1-8 words", "9-15 words", "16-25 words", "26+ words"}
    assert all("text" in b for b in f["per_question"].values())
    assert length_bin("one two three") == "1-8 words" and length_bin("w " * 30) == "26+ words"
    # the export holds the judge's probability beside each label (reviewers / admins)
    rows = Lab(s, Actor("boss", "admin")).export_rows("labels", judge="j")
    assert {"judge", "judge_prob", "judge_label"} <= set(rows[0]) and rows[0]["judge"] == "j"
    assert columns_for(rows)[-3:] == ["judge", "judge_prob", "judge_label"]
    mine = Lab(s, Actor("random", "annotator")).export_rows("labels", judge="j")
    assert "judge_prob" not in mine[0]  # an annotator's own export never carries the judge


def test_round_health_reports_pace_queues_checks_pauses_and_backlog(tmp_path):
    s, people, _, res = _round_with(tmp_path, "good=0.95,spam=spammer,ok=0.8", n=90, seed=1)  # a round where the spammer was paused
    h = round_health(s, "sim")
    assert h["pace"]["hours"] and set(h["pace"]["per_annotator"]) == set(people)
    assert h["labels"] == sum(v["labels"] for v in res["annotators"].values())
    assert h["queues"]["spam"]["remaining"] > 0 and h["queues"]["spam"]["sets"] == {"sim": "paused"}
    assert h["queues"]["good"]["remaining"] == 0
    assert h["checks"]["spam"]["failed"] >= 1 and h["checks_failed"] >= h["checks"]["spam"]["failed"]
    assert [p["annotator"] for p in h["pauses"]] == ["spam"]
    assert h["adjudication"]["waiting"] == len(h["adjudication"]["pairs"]) > 0
    assert h["queue_left"] == sum(q["remaining"] for q in h["queues"].values())


def test_simulation_spec_is_checked():
    with pytest.raises(ValueError, match="not one of"):
        parse_simulation("zed=0.5", ["a"])
    with pytest.raises(ValueError, match="between 0 and 1"):
        parse_simulation("a=1.5", ["a"])
    got = parse_simulation("a=spammer, b=0.7", ["a", "b"])
    assert got["a"] == SimAnnotator("a", 0.0, "same", 1.2, kind="spammer") and got["b"].competence == 0.7


def test_the_strategic_gamer_finds_no_channel_and_its_time_is_the_servers(tmp_path):
    s, people, _, res = _round_with(tmp_path, "good=0.95,strat=strategic,ok=0.8", n=120, seed=0)
    st = res["annotators"]["strat"]
    flagged = st["attack"]["flagged"]  # (the placement timer's flags follow this machine's noise: not asserted)
    assert not {"order", "export", "reveal"} & set(flagged)  # one stratum: no block to break
    assert st["attack"]["served"]["check"] >= 3 and st["attack"]["served"]["task"] >= 30
    assert st["paused"] and not res["annotators"]["good"]["paused"]  # the checks caught it
    assert check_scores(s)["strat"]["accuracy"] < 0.7
    t = reliability_report(s, task_set="sim")["annotators"]["strat"]["time"]
    assert t["browser_median_ms"] == 6500  # what its browser claimed ...
    assert t["median_ms"] < 3000 and t["under_floor_share"] > 0.5  # ... and what the server measured
