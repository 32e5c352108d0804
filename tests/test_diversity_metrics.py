"""TREC diversity measures: hand-computed α-nDCG / ERR-IA / P-IA / StRecall, `berds evaluate --json`
equal to ir_measures on the files `berds export-trec` writes, the shared pool, bad input."""
from __future__ import annotations

import json
from math import log2

import pytest

from berds_core.cli import main

ir_measures = pytest.importorskip("ir_measures")
pytest.importorskip("pyndeval")


def ctx(pid):
    return {"id": pid, "title": "", "text": f"text of {pid}", "score": 0.0}


# ---------------------------------------------------------------- a hand-made run scored with gold labels
#
# ndeval with binary relevance and alpha = 0.5:
#   alpha-DCG@k  = sum_r sum_s rel(d_r, s) * 0.5^(docs ranked before r relevant to s) / log2(r + 1),
#                  normalised by the greedy ideal ranking of the relevant passages in the qrels;
#   ERR-IA@k     = mean_s ERR_s@k / E_k, ERR_s@k = sum_r 0.5 * 0.5^(relevant to s before r) / r
#                  (a relevant passage stops the reader with probability 0.5), E_k = sum_{r<=k} 0.5^r / r
#                  (E_5 = 0.5 + 0.125 + 0.041667 + 0.015625 + 0.00625 = 0.688542);
#   P-IA@k       = mean_s (passages relevant to s in the top k) / k;
#   StRecall@k   = share of the subtopics *in the qrels with a relevant passage* covered in the top k.
#
# q1: m = 2, ranks a(P0) b(-) c(P1) d(P0) e(-); gold also labels x(P1), not retrieved.
#   DCG  = 1/log2(2) + 1/log2(4) + 0.5/log2(5)                     = 1.5 + 0.215338 = 1.715338
#   IDCG = (a, c, d, x): 1 + 1/log2(3) + 0.5/log2(4) + 0.5/log2(5) = 2.096268
#   alpha-nDCG@5 = 0.818282; StRecall@5 = 2/2 = 1; P-IA@5 = (2/5 + 1/5) / 2 = 0.3
#   ERR: P0 = 0.5/1 + 0.5 * 0.5/4 = 0.5625, P1 = 0.5/3 = 0.166667 -> mean 0.364583 / 0.688542 = 0.529501
#   MRecall@5 = 1
# q2: m = 3, ranks f(P0,P1) g(P0) h i j; gold also labels y(P2), not retrieved.
#   DCG  = 2/log2(2) + 0.5/log2(3)                                  = 2.315465
#   IDCG = (f, y, g): 2 + 1/log2(3) + 0.5/log2(4)                  = 2.880930
#   alpha-nDCG@5 = 0.803721; StRecall@5 = 2/3; P-IA@5 = (2/5 + 1/5 + 0) / 3 = 0.2
#   ERR: P0 = 0.5 + 0.5 * 0.5/2 = 0.625, P1 = 0.5, P2 = 0 -> 1.125/3 = 0.375 / 0.688542 = 0.544629
#   MRecall@5 = 0 (P2 missing)
# q3: m = 2, ranks z(P0) l(-); no passage anywhere supports P1, so P1 is no subtopic for ndeval
#   (the pooling caveat): alpha-nDCG@5 = 1/1 = 1; StRecall@5 = 1/1 = 1 while MRecall@5 = 0;
#   P-IA@5 = (1/5) / 1 = 0.2; ERR-IA@5 = 0.5 / 0.688542 = 0.726172
RUN = [
    {"id": "q1", "question": "Q1?", "perspectives": ["A", "B"], "ctxs": [ctx(p) for p in "abcde"]},
    {"id": "q2", "question": "Q2?", "perspectives": ["A", "B", "C"], "ctxs": [ctx(p) for p in "fghij"]},
    {"id": "q3", "question": "Q3?", "perspectives": ["A", "B"], "ctxs": [ctx("z"), ctx("l")]},
]
GOLD = [("q1", "a", 0), ("q1", "c", 1), ("q1", "d", 0), ("q1", "x", 1),
        ("q2", "f", 0), ("q2", "f", 1), ("q2", "g", 0), ("q2", "y", 2),
        ("q3", "z", 0)]
E5 = 0.5 + 0.125 + 0.5 ** 3 / 3 + 0.5 ** 4 / 4 + 0.5 ** 5 / 5
PER_Q = {
    "alpha_ndcg": [(1.5 + 0.5 / log2(5)) / (1 + 1 / log2(3) + 0.25 + 0.5 / log2(5)),
                   (2 + 0.5 / log2(3)) / (2 + 1 / log2(3) + 0.25), 1.0],
    "err_ia": [(0.5625 + 0.5 / 3) / 2 / E5, (0.625 + 0.5 + 0.0) / 3 / E5, 0.5 / E5],
    "p_ia": [0.3, 0.2, 0.2],
    "strecall": [1.0, 2 / 3, 1.0],
}


def test_hand_values_are_what_was_worked_out():
    assert PER_Q["alpha_ndcg"][0] == pytest.approx(0.818282, abs=1e-6)
    assert PER_Q["alpha_ndcg"][1] == pytest.approx(0.803721, abs=1e-6)
    assert PER_Q["err_ia"] == pytest.approx([0.529501, 0.544629, 0.726172], abs=1e-6)


def _write(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


@pytest.fixture
def files(tmp_path):
    run = _write(tmp_path / "run.jsonl", RUN)
    gold = _write(tmp_path / "gold.jsonl", [{"question_id": q, "passage_id": p, "perspective": j} for q, p, j in GOLD])
    return run, gold


def cli(capsys, *argv):
    code = main([*map(str, argv)])
    cap = capsys.readouterr()
    return code, cap.out, cap.err


def ir_measures_on_files(run_file, qrels_file, k=5):
    from ir_measures import ERR_IA, P_IA, StRecall, alpha_nDCG

    ms = {"alpha_ndcg": alpha_nDCG(alpha=0.5) @ k, "err_ia": ERR_IA @ k, "p_ia": P_IA @ k, "strecall": StRecall @ k}
    per_q = {}
    for m in ir_measures.iter_calc(list(ms.values()), ir_measures.read_trec_qrels(str(qrels_file)),
                                   ir_measures.read_trec_run(str(run_file))):
        name = next(n for n, x in ms.items() if x == m.measure)
        per_q.setdefault(name, {})[m.query_id] = m.value
    return per_q


def test_evaluate_json_equals_hand_values_and_ir_measures_on_exported_files(files, capsys, tmp_path):
    run, gold = files
    code, out, _ = cli(capsys, "evaluate", "--run", run, "--gold", gold, "--json", "--per-question", "--bootstrap", 50)
    assert code == 0 and len(out.splitlines()) == 1
    res = json.loads(out)
    for name, vals in PER_Q.items():
        assert res["at"]["5"][name] == pytest.approx(sum(vals) / 3, abs=1e-9), name
        assert res[name] == pytest.approx(sum(vals) / 3, abs=1e-9)  # top-level keys are for --k 5
        assert [q[f"{name}@5"] for q in res["per_question"]] == pytest.approx(vals, abs=1e-9)
        lo, hi = res["ci"]["5"][name]
        assert lo <= res["at"]["5"][name] <= hi
    assert res["mrecall"] == pytest.approx(1 / 3)  # q1 only: StRecall and MRecall differ by design
    assert res["diversity"]["alpha"] == 0.5 and res["diversity"]["ks"] == [5, 10]

    out_dir = tmp_path / "trec"
    code, out, _ = cli(capsys, "export-trec", "--run", run, "--gold", gold, "--out-dir", out_dir, "--json")
    assert code == 0
    exp = json.loads(out)
    run_file, qrels_file = exp["runs"][0]["file"], exp["qrels"]
    lines = open(run_file).read().splitlines()
    assert lines[0] == "q1 Q0 a 1 5 run" and lines[4] == "q1 Q0 e 5 1 run" and len(lines) == 12
    qrels = open(qrels_file).read().splitlines()
    assert "q1 1 x 1" in qrels and "q1 0 x 0" in qrels and "q2 2 y 1" in qrels and "q3 1 z 0" in qrels
    assert exp["qrels_lines"] == len(qrels) == 2 * 6 + 3 * 6 + 2 * 2  # (passage, perspective) pairs of the pools
    theirs = ir_measures_on_files(run_file, qrels_file)
    for name, vals in PER_Q.items():
        assert [theirs[name][q] for q in ("q1", "q2", "q3")] == pytest.approx(vals, abs=1e-9), name
        assert res["at"]["5"][name] == pytest.approx(sum(theirs[name].values()) / 3, abs=1e-12)


def test_scores_ignore_the_retriever_score_and_keep_the_first_duplicate():
    from berds_core.eval.diversity import diversity_scores, scored_docs, subtopic_qrels

    # scores rise with rank (as after MMR/QE the retriever's scores do): the rank order still counts
    e = {"id": "q", "perspectives": ["A", "B"], "ctxs": [{"id": "n", "score": 0.1}, {"id": "y", "score": 9.0},
                                                        {"id": "n", "score": 50.0}]}
    gold = {"q": {"y": {0}, "w": {1}}}
    docs = scored_docs([e])
    assert [(d.doc_id, d.score) for d in docs] == [("n", 2.0), ("y", 1.0)]
    s = diversity_scores([e], subtopic_qrels([[e]], gold=gold), (1, 2))
    assert s["strecall@1"].tolist() == [0.0] and s["strecall@2"].tolist() == [0.5]
    # alpha-nDCG@2: DCG = 1/log2(3); ideal (y, w) = 1 + 1/log2(3)
    assert s["alpha_ndcg@2"][0] == pytest.approx((1 / log2(3)) / (1 + 1 / log2(3)))


def test_alpha_changes_alpha_ndcg_only(files, capsys):
    run, gold = files
    code, out, _ = cli(capsys, "evaluate", "--run", run, "--gold", gold, "--json", "--ndcg-alpha", "0.9",
                       "--bootstrap", 0)
    res = json.loads(out)
    # q1 with alpha 0.9: DCG = 1 + 0.5 + 0.1/log2(5); IDCG = 1 + 1/log2(3) + 0.1/2 + 0.1/log2(5)
    q1 = (1.5 + 0.1 / log2(5)) / (1 + 1 / log2(3) + 0.05 + 0.1 / log2(5))
    q2 = (2 + 0.1 / log2(3)) / (2 + 1 / log2(3) + 0.05)
    assert res["at"]["5"]["alpha_ndcg"] == pytest.approx((q1 + q2 + 1) / 3)
    assert res["at"]["5"]["strecall"] == pytest.approx(sum(PER_Q["strecall"]) / 3)


def test_k_above_20_reports_no_ndeval_measures(files, capsys):
    run, gold = files
    code, out, _ = cli(capsys, "evaluate", "--run", run, "--gold", gold, "--json", "--ks", "5,25", "--bootstrap", 0)
    res = json.loads(out)
    assert "alpha_ndcg" in res["at"]["5"] and "alpha_ndcg" not in res["at"]["25"]
    assert res["diversity"]["ks"] == [5]


# ---------------------------------------------------------------- judge labels and the shared pool
#
# Two runs judged by "j" (A in the question-level layout, B in the passage layout; P0, P1):
#   A: a(P0) b(-) ; B: c(P1) a(P0)
# A alone: the pool has only P0 (nothing A judged supports P1): StRecall@2 = 1/1, alpha-nDCG@2 = 1.
# Shared pool (A's and B's judged passages): P0 {a}, P1 {c}:
#   A: StRecall@2 = 1/2; alpha-nDCG@2 = 1 / (1 + 1/log2(3)) = 0.613147
#   B: StRecall@2 = 1;   alpha-nDCG@2 = 1.
JUDGED_A = [{"id": "q", "question": "Q?", "perspectives": ["A", "B"], "ctxs": [ctx("a"), ctx("b")],
             "j-preds": [[True, False], [False, False]]}]
JUDGED_B = [{"id": "q", "question": "Q?", "perspectives": ["A", "B"],  # verdicts inside each passage
             "ctxs": [{**ctx("c"), "j-preds": [False, True]}, {**ctx("a"), "j-preds": [True, False]}]}]


def test_shared_pool_for_judge_labels_matches_ir_measures(tmp_path, capsys):
    a = _write(tmp_path / "A.jsonl", JUDGED_A)
    b = _write(tmp_path / "B.jsonl", JUDGED_B)
    code, out, _ = cli(capsys, "evaluate", "--run", a, "--labels", "j", "--ks", "2", "--k", "2", "--json",
                       "--bootstrap", 0)
    alone = json.loads(out)
    assert alone["strecall"] == 1.0 and alone["alpha_ndcg"] == 1.0
    code, out, _ = cli(capsys, "evaluate", "--run", a, "--labels", "j", "--ks", "2", "--k", "2", "--json",
                       "--compare", b, "--bootstrap", 20, "--permutations", 100)
    assert code == 0
    res = json.loads(out)
    assert res["strecall"] == 0.5 and res["alpha_ndcg"] == pytest.approx(1 / (1 + 1 / log2(3)))
    row = res["significance"]["comparisons"][0]["metrics"]
    assert row["strecall@2"]["b"] == 1.0 and row["alpha_ndcg@2"]["b"] == pytest.approx(1.0)
    assert "shared" in res["diversity"]["pool"]

    code, out, _ = cli(capsys, "export-trec", "--run", a, b, "--labels", "j", "--out-dir", tmp_path / "t", "--json")
    exp = json.loads(out)
    assert [r["tag"] for r in exp["runs"]] == ["A", "B"]
    for r, run_res in zip(exp["runs"], ({"strecall": 0.5, "alpha_ndcg": res["alpha_ndcg"]},
                                        {"strecall": 1.0, "alpha_ndcg": 1.0})):
        theirs = ir_measures_on_files(r["file"], exp["qrels"], k=2)
        for name, val in run_res.items():
            assert theirs[name]["q"] == pytest.approx(val)
    assert sorted(open(exp["qrels"]).read().splitlines()) == sorted(
        ["q 0 a 1", "q 1 a 0", "q 0 b 0", "q 1 b 0", "q 0 c 0", "q 1 c 1"])


def test_export_trec_bad_input(tmp_path, capsys, files):
    run, gold = files
    spaced = _write(tmp_path / "spaced.jsonl", [{"id": "q 1", "question": "Q?", "perspectives": ["A"],
                                                 "ctxs": [ctx("a")]}])
    code, out, err = cli(capsys, "export-trec", "--run", spaced, "--gold", gold, "--out-dir", tmp_path / "o")
    assert code == 2 and out == "" and "spaced.jsonl" in err and "field 'id'" in err and len(err.splitlines()) == 1
    assert not (tmp_path / "o").exists()  # nothing written
    code, out, err = cli(capsys, "export-trec", "--run", run, "--labels", "nobody", "--out-dir", tmp_path / "o")
    assert code == 2 and "nobody-preds" in err and len(err.splitlines()) == 1
    other = _write(tmp_path / "other.jsonl", RUN[:2])
    code, out, err = cli(capsys, "export-trec", "--run", run, other, "--gold", gold, "--out-dir", tmp_path / "o")
    assert code == 2 and "other.jsonl" in err and "field 'id'" in err
    bad_gold = _write(tmp_path / "g.jsonl", [{"question_id": "q1", "passage_id": "x", "perspective": 5}])
    code, out, err = cli(capsys, "export-trec", "--run", run, "--gold", bad_gold, "--out-dir", tmp_path / "o")
    assert code == 2 and "g.jsonl" in err and "perspective" in err and len(err.splitlines()) == 1
