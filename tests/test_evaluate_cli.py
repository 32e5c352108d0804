"""``berds evaluate``: hand-computed MRecall@k / Precision@k / Precision@1, including m > k."""
from __future__ import annotations

import json

import pytest

from berds_core.cli import main


def ctx(pid):
    return {"id": pid, "title": "", "text": f"text of {pid}", "score": 1.0}


# Five questions; gold says which perspective each passage supports.
#   q1: m=2, ranks a(0) b(-) c(1)        -> k=2 covers {0}: 0 ; k=3 covers {0,1}: 1
#   q2: m=3, ranks d(0) e(1) f(2)        -> k=2: m>k, 2 covered >= k: 1 ; k=3 all 3: 1
#   q3: m=3, ranks g(0) h(0)             -> k=2: m>k, 1 covered < 2: 0 ; k=3: 1 of 3: 0
#   q4: m=2, ranks i(-) j(1)             -> 0 at both k
#   q5: m=2, ranks l(0,1) n(-)           -> 1 at both k
RUN = [
    {"id": "q1", "question": "Q1?", "perspectives": ["A", "B"], "ctxs": [ctx("a"), ctx("b"), ctx("c")]},
    {"id": "q2", "question": "Q2?", "perspectives": ["A", "B", "C"], "ctxs": [ctx("d"), ctx("e"), ctx("f")]},
    {"id": 3, "question": "Q3?", "perspectives": ["A", "B", "C"], "ctxs": [ctx("g"), ctx("h")]},
    {"id": "q4", "question": "Q4?", "perspectives": ["A", "B"], "ctxs": [ctx("i"), ctx("j")]},
    {"id": "q5", "question": "Q5?", "perspectives": ["A", "B"], "ctxs": [ctx("l"), ctx("n")]},
]
GOLD = [
    ("q1", "a", 0), ("q1", "c", 1),
    ("q2", "d", 0), ("q2", "e", 1), ("q2", "f", 2),
    (3, "g", 0), (3, "h", 0),
    ("q4", "j", 1),
    ("q5", "l", 0), ("q5", "l", 1),
    ("q1", "d", 1),  # a label for a passage q1 did not retrieve: no effect
]

# Per question (mrecall, precision@k, precision@1); the CLI reports the means.
EXPECTED = {
    2: dict(mrecall=(0 + 1 + 0 + 0 + 1) / 5, precision=(1 / 2 + 1 + 1 + 1 / 2 + 1 / 2) / 5,
            precision_at_1=(1 + 1 + 1 + 0 + 1) / 5),
    3: dict(mrecall=(1 + 1 + 0 + 0 + 1) / 5, precision=(2 / 3 + 1 + 2 / 3 + 1 / 3 + 1 / 3) / 5,
            precision_at_1=(1 + 1 + 1 + 0 + 1) / 5),
    1: dict(mrecall=(1 + 1 + 1 + 0 + 1) / 5, precision=(1 + 1 + 1 + 0 + 1) / 5,
            precision_at_1=(1 + 1 + 1 + 0 + 1) / 5),
}


@pytest.fixture
def files(tmp_path):
    run = tmp_path / "run.jsonl"
    run.write_text("".join(json.dumps(e) + "\n" for e in RUN))
    gold = tmp_path / "gold.jsonl"
    gold.write_text("".join(json.dumps({"question_id": q, "passage_id": p, "perspective": j}) + "\n"
                            for q, p, j in GOLD))
    return run, gold


def evaluate(capsys, *argv):
    code = main(["evaluate", *map(str, argv)])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("k", [1, 2, 3])
def test_evaluate_hand_computed(files, capsys, k):
    run, gold = files
    code, out, _ = evaluate(capsys, "--run", run, "--gold", gold, "--k", k, "--json", "--quiet")
    assert code == 0
    lines = out.splitlines()
    assert len(lines) == 1
    res = json.loads(lines[0])
    assert {"n", "mrecall", "precision", "precision_at_1"} <= set(res)  # issue 2's keys (more may follow)
    assert res["n"] == 5
    for key, val in EXPECTED[k].items():
        assert res[key] == pytest.approx(val), key


def top(out: str) -> dict:
    assert len(out.splitlines()) == 1
    res = json.loads(out)
    return {key: res[key] for key in ("n", "mrecall", "precision", "precision_at_1")}


def test_m_greater_than_k_rule(tmp_path, capsys):
    """m=4 > k=2: two distinct perspectives in the top 2 are enough; covering all four is impossible."""
    run = tmp_path / "run.jsonl"
    run.write_text(json.dumps({"id": "x", "question": "Q?", "perspectives": list("ABCD"),
                               "ctxs": [ctx("p"), ctx("q"), ctx("r")]}) + "\n")
    gold = tmp_path / "gold.jsonl"
    gold.write_text('{"question_id": "x", "passage_id": "p", "perspective": 3}\n'
                    '{"question_id": "x", "passage_id": "q", "perspective": 1}\n')
    code, out, _ = evaluate(capsys, "--run", run, "--gold", gold, "--k", 2, "--json")
    assert code == 0 and top(out) == {"n": 1, "mrecall": 1.0, "precision": 1.0, "precision_at_1": 1.0}
    code, out, _ = evaluate(capsys, "--run", run, "--gold", gold, "--k", 3, "--json")
    assert top(out)["mrecall"] == 0.0  # m=4 > k=3 needs 3 distinct: only 2 covered
    assert top(out)["precision"] == pytest.approx(2 / 3)


def test_evaluate_with_stored_judge_labels(tmp_path, capsys):
    run = tmp_path / "run.jsonl"
    entry = {"id": "x", "question": "Q?", "perspectives": ["A", "B"], "ctxs": [ctx("p"), ctx("q")],
             "j-preds": [[True, False], [False, True]]}
    run.write_text(json.dumps(entry) + "\n")
    code, out, _ = evaluate(capsys, "--run", run, "--labels", "j", "--k", 2, "--json")
    assert code == 0 and top(out) == {"n": 1, "mrecall": 1.0, "precision": 1.0, "precision_at_1": 1.0}
    code, out, err = evaluate(capsys, "--run", run, "--labels", "other", "--json")
    assert code == 2 and out == "" and "other-preds" in err and len(err.strip().splitlines()) == 1


def test_evaluate_plain_output(files, capsys):
    run, gold = files
    code, out, _ = evaluate(capsys, "--run", run, "--gold", gold, "--k", 2)
    assert code == 0 and "mrecall\t0.4000" in out.splitlines()


@pytest.mark.parametrize("gold_text,needle", [
    ('{"question_id": "q1", "passage_id": "a", "perspective": 0}\n{"question_id": "q1", "passage_id": "a"\n',
     "gold.jsonl:2: malformed JSON"),
    ('{"question_id": "q1", "passage_id": "a", "perspective": "zero"}\n', "gold.jsonl:1: field 'perspective'"),
    ('{"passage_id": "a", "perspective": 0}\n', "gold.jsonl:1: field 'question_id': missing"),
    ("", "gold.jsonl: no gold labels"),
])
def test_evaluate_bad_gold(files, capsys, gold_text, needle):
    run, gold = files
    gold.write_text(gold_text)
    code, out, err = evaluate(capsys, "--run", run, "--gold", gold, "--json")
    assert code == 2 and out == ""
    assert len(err.strip().splitlines()) == 1 and needle in err


@pytest.mark.parametrize("run_text,needle", [
    ('{"id": "q1", "question": "Q?", "ctxs": []}\n', "run.jsonl:1: field 'perspectives': missing"),
    ('{"id": "q1", "question": "Q?", "perspectives": [], "ctxs": []}\n', "run.jsonl:1: field 'perspectives'"),
    ('{"id": "q1", "question": "Q?", "perspectives": ["A"], "ctxs": [{"id": "a"}]}\n', "run.jsonl:1: field 'ctxs'"),
    ("not json\n", "run.jsonl:1: malformed JSON"),
])
def test_evaluate_bad_run(files, capsys, run_text, needle):
    run, gold = files
    run.write_text(run_text)
    code, out, err = evaluate(capsys, "--run", run, "--gold", gold, "--json")
    assert code == 2 and out == ""
    assert len(err.strip().splitlines()) == 1 and needle in err


def test_evaluate_bad_k(files, capsys):
    run, gold = files
    code, out, err = evaluate(capsys, "--run", run, "--gold", gold, "--k", 0, "--json")
    assert code == 2 and out == "" and "k must be at least 1" in err
