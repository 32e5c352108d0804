"""The evaluation suite: metrics semantics, bootstrap, paired comparison, coverage, CLI."""
import json

import numpy as np
import pytest

from berds_core.eval import evaluation as ev
from berds_core.eval.report import summarize
from berds_core.cli import main
from berds_core.eval.measures import mrecall_at_k, precision_at_k


def M(rows):
    return np.array(rows, dtype=bool)


# --- MRecall's m > k rule ------------------------------------------------

def test_mrecall_m_greater_than_k_needs_k_distinct():
    # 4 perspectives, k = 2: two distinct perspectives in the top 2 suffice
    L = M([[1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, 0]])
    assert mrecall_at_k(L, 2) == 1.0
    # the same perspective twice is not enough
    L2 = M([[1, 0, 0, 0], [1, 0, 0, 0], [0, 1, 0, 0]])
    assert mrecall_at_k(L2, 2) == 0.0
    # m = 4 > k = 3: three distinct perspectives are enough
    assert mrecall_at_k(L, 3) == 1.0
    # m = 4 <= k = 4: all four are needed (only three are there)
    assert mrecall_at_k(L, 4) == 0.0
    L3 = M([[1, 0], [1, 0], [1, 0], [1, 0], [0, 1]])
    assert mrecall_at_k(L3, 4) == 0.0 and mrecall_at_k(L3, 5) == 1.0


def test_scores_per_question_and_precision_denominator_k():
    mats = [M([[1, 0], [0, 1], [0, 0]]), M([[0, 0], [1, 0]])]
    s = ev.scores(mats, ks=(2, 5))
    assert s["mrecall@2"].tolist() == [1.0, 0.0]
    assert s["precision@2"].tolist() == [1.0, 0.5]
    assert s["precision@5"].tolist() == [2 / 5, 1 / 5]  # fewer than k passages are not rewarded
    assert s["precision@1"].tolist() == [1.0, 0.0]


# --- summaries and macro -------------------------------------------------

def test_summarize_subsets_and_macro():
    good = M([[1, 0], [0, 1]] + [[0, 0]] * 8)
    bad = M([[0, 0]] * 10)
    mats = [good, good, good, bad]  # subset a: 3 good; subset b: 1 bad
    out = summarize(ev.scores(mats, (5, 10)), ["a", "a", "a", "b"], (5, 10), n_boot=200, seed=1)
    assert out["n"] == 4
    assert out["at"]["5"]["mrecall"] == pytest.approx(0.75)
    assert out["subsets"]["a"]["at"]["5"]["mrecall"] == 1.0
    assert out["subsets"]["b"]["n"] == 1
    assert out["macro"]["5"]["mrecall"] == pytest.approx(0.5)  # (1 + 0) / 2, not 0.75
    assert out["macro"]["10"]["precision"] == pytest.approx((0.2 + 0.0) / 2)
    lo, hi = out["ci"]["5"]["mrecall"]
    assert 0.0 <= lo <= 0.75 <= hi <= 1.0
    # stratified macro bootstrap: each subset keeps its size, b is constant 0, a constant 1
    assert out["macro_ci"]["5"]["mrecall"] == [0.5, 0.5]


def test_bootstrap_is_seeded_and_sensible():
    rng = np.random.default_rng(3)
    v = rng.random(200)
    a = ev.bootstrap_ci(v, seed=7)
    b = ev.bootstrap_ci(v, seed=7)
    c = ev.bootstrap_ci(v, seed=8)
    assert a == b
    assert a != c
    lo, hi = a
    assert lo < v.mean() < hi
    se = v.std(ddof=1) / np.sqrt(v.size)
    assert hi - lo == pytest.approx(2 * 1.96 * se, rel=0.2)
    assert ev.bootstrap_ci(np.ones(10)) == (1.0, 1.0)
    with pytest.raises(ValueError):
        ev.bootstrap_ci([])


def test_paired_comparison():
    a = np.array([0, 0, 1, 0, 1, 0, 0, 1, 0, 0] * 5, dtype=float)
    b = np.ones_like(a)
    out = ev.paired_comparison(a, b, n_boot=500, seed=0)
    assert out["diff"] == pytest.approx(0.7)
    assert out["ci"][0] > 0.5 and out["ci"][1] <= 0.9
    assert out["p_value"] < 0.01
    assert (out["wins"], out["losses"], out["ties"]) == (35, 0, 15)
    same = ev.paired_comparison(a, a.copy(), n_boot=200)
    assert same["diff"] == 0.0 and same["ci"] == [0.0, 0.0] and same["p_value"] == 1.0
    # pairing matters: b - a identical per question gives a zero-width interval
    c = a + 0.1
    assert ev.paired_comparison(a, c)["ci"] == pytest.approx([0.1, 0.1])
    assert ev.paired_comparison(a, b, seed=4) == ev.paired_comparison(a, b, seed=4)
    with pytest.raises(ValueError):
        ev.paired_comparison(a, b[:3])


def test_compare_runs_all_metrics():
    a = [M([[1, 0], [1, 0]]), M([[0, 0], [0, 1]])]
    b = [M([[1, 0], [0, 1]]), M([[0, 1], [0, 1]])]
    out = ev.compare_runs(a, b, ks=(2,), n_boot=100)
    assert out["mrecall@2"]["diff"] == pytest.approx(0.5)
    assert out["precision@1"]["diff"] == pytest.approx(0.5)
    assert out["precision@2"]["diff"] == pytest.approx(0.25)


# --- coverage ------------------------------------------------------------

def test_union_matrix_dedupes_and_ors():
    ids, U = ev.union_matrix([(["p1", "p2", "p3"], M([[1, 0], [0, 0], [0, 1]])),
                              (["p2", "p4"], M([[0, 1], [0, 0]]))], n=2)
    assert ids == ["p1", "p2", "p4"]
    assert U.tolist() == [[True, False], [False, True], [False, False]]


def test_union_coverage_beats_single_runs():
    # question 1: run A covers perspective 0 only, run B perspective 1 only
    run_a = [(["a1", "a2"], M([[1, 0], [1, 0]])), (["x", "y"], M([[1, 0, 0], [0, 1, 0]]))]
    run_b = [(["b1", "b2"], M([[0, 1], [0, 0]])), (["x", "z"], M([[1, 0, 0], [0, 0, 0]]))]
    out = ev.union_coverage([run_a, run_b], n=2)
    # alone: A covers q2 (m = 3 > k = 2, two distinct), B covers nothing
    assert out["mrecall_single"] == [0.5, 0.0]
    # union, budget K = 4: q1 covers both; q2 {x, y, z} covers 2 of m = 3 <= K -> 0
    assert out["per_question"] == [1.0, 0.0]
    assert out["mrecall_union"] == 0.5
    assert out["covered_share"] == pytest.approx((1.0 + 2 / 3) / 2)
    assert out["mean_union_size"] == pytest.approx((4 + 3) / 2)
    with pytest.raises(ValueError):
        ev.union_coverage([run_a, run_b[:1]], n=2)


def test_passages_needed():
    mats = [M([[1, 0], [1, 0], [0, 1]]), M([[1, 1]]), M([[1, 0], [0, 0]])]
    out = ev.passages_needed(mats)
    assert out["per_question"] == [3, 1, None]
    assert out["covered"] == 2 and out["covered_share"] == pytest.approx(2 / 3)
    assert out["mean"] == 2.0 and out["median"] == 2.0 and out["max"] == 3


# --- CLI -----------------------------------------------------------------

def _write_jsonl(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return str(path)


def _entry(qid, subset, pids):
    return {"id": qid, "question": f"q {qid}?", "perspectives": ["yes", "no"], "subset": subset,
            "ctxs": [{"id": p, "title": "", "text": f"text {p}", "score": 1.0} for p in pids]}


@pytest.fixture
def runs(tmp_path):
    gold = [{"question_id": "q1", "passage_id": "y1", "perspective": 0},
            {"question_id": "q1", "passage_id": "n1", "perspective": 1},
            {"question_id": "q2", "passage_id": "y2", "perspective": 0},
            {"question_id": "q2", "passage_id": "n2", "perspective": 1},
            {"question_id": "q3", "passage_id": "y3", "perspective": 0}]
    filler = [f"f{i}" for i in range(10)]
    a = [_entry("q1", "s1", ["y1"] + filler), _entry("q2", "s1", ["y2", "f0"] + filler[1:]),
         _entry("q3", "s2", filler + ["y3"])]
    b = [_entry("q1", "s1", ["y1", "n1"] + filler), _entry("q2", "s1", ["y2", "n2"] + filler),
         _entry("q3", "s2", ["y3"] + filler)]
    return (_write_jsonl(tmp_path / "gold.jsonl", gold), _write_jsonl(tmp_path / "a.jsonl", a),
            _write_jsonl(tmp_path / "b.jsonl", b))


def _cli(capsys, argv):
    rc = main(argv)
    cap = capsys.readouterr()
    return rc, cap.out, cap.err


def test_cli_evaluate_keys_subsets_macro_ci(capsys, runs):
    gold, a, b = runs
    rc, out, _ = _cli(capsys, ["evaluate", "--run", b, "--gold", gold, "--json", "--bootstrap", "200"])
    assert rc == 0
    res = json.loads(out)
    assert {"n", "mrecall", "precision", "precision_at_1"} <= set(res)
    assert res["n"] == 3 and res["k"] == 5
    assert res["mrecall"] == pytest.approx(2 / 3)  # q3 has 1 of 2 perspectives
    assert res["precision_at_1"] == 1.0
    assert set(res["at"]) == {"5", "10"}
    assert res["at"]["10"]["precision"] == pytest.approx((0.2 + 0.2 + 0.1) / 3)
    assert res["subsets"]["s1"]["at"]["5"]["mrecall"] == 1.0
    assert res["subsets"]["s2"]["at"]["5"]["mrecall"] == 0.0
    assert res["macro"]["5"]["mrecall"] == pytest.approx(0.5)
    assert len(res["ci"]["5"]["mrecall"]) == 2
    # same seed, same interval
    rc, out2, _ = _cli(capsys, ["evaluate", "--run", b, "--gold", gold, "--json", "--bootstrap", "200"])
    assert json.loads(out2)["ci"] == res["ci"]


def test_cli_evaluate_k_and_compare(capsys, runs):
    gold, a, b = runs
    rc, out, _ = _cli(capsys, ["evaluate", "--run", a, "--gold", gold, "--k", "3", "--json",
                               "--compare", b, "--bootstrap", "100"])
    assert rc == 0
    res = json.loads(out)
    assert set(res["at"]) == {"3", "5", "10"} and res["k"] == 3
    assert res["mrecall"] == 0.0
    cmp = res["compare"]["metrics"]
    assert res["compare"]["direction"] == "run2 - run"
    assert cmp["mrecall@5"]["diff"] == pytest.approx(2 / 3)
    assert cmp["precision@1"]["diff"] == pytest.approx(1 / 3)
    assert cmp["mrecall@5"]["ci"][0] <= cmp["mrecall@5"]["diff"] <= cmp["mrecall@5"]["ci"][1]


def test_cli_evaluate_compare_needs_same_questions(capsys, runs, tmp_path):
    gold, a, _ = runs
    other = _write_jsonl(tmp_path / "c.jsonl", [_entry("q1", "s1", ["y1"]), _entry("q9", "s1", ["y1"])])
    rc, out, err = _cli(capsys, ["evaluate", "--run", a, "--gold", gold, "--compare", other, "--json"])
    assert rc == 2 and out == ""
    assert "c.jsonl" in err and "field 'id'" in err and err.count("\n") == 1


def test_cli_evaluate_bad_ks(capsys, runs):
    gold, a, _ = runs
    rc, _, err = _cli(capsys, ["evaluate", "--run", a, "--gold", gold, "--ks", "5,x"])
    assert rc == 2 and "--ks" in err


def test_cli_coverage(capsys, runs):
    gold, a, b = runs
    rc, out, _ = _cli(capsys, ["coverage", "--runs", a, b, "--gold", gold, "--n", "1", "--json"])
    assert rc == 0
    res = json.loads(out)
    u = res["union"]
    assert res["n_questions"] == 3 and u["depth"] == 1 and u["runs"] == 2
    # top-1 of each (budget 2): q1 {y1}, q2 {y2}, q3 {f0, y3}: no question has both sides
    assert u["mrecall_union"] == 0.0
    assert u["covered_share"] == pytest.approx(1.5 / 3)
    rc, out, _ = _cli(capsys, ["coverage", "--runs", a, b, "--gold", gold, "--n", "2", "--json"])
    u = json.loads(out)["union"]
    assert u["mrecall_union"] == pytest.approx(2 / 3)
    assert u["mrecall_single"][b] == pytest.approx(2 / 3) and u["mrecall_single"][a] == 0.0
    pn = json.loads(out)["passages_needed"]
    assert pn[b]["covered"] == 2 and pn[b]["mean"] == 2.0
    assert pn[a]["covered"] == 0 and pn[a]["mean"] is None


def test_cli_coverage_mismatched_runs(capsys, runs, tmp_path):
    gold, a, _ = runs
    other = _write_jsonl(tmp_path / "c.jsonl", [_entry("q1", "s1", ["y1"])])
    rc, _, err = _cli(capsys, ["coverage", "--runs", a, other, "--gold", gold])
    assert rc == 2 and "c.jsonl" in err
