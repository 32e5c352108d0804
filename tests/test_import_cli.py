"""``berds import``: files written, one JSON object on stdout, bad input exits 2 and writes nothing."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from berds_core.cli import main
from berds_core.datasets import load_gold, load_questions, read_passages_jsonl, validate_gold

CLAIMS = [
    {"url": "u", "claim_title": "Homework is beneficial", "topic": "",
     "perspectives_for": [{"perspective_title": "Practice", "argument": {"description": ["Homework builds ", "habits."]}},
                          {"perspective_title": "Long", "argument": {"description": [" ".join(f"w{i}" for i in range(120))]}}],
     "perspectives_against": [{"perspective_title": "Stress", "argument": {"description": ["Homework causes stress."]}}]},
    {"url": "u", "claim_title": "Golf is a Sport",
     "perspectives_for": [{"perspective_title": "Skill", "argument": {"description": ["It takes skill."]}}],
     "perspectives_against": [{"perspective_title": "Game", "argument": {"description": ["It is a game."]}}]},
]


def run_cli(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def one_json(out: str) -> dict:
    lines = out.splitlines()
    assert len(lines) == 1, out
    return json.loads(lines[0])


@pytest.fixture
def procon(tmp_path) -> Path:
    f = tmp_path / "procon.json"
    f.write_text(json.dumps(CLAIMS), encoding="utf-8")
    return f


def test_import_debate_sites(tmp_path, procon, capsys):
    out = tmp_path / "out"
    code, stdout, _ = run_cli(capsys, "import", "debate-sites", procon, "--out", out, "--json", "--quiet")
    assert code == 0
    res = one_json(stdout)
    assert res["questions"] == 2 and res["passages"] == 6 and res["gold_pairs"] == 6
    rows = [json.loads(x) for x in (out / "questions.jsonl").read_text().splitlines()]
    assert {"id", "question", "perspectives"} <= set(rows[0])
    assert rows[0]["question"] == "Is homework beneficial?"
    assert rows[0]["perspectives"] == ["Homework is beneficial", "Homework is not beneficial."]
    corpus = [json.loads(x) for x in (out / "corpus.jsonl").read_text().splitlines()]
    assert all(set(c) == {"id", "title", "text"} for c in corpus)
    assert [c["text"] for c in corpus][:1] == ["Homework builds habits."]
    gold_rows = [json.loads(x) for x in (out / "gold.jsonl").read_text().splitlines()]
    assert all(set(g) == {"question_id", "passage_id", "perspective"} for g in gold_rows)
    by_text = {c["text"]: c["id"] for c in corpus}
    assert {"question_id": rows[0]["id"], "passage_id": by_text["Homework causes stress."], "perspective": 1} in gold_rows
    assert {"question_id": rows[1]["id"], "passage_id": by_text["It takes skill."], "perspective": 0} in gold_rows
    # the written files load back through the project's own readers and agree
    qs = load_questions(out / "questions.jsonl")
    passages, _ = read_passages_jsonl(out / "corpus.jsonl")
    validate_gold(load_gold(out / "gold.jsonl"), qs, passages, out / "gold.jsonl")
    assert not list(out.glob(".*.tmp"))


def test_import_corpus_loads_with_corpus_module(tmp_path, procon, capsys):
    from berds_core.corpora import memory as corpus_mod

    out = tmp_path / "out"
    assert run_cli(capsys, "import", "debate-sites", procon, "--out", out)[0] == 0
    corpus = corpus_mod.load_corpus(out / "corpus.jsonl")
    ids = {json.loads(x)["id"] for x in (out / "corpus.jsonl").read_text().splitlines()}
    assert set(corpus.ids) == ids  # ids kept, nothing re-split (every passage <= 100 words)


def test_import_refuses_to_overwrite(tmp_path, procon, capsys):
    out = tmp_path / "out"
    out.mkdir()
    (out / "gold.jsonl").write_text("my labels\n")
    code, stdout, err = run_cli(capsys, "import", "debate-sites", procon, "--out", out, "--json")
    assert code == 2 and stdout == ""
    assert len(err.strip().splitlines()) == 1 and "--force" in err
    assert (out / "gold.jsonl").read_text() == "my labels\n"
    assert not (out / "questions.jsonl").exists()
    code, stdout, _ = run_cli(capsys, "import", "debate-sites", procon, "--out", out, "--json", "--force")
    assert code == 0 and one_json(stdout)["gold_pairs"] == 6
    assert (out / "gold.jsonl").read_text() != "my labels\n"


@pytest.mark.parametrize("content,needle", [
    ('[{"claim_title": "x", "perspectives_for": []}]', "entry 0: field 'perspectives_against': missing"),
    ('[{"claim_title": 5, "perspectives_for": [], "perspectives_against": []}]', "entry 0: field 'claim_title'"),
    ('[{"claim_title": "x",', ":1: malformed JSON"),
    ("", "file is empty"),
])
def test_import_bad_input_writes_nothing(tmp_path, capsys, content, needle):
    src = tmp_path / "bad.json"
    src.write_text(content, encoding="utf-8")
    out = tmp_path / "out"
    code, stdout, err = run_cli(capsys, "import", "debate-sites", src, "--out", out, "--json")
    assert code == 2 and stdout == ""
    assert len(err.strip().splitlines()) == 1
    assert str(src) in err and needle in err
    assert not out.exists() or not any(out.iterdir())


def test_import_non_utf8(tmp_path, capsys):
    src = tmp_path / "latin.jsonl"
    src.write_bytes(b'{"org_id": "1", "org_q": "caf\xe9?", "perspectives": ["a"], "text": "t"}\n')
    code, stdout, err = run_cli(capsys, "import", "qe", src, "--out", tmp_path / "o")
    assert code == 2 and stdout == "" and f"{src}:1:" in err and "UTF-8" in err


def test_import_qe(tmp_path, capsys):
    src = tmp_path / "opinionqa_query_exp.dev.jsonl"
    src.write_text("".join(json.dumps({"org_id": oid, "org_q": q, "perspectives": ["Yes.", "No."], "text": t}) + "\n"
                           for oid, q, t in [("1", "Q1?", "a"), ("2", "Q2?", "c"), ("1", "Q1?", "b")]))
    out = tmp_path / "out"
    code, stdout, _ = run_cli(capsys, "import", "qe", src, "--out", out, "--json")
    assert code == 0
    res = one_json(stdout)
    assert (res["questions"], res["passages"], res["gold_pairs"]) == (2, 0, 0)
    assert sorted(p.name for p in out.iterdir()) == ["questions.jsonl"]
    qs = load_questions(out / "questions.jsonl")
    assert qs[0].id == "opinionqa-1" and qs[0].generated_perspectives == ["a", "b"]
    assert (qs[0].subset, qs[0].split) == ("opinionqa", "dev")


def test_import_perspectrum(tmp_path, capsys):
    (tmp_path / "perspective_pool_v1.0.json").write_text(json.dumps(
        [{"pId": 1, "text": "It protects children."}, {"pId": 2, "text": "It violates freedom."}]))
    src = tmp_path / "claims.json"
    src.write_text(json.dumps([{"cId": 4, "text": "Vaccination must be made compulsory", "perspectives": [
        {"pids": [1], "stance_label_3": "SUPPORT"}, {"pids": [2], "stance_label_3": "UNDERMINE"}]}]))
    out = tmp_path / "out"
    code, stdout, _ = run_cli(capsys, "import", "perspectrum", src, "--out", out, "--json")
    assert code == 0 and one_json(stdout)["questions"] == 1
    q = load_questions(out / "questions.jsonl")[0]
    assert (q.id, q.question) == ("perspectrum-4", "Must vaccination be made compulsory?")
    assert q.perspectives == ["It protects children.", "It violates freedom."] and q.stances == ["support", "oppose"]
    # a pool passed explicitly, and a missing pool is one clear line
    other = tmp_path / "sub"
    other.mkdir()
    (other / "claims.json").write_text(src.read_text())
    code, _, err = run_cli(capsys, "import", "perspectrum", other / "claims.json", "--out", tmp_path / "o2")
    assert code == 2 and "perspective pool" in err
    code, _, _ = run_cli(capsys, "import", "perspectrum", other / "claims.json", "--out", tmp_path / "o2",
                         "--pool", tmp_path / "perspective_pool_v1.0.json")
    assert code == 0


def test_import_hub_local_copy(tmp_path, capsys):
    datasets = pytest.importorskip("datasets")
    folder = tmp_path / "Kialo"
    datasets.DatasetDict({"test": datasets.Dataset.from_dict(
        {"id": ["a"], "question": ["Is X good?"], "perspectives": [["Yes.", "No."]]})}).save_to_disk(str(folder))
    out = tmp_path / "out"
    code, stdout, _ = run_cli(capsys, "import", "hub", folder, "--out", out, "--split", "test", "--json")
    assert code == 0 and one_json(stdout)["questions"] == 1
    q = load_questions(out / "questions.jsonl")[0]
    assert (q.id, q.subset, q.split) == ("a", "kialo", "test")


def test_import_usage_errors(tmp_path, procon, capsys):
    with pytest.raises(SystemExit) as e:
        main(["import", "xml", str(procon), "--out", str(tmp_path)])
    assert e.value.code == 2
    f = tmp_path / "file"
    f.write_text("x")
    code, _, err = run_cli(capsys, "import", "debate-sites", procon, "--out", f)
    assert code == 2 and "not a folder" in err
