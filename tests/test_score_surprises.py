"""No silent surprises in scores (issue 24, item 3).

- A passage ranked twice in one question's ranking is refused (file, line, field): it would count twice.
- A k deeper than the run (evaluate) or larger than the corpus (retrieve) keeps the TREC convention but says
  so: run depth and corpus size in the JSON, one warning line on stderr.
- A CSV / TSV with an unterminated quote is reported as such, at the line where the quote opens, in every
  reader of CSV / TSV files (questions, corpus, human pairs, ConflictingQA, annotation pairs).
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from berds_core.cli import main
from berds_core.errors import InputError


def ctx(pid):
    return {"id": pid, "title": "", "text": f"text of {pid}", "score": 1.0}


def _jsonl(path: Path, rows) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


@pytest.fixture()
def env(tmp_path, monkeypatch):
    monkeypatch.setenv("BERDS_CACHE", str(tmp_path / "cache"))
    return tmp_path


def test_a_passage_ranked_twice_is_refused_with_file_line_field(env, capsys):
    run = _jsonl(env / "run.jsonl", [
        {"id": "q1", "question": "Q1?", "perspectives": ["A", "B"], "ctxs": [ctx("a"), ctx("b")]},
        {"id": "q2", "question": "Q2?", "perspectives": ["A", "B"], "ctxs": [ctx("c"), ctx("d"), ctx("c")]},
    ])
    gold = _jsonl(env / "gold.jsonl", [{"question_id": "q1", "passage_id": "a", "perspective": 0},
                                       {"question_id": "q2", "passage_id": "c", "perspective": 0}])
    assert main(["evaluate", "--run", str(run), "--gold", str(gold), "--json"]) == 2
    out = capsys.readouterr()
    err = out.err.strip().splitlines()
    assert out.out == "" and len(err) == 1
    assert f"{run}:2: field 'ctxs[2].id'" in err[0] and "'c'" in err[0] and "ranks 1 and 3" in err[0]


def test_the_same_text_under_two_ids_is_not_a_repeat(tmp_path):
    from berds_core.runs import read_run

    run = _jsonl(tmp_path / "run.jsonl", [{"id": "q", "question": "Q?", "perspectives": ["A"],
                                           "ctxs": [{"id": "x", "text": "same"}, {"id": "y", "text": "same"},
                                                    {"text": "no id"}, {"text": "no id either"}]}])
    assert [c["id"] for c in read_run(run)[0]["ctxs"]] == ["x", "y", "q-2", "q-3"]


def test_evaluate_k_deeper_than_the_run_warns_and_reports_the_depth(env, capsys):
    run = _jsonl(env / "run.jsonl", [
        {"id": "q1", "question": "Q1?", "perspectives": ["A", "B"], "ctxs": [ctx("a"), ctx("b"), ctx("c")]},
        {"id": "q2", "question": "Q2?", "perspectives": ["A", "B"], "ctxs": [ctx("d"), ctx("e")]},
    ])
    gold = _jsonl(env / "gold.jsonl", [{"question_id": "q1", "passage_id": "a", "perspective": 0},
                                       {"question_id": "q2", "passage_id": "d", "perspective": 1}])
    assert main(["evaluate", "--run", str(run), "--gold", str(gold), "--k", "100000", "--ks", "2", "--json"]) == 0
    out = capsys.readouterr()
    res = json.loads(out.out)
    assert res["run_depth"] == {"min": 2, "max": 3}
    assert res["precision"] == pytest.approx(1 / 100000)  # the TREC convention is kept
    err = out.err.strip().splitlines()
    assert len(err) == 1 and "warning" in err[0] and "k = 100000" in err[0] and "at most 3 passages" in err[0]
    assert main(["evaluate", "--run", str(run), "--gold", str(gold), "--k", "2", "--ks", "1", "--json"]) == 0
    assert capsys.readouterr().err == ""  # within the depth: no warning


@pytest.fixture()
def demo(env):
    d = env / "d"
    assert main(["import", "demo", "--out", str(d), "--quiet"]) == 0
    return d


def test_retrieve_k_beyond_the_corpus_warns_and_reports_sizes(demo, env, capsys):
    from berds_core.datasets import load_demo

    n = len(load_demo().passages)
    assert main(["retrieve", "--questions", str(demo / "questions.jsonl"), "--corpus", str(demo / "corpus.jsonl"),
                 "--k", "10000000", "--out", str(env / "run.jsonl"), "--json", "--quiet"]) == 0
    out = capsys.readouterr()
    res = json.loads(out.out)
    assert res["corpus_size"] == n and res["run_depth"] == {"min": n, "max": n}
    err = out.err.strip().splitlines()
    assert len(err) == 1 and "warning" in err[0] and "--k 10000000" in err[0] and f"{n} passages" in err[0]
    assert main(["retrieve", "--questions", str(demo / "questions.jsonl"), "--corpus", str(demo / "corpus.jsonl"),
                 "--k", "5", "--out", str(env / "run5.jsonl"), "--json", "--quiet"]) == 0
    out = capsys.readouterr()
    assert out.err == "" and json.loads(out.out)["run_depth"] == {"min": 5, "max": 5}


def test_retrieve_per_question_k_beyond_the_smallest_corpus_warns(env, capsys):
    from berds_core.files.jsonio import write_jsonl

    root = env / "snap"
    for qid, n in (("q1", 3), ("q2", 8)):
        write_jsonl(root / qid / "passages.jsonl", [{"id": f"{qid}-{i}", "text": f"cars city {i}"} for i in range(n)])
    qfile = _jsonl(env / "q.jsonl", [{"id": "q1", "question": "cars?", "perspectives": ["A"]},
                                     {"id": "q2", "question": "city?", "perspectives": ["A"]}])
    assert main(["retrieve", "--questions", str(qfile), "--corpus-per-question", str(root), "--k", "5",
                 "--passage-words", "0", "--out", str(env / "run.jsonl"), "--json", "--quiet"]) == 0
    out = capsys.readouterr()
    res = json.loads(out.out)
    assert res["corpus_size"] == {"min": 3, "max": 8} and res["run_depth"] == {"min": 3, "max": 5}
    err = out.err.strip().splitlines()
    assert len(err) == 1 and "warning" in err[0] and "1 of 2 corpora" in err[0]


# --------------------------------------------------------------------------- CSV / TSV quotes

UNTERMINATED = 'question,perspectives\n"Should we?","A|B"\n"Is it?,A|B\n'
STRAY = 'question,perspectives\n"Should we?","A|B"\n"Is it?,A|B\n"Third?","C|D"\n'


def test_questions_csv_with_an_unterminated_quote_names_it(env, capsys):
    f = env / "q.csv"
    f.write_text(UNTERMINATED)
    with pytest.raises(InputError) as err:
        from berds_core.datasets import load_questions

        load_questions(f)
    assert err.value.line == 3 and "unterminated quote" in str(err.value) and "perspectives" not in str(err.value)


def test_questions_csv_with_a_stray_quote_is_refused_not_merged(env):
    """Non-strict csv read this file as two questions, the second one's text swallowing a line."""
    from berds_core.datasets import load_questions

    f = env / "q.csv"
    f.write_text(STRAY)
    with pytest.raises(InputError) as err:
        load_questions(f)
    assert err.value.line == 3 and "closing quote on line 4" in str(err.value) and "opened on line 3" in str(err.value)


def test_cli_unterminated_quote_is_one_line(env, capsys):
    f = env / "q.csv"
    f.write_text(UNTERMINATED)
    corpus = _jsonl(env / "c.jsonl", [{"id": "p", "text": "t"}])
    assert main(["retrieve", "--questions", str(f), "--corpus", str(corpus), "--out", str(env / "r.jsonl")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and f"{f}:3: unterminated quote" in err[0]


def test_corpus_csv_unterminated_quote(env):
    from berds_core.corpora.memory import load_corpus

    f = env / "c.csv"
    f.write_text('id,title,text\n1,t,"first text\n2,t2,second text\n')
    with pytest.raises(InputError, match="unterminated quote") as err:
        load_corpus(f)
    assert err.value.line == 2


def test_pairs_tsv_unterminated_quote(env):
    from berds_core.datasets.human_pairs import read_pairs
    from berds_core.lab.tasks import read_pairs_tsv

    f = env / "p.tsv"
    f.write_text('question\tid\tdocument\tperspective\tlabel\nQ?\t1\t"Some passage.\tA view.\t1\nQ?\t2\tB.\tC.\t0\n')
    for reader in (read_pairs, read_pairs_tsv):
        with pytest.raises(InputError, match="unterminated quote") as err:
            reader(f)
        assert err.value.line == 2


def test_conflictingqa_csv_unterminated_quote(env):
    from berds_core.convincing import load_conflictingqa

    f = env / "cqa.csv"
    f.write_text('search_query,text_window,stance\nQ?,"A paragraph,yes\nQ?,Another,no\n')
    with pytest.raises(InputError, match="unterminated quote") as err:
        load_conflictingqa(f)
    assert err.value.line == 2


def test_explain_names_the_causes():
    import csv

    from berds_core.files.csvio import explain

    assert "unterminated quote" in explain(csv.Error("unexpected end of data"), 4, 9, ",")
    assert "a tab" in explain(csv.Error("'\\t' expected after '\"'"), 2, 2, "\t")
