"""DebateQA files, answer coverage with a real judge, the answer-eval table, D.A. on a tiny hf model, and the
pd/da/answer-eval verbs end to end."""
import json
import math

import numpy as np
import pytest

from berds_core.answers import answer_matrix, da_messages, dispute_awareness, load_answers, load_debateqa
from berds_core.answers.coverage import evaluate_answers, retrieval_matrix
from berds_core.answers.rows import scoring_rows
from berds_core.cli import main
from berds_core.datasets import load_questions
from berds_core.errors import InputError
from berds_core.generators.hf import HFGenerator
from berds_core.eval.measures import mrecall_at_k
from tiny_models import make_tiny_causal_lm

DQA = [{"id": 7, "question": "Should homework be banned?", "partial_answers": [
    {"point_of_view": "Homework should be banned.", "explanation": "It harms sleep and family time."},
    {"point_of_view": "Homework should stay.", "explanation": "It builds practice."}]},
    {"id": "x2", "question": "Is tax good?", "partial_answers": [
        {"point_of_view": "Tax is good.", "explanation": "It pays for schools."}]}]


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    return make_tiny_causal_lm(tmp_path_factory.mktemp("ans"), arch="llama")


def write_jsonl(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_debateqa_loader_and_format_guess(tmp_path):
    path = write_jsonl(tmp_path / "dqa.jsonl", DQA)
    qs, refs = load_debateqa(path)
    assert [q.id for q in qs] == ["7", "x2"]
    assert qs[0].perspectives == ["Homework should be banned.", "Homework should stay."]
    assert refs["7"] == ["Homework should be banned. It harms sleep and family time.",
                         "Homework should stay. It builds practice."]
    assert [q.perspectives for q in load_questions(path)] == [q.perspectives for q in qs]  # guessed: debateqa
    bad = write_jsonl(tmp_path / "bad.jsonl", [DQA[0], {"id": 3, "question": "Q?", "partial_answers": [
        {"point_of_view": "", "explanation": "e"}]}])
    with pytest.raises(InputError) as e:
        load_debateqa(bad)
    assert str(e.value) == f"{bad}:2: field 'partial_answers[0].point_of_view': must not be empty"
    with pytest.raises(InputError, match=r":1: field 'partial_answers': expected a non-empty list"):
        load_debateqa(write_jsonl(tmp_path / "b2.jsonl", [{"id": 1, "question": "Q?", "partial_answers": []}]))


def test_answers_file_errors_name_line_and_field(tmp_path):
    p = write_jsonl(tmp_path / "a.jsonl", [{"id": 1, "generation": "ok"}, {"id": 2, "generation": 5}])
    with pytest.raises(InputError, match=r"a.jsonl:2: field 'generation': expected str, got int"):
        load_answers(p)
    p = write_jsonl(tmp_path / "b.jsonl", [{"id": 1, "generation": "ok"}, {"id": 1, "generation": "again"}])
    with pytest.raises(InputError, match=r"b.jsonl:2: field 'id': duplicate id '1'"):
        load_answers(p)
    q = write_jsonl(tmp_path / "dqa.jsonl", DQA)
    p = write_jsonl(tmp_path / "c.jsonl", [{"id": "nope", "generation": "x"}])
    with pytest.raises(InputError, match=r"c.jsonl:1: field 'id': question 'nope' is not in the questions file"):
        scoring_rows(p, q)
    with pytest.raises(InputError, match=r"c.jsonl:1: field 'question': missing \(give --questions"):
        scoring_rows(p)


@pytest.mark.slow
def test_answer_coverage_reads_the_answer_in_windows_with_the_real_judge():
    from berds_core.judges import get_judge

    judge = get_judge("embedded")
    persp = ["Homework should be banned because it harms sleep.", "Homework builds practice and should stay."]
    answer = " ".join(["Homework harms the sleep of pupils and should be banned."] * 12 +
                      ["Others say homework builds practice and should stay."] * 12)
    windows = [" ".join(answer.split()[i:i + 100]) for i in range(0, len(answer.split()), 100)]
    assert len(windows) == 3
    A = answer_matrix(judge, answer, persp)
    _, labels = judge.predict([(w, p) for w in windows for p in persp])
    assert A.shape == (1, 2) and A[0].tolist() == labels.reshape(3, 2).any(axis=0).tolist()


def test_hf_dispute_awareness_is_the_yes_no_softmax_after_the_few_shot_chat(tiny):
    import torch

    gen = HFGenerator(str(tiny), device="cpu")
    q, a = "Should school be free ?", "Some people say yes and some say no ."
    probs, labels = dispute_awareness(gen, [q, "Is tax good ?"], [a, "Tax is good ."])
    text = gen.render(da_messages(q, a))
    assert text.endswith("Answer Yes or No. [/INST]") and text.count("[INST]") == 5  # 4 examples + the answer
    ids = gen.tokenizer(text, return_tensors="pt", add_special_tokens=False)["input_ids"]
    with torch.no_grad():
        logits = gen.model(input_ids=ids).logits[0, -1]
    lp = torch.log_softmax(logits, -1)
    yes, no = (torch.logsumexp(lp[gen.token_ids(w)], 0).item() for w in ("Yes", "No"))
    assert probs[0] == pytest.approx(1 / (1 + math.exp(no - yes)), abs=1e-5)
    assert labels.tolist() == (probs >= 0.5).tolist()


def test_pd_cli_on_a_debateqa_answers_file(tiny, tmp_path, capsys):
    from berds_core.answers import perspective_diversity

    q = write_jsonl(tmp_path / "dqa.jsonl", DQA)
    a = write_jsonl(tmp_path / "gen.jsonl", [{"id": "7", "generation": "Homework should stay ."},
                                            {"id": "x2", "generation": "Tax is good for school ."}])
    out = tmp_path / "pd.jsonl"
    assert main(["pd", "--answers", str(a), "--questions", str(q), "--model", f"hf:{tiny}", "--device", "cpu",
                 "--out", str(out), "--json"]) == 0
    res = json.loads(capsys.readouterr().out)
    _, refs = load_debateqa(q)
    by_hand = perspective_diversity(HFGenerator(str(tiny), device="cpu"), ["Homework should stay .",
                                    "Tax is good for school ."], [refs["7"], refs["x2"]])
    assert res["mode"] == "defined" and res["n"] == 2
    assert res["pd_sum"] == pytest.approx(np.mean([r["pd_sum"] for r in by_hand]), rel=1e-5)
    assert res["pd_mean"] == pytest.approx(np.mean([r["pd_mean"] for r in by_hand]), rel=1e-5)
    per = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(per[0]["ppl"]) == 2 and len(per[1]["ppl"]) == 1  # one perplexity per partial answer
    assert main(["pd", "--answers", str(a), "--questions", str(q), "--model", f"hf:{tiny}", "--compat", "released",
                 "--json"]) == 0
    rel = json.loads(capsys.readouterr().out)
    assert rel["mode"] == "released" and rel["pd_sum"] < res["pd_sum"]  # divided by more tokens
    assert main(["pd", "--answers", str(a), "--model", f"hf:{tiny}"]) == 2  # no questions: one line
    assert "field 'question': missing (give --questions" in capsys.readouterr().err


@pytest.mark.slow
def test_answer_eval_table_puts_retrieval_and_answer_metrics_side_by_side(tiny, tmp_path, capsys):
    persp = ["Homework should be banned because it harms sleep.", "Homework builds practice and should stay."]
    ctxs = [{"id": "a", "title": "", "text": "Homework harms sleep; ban it.", "score": 2.0},
            {"id": "b", "title": "", "text": "Practice from homework helps pupils.", "score": 1.0}]
    rows = [{"id": "q1", "question": "Should homework be banned?", "perspectives": persp, "k": 2, "ctxs": ctxs,
             "generation": "Homework harms sleep and should be banned, but it also builds practice."},
            {"id": "q2", "question": "Should tax rise?", "perspectives": ["Tax should rise.", "Tax should fall."],
             "k": 2, "ctxs": [dict(c, id=c["id"] + "2") for c in ctxs], "generation": "Tax should rise."}]
    a1 = write_jsonl(tmp_path / "plain.jsonl", rows)
    a2 = write_jsonl(tmp_path / "diverse.jsonl", [dict(r, generation=r["generation"] + " Others disagree.")
                                                  for r in rows])
    gold = write_jsonl(tmp_path / "gold.jsonl", [{"question_id": "q1", "passage_id": "a", "perspective": 0},
                                                 {"question_id": "q1", "passage_id": "b", "perspective": 1},
                                                 {"question_id": "q2", "passage_id": "a2", "perspective": 0}])
    argv = ["answer-eval", "--answers", str(a1), str(a2), "--gold", str(gold), "--answer-judge", "embedded",
            "--pd-model", f"hf:{tiny}", "--da-model", f"hf:{tiny}", "--device", "cpu", "--json",
            "--bootstrap", "50", "--per-question", str(tmp_path / "pq.jsonl")]
    assert main(argv) == 0
    res = json.loads(capsys.readouterr().out)
    table = {r["configuration"]: r for r in res["table"]}
    assert set(table) == {"plain", "diverse"}
    assert table["plain"]["retrieval_mrecall"] == 0.5  # q1 covers both with gold, q2 only one
    for key in ("answer_mrecall", "answer_coverage", "pd_sum", "pd_mean", "da"):
        assert table["plain"][key] is not None
    # the answer columns are the judge's reading of each answer, by hand
    from berds_core.judges import get_judge

    judge = get_judge("embedded")
    cov = [answer_matrix(judge, r["generation"], r["perspectives"]) for r in rows]
    assert table["plain"]["answer_mrecall"] == pytest.approx(np.mean([mrecall_at_k(A, 2) for A in cov]))
    assert table["plain"]["answer_coverage"] == pytest.approx(np.mean([A.mean() for A in cov]))
    s = res["summaries"]["plain"]["pd_sum"]
    assert s["lo"] <= s["mean"] <= s["hi"] and s["n"] == 2
    pq = [json.loads(line) for line in (tmp_path / "pq.jsonl").read_text().splitlines()]
    assert len(pq) == 4 and {p["configuration"] for p in pq} == {"plain", "diverse"}
    # nothing to compute is a one-line error
    assert main(["answer-eval", "--answers", str(a1)]) == 2
    assert "nothing to compute" in capsys.readouterr().err


@pytest.mark.slow
def test_retrieval_matrix_uses_stored_predictions_or_the_judge():
    from berds_core.judges import get_judge, judge_run

    judge = get_judge("embedded")
    entry = {"id": "q", "question": "Which animals make good pets?", "perspectives": ["Cats are good pets.", "Dogs are good pets."],
             "ctxs": [{"id": str(i), "title": "", "text": t, "score": 1.0} for i, t in
                      enumerate(["Cats make good pets.", "Dogs make good pets.", "Rain today."])]}
    fresh = retrieval_matrix(entry, 2, judge=judge)
    judge_run([entry], judge, progress=False)
    stored = retrieval_matrix(entry, 2, judge=judge)
    assert fresh.shape == stored.shape == (2, 2) and (fresh == stored).all()
    # judged fresh or from the stored run, passages off the question's topic support nothing alike
    off = dict(entry, question="How do volcanoes form?", ctxs=[dict(c) for c in entry["ctxs"]])
    for c in off["ctxs"]:
        c.pop(judge.name + "-preds", None), c.pop(judge.name + "-probs", None)
    assert not retrieval_matrix(off, 2, judge=judge).any()
