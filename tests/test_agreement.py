"""Agreement metrics against values computed by hand (the arithmetic is in the comments)."""
import math

import numpy as np
import pytest
from sklearn.metrics import cohen_kappa_score, f1_score as sk_f1

from berds_core.lab.agreement import (agreement_report, binary_scores, bootstrap_ci, calibration_bins,
                                  cohen_kappa, confusion_matrix, disagreements, f1_score,
                                  human_vs_judge, inter_annotator, krippendorff_alpha)
from berds_core.lab.store import Pair, Store

# human: 3 positives out of 10; judge: 3 positives, 2 of them right.
HUMAN = [1, 1, 1, 0, 0, 0, 0, 0, 0, 0]
JUDGE = [1, 1, 0, 1, 0, 0, 0, 0, 0, 0]
# TP = 2, FN = 1, FP = 1, TN = 6
# p_o = (2 + 6) / 10 = 0.8
# p_e = P(h=1)P(j=1) + P(h=0)P(j=0) = 0.3*0.3 + 0.7*0.7 = 0.09 + 0.49 = 0.58
# kappa = (0.8 - 0.58) / (1 - 0.58) = 0.22 / 0.42 = 0.523809...
KAPPA = 0.22 / 0.42
# F1 = 2TP / (2TP + FP + FN) = 4 / (4 + 1 + 1) = 0.6667
F1 = 4 / 6


def test_confusion_matrix_by_hand():
    assert confusion_matrix(HUMAN, JUDGE) == [[6, 1], [1, 2]]


def test_cohen_kappa_by_hand():
    assert cohen_kappa(HUMAN, JUDGE) == pytest.approx(KAPPA, abs=1e-12)
    assert cohen_kappa(HUMAN, JUDGE) == pytest.approx(cohen_kappa_score(HUMAN, JUDGE))


def test_kappa_second_example_by_hand():
    # a = 1 1 1 1 0 0, b = 1 1 0 0 0 0: TP 2, FN 2, FP 0, TN 2
    # p_o = 4/6; P(a=1) = 4/6, P(b=1) = 2/6
    # p_e = 4/6*2/6 + 2/6*4/6 = 8/36 + 8/36 = 16/36 = 4/9
    # kappa = (2/3 - 4/9) / (1 - 4/9) = (2/9) / (5/9) = 0.4
    assert cohen_kappa([1, 1, 1, 1, 0, 0], [1, 1, 0, 0, 0, 0]) == pytest.approx(0.4)


def test_kappa_undefined_and_perfect():
    assert math.isnan(cohen_kappa([1, 1, 1], [1, 1, 1]))  # p_e = 1
    assert cohen_kappa([1, 0, 1, 0], [1, 0, 1, 0]) == pytest.approx(1.0)
    # complete disagreement with balanced marginals: p_o = 0, p_e = 0.5 -> -1
    assert cohen_kappa([1, 0, 1, 0], [0, 1, 0, 1]) == pytest.approx(-1.0)
    assert math.isnan(cohen_kappa([], []))


def test_f1_and_binary_scores_by_hand():
    assert f1_score(HUMAN, JUDGE) == pytest.approx(F1)
    assert f1_score(HUMAN, JUDGE) == pytest.approx(sk_f1(HUMAN, JUDGE))
    s = binary_scores(HUMAN, JUDGE)
    assert s["n"] == 10
    assert s["accuracy"] == pytest.approx(0.8)
    assert s["precision"] == pytest.approx(2 / 3)  # TP / (TP + FP) = 2/3
    assert s["recall"] == pytest.approx(2 / 3)  # TP / (TP + FN) = 2/3
    assert s["positive_rate"] == pytest.approx(0.3)  # judge says 1 on 3 of 10
    assert s["human_positive_rate"] == pytest.approx(0.3)
    assert s["kappa"] == pytest.approx(KAPPA)
    # no positive anywhere: F1 is 0 by convention, kappa undefined -> None
    z = binary_scores([0, 0], [0, 0])
    assert z["f1"] == 0.0 and z["kappa"] is None
    with pytest.raises(ValueError):
        binary_scores([0, 2], [0, 1])


def test_krippendorff_alpha_two_annotators_by_hand():
    # units: (1,1) (1,0) (0,0) (0,0) (1,1)
    # coincidences (each unit has 2 values, weight 1/(m-1) = 1):
    #   o_11 = 2 + 2 = 4, o_00 = 2 + 2 = 4, o_10 = o_01 = 1; n = 10, n_1 = n_0 = 5
    # D_o = (o_10 + o_01) / n = 2/10 = 0.2
    # D_e = 2 n_0 n_1 / (n (n-1)) = 50 / 90
    # alpha = 1 - 0.2 / (50/90) = 1 - 0.36 = 0.64
    r = {"a": dict(zip("uvwxy", [1, 1, 0, 0, 1])), "b": dict(zip("uvwxy", [1, 0, 0, 0, 1]))}
    assert krippendorff_alpha(r) == pytest.approx(0.64)


def test_krippendorff_alpha_three_annotators_missing_by_hand():
    # u1: 1 1 1 (m=3), u2: 0 0 (m=2), u3: 1 0 0 (m=3), u4: only one rating -> no information
    # u1: 6 ordered (1,1) pairs * 1/2 -> o_11 += 3
    # u2: 2 ordered (0,0) pairs * 1   -> o_00 += 2
    # u3: (1,0)x2 (0,1)x2 (0,0)x2 * 1/2 -> o_10 += 1, o_01 += 1, o_00 += 1
    # o_11 = 3, o_00 = 3, o_10 = o_01 = 1; n = 8; n_1 = n_0 = 4
    # D_o = 2/8 = 0.25; D_e = 2*4*4 / (8*7) = 32/56
    # alpha = 1 - 0.25 / (32/56) = 1 - 0.4375 = 0.5625
    r = {"a": {"u1": 1, "u2": 0, "u3": 1}, "b": {"u1": 1, "u2": 0, "u3": 0}, "c": {"u1": 1, "u3": 0, "u4": 1}}
    assert krippendorff_alpha(r) == pytest.approx(0.5625)
    iaa = inter_annotator(r, n_boot=50)
    assert iaa["alpha"] == pytest.approx(0.5625)
    assert iaa["alpha_units"] == 3
    # a vs b share u1, u2, u3: (1,1) (0,0) (1,0): p_o = 2/3, P(a=1)=2/3, P(b=1)=1/3
    # p_e = 2/3*1/3 + 1/3*2/3 = 4/9; kappa = (2/3 - 4/9)/(5/9) = 0.4
    ab = iaa["pairs"]["a|b"]
    assert ab["n"] == 3 and ab["kappa"] == pytest.approx(0.4) and ab["agreement"] == pytest.approx(2 / 3)
    assert iaa["pairs"]["a|c"]["n"] == 2 and iaa["pairs"]["b|c"]["n"] == 2
    assert krippendorff_alpha({"a": {"u": 1}, "b": {"v": 1}}) is None  # nothing shared


def test_bootstrap_interval_contains_point_and_is_deterministic():
    rng = np.random.default_rng(1)
    h = rng.integers(0, 2, 200)
    j = np.where(rng.random(200) < 0.8, h, 1 - h)
    ci = bootstrap_ci(h, j, n_boot=500, seed=3)
    point = binary_scores(h, j)
    for k in ("kappa", "accuracy", "f1", "positive_rate"):
        lo, hi = ci[k]
        assert lo <= point[k] <= hi and hi - lo > 0
    assert bootstrap_ci(h, j, n_boot=500, seed=3) == ci
    # accuracy CI about p +- 1.96 sqrt(p(1-p)/n) for 200 draws: width near 0.11
    width = ci["accuracy"][1] - ci["accuracy"][0]
    assert 0.07 < width < 0.15
    assert bootstrap_ci([1, 1], [1, 1], n_boot=20)["kappa"] == [None, None]  # undefined in every replicate


def test_calibration_bins_by_hand():
    probs = [0.05, 0.15, 0.12, 0.95, 1.0]
    human = [0, 1, 0, 1, 1]
    bins = calibration_bins(probs, human, n_bins=10)
    assert [(b["lo"], b["n"]) for b in bins] == [(0.0, 1), (pytest.approx(0.1), 2), (pytest.approx(0.9), 2)]
    assert bins[1]["mean_prob"] == pytest.approx(0.135)  # (0.15 + 0.12) / 2
    assert bins[1]["human_rate"] == pytest.approx(0.5)
    assert bins[2]["mean_prob"] == pytest.approx(0.975) and bins[2]["human_rate"] == 1.0  # 1.0 lands in the last bin


def test_human_vs_judge_pooled_and_per_annotator():
    # alice labels pairs 0..9 as HUMAN; bob labels pairs 0..3 as 1 1 0 0
    judge = {f"p{i}": (0.9 if v else 0.1, v) for i, v in enumerate(JUDGE)}
    obs = [("alice", f"p{i}", v) for i, v in enumerate(HUMAN)] + [("bob", f"p{i}", v) for i, v in enumerate([1, 1, 0, 0])]
    obs.append(("bob", "unknown", 1))  # no judge answer: counted as missing
    rep = human_vs_judge(obs, judge, {f"p{i}": "kialo" if i < 5 else "arguana" for i in range(10)}, n_boot=100)
    assert rep["annotators"]["alice"]["kappa"] == pytest.approx(KAPPA)
    # bob vs judge on p0..p3: human 1 1 0 0, judge 1 1 0 1 -> TP 2, FP 1, TN 1, FN 0
    # p_o = 3/4; P(h=1) = 1/2, P(j=1) = 3/4; p_e = 1/2*3/4 + 1/2*1/4 = 1/2; kappa = (3/4-1/2)/(1/2) = 0.5
    assert rep["annotators"]["bob"]["kappa"] == pytest.approx(0.5)
    # pooled: 14 observations, TP 4, FP 2, FN 1, TN 7 -> accuracy 11/14, F1 8/(8+2+1) = 8/11
    assert rep["n"] == 14 and rep["missing_judge"] == 1
    assert rep["accuracy"] == pytest.approx(11 / 14) and rep["f1"] == pytest.approx(8 / 11)
    assert rep["confusion"] == [[7, 2], [1, 4]]
    assert set(rep["subsets"]) == {"kialo", "arguana"}
    assert rep["subsets"]["arguana"]["n"] == 5
    assert sum(b["n"] for b in rep["calibration"]) == 14


def test_agreement_report_and_disagreements_from_store(tmp_path):
    store = Store(tmp_path / "a.db")
    store.add_pairs([Pair(f"p{i}", "q?", f"doc {i}", "persp", subset="s") for i in range(10)])
    for i, v in enumerate(HUMAN):
        store.label("alice", f"p{i}", v)
    store.label("bob", "p0", 0)  # disagrees with alice (1) and the judge (1)
    store.label("bob", "p1", "skip")  # skips are not labels
    store.set_judge_preds("j", {f"p{i}": (None, v) for i, v in enumerate(JUDGE)})
    store.adjudicate("p0", 1, "carol")
    rep = agreement_report(store, "j", n_boot=50)
    assert rep["annotators"]["alice"]["kappa"] == pytest.approx(KAPPA)
    assert rep["n"] == 11 and rep["annotators"]["bob"]["n"] == 1
    assert rep["iaa"]["pairs"]["alice|bob"]["n"] == 1
    assert rep["gold"]["n"] == 1 and rep["gold"]["accuracy"] == 1.0
    assert rep["calibration"] == []  # no probabilities stored
    dis = {d["pair_id"]: d for d in disagreements(store, "j")}
    # p0: humans differ; p2 (human 1, judge 0) and p3 (human 0, judge 1): judge differs
    assert set(dis) == {"p0", "p2", "p3"}
    assert dis["p0"]["kind"] == "humans+judge" and dis["p0"]["gold"] == 1
    assert dis["p2"]["kind"] == "judge" and dis["p2"]["judge"] == 0
    store.close()


# ---- PABAK, Gwet's AC1, question bootstrap, breakdowns, paper table ----

from berds_core.lab.agreement import (_alpha_from_sums, alpha_ci, bootstrap_replicates, gwet_ac1,  # noqa: E402
                                  pabak, paper_table, scores_with_ci, small_n_warnings)


def test_pabak_and_ac1_by_hand():
    # HUMAN / JUDGE: p_o = 0.8 -> PABAK = 2*0.8 - 1 = 0.6
    assert pabak(HUMAN, JUDGE) == pytest.approx(0.6)
    # AC1: pi = (0.3 + 0.3) / 2 = 0.3; p_e = 2*0.3*0.7 = 0.42; AC1 = (0.8 - 0.42) / (1 - 0.42) = 0.38 / 0.58
    assert gwet_ac1(HUMAN, JUDGE) == pytest.approx(0.38 / 0.58)
    s = binary_scores(HUMAN, JUDGE)
    assert s["pabak"] == pytest.approx(0.6) and s["ac1"] == pytest.approx(0.655172, abs=1e-6)


def test_skewed_labels_kappa_paradox_by_hand():
    # 20 pairs, both raters say 0 on 18; one disagreement each way: TP 0, FP 1, FN 1, TN 18
    h = [1, 0] + [0] * 18
    j = [0, 1] + [0] * 18
    # p_o = 18/20 = 0.9; p_h = p_j = 0.05; p_e = 0.05^2 + 0.95^2 = 0.905
    # kappa = (0.9 - 0.905) / (1 - 0.905) = -0.005 / 0.095 = -0.0526 (fooled by prevalence)
    assert cohen_kappa(h, j) == pytest.approx(-0.005 / 0.095)
    # PABAK = 2*0.9 - 1 = 0.8
    assert pabak(h, j) == pytest.approx(0.8)
    # AC1: pi = 0.05; p_e = 2*0.05*0.95 = 0.095; AC1 = (0.9 - 0.095) / (1 - 0.095) = 0.805 / 0.905 = 0.8895
    assert gwet_ac1(h, j) == pytest.approx(0.805 / 0.905)
    assert math.isnan(pabak([], [])) and math.isnan(gwet_ac1([], []))
    # AC1 stays defined where kappa is not: both raters constant and equal -> p_o = 1, pi = 0, p_e = 0 -> 1
    assert gwet_ac1([0, 0, 0], [0, 0, 0]) == pytest.approx(1.0) and math.isnan(cohen_kappa([0, 0, 0], [0, 0, 0]))


def test_question_bootstrap_by_hand():
    # question A: human 1 1 0 0, judge 1 1 0 0 (TP 2, TN 2); question B: human 1 0, judge 0 1 (FN 1, FP 1)
    human = [1, 1, 0, 0, 1, 0]
    judge = [1, 1, 0, 0, 0, 1]
    groups = ["A"] * 4 + ["B"] * 2
    # resampling 2 questions with replacement gives {A,A} (prob 1/4), {A,B} (1/2), {B,B} (1/4):
    #   {A,A}: 8 agreements of 8 -> accuracy 1;    p_o 1, p_h = p_j = 1/2, p_e 1/2 -> kappa 1
    #   {A,B}: 4 of 6 -> accuracy 2/3;             p_o 2/3, p_e 1/2 -> kappa (2/3 - 1/2)/(1/2) = 1/3
    #   {B,B}: 0 of 4 -> accuracy 0;               p_o 0, p_e 1/2 -> kappa -1
    reps = bootstrap_replicates(human, judge, groups=groups, n_boot=4000, seed=5)
    vals, counts = np.unique(np.round(reps["accuracy"], 6), return_counts=True)
    assert vals.tolist() == [0.0, round(2 / 3, 6), 1.0]
    assert counts / 4000 == pytest.approx([0.25, 0.5, 0.25], abs=0.03)
    assert set(np.round(reps["kappa"], 6)) == {-1.0, round(1 / 3, 6), 1.0}
    ci = bootstrap_ci(human, judge, groups=groups, n_boot=4000, seed=5)
    assert ci["accuracy"] == [0.0, 1.0] and ci["kappa"] == [-1.0, 1.0]
    # resampling the 6 pairs instead treats them as independent: accuracy takes 7 values (0/6 .. 6/6)
    pair_reps = bootstrap_replicates(human, judge, n_boot=4000, seed=5)
    assert len(np.unique(np.round(pair_reps["accuracy"], 6))) > 3
    s = scores_with_ci(human, judge, groups=groups, n_boot=200)
    assert s["questions"] == 2 and s["n"] == 6


def test_intervals_need_two_questions_never_x_x():
    assert bootstrap_ci([1], [1], n_boot=100)["kappa"] == [None, None]  # n = 1
    assert bootstrap_ci([1, 0, 1], [1, 0, 0], groups=["q", "q", "q"], n_boot=100)["accuracy"] == [None, None]
    s = scores_with_ci([1, 0], [1, 1], groups=["q1", "q1"], n_boot=100)
    assert s["ci95"]["f1"] == [None, None] and s["questions"] == 1


def test_alpha_closed_form_and_question_interval():
    rng = np.random.default_rng(3)
    a = {f"u{i}": int(v) for i, v in enumerate(rng.integers(0, 2, 40))}
    b = {u: (v if rng.random() < 0.8 else 1 - v) for u, v in a.items()}
    c = {u: v for u, v in list(a.items())[:15]}
    ratings = {"a": a, "b": b, "c": c}
    # the closed form over coincidence sums equals the krippendorff package
    o01 = n0 = n1 = 0.0
    for u in a:
        vals = [r[u] for r in ratings.values() if u in r]
        k1 = sum(vals)
        k0 = len(vals) - k1
        o01 += k0 * k1 / (len(vals) - 1)
        n0 += k0
        n1 += k1
    assert float(_alpha_from_sums(o01, n0, n1)) == pytest.approx(krippendorff_alpha(ratings))
    groups = {u: f"q{int(u[1:]) // 4}" for u in a}  # 10 questions of 4 pairs
    lo, hi = alpha_ci(ratings, groups, n_boot=500)
    assert lo < krippendorff_alpha(ratings) < hi
    assert alpha_ci(ratings, {u: "q" for u in a}) == [None, None]  # one question: no interval


def test_report_breakdowns_table_and_small_n_warning(tmp_path):
    store = Store(tmp_path / "r.db")
    # 4 questions x 3 pairs; sides alternate
    store.add_pairs([Pair(f"p{i}", f"question {i // 3}?", f"doc {i}", "persp", question_id=f"q{i // 3}",
                          subset="s1" if i < 6 else "s2", side="support" if i % 2 else "oppose") for i in range(12)])
    for i in range(12):
        store.label("alice", f"p{i}", i % 2)
    for i in range(4):  # bob shares 4 pairs with alice: a small sample
        store.label("bob", f"p{i}", 1)
    store.set_judge_preds("j", {f"p{i}": (0.5, (i % 2) if i != 4 else 1) for i in range(12)})
    store.set_reference_labels({"p0": 0, "p1": 1})
    rep = agreement_report(store, "j", n_boot=100)
    assert rep["questions"] == 4 and set(rep["subsets"]) == {"s1", "s2"} and set(rep["sides"]) == {"support", "oppose"}
    assert rep["per_question"]["q0"]["text"] == "question 0?" and rep["per_question"]["q0"]["n"] == 6  # alice 3 + bob 3
    assert rep["per_question"]["q0"]["ci95"]["kappa"] == [None, None]  # one question: no interval
    # 'oppose' side (even i): alice 0 everywhere, judge 0 except p4 -> 1 error of 8 comparisons (alice 6, bob 2)
    assert rep["sides"]["oppose"]["n"] == 8
    comparisons = [r["comparison"] for r in rep["table"]]
    assert comparisons == ["human vs j", "reference labels vs j", "human vs human"]
    iaa = rep["iaa"]["pairs"]["alice|bob"]
    assert iaa["n"] == 4 and iaa["questions"] == 2 and set(iaa["ci95"]) == {"kappa", "pabak", "ac1", "accuracy"}
    assert any("alice and bob" in w and "only 4 pair(s)" in w for w in rep["warnings"])
    assert rep["calibration_scores"]["alice"]["n"] == 2 and rep["calibration_scores"]["alice"]["accuracy"] == 1.0
    assert small_n_warnings({"judge": "j", "n": 400, "questions": 40}) == []
    assert paper_table({"judges": {}, "iaa": {"pooled": None}}) == []
    store.close()
