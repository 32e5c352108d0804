"""Measures by name (``berds_core.eval.measures``): one vocabulary, read in every spelling the studio
has printed and in ``ir_measures``' own, printed under today's keys; ``berds evaluate --measures``."""
from __future__ import annotations

import json

import ir_measures
import numpy as np
import pytest

from berds_core.cli import main
from berds_core.errors import InputError
from berds_core.eval.diversity import measures as ndeval_by_key
from berds_core.eval.evaluation import scores
from berds_core.eval.report import summarize
from berds_core.eval.measures import Measure, label_measures, ndeval_measures, parse_measures

from test_evaluate_cli import files  # noqa: F401  (the fixture)


def evaluate(capsys, *argv):
    code = main(["evaluate", *map(str, argv), "--json", "--quiet"])
    out, err = capsys.readouterr()
    return code, (json.loads(out) if code == 0 else None), err

SPELLINGS = {  # every spelling -> (ir_measures name, printed key, page label)
    "MRecall@5": ("MRecall@5", "mrecall@5", "MRecall@5"),
    "mrecall@5": ("MRecall@5", "mrecall@5", "MRecall@5"),
    "P@5": ("P@5", "precision@5", "Precision@5"),
    "precision@10": ("P@10", "precision@10", "Precision@10"),
    "Precision@1": ("P@1", "precision@1", "Precision@1"),
    "precision_at_1": ("P@1", "precision@1", "Precision@1"),
    "alpha_nDCG@10": ("alpha_nDCG@10", "alpha_ndcg@10", "α-nDCG@10"),
    "alpha_ndcg@10": ("alpha_nDCG@10", "alpha_ndcg@10", "α-nDCG@10"),
    "α-nDCG@10": ("alpha_nDCG@10", "alpha_ndcg@10", "α-nDCG@10"),
    "alpha_nDCG(alpha=0.5)@10": ("alpha_nDCG@10", "alpha_ndcg@10", "α-nDCG@10"),
    "alpha_nDCG(alpha=0.3)@10": ("alpha_nDCG(alpha=0.3)@10", "alpha_ndcg@10", "α-nDCG@10"),
    "ERR_IA@10": ("ERR_IA@10", "err_ia@10", "ERR-IA@10"),
    "err_ia@5": ("ERR_IA@5", "err_ia@5", "ERR-IA@5"),
    "ERR-IA@5": ("ERR_IA@5", "err_ia@5", "ERR-IA@5"),
    "P_IA@5": ("P_IA@5", "p_ia@5", "P-IA@5"),
    "p_ia@5": ("P_IA@5", "p_ia@5", "P-IA@5"),
    "StRecall@5": ("StRecall@5", "strecall@5", "StRecall@5"),
    " strecall @ 5 ": ("StRecall@5", "strecall@5", "StRecall@5"),
}


@pytest.mark.parametrize("text", sorted(SPELLINGS))
def test_every_spelling_reads_to_one_measure(text):
    m = Measure.parse(text)
    assert (str(m), m.key, m.label) == SPELLINGS[text]
    assert Measure.parse(str(m)) == m
    if m.alpha is None:
        assert Measure.parse(m.key) == m


def test_ndeval_names_are_ir_measures_names():
    """``str(m)`` is what ``ir_measures.parse_measure`` reads, to the same object ndeval is given."""
    for m in ndeval_measures((5, 10, 20), alpha=0.3) + ndeval_measures((1,)):
        assert ir_measures.parse_measure(str(m)) == m.ir_measure()
    assert ndeval_by_key((5,), alpha=0.3)["alpha_ndcg@5"] == ir_measures.alpha_nDCG(alpha=0.3) @ 5


@pytest.mark.parametrize("bad, why", [
    ("nDCG@5", "unknown measure 'nDCG@5': choose from MRecall@k, P@k, alpha_nDCG@k"),
    ("MRecall", "unknown measure 'MRecall'"),
    ("MRecall@x", "the cutoff after '@' must be a whole number"),
    ("P@0", "the cutoff must be at least 1"),
    ("alpha_nDCG@21", "at most 20 (ndeval's limit)"),
    ("ERR_IA(alpha=0.3)@5", "only alpha_nDCG takes a parameter"),
    ("alpha_nDCG(alpha=7)@5", "alpha must be a number in [0, 1]"),
])
def test_unknown_or_malformed_is_one_line(bad, why):
    with pytest.raises(InputError) as err:
        parse_measures(f"MRecall@5,{bad}", source="--measures")
    text = str(err.value)
    assert "\n" not in text and text.startswith("--measures: ") and why in text


def test_lists_keep_order_once():
    ms = parse_measures("MRecall@5, P@5 mrecall@5,alpha_nDCG@10")
    assert [m.key for m in ms] == ["mrecall@5", "precision@5", "alpha_ndcg@10"]
    assert parse_measures(["P@1", "precision_at_1"]) == [Measure.parse("P@1")]


def test_keys_are_the_keys_files_had():
    """The printed keys are those of the files written before measures had names (the golden recordings)."""
    assert [m.key for m in label_measures((5, 10))] == ["mrecall@5", "precision@5", "mrecall@10", "precision@10",
                                                        "precision@1"]
    assert [m.key for m in ndeval_measures((5,))] == ["alpha_ndcg@5", "err_ia@5", "p_ia@5", "strecall@5"]


def test_scores_from_measures_match_the_kernels():
    rng = np.random.default_rng(0)
    mats = [rng.random((8, 3)) < 0.3 for _ in range(6)]
    got = scores(mats, (3,), measures=parse_measures("MRecall@3 P@2"))
    assert list(got) == ["mrecall@3", "precision@2"]
    assert got["precision@2"].tolist() == [float(L[:2].any(axis=1).sum()) / 2 for L in mats]
    summ = summarize({**scores(mats, (3,)), "alpha_ndcg@3": np.linspace(0, 1, 6)}, ["all"] * 6, (3,), n_boot=10)
    assert set(summ["at"]["3"]) == {"mrecall", "precision", "precision_at_1", "alpha_ndcg"}


def test_evaluate_measures_option(files, capsys):  # noqa: F811
    run, gold = files
    code, out, err = evaluate(capsys, "--run", run, "--gold", gold, "--measures", "MRecall@3,precision@2,P_IA@3",
                              "--per-question", "--bootstrap", "0")
    assert code == 0, err
    plain_code, plain, _ = evaluate(capsys, "--run", run, "--gold", gold, "--ks", "2,3", "--per-question",
                                    "--bootstrap", "0")
    assert list(out["measures"]) == ["mrecall@3", "precision@2", "p_ia@3"]
    assert out["measures"]["mrecall@3"] == pytest.approx(plain["at"]["3"]["mrecall"])
    assert out["measures"]["precision@2"] == pytest.approx(plain["at"]["2"]["precision"])
    assert out["measures"]["p_ia@3"] == pytest.approx(plain["at"]["3"]["p_ia"])
    assert set(out["per_question"][0]) == {"id", "mrecall@3", "precision@2", "p_ia@3"}
    assert "measures" not in plain  # without the option the output is what it was


def test_evaluate_unknown_measure_exits_2(files, capsys):  # noqa: F811
    run, gold = files
    code = main(["evaluate", "--run", str(run), "--gold", str(gold), "--measures", "MRecall@5,nDCG@10"])
    _, err = capsys.readouterr()
    assert code == 2
    assert err.strip().count("\n") == 0 and "unknown measure 'nDCG@10'" in err


def test_evaluate_measures_limit_the_tests(files, tmp_path, capsys):  # noqa: F811
    run, gold = files
    run2 = tmp_path / "run2.jsonl"
    run2.write_text(run.read_text())
    code, out, err = evaluate(capsys, "--run", run, "--gold", gold, "--compare", run2, "--bootstrap", "10",
                              "--permutations", "10", "--measures", "alpha_nDCG@3,MRecall@2")
    assert code == 0, err
    assert list(out["significance"]["comparisons"][0]["metrics"]) == ["alpha_ndcg@3", "mrecall@2"]
    assert list(out["compare"]["metrics"]) == ["alpha_ndcg@3", "mrecall@2"]
