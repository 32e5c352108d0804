"""The lab teaches the judge (issue 65): ``berds agreement --fit`` refits the embedded judge's map, threshold and
band on a round's labels, out of fold; ``--judge lab:NAME`` reads what it wrote, on every face."""
import html
import json
import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from berds_core.judges import JudgeError, get_judge, judge_passages, parse_spec
from berds_core.judges.one_side import picked
from berds_core.lab.judge_fit import (FitRefused, RoundData, check_enough, cross_validate, decisions, fit_map,
                                      fit_report, judge_file, mapped, question_folds, weighted_block)

from test_judges_embedded import PERSP, QUESTION
from test_one_side_judge import PASSAGES

ROOT = Path(__file__).resolve().parents[1]


def synthetic_round(seed=0, questions=12, per_q=30, shift=1.5) -> RoundData:
    """A base judge whose probabilities are miscalibrated for this lab: the truth is P(y) = sigmoid(2 logit p + shift)."""
    rng = np.random.default_rng(seed)
    n = questions * per_q
    p = rng.beta(1.2, 4.0, n)
    truth = 1 / (1 + np.exp(-(2 * np.log(p / (1 - p)) + shift)))
    y = (rng.random(n) < truth).astype(int)
    q = np.repeat([f"q{i:02d}" for i in range(questions)], per_q)
    own = np.ones(n, bool)
    own[1::7] = False  # some pairs are a group's less probable member
    return RoundData([f"p{i}" for i in range(n)], q, y, p, own, (own & (p >= 0.5)).astype(int))


def test_a_round_too_small_is_refused_with_its_reason():
    with pytest.raises(FitRefused, match="9 question\\(s\\) with labels, a fit needs at least 10"):
        check_enough(9, 100, "round")
    with pytest.raises(FitRefused, match="19 positive label\\(s\\), a fit needs at least 20"):
        check_enough(12, 19, "round")
    check_enough(10, 20, "round")


def test_the_refit_learns_the_labs_threshold_out_of_fold():
    data = synthetic_round()
    rep = fit_report(data, fold_seeds=3, n_boot=200)
    assert rep["after"]["kappa"] > rep["before"]["kappa"] + 0.1  # the base threshold (0.5) is far off for this lab
    assert rep["beats_base"] and rep["after_median"]["kappa"] > rep["before"]["kappa"]
    lo, hi = rep["after"]["ci95"]["kappa"]
    assert lo < rep["after"]["kappa"] < hi
    assert set(rep["kinds_chosen"]) <= {"none", "platt", "isotonic"}
    assert rep["after"]["human_positive_rate"] == pytest.approx(data.y.mean())


def test_a_held_out_folds_labels_never_reach_its_own_decisions():
    """Out of fold by construction: flipping every label of one fold's questions leaves that fold's decisions as
    they were (and changes the others', which were fitted on them)."""
    data = synthetic_round(seed=3)
    folds = question_folds(data.questions, 0)
    a = cross_validate(data, 0)
    flipped = RoundData(data.pair_ids, data.questions, np.where(folds == 2, 1 - data.y, data.y), data.p, data.own,
                        data.base_label)
    b = cross_validate(flipped, 0)
    np.testing.assert_array_equal(a["probs"][folds == 2], b["probs"][folds == 2])
    np.testing.assert_array_equal(a["labels"][folds == 2], b["labels"][folds == 2])
    assert not np.array_equal(a["probs"][folds != 2], b["probs"][folds != 2])


def test_the_decision_keeps_the_groups_pick_and_a_gated_passage_at_zero():
    fit = {"calibration": {"kind": "platt", "a": 1.0, "b": 3.0}, "threshold": 0.3, "band": [0.2, 0.4]}
    p = np.array([0.0, 0.2, 0.2, 0.05])
    own = np.array([True, True, False, True])
    q, lab, ver = decisions(fit, p, own)
    assert q[0] == 0 and not lab[0]  # off the topic: 0 whatever the map
    assert q[1] == q[2] > 0.3 and lab[1] and not lab[2]  # the less probable member never says supports
    assert list(ver[:3]) == [-1, 1, -1]
    assert mapped({"kind": "none"}, p).tolist() == p.tolist()


def test_the_judge_file_is_the_same_bytes_twice_and_names_its_round():
    data = synthetic_round(seed=1)
    base = SimpleNamespace(name="embedded-cos-v5-t0.2", meta={"version": "v5"})
    files = []
    for _ in range(2):
        rep = fit_report(data, fold_seeds=2, n_boot=100)
        fit = fit_map(data.p, data.y, data.own, data.questions, question_folds(data.questions, 0))
        files.append(judge_file("lab1", "embedded", base, {"name": "r1", "questions": 12}, fit, rep))
    assert files[0] == files[1]
    doc = json.loads(files[0])
    assert doc["format"] == "berds-lab-judge/1" and doc["base"]["weights"] == "embedded_v5.npz"
    assert doc["round"]["name"] == "r1" and "after" in doc["report"] and "threshold" in doc["map"]


def test_weights_of_one_are_the_unweighted_figures_and_weights_move_them():
    data = synthetic_round(seed=2)
    d = (data.p >= 0.3).astype(int)
    w1 = weighted_block(data.y, d, data.questions, np.ones(len(d)), n_boot=50)
    from berds_core.lab.agreement import binary_scores

    plain = binary_scores(data.y, d)
    assert w1["kappa"] == pytest.approx(plain["kappa"]) and w1["f1"] == pytest.approx(plain["f1"])
    w = np.where(data.p >= 0.3, 0.5, 2.0)  # pairs the judge calls supports were over-sampled
    assert weighted_block(data.y, d, data.questions, w, n_boot=50)["positive_rate"] < plain["positive_rate"]


def test_lab_specs_are_names_and_a_missing_or_wrong_file_is_one_line(tmp_path, monkeypatch):
    monkeypatch.setenv("BERDS_LAB_JUDGES", str(tmp_path))
    assert parse_spec("lab:my-lab") == ("lab", {"file": "my-lab"})
    for bad in ("lab:", "lab:../x", "lab:a/b"):
        with pytest.raises(ValueError):
            parse_spec(bad)
    with pytest.raises(JudgeError, match="no such file"):
        get_judge("lab:nope")
    (tmp_path / "broken.json").write_text(json.dumps({"format": "berds-lab-judge/1", "name": "broken", "base": {}}))
    with pytest.raises(JudgeError, match=r"broken.json: field 'map' missing or wrong"):
        get_judge("lab:broken")
    from berds_core.judges import app_judge_spec

    with pytest.raises(ValueError, match="named, not a file"):
        app_judge_spec(f"lab:{tmp_path / 'broken.json'}")


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("BERDS_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("BERDS_LAB_JUDGES", str(tmp_path / "judges"))
    return tmp_path


def test_a_lab_judge_maps_the_base_judges_probabilities_and_keeps_its_pick(cache):
    (cache / "judges").mkdir()
    doc = {"format": "berds-lab-judge/1", "name": "hand", "base": {"spec": "embedded", "name": "x", "weights":
           "embedded_v5.npz", "version": "v5"}, "round": {"name": "r", "questions": 10},
           "map": {"kind": "platt", "calibration": {"kind": "platt", "a": 1.2, "b": 1.0}, "threshold": 0.35,
                   "band": [0.3, 0.4]}, "report": {}}
    (cache / "judges" / "hand.json").write_text(json.dumps(doc))
    base, lab = get_judge("embedded"), get_judge("lab:hand")
    assert lab.name.startswith("lab-hand-") and lab.threshold == 0.35 and lab.band == (0.3, 0.4)
    assert lab.group_band == lab.band and lab.cache_key != base.cache_key
    P0, _ = judge_passages(base, PASSAGES, PERSP, QUESTION)
    P, L = judge_passages(lab, PASSAGES, PERSP, QUESTION)
    np.testing.assert_allclose(P, mapped(doc["map"]["calibration"], P0), rtol=1e-9)
    np.testing.assert_array_equal(L, picked(P0, [(0, 1)]) & (P >= 0.35))
    assert not (L[:, 0] & L[:, 1]).any() and P[1].sum() == 0  # one side; the recipe is off the topic
    assert "refitted on r" in lab.status()["detail"]


def berds(*argv, env):
    return subprocess.run([sys.executable, "-m", "berds_core", *map(str, argv)], capture_output=True, text=True,
                          cwd=ROOT, env=env)


@pytest.mark.slow
def test_agreement_fit_writes_a_judge_every_face_reads_and_refuses_the_demo_round(cache):
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    small, big = cache / "small.db", cache / "big.db"
    # the demo round a lab starts with: 40 pairs, too few positives to fit on honestly
    assert berds("annotations", "demo", "--db", small, "--annotators", "a", "--json", env=env).returncode == 0
    r = berds("agreement", "--db", small, "--fit", "demo", "--json", env=env)
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr.strip().count("\n") == 0 and "a fit needs at least 20" in r.stderr
    assert not (cache / "judges").exists()
    # a round of 400 demo pairs (14 questions, their gold labels as reference labels)
    assert berds("annotations", "demo", "--db", big, "--annotators", "a", "--n", 400, "--json", env=env).returncode == 0
    r = berds("agreement", "--db", big, "--fit", "demo-lab", "--keep-anyway", "--fold-seeds", 2, "--n-boot", 200,
              "--json", "--quiet", env=env)
    assert r.returncode == 0, r.stderr
    rep = json.loads(r.stdout)
    assert rep["round"]["questions"] == 14 and rep["round"]["labels"] == "reference"
    for part in ("before", "after"):
        assert rep[part]["ci95"]["kappa"][0] is not None and rep[part]["human_positive_rate"] > 0
    path = Path(rep["written"])
    assert path == cache / "judges" / "demo-lab.json" and rep["judge_spec"] == "lab:demo-lab"
    first = path.read_bytes()
    r = berds("agreement", "--db", big, "--fit", "demo-lab", "--keep-anyway", "--fold-seeds", 2, "--n-boot", 200,
              "--json", "--quiet", env=env)
    assert r.returncode == 0 and path.read_bytes() == first  # reproducible: the same file twice
    # the CLI's judge reads it: a judged run names it
    data = cache / "data"
    assert berds("import", "demo", "--out", data, "--json", env=env).returncode == 0
    run, judged = cache / "run.jsonl", cache / "judged.jsonl"
    assert berds("retrieve", "--questions", data / "questions.jsonl", "--corpus", data / "corpus.jsonl", "--k", 5,
                 "--out", run, "--json", "--quiet", env=env).returncode == 0
    r = berds("judge", "--run", run, "--judge", "lab:demo-lab", "--out", judged, "--json", "--quiet", env=env)
    assert r.returncode == 0, r.stderr
    name = json.loads(r.stdout)["judge"]
    assert name.startswith("lab-demo-lab-")
    line = json.loads(judged.read_text().splitlines()[0])
    assert all(f"{name}-preds" in c for c in line["ctxs"])
    # the agreement report runs it on the labelled pairs and names it
    r = berds("agreement", "--db", big, "--judge", "lab:demo-lab", "--n-boot", 50, "--json", "--quiet", env=env)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["judge"] == name
    r = berds("judge", "--run", run, "--judge", "lab:missing", "--out", judged, "--json", env=env)
    assert r.returncode == 2 and "no such file" in r.stderr and r.stderr.strip().count("\n") == 0


def test_the_active_strategy_interleaves_unsure_pairs_with_random_ones_and_records_weights():
    from berds_core.lab.records import Pair
    from berds_core.lab.tasks import sample_pairs

    pairs = [Pair(f"p{i:02d}", "Q?", f"d{i}", "P") for i in range(40)]
    unsure = {f"p{i:02d}" for i in range(8)}  # 8 unsure of 40
    w: dict = {}
    got = sample_pairs(pairs, 10, "active", unsure=unsure, weights=w, seed=1)
    ids = [p.pair_id for p in got]
    assert len(ids) == 10 == len(set(ids))
    assert [i in unsure for i in ids] == [True, False] * 5  # an unsure pair, then a random one
    # inverse inclusion probabilities: 8 / 5 for the unsure stratum, 32 / 5 for the rest, scaled to mean 1
    ratio = w[ids[1]] / w[ids[0]]
    assert ratio == pytest.approx(32 / 8) and np.mean(list(w.values())) == pytest.approx(1.0)
    # fewer unsure pairs than half: all of them, the rest at random; the same seed, the same queue
    w2: dict = {}
    got2 = sample_pairs(pairs, 20, "active", unsure={"p00", "p01"}, weights=w2, seed=1)
    assert sum(p.pair_id in {"p00", "p01"} for p in got2) == 2 and len(got2) == 20
    assert [p.pair_id for p in sample_pairs(pairs, 10, "active", unsure=unsure, seed=1)] == ids
    with pytest.raises(ValueError, match="unsure"):
        sample_pairs(pairs, 10, "active")


def test_the_learning_curve_is_out_of_fold_and_says_where_too_few_labels():
    from berds_core.lab.judge_fit import learning_curve

    data = synthetic_round(seed=4, questions=12, per_q=40)
    order = np.random.default_rng(0).permutation(len(data.y))
    curve = learning_curve(data, order, sizes=(20, 100, 200))
    assert [c["labels"] for c in curve] == [20, 100, 200, 480]
    assert curve[0]["kappa"] is None  # 20 labels: too few positives to fit on
    assert all(c["kappa"] is not None for c in curve[1:])
    # the last point is the whole round's out-of-fold kappa (fold seed 0, the same rows in another order)
    full = cross_validate(data, 0)
    from berds_core.lab.agreement import binary_scores

    assert curve[-1]["kappa"] == pytest.approx(binary_scores(data.y[order], full["labels"][order])["kappa"])


def test_the_f1_threshold_is_the_one_every_candidate_gives_one_at_a_time():
    """best_f1_threshold counts every candidate at once (a round of 20,000 pairs); it must pick what scoring each
    candidate threshold alone picks, ties to the highest."""
    from berds_core.judges.calibration import best_f1_threshold, f1_at

    rng = np.random.default_rng(0)
    for i in range(200):
        n = int(rng.integers(1, 200))
        p = rng.random(n) if i % 3 else np.round(rng.random(n), 2)
        if i % 5 == 0:
            p[: n // 2] = 0.0
        y = rng.random(n) < rng.random()
        cands = np.unique(np.round(p, 4))
        scores = [f1_at(y, p, t) for t in cands]
        want = max(t for t, s in zip(cands, scores) if s == max(scores))
        assert best_f1_threshold(y, p) == want


def _small_round(path, questions=12):
    """A round a lab could label: each question's two opposite perspectives against four passages, the reference
    labels a person would give (the passage that argues one side supports that side only)."""
    from berds_core.lab.store import Pair, Store

    pairs, ref = [], {}
    for i in range(questions):
        q = f"Should town {i} build more bike lanes?"
        persp = [f"Town {i} should build more bike lanes.", f"Town {i} should not build more bike lanes."]
        docs = [f"Bike lanes in town {i} cut traffic deaths and let children ride to school safely; build more.",
                f"New bike lanes in town {i} took parking from shops and sit empty in winter; stop building them.",
                f"Town {i} held its yearly cheese festival in the market square last Saturday.",
                f"The council of town {i} debated cycling, parking and the budget for roads."]
        for d, doc in enumerate(docs):
            for j, pp in enumerate(persp):
                pid = f"q{i}-d{d}-p{j}"
                pairs.append(Pair(pid, q, doc, pp, question_id=f"q{i}", passage_id=f"q{i}-d{d}",
                                  perspective_index=j))
                ref[pid] = int(d == j)
    with Store(path) as s:
        s.add_pairs(pairs)
        s.set_reference_labels(ref, source="test")
    return ref


def test_the_agreement_page_lets_a_lead_teach_the_judge_and_the_sidebar_offers_it(annotation_db_path, tmp_path,
                                                                                monkeypatch):
    from streamlit.testing.v1 import AppTest

    monkeypatch.setenv("BERDS_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("BERDS_LAB_JUDGES", str(tmp_path / "judges"))
    _small_round(annotation_db_path, questions=9)
    at = AppTest.from_file(str(ROOT / "pages" / "agreement.py"), default_timeout=300)
    at.query_params["tab"] = "Teach the judge"
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    at.text_input(key="agr_fit_name").input("town")
    at.button[-1].click().run()  # the form's submit: 9 questions is too few, one line says so
    assert any("9 question(s) with labels, a fit needs at least 10" in html.unescape(e.value) for e in at.error)
    assert not (tmp_path / "judges").exists()
    _small_round(annotation_db_path, questions=12)
    at.checkbox(key="agr_fit_keep").check()
    at.button[-1].click().run()
    assert not at.exception, [e.value for e in at.exception]
    table = next(d.value for d in at.dataframe if "kappa [95%]" in d.value.columns)
    assert list(table["judge"])[:2] == ["base judge (as shipped)", "refitted, out of fold (fold seed 0)"]
    assert (tmp_path / "judges" / "town.json").exists()
    assert any("town.json" in html.unescape(s.value) for s in list(at.success) + list(at.warning))
    from berds_core.files.lab_folder import lab_judge_names

    assert lab_judge_names() == ["town"]  # what the sidebar's judge picker lists as lab:town
    from studio_ui.engines import cached_judge

    assert cached_judge("lab:town").name.startswith("lab-town-")  # what every page builds from the sidebar's spec


def test_an_active_task_set_records_its_weights_and_the_agreement_counts_them(tmp_path, monkeypatch):
    """``annotations tasks --strategy active``: the judge's unsure pairs first, interleaved with random ones; the
    weights are recorded with the set, and the agreement report gives the weighted figures beside the plain."""
    from berds_core.lab.agreement import agreement_report
    from berds_core.lab.sample_weights import sample_weights
    from berds_core.lab.store import Store

    monkeypatch.setenv("BERDS_CACHE", str(tmp_path / "cache"))
    ref = _small_round(tmp_path / "src.db", questions=12)
    with Store(tmp_path / "src.db") as s:
        rows = ["question\tid\tdocument\tperspective"] + [f"{p.question}\t{p.pair_id}\t{p.document}\t{p.perspective}"
                                                          for p in s.pairs()]
    tsv = tmp_path / "pairs.tsv"
    tsv.write_text("\n".join(rows) + "\n")
    db = tmp_path / "lab.db"
    r = berds("annotations", "tasks", "--db", db, "--pairs", tsv, "--n", 30, "--strategy", "active", "--judge",
              "embedded", "--annotators", "ann", "--name", "act", "--json", "--quiet", env={**os.environ})
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["pairs"] == 30 and out["active"]["unsure_picked"] == min(15, out["active"]["unsure_candidates"])
    with Store(db) as s:
        w = sample_weights(s, "act")
        assert len(w) == 30 and np.mean(list(w.values())) == pytest.approx(1.0)
        queue = s.checks.task_pairs("act", "ann")
        for pid in queue:
            s.label("ann", pid, ref[pid])
        rep = agreement_report(s, out["judge"], n_boot=100)
        assert rep["weighted"]["n"] == 30 and rep["weighted"]["weighted"] is True
        assert rep["weighted"]["kappa"] is not None
        # every weight 1 would give the plain figures; these weights are not all 1
        assert len(set(round(v, 6) for v in w.values())) == 2


def test_a_fold_with_one_class_falls_back_to_the_maps_that_can_be_fitted():
    """A training fold whose supported pairs are all of one class cannot fit a Platt map: the choice skips it
    rather than failing the fit; no class at all among them: the base's probabilities (kind none)."""
    data = synthetic_round(seed=5)
    folds = question_folds(data.questions, 0)
    y = np.where(folds == 0, 0, data.y)  # one fold has no positive at all
    fit = fit_map(data.p[folds == 0], y[folds == 0], data.own[folds == 0], data.questions[folds == 0],
                  np.arange((folds == 0).sum()) % 2)
    assert fit["kind"] == "none"
    rep = fit_report(RoundData(data.pair_ids, data.questions, y, data.p, data.own, data.base_label), 2, n_boot=50)
    assert rep["after"]["kappa"] is not None
