"""Leaning buckets, sycophancy Δ and side inference on hand-made examples."""
import json

import numpy as np
import pytest

from berds_core.cli import main
from berds_core.eval.leaning import (Sides, bucket, delta, exposure, exposure_leaning, ideal_exposure, infer_sides,
                                infer_sides_llm, leaning, query_for, rank_leaning, side_shares, sycophancy)

S = Sides(0, 1, "order")
R = Sides(1, 0, "user")


def M(rows):
    return np.array(rows, dtype=bool).reshape(len(rows), 2)


def test_buckets_each_case_and_k_cutoff():
    assert bucket(M([[1, 0], [0, 0], [0, 1]]), S, 3) == "both"
    assert bucket(M([[1, 0], [0, 0], [0, 1]]), S, 2) == "support_only"  # the opposing passage is at rank 3
    assert bucket(M([[0, 1], [0, 0]]), S, 2) == "oppose_only"
    assert bucket(M([[0, 1], [0, 0]]), R, 2) == "support_only"  # sides swapped: column 1 supports
    assert bucket(M([[0, 0], [0, 0]]), S, 2) == "neither"
    assert bucket(np.zeros((0, 2), bool), S, 5) == "neither"


def test_leaning_shares_and_skipped_questions():
    mats = [M([[1, 0]]), M([[1, 0]]), M([[0, 1]]), M([[1, 1]]), np.ones((1, 3), bool)]
    out = leaning(mats, [S, S, S, S, None], k=1)
    assert out["n"] == 4 and out["skipped"] == 1
    assert out["support_only"] == 0.5 and out["oppose_only"] == 0.25
    assert out["both"] == 0.25 and out["neither"] == 0.0
    assert out["buckets"] == ["support_only", "support_only", "oppose_only", "both", None]


def test_delta_formula_and_p_zero():
    assert delta(0.6, 0.2) == pytest.approx((0.6 - 0.2) / 0.6)
    assert delta(0.2, 0.6) == pytest.approx(-2.0)
    assert delta(0.0, 0.4) is None
    assert delta(0.0, 0.0) is None


def test_side_shares_divide_by_k_and_sycophancy_means():
    # k=4: passage 0 supports side 0, passages 1 and 2 support side 1, passage 3 supports both
    L = M([[1, 0], [0, 1], [0, 1], [1, 1]])
    assert side_shares(L, S, 4) == (0.5, 0.75)
    # question A: p=1/2, n=0; question B: p=0, n=1/2 -> means p=0.25, n=0.25, Δ=0
    A, B = M([[1, 0], [0, 0]]), M([[0, 0], [0, 1]])
    out = sycophancy([A, B], [S, S], 2)
    assert out == {"n": 2, "p": 0.25, "n_share": 0.25, "delta": 0.0}
    # p = 0 over all questions: Δ undefined, reported as None
    assert sycophancy([B], [S], 2)["delta"] is None
    assert sycophancy([A], [None], 2)["n"] == 0


def test_rank_aware_leaning_weighs_what_comes_first():
    # one supporting passage at rank 1 and one opposing at rank 5: Δ = 0, but the supporting side is seen first
    L = M([[1, 0], [0, 0], [0, 0], [0, 0], [0, 1]])
    assert sycophancy([L], [S], 5)["delta"] == 0.0
    es, eo = 1.0, 1 / np.log2(6)  # 0.386853
    assert exposure(L, 0, 5) == pytest.approx(es) and exposure(L, 1, 5) == pytest.approx(eo)
    assert rank_leaning(L, S, 5) == pytest.approx((es - eo) / (es + eo))  # 0.442114
    assert rank_leaning(L, R, 5) == pytest.approx(-(es - eo) / (es + eo))  # sides swapped: the sign flips
    assert rank_leaning(L, S, 4) == 1.0  # k = 4 hides the opposing passage
    assert rank_leaning(M([[1, 1], [0, 0]]), S, 2) == 0.0  # one passage for both sides: balanced
    assert rank_leaning(M([[0, 0]]), S, 1) is None
    assert ideal_exposure(2) == pytest.approx(1 + 1 / np.log2(3))
    out = exposure_leaning([L, M([[0, 0]]), np.ones((1, 3), bool)], [S, S, None], 5, n_boot=50)
    assert out["n"] == 2 and out["defined"] == 1 and out["per_question"][1:] == [None, None]
    assert out["mean"] == pytest.approx(0.442114, abs=1e-6)


def test_infer_sides_stances_order_and_rule():
    q = "Will ChatGPT do more harm than good?"
    ps = ["ChatGPT will do more good than harm.", "ChatGPT will do more harm than good."]
    assert infer_sides(q, ps, ["oppose", "support"]) == Sides(1, 0, "stances")
    rule = infer_sides(q, ps)  # no stances: word order decides ("more harm than good")
    assert (rule.support, rule.oppose, rule.source) == (1, 0, "rule")
    neg = infer_sides("Should phones be banned in schools?",
                      ["Phones should not be banned in schools.", "Phones should be banned in schools."])
    assert neg.support == 1
    assert infer_sides(q, ps, method="order") == Sides(0, 1, "order")
    assert infer_sides(q, ps + ["A third view."]) is None
    with pytest.raises(ValueError):
        infer_sides(q, ps, None, method="stances")
    assert infer_sides(q, ps, ["oppose", "support"]).swapped() == Sides(0, 1, "user")


def test_infer_sides_llm_uses_yes_probabilities():
    seen = []

    def yes(prompts):
        seen.extend(prompts)
        return [0.2, 0.9]

    s = infer_sides_llm("Q?", ["a", "b"], yes)
    assert (s.support, s.oppose, s.source) == (1, 0, "llm") and len(seen) == 2
    assert "Statement: b" in seen[1]


def test_query_forms():
    ps = ["yes side", "no side"]
    assert query_for("question", "Q?", ps, R) == "Q?"
    assert query_for("support", "Q?", ps, R) == "no side"
    assert query_for("oppose", "Q?", ps, R) == "yes side"


def _write(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return str(path)


def test_leaning_cli_with_gold(tmp_path, capsys):
    ctx = lambda i: {"id": i, "title": "", "text": i, "score": 1.0}
    run = _write(tmp_path / "run.jsonl", [
        {"id": "q1", "question": "Is A good?", "perspectives": ["A is good.", "A is not good."],
         "ctxs": [ctx("p1"), ctx("p2")]},
        {"id": "q2", "question": "Is B good?", "perspectives": ["B is good.", "B is not good."],
         "ctxs": [ctx("p3"), ctx("p4")]},
        {"id": "q3", "question": "Is C good?", "perspectives": ["C is good.", "C is not good."],
         "ctxs": [ctx("p5")]},
        {"id": "q4", "question": "Is D good?", "perspectives": ["D is good.", "D is not good."],
         "ctxs": [ctx("p6")]},
    ])
    gold = _write(tmp_path / "gold.jsonl", [
        {"question_id": "q1", "passage_id": "p1", "perspective": 0},
        {"question_id": "q1", "passage_id": "p2", "perspective": 1},
        {"question_id": "q2", "passage_id": "p4", "perspective": 1},
        {"question_id": "q3", "passage_id": "p5", "perspective": 0},
    ])
    assert main(["leaning", "--run", run, "--gold", gold, "--k", "5", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    rank = out.pop("rank_leaning")
    assert out == {"n": 4, "support_only": 0.25, "oppose_only": 0.25, "both": 0.25,
                   "neither": 0.25, "skipped": 0, "policy": "gold"}
    # RL per question: q1 support at rank 1, oppose at rank 2: (1 - 1/log2 3) / (1 + 1/log2 3) = 0.226294;
    # q2 oppose only: -1; q3 support only: +1; q4 neither: undefined -> mean of 3 = 0.075431
    assert rank["n"] == 4 and rank["defined"] == 3
    assert rank["mean"] == pytest.approx(0.075431, abs=1e-6)
    assert rank["ci"][0] <= rank["mean"] <= rank["ci"][1]
    # exposure shares of the ideal Z_5 = 1 + 0.630930 + 0.5 + 0.430677 + 0.386853 = 2.948459:
    # support (1 + 0 + 1 + 0) / 4 / Z_5 = 0.169580; oppose (0.630930 * 2) / 4 / Z_5 = 0.106993
    assert rank["exposure_support"] == pytest.approx(0.169580, abs=1e-6)
    assert rank["exposure_oppose"] == pytest.approx(0.106993, abs=1e-6)
    # k = 1 hides q1's opposing passage at rank 2
    assert main(["leaning", "--run", run, "--gold", gold, "--k", "1", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["support_only"] == 0.5 and out["both"] == 0.0


def test_leaning_cli_bad_input(tmp_path, capsys):
    run = tmp_path / "run.jsonl"
    run.write_text('{"question": "Q?", "perspectives": ["a", "b"], "ctxs": []}\n{not json\n')
    gold = _write(tmp_path / "gold.jsonl", [])
    assert main(["leaning", "--run", str(run), "--gold", gold, "--json"]) == 2
    err = capsys.readouterr()
    assert err.out == "" and f"{run}:2" in err.err and len(err.err.strip().splitlines()) == 1
    good = _write(tmp_path / "ok.jsonl", [{"id": "q", "question": "Q?", "perspectives": ["a", "b"], "ctxs": []}])
    assert main(["leaning", "--run", good, "--labels", "nojudge", "--json"]) == 2
    assert "nojudge-preds" in capsys.readouterr().err


def test_gold_index_beyond_the_questions_perspectives_is_bad_input(tmp_path, capsys):
    run = _write(tmp_path / "run.jsonl", [{"id": "q", "question": "Q?", "perspectives": ["a", "b"],
                                           "ctxs": [{"id": "p", "text": "t"}]}])
    gold = _write(tmp_path / "gold.jsonl", [{"question_id": "q", "passage_id": "p", "perspective": 2}])
    for verb in ("leaning", "evaluate"):
        assert main([verb, "--run", run, "--gold", gold, "--json"]) == 2
        err = capsys.readouterr().err
        assert gold in err and "perspective" in err and len(err.strip().splitlines()) == 1


def test_sycophancy_cli_bm25_with_gold(tmp_path, capsys):
    """Each query form pulls the top k toward its own side on a corpus built for it."""
    questions = _write(tmp_path / "q.jsonl", [
        {"id": "q1", "question": "Should cities ban cars downtown?",
         "perspectives": ["Cities should ban cars downtown.", "Cities should keep cars downtown."],
         "stances": ["support", "oppose"]},
        {"id": "q3", "question": "Is this a three-way question?", "perspectives": ["a", "b", "c"]},
    ])
    corpus = _write(tmp_path / "c.jsonl", [
        {"id": "s1", "text": "cities should ban cars downtown to cut smog and noise"},
        {"id": "s2", "text": "ban cars downtown: pedestrians and cafes thrive when cities ban cars"},
        {"id": "o1", "text": "cities should keep cars downtown because shops need drivers"},
        {"id": "o2", "text": "keep cars downtown: deliveries and disabled access need keep cars"},
        {"id": "x1", "text": "a recipe for bread with flour water salt and yeast"},
    ])
    gold = _write(tmp_path / "g.jsonl", [
        {"question_id": "q1", "passage_id": "s1", "perspective": 0},
        {"question_id": "q1", "passage_id": "s2", "perspective": 0},
        {"question_id": "q1", "passage_id": "o1", "perspective": 1},
        {"question_id": "q1", "passage_id": "o2", "perspective": 1},
    ])
    args = ["sycophancy", "--questions", questions, "--corpus", corpus, "--retriever", "bm25",
            "--gold", gold, "--k", "1", "--json", "--quiet"]
    assert main(args) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["k"] == 1 and set(out) >= {"question", "support", "oppose"}
    assert out["support"]["n"] == 1  # the three-perspective question is left out
    # querying with the supporting perspective: the top passage supports it -> p = 1, n = 0, Δ = 1
    assert out["support"] == {"n": 1, "p": 1.0, "n_share": 0.0, "delta": 1.0}
    # querying with the opposing perspective: p = 0 -> Δ undefined
    assert out["oppose"]["p"] == 0.0 and out["oppose"]["n_share"] == 1.0 and out["oppose"]["delta"] is None


def test_sycophancy_cli_needs_two_perspective_questions(tmp_path, capsys):
    questions = _write(tmp_path / "q.jsonl", [{"id": "q", "question": "Q?", "perspectives": ["a", "b", "c"]}])
    corpus = _write(tmp_path / "c.jsonl", [{"id": "p", "text": "t"}])
    gold = _write(tmp_path / "g.jsonl", [])
    assert main(["sycophancy", "--questions", questions, "--corpus", corpus, "--retriever", "bm25",
                 "--gold", gold, "--json"]) == 2
    err = capsys.readouterr().err
    assert questions in err and "perspectives" in err


def test_runs_carry_stances_so_leaning_needs_no_questions_file(tmp_path, capsys):
    """`berds retrieve` keeps the dataset's stance labels in the run; `berds leaning` uses them."""
    questions = _write(tmp_path / "q.jsonl", [
        {"id": "q1", "question": "Is tea better than coffee?",
         "perspectives": ["Coffee is better than tea.", "Tea is better than coffee."],
         "stances": ["oppose", "support"]}])
    corpus = _write(tmp_path / "c.jsonl", [{"id": "t", "text": "tea is better than coffee for calm mornings"},
                                          {"id": "x", "text": "bread recipe"}])
    gold = _write(tmp_path / "g.jsonl", [{"question_id": "q1", "passage_id": "t", "perspective": 1}])
    run = str(tmp_path / "run.jsonl")
    assert main(["retrieve", "--questions", questions, "--corpus", corpus, "--retriever", "bm25",
                 "--k", "1", "--out", run, "--json", "--quiet"]) == 0
    capsys.readouterr()
    assert json.loads(open(run).readline())["stances"] == ["oppose", "support"]
    assert main(["leaning", "--run", run, "--gold", gold, "--k", "1", "--json"]) == 0
    # perspective 1 supports (per the stances), and the top passage supports perspective 1
    assert json.loads(capsys.readouterr().out)["support_only"] == 1.0
