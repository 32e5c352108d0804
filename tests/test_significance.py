"""Paired significance tests: the randomisation test against permutation tests written here
independently (full enumeration; the exact sign test for 0/1 scores), the t-test, Holm / Bonferroni,
effect sizes, and `berds evaluate --compare RUN_A RUN_B ...`."""
from __future__ import annotations

import itertools
import json
import math

import numpy as np
import pytest

from berds_core.eval import significance as sg
from berds_core.cli import main


def enumerated_permutation_p(a, b, weights=None):
    """Every one of the 2^n sign patterns of the paired differences: P(|T*| >= |T|), T a (weighted) mean."""
    d = np.asarray(b, float) - np.asarray(a, float)
    w = np.full(d.size, 1.0 / d.size) if weights is None else np.asarray(weights, float)
    observed = abs(float(np.dot(w, d)))
    hits = total = 0
    for signs in itertools.product((1.0, -1.0), repeat=d.size):
        total += 1
        hits += abs(float(np.dot(w, np.array(signs) * d))) >= observed - 1e-12
    return hits / total


def sign_test_p(a, b):
    """For 0/1 scores the sign-flip null of sum(d) is 2·Binomial(n', 1/2) − n' over the n' untied questions."""
    d = np.asarray(b, int) - np.asarray(a, int)
    n = int(np.count_nonzero(d))
    obs = abs(int(d.sum()))
    return sum(math.comb(n, x) for x in range(n + 1) if abs(2 * x - n) >= obs) / 2 ** n


def test_randomisation_test_equals_full_enumeration_for_small_n():
    rng = np.random.default_rng(7)
    for _ in range(5):
        a = rng.random(10)
        b = a + rng.normal(0.15, 0.3, 10)
        assert sg.permutation_p(a, b) == pytest.approx(enumerated_permutation_p(a, b), abs=1e-12)
    # with subsets the statistic is the macro mean difference (each subset weighs the same)
    a, b = rng.random(9), rng.random(9)
    groups = ["x"] * 3 + ["y"] * 6
    w = [1 / 6] * 3 + [1 / 12] * 6
    assert sg.permutation_p(a, b, groups=groups) == pytest.approx(enumerated_permutation_p(a, b, w), abs=1e-12)


def test_randomisation_test_matches_the_exact_sign_test_for_binary_scores():
    rng = np.random.default_rng(3)
    a = (rng.random(60) < 0.45).astype(float)
    b = np.where(rng.random(60) < 0.3, 1.0, a)  # b covers more questions than a
    exact = sign_test_p(a, b)
    assert 0.001 < exact < 0.2
    mc = sg.permutation_p(a, b, n_resamples=100_000, seed=1)  # 2^60 patterns: seeded sampling
    assert mc == pytest.approx(exact, abs=0.006)  # Monte Carlo s.e. <= sqrt(0.25 / 1e5) = 0.0016
    assert sg.permutation_p(a, b, n_resamples=100_000, seed=1) == mc  # seeded: the same p every time


def test_t_test_is_the_paired_t_formula():
    from scipy.stats import t as t_dist

    rng = np.random.default_rng(5)
    a, b = rng.random(25), rng.random(25) + 0.1
    d = b - a
    t = d.mean() / (d.std(ddof=1) / math.sqrt(d.size))
    assert sg.t_test_p(a, b) == pytest.approx(2 * t_dist.sf(abs(t), d.size - 1), rel=1e-9)
    assert sg.t_test_p(a, a) == 1.0 and sg.permutation_p(a, a) == 1.0
    assert sg.t_test_p(a, a + 0.2) == 0.0  # constant non-zero differences


def test_holm_and_bonferroni():
    # Holm: sorted 0.01, 0.03, 0.04, 0.5 -> 4*0.01, max(3*0.03, .04), max(2*0.04, .09), max(0.5, .09)
    assert sg.adjust([0.01, 0.04, 0.03, 0.5], "holm") == pytest.approx([0.04, 0.09, 0.09, 0.5])
    assert sg.adjust([0.01, 0.04, 0.03, 0.5], "bonferroni") == pytest.approx([0.04, 0.16, 0.12, 1.0])
    assert sg.adjust([0.3, 0.6], "holm") == pytest.approx([0.6, 0.6])
    assert sg.adjust([0.2], "none") == [0.2]
    assert [sg.stars(p) for p in (0.0005, 0.005, 0.03, 0.2, None)] == ["***", "**", "*", "", ""]
    with pytest.raises(ValueError, match="holm"):
        sg.adjust([0.1], "sidak")


def test_effect_sizes():
    rng = np.random.default_rng(11)
    a = rng.random(40)
    b = a + rng.normal(0.2, 0.2, 40)
    d = b - a
    e = sg.effect_sizes(a, b, n_boot=2000, seed=0)
    assert e["diff"] == pytest.approx(d.mean())
    assert e["d_z"] == pytest.approx(d.mean() / d.std(ddof=1))
    assert e["ci"][0] < e["diff"] < e["ci"][1] and e["d_z_ci"][0] < e["d_z"] < e["d_z_ci"][1]
    assert sg.effect_sizes(a, a)["d_z"] is None


def test_compare_corrects_per_metric_across_comparisons():
    rng = np.random.default_rng(2)
    base = {"m": rng.random(12), "n": rng.random(12)}
    runs = {"base": base, "r1": {"m": base["m"] + 0.3, "n": rng.random(12)},
            "r2": {"m": base["m"] + rng.normal(0, 0.1, 12), "n": rng.random(12)}}
    out = sg.compare(runs, n_resamples=5000)
    assert out["baseline"] == "base" and [(c["a"], c["b"]) for c in out["comparisons"]] == [("base", "r1"), ("base", "r2")]
    for metric in ("m", "n"):
        raw = [c["metrics"][metric]["p_permutation"] for c in out["comparisons"]]
        adj = [c["metrics"][metric]["p"] for c in out["comparisons"]]
        assert adj == pytest.approx(sg.adjust(raw, "holm"))
        for c in out["comparisons"]:
            row = c["metrics"][metric]
            assert row["p_permutation"] == pytest.approx(enumerated_permutation_p(runs["base"][metric], runs[c["b"]][metric]))
            assert row["stars"] == sg.stars(row["p"])
    assert out["comparisons"][0]["metrics"]["m"]["stars"] == "***"  # +0.3 on all 12: p = 2/4096 x 2 (Holm) < 0.001
    every = sg.compare(runs, pairs="all", correction="bonferroni", test="t", n_resamples=200)
    assert len(every["comparisons"]) == 3
    row = every["comparisons"][2]["metrics"]["n"]
    assert row["p"] == pytest.approx(min(1.0, 3 * row["p_t"]))


# ---------------------------------------------------------------- the CLI


def _ctx(pid):
    return {"id": pid, "title": "", "text": pid, "score": 0.0}


def _runs(tmp_path):
    """Twelve questions (m = 2). Run A covers both sides of q0..q2; B of q0..q9; C of q0..q3."""
    gold, runs = [], {"A": [], "B": [], "C": []}
    for i in range(12):
        q = f"q{i}"
        gold += [{"question_id": q, "passage_id": f"{q}y", "perspective": 0},
                 {"question_id": q, "passage_id": f"{q}n", "perspective": 1}]
        for name, covers in (("A", 3), ("B", 10), ("C", 4)):
            ids = [f"{q}y", f"{q}n"] if i < covers else [f"{q}y", f"{q}f"]
            runs[name].append({"id": q, "question": "?", "perspectives": ["yes", "no"],
                               "ctxs": [_ctx(p) for p in ids + [f"{q}f2", f"{q}f3", f"{q}f4"]]})
    paths = {}
    for name, entries in runs.items():
        paths[name] = tmp_path / f"{name}.jsonl"
        paths[name].write_text("".join(json.dumps(e) + "\n" for e in entries))
    g = tmp_path / "gold.jsonl"
    g.write_text("".join(json.dumps(r) + "\n" for r in gold))
    return g, paths


def test_cli_compare_several_runs(tmp_path, capsys):
    gold, p = _runs(tmp_path)
    rc = main(["evaluate", "--run", str(p["A"]), "--gold", str(gold), "--compare", str(p["B"]), str(p["C"]),
               "--json", "--bootstrap", "200"])
    out = capsys.readouterr().out
    assert rc == 0 and len(out.splitlines()) == 1
    res = json.loads(out)
    assert "compare" not in res  # the single-run block is for one RUN2 only
    sig = res["significance"]
    assert sig["correction"] == "holm" and sig["test"] == "permutation" and sig["baseline"] == str(p["A"])
    b, c = sig["comparisons"]
    assert (b["a"], b["b"], c["b"]) == (str(p["A"]), str(p["B"]), str(p["C"]))
    # MRecall@5: B - A = 7 of 12 questions gained, none lost: exact sign-flip p = 2 / 2^7
    row = b["metrics"]["mrecall@5"]
    assert row["diff"] == pytest.approx(7 / 12) and (row["wins"], row["losses"], row["ties"]) == (7, 0, 5)
    assert row["p_permutation"] == pytest.approx(2 / 2 ** 7)
    crow = c["metrics"]["mrecall@5"]
    assert crow["p_permutation"] == pytest.approx(1.0)  # one question gained: both sign patterns as extreme
    assert [row["p"], crow["p"]] == pytest.approx(sg.adjust([row["p_permutation"], crow["p_permutation"]]))
    assert row["stars"] == "*"
    assert b["metrics"]["strecall@5"]["diff"] == pytest.approx(7 / 24)
    for name in ("alpha_ndcg@5", "err_ia@10", "p_ia@5", "precision@5"):
        assert name in b["metrics"]
    # the same command gives the same report
    main(["evaluate", "--run", str(p["A"]), "--gold", str(gold), "--compare", str(p["B"]), str(p["C"]),
          "--json", "--bootstrap", "200"])
    assert json.loads(capsys.readouterr().out)["significance"] == sig


def test_cli_single_compare_keeps_the_compare_block(tmp_path, capsys):
    gold, p = _runs(tmp_path)
    rc = main(["evaluate", "--run", str(p["A"]), "--gold", str(gold), "--compare", str(p["B"]), "--json",
               "--correction", "bonferroni", "--test", "t"])
    res = json.loads(capsys.readouterr().out)
    assert rc == 0 and res["compare"]["direction"] == "run2 - run"
    m = res["compare"]["metrics"]["mrecall@5"]
    assert m["diff"] == pytest.approx(7 / 12) and m["p_value"] == m["p_permutation"]
    assert m["ci"][0] <= m["diff"] <= m["ci"][1]
    assert res["significance"]["comparisons"][0]["metrics"]["mrecall@5"]["p"] == m["p_t"]  # one comparison


def test_cli_compare_bad_input(tmp_path, capsys):
    gold, p = _runs(tmp_path)
    rc = main(["evaluate", "--run", str(p["A"]), "--gold", str(gold), "--compare", str(p["B"]), str(p["B"])])
    err = capsys.readouterr().err
    assert rc == 2 and "given twice" in err and len(err.splitlines()) == 1
    rc = main(["evaluate", "--run", str(p["A"]), "--gold", str(gold), "--compare", str(p["B"]), "--permutations", "0"])
    err = capsys.readouterr().err
    assert rc == 2 and "--permutations" in err
