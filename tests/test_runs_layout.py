"""Judged runs in the BERDS authors' layout: ``ctx["<name>-preds"]`` inside each passage.

``berds evaluate --labels mistral`` on a hand-made file in the authors' layout
must equal their ``eval.py`` ``mrecall`` / ``precision`` (re-implemented here
independently from the spec, section 6), for k = 5 and 10 and for questions with
more perspectives than k; the expected values are worked out in comments.
"""
import json

import numpy as np
import pytest

from berds_core.cli import main
from berds_core.errors import InputError
from berds_core.runs import (authors_judge, judges_in, label_matrix, prob_matrix, read_run, set_judgments,
                             write_run)


# --------------------------------------------------------------------------- the authors' functions


def authors_mrecall(data, k, key="mistral-preds"):
    """eval.py's mrecall: 1 if (m > k and covered >= k) or (m <= k and covered == m); mean over questions."""
    scores = []
    for d in data:
        m = len(d["perspectives"])
        covered = [False] * m
        for ctx in d["ctxs"][:k]:
            for j, v in enumerate(ctx[key]):
                covered[j] = covered[j] or bool(v)
        n = sum(covered)
        scores.append(1.0 if (m > k and n >= k) or (m <= k and n == m) else 0.0)
    return sum(scores) / len(scores)


def authors_precision(data, k, key="mistral-preds"):
    """eval.py's precision: share of the k passages that support at least one perspective; mean."""
    return sum(sum(1 for ctx in d["ctxs"][:k] if any(ctx[key])) / k for d in data) / len(data)


# --------------------------------------------------------------------------- a hand-made judged file


def _rows(m, supports):
    """10 passages; ``supports[i]`` lists the perspectives passage i supports."""
    return [[j in s for j in range(m)] for s in supports]


# (m, what each of the 10 passages supports)
QUESTIONS = [
    # Q1, m=2: top 5 cover only p0 -> MRecall@5 0 (m <= 5 needs both); P@5 = 2/5 (ranks 1, 3).
    #          top 10 cover p0, p1 -> MRecall@10 1; P@10 = 4/10 (ranks 1, 3, 7, 9).
    (2, [{0}, set(), {0}, set(), set(), set(), {1}, set(), {0, 1}, set()]),
    # Q2, m=7 > 5: top 5 cover p0..p4 = 5 >= k -> MRecall@5 1; P@5 = 5/5.
    #          top 10 cover p0..p5 = 6 < m = 7 (m <= 10 needs all) -> MRecall@10 0; P@10 = 8/10.
    (7, [{0}, {1}, {2}, {3}, {4}, set(), {0}, {1}, {5}, set()]),
    # Q3, m=12 > 10: top 5 cover p0..p3 = 4 < 5 -> MRecall@5 0; P@5 = 4/5 (rank 4 supports nothing).
    #          top 10 cover p0..p10 = 11 >= 10 -> MRecall@10 1; P@10 = 9/10.
    (12, [{0, 1}, {2}, {3}, set(), {0}, {4, 5}, {6}, {7}, {8, 9}, {10}]),
    # Q4, m=3: nothing supports anything -> 0, 0, 0, 0.
    (3, [set()] * 10),
    # Q5, m=2: ranks 1 and 2 cover both -> MRecall@5 1, MRecall@10 1; P@5 = 2/5, P@10 = 2/10.
    (2, [{0}, {1}] + [set()] * 8),
]
# Means over the 5 questions:
#   MRecall@5  = (0 + 1 + 0 + 0 + 1) / 5 = 0.4
#   MRecall@10 = (1 + 0 + 1 + 0 + 1) / 5 = 0.6
#   P@5  = (0.4 + 1.0 + 0.8 + 0.0 + 0.4) / 5 = 0.52
#   P@10 = (0.4 + 0.8 + 0.9 + 0.0 + 0.2) / 5 = 0.46
EXPECTED = {"5": {"mrecall": 0.4, "precision": 0.52}, "10": {"mrecall": 0.6, "precision": 0.46}}


def authors_file(path, key="mistral-preds"):
    """Lines as the authors' eval.py writes them: no question id, passages without ids, extra fields."""
    lines = []
    for qi, (m, supports) in enumerate(QUESTIONS):
        ctxs = []
        for i, row in enumerate(_rows(m, supports)):
            ctx = {"title": f"Title {qi}.{i}", "text": f"passage {i} of question {qi}", "score": 10.0 - i,
                   "hasanswer": False, key: row}
            if i % 2:
                ctx["id"] = f"doc{qi}-{i}"
            ctxs.append(ctx)
        lines.append({"question": f"Question {qi}?", "perspectives": [f"perspective {j}" for j in range(m)],
                      "ctxs": ctxs})
    path.write_text("".join(json.dumps(d) + "\n" for d in lines))
    return lines


def _evaluate(capsys, *args):
    code = main(["evaluate", *map(str, args), "--bootstrap", "0", "--json"])
    captured = capsys.readouterr()
    return code, (json.loads(captured.out) if code == 0 else None), captured.err


def test_hand_made_expectations_match_the_authors_functions(tmp_path):
    data = authors_file(tmp_path / "x.mistralpred.jsonl")
    for k in (5, 10):
        assert authors_mrecall(data, k) == pytest.approx(EXPECTED[str(k)]["mrecall"])
        assert authors_precision(data, k) == pytest.approx(EXPECTED[str(k)]["precision"])


@pytest.mark.parametrize("name,key,judge", [("arguana.test.mistralpred.jsonl", "mistral-preds", "mistral"),
                                            ("kialo.gpt4pred.jsonl", "gpt4-preds", "gpt4")])
def test_evaluate_equals_the_authors_eval_on_their_file(tmp_path, capsys, name, key, judge):
    path = tmp_path / name
    data = authors_file(path, key)
    assert authors_judge(path) == judge
    code, out, err = _evaluate(capsys, "--run", path, "--labels", judge)
    assert code == 0, err
    for k in ("5", "10"):
        assert out["at"][k]["mrecall"] == pytest.approx(authors_mrecall(data, int(k), key))
        assert out["at"][k]["precision"] == pytest.approx(authors_precision(data, int(k), key))
        assert out["at"][k]["mrecall"] == pytest.approx(EXPECTED[k]["mrecall"])
        assert out["at"][k]["precision"] == pytest.approx(EXPECTED[k]["precision"])
    # their --compute_only reads the judge from the file name; so does ours without --labels
    code, again, _ = _evaluate(capsys, "--run", path)
    assert code == 0 and again["at"] == out["at"]


def test_questions_with_more_perspectives_than_k(tmp_path):
    data = authors_file(tmp_path / "a.mistralpred.jsonl")
    entries = read_run(tmp_path / "a.mistralpred.jsonl")
    from berds_core.eval.measures import mrecall_at_k, precision_at_k

    for d, e in zip(data, entries):
        L = label_matrix(e, judge="mistral")
        for k in (5, 10):
            if len(d["perspectives"]) > k:  # Q2 at k=5, Q3 at k=5 and 10
                assert mrecall_at_k(L, k) == authors_mrecall([d], k)
                assert precision_at_k(L, k) == authors_precision([d], k)
    assert [mrecall_at_k(label_matrix(e, judge="mistral"), 5) for e in entries] == [0, 1, 0, 0, 1]
    assert [mrecall_at_k(label_matrix(e, judge="mistral"), 10) for e in entries] == [1, 0, 1, 0, 1]


def test_reading_keeps_the_authors_passages_as_they_are(tmp_path):
    authors_file(tmp_path / "a.mistralpred.jsonl")
    entries = read_run(tmp_path / "a.mistralpred.jsonl")
    assert judges_in(entries[0]) == ["mistral"] and prob_matrix(entries[0], "mistral") is None
    ctx = entries[0]["ctxs"][0]
    assert ctx["title"] == "Title 0.0" and ctx["hasanswer"] is False and ctx["id"] == "0-0"
    bare = tmp_path / "bare.jsonl"
    bare.write_text(json.dumps({"question": "Q", "perspectives": ["a"], "ctxs": [{"text": "t"}]}) + "\n")
    assert "title" not in read_run(bare)[0]["ctxs"][0]  # no title invented: it would change the judge's input


def test_our_judged_runs_are_read_by_the_authors_functions(tmp_path, capsys):
    """A run judged by `berds judge` carries its verdicts inside each passage, as their --compute_only reads."""
    from berds_core.judges import get_judge

    run = tmp_path / "run.jsonl"
    entries = [{"id": str(q), "question": f"Q{q}?", "perspectives": ["cats are good", "dogs are loud", "tea"],
                "ctxs": [{"id": f"{q}-{i}", "title": "", "text": t, "score": 1.0}
                         for i, t in enumerate(["cats are good pets", "dogs bark", "loud dogs are loud",
                                                "tea and cats", "nothing here", "cats", "tea tea"][q:])]}
               for q in range(3)]
    write_run(run, entries)
    out = tmp_path / "judged.jsonl"
    assert main(["judge", "--run", str(run), "--out", str(out), "--json", "--quiet"]) == 0
    name = json.loads(capsys.readouterr().out)["judge"]
    raw = [json.loads(line) for line in out.read_text().splitlines()]
    assert all(name + "-preds" in c and name + "-probs" in c for d in raw for c in d["ctxs"])
    assert all(name + "-preds" not in d for d in raw)
    code, res, _ = _evaluate(capsys, "--run", out, "--labels", name, "--ks", "2,5")
    assert code == 0
    for k in (2, 5):
        assert res["at"][str(k)]["mrecall"] == pytest.approx(authors_mrecall(raw, k, name + "-preds"))
        assert res["at"][str(k)]["precision"] == pytest.approx(authors_precision(raw, k, name + "-preds"))
    judge = get_judge("embedded")
    assert judge.name == name


def test_the_old_question_level_layout_still_reads_and_is_replaced_on_rejudging(tmp_path):
    old = {"id": "q", "question": "Q?", "perspectives": ["A", "B"],
           "ctxs": [{"id": "p", "text": "a"}, {"id": "r", "text": "b"}, {"id": "s", "text": "c"}],
           "j-preds": [[True, False], [False, True]], "j-probs": [[0.9, 0.1], [0.2, 0.7]]}
    path = tmp_path / "old.jsonl"
    path.write_text(json.dumps(old) + "\n")
    e = read_run(path)[0]
    assert judges_in(e) == ["j"]
    # a passage the judge did not label (the third) supports nothing; its probabilities are NaN
    np.testing.assert_array_equal(label_matrix(e, judge="j"), [[True, False], [False, True], [False, False]])
    probs = prob_matrix(e, "j")
    assert probs[:2].tolist() == [[0.9, 0.1], [0.2, 0.7]] and np.isnan(probs[2]).all()
    set_judgments(e, "j", [[False, False], [True, True], [False, True]], [[0.1, 0.2], [0.8, 0.9], [0.3, 0.6]])
    assert "j-preds" not in e and "j-probs" not in e
    assert e["ctxs"][1]["j-preds"] == [True, True] and e["ctxs"][2]["j-probs"] == [0.3, 0.6]
    np.testing.assert_array_equal(label_matrix(e, judge="j"), [[False, False], [True, True], [False, True]])
    e["k-preds"] = [[True, True]]
    assert judges_in(e) == ["j", "k"]


def test_tasks_read_passage_level_verdicts(tmp_path):
    from berds_core.lab.tasks import pairs_from_runs

    e = {"id": "q", "question": "Q?", "perspectives": ["A", "B"],
         "ctxs": [{"id": "p", "title": "", "text": "a", "mistral-preds": [True, False]},
                  {"id": "r", "title": "", "text": "b", "mistral-preds": [False, True]}]}
    _, stored = pairs_from_runs([("run", [e])])
    assert stored == {"mistral": {"run:q:p:0": 1, "run:q:p:1": 0, "run:q:r:0": 0, "run:q:r:1": 1}}


@pytest.mark.parametrize("ctx_patch,field", [({"mistral-preds": [True]}, "ctxs[0].mistral-preds"),
                                             ({"mistral-preds": ["yes", False]}, "ctxs[0].mistral-preds"),
                                             ({"mistral-probs": [0.5, "x"]}, "ctxs[0].mistral-probs")])
def test_malformed_passage_verdicts_are_one_clear_error(tmp_path, ctx_patch, field):
    path = tmp_path / "bad.mistralpred.jsonl"
    line = {"question": "Q", "perspectives": ["a", "b"], "ctxs": [{"text": "t", **ctx_patch}]}
    path.write_text(json.dumps({"question": "Q0", "perspectives": ["a"], "ctxs": []}) + "\n" + json.dumps(line) + "\n")
    with pytest.raises(InputError) as err:
        read_run(path)
    assert err.value.line == 2 and err.value.field == field and "2 " in str(err.value)


def test_evaluate_without_labels_on_an_ordinary_file_is_a_clear_error(tmp_path, capsys):
    path = tmp_path / "run.jsonl"
    path.write_text(json.dumps({"question": "Q", "perspectives": ["a"], "ctxs": [{"text": "t"}]}) + "\n")
    code, _, err = _evaluate(capsys, "--run", path)
    assert code == 2 and "--gold" in err and len(err.strip().splitlines()) == 1
