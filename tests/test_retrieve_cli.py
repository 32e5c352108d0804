"""``berds index`` and ``berds retrieve``: JSON output, cache hits, run files, exit 2 on bad input."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from berds_core.cli import main
from berds_core.runs import read_run

DOCS = [
    {"id": "p1", "title": "Uniforms", "text": "School uniforms reduce bullying and peer pressure about clothes."},
    {"id": "p2", "title": "Uniforms", "text": "School uniforms restrict students' freedom of expression."},
    {"id": "p3", "title": "Zoos", "text": "Zoos help endangered species survive through breeding programs."},
    {"id": "p4", "title": "Zoos", "text": "Keeping wild animals in zoos is cruel and causes stress."},
    {"id": "p5", "title": "Energy", "text": "Nuclear power is a low carbon source of reliable electricity."},
]
QUESTIONS = [
    {"id": "q1", "question": "Should schools require uniforms?",
     "perspectives": ["Uniforms reduce bullying", "Uniforms restrict expression"]},
    {"id": "q2", "question": "Are zoos good for animals?",
     "perspectives": ["Zoos protect endangered species", "Zoos are cruel"]},
]


@pytest.fixture
def files(tmp_path, monkeypatch):
    monkeypatch.setenv("BERDS_CACHE", str(tmp_path / "cache"))
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text("".join(json.dumps(d) + "\n" for d in DOCS), encoding="utf-8")
    questions = tmp_path / "questions.jsonl"
    questions.write_text("".join(json.dumps(q) + "\n" for q in QUESTIONS), encoding="utf-8")
    return tmp_path, corpus, questions


def _json(capsys, argv):
    code = main(argv)
    out, err = capsys.readouterr()
    assert code == 0, err
    lines = out.strip().splitlines()
    assert len(lines) == 1  # exactly one JSON object on stdout
    return json.loads(lines[0]), err


def test_index_bm25_json_then_cache_hit(files, capsys):
    tmp, corpus, _ = files
    first, _ = _json(capsys, ["index", "--corpus", str(corpus), "--retriever", "bm25", "--json", "--quiet"])
    assert first["passages"] == 5 and len(first["hash"]) == 40 and first["retriever"] == "bm25"
    assert first["cache_hit"] is False and Path(first["cache_path"]).is_dir()
    assert str(tmp / "cache") in first["cache_path"] and first["seconds"] >= 0
    second, _ = _json(capsys, ["index", "--corpus", str(corpus), "--retriever", "bm25", "--json"])
    assert second["cache_hit"] is True and second["hash"] == first["hash"]


def test_index_dense_hnsw_progress_on_stderr(files, capsys):
    _, corpus, _ = files
    out, err = _json(capsys, ["index", "--corpus", str(corpus), "--retriever", "dense", "--index", "hnsw",
                              "--encoding", "fp32", "--json"])
    assert out["model"] == "sentence-transformers/all-MiniLM-L6-v2" and out["index"] == "hnsw"
    assert out["encoding"] == "fp32" and out["cache_hit"] is False
    assert "Encoding passages" in err  # tqdm progress goes to stderr
    again, _ = _json(capsys, ["index", "--corpus", str(corpus), "--retriever", "dense", "--index", "hnsw",
                              "--encoding", "fp32", "--json", "--quiet"])
    assert again["cache_hit"] is True


def test_index_plain_output_is_tab_separated(files, capsys):
    _, corpus, _ = files
    assert main(["index", "--corpus", str(corpus), "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "passages\t5" in out.splitlines()


@pytest.mark.parametrize("retriever", ["bm25", "dense"])
def test_retrieve_writes_a_run(files, capsys, retriever):
    tmp, corpus, questions = files
    run = tmp / "out" / f"{retriever}.jsonl"
    extra = ["--encoding", "fp32"] if retriever == "dense" else []
    out, _ = _json(capsys, ["retrieve", "--questions", str(questions), "--corpus", str(corpus), "--retriever",
                            retriever, "--k", "2", "--out", str(run), "--json", "--quiet", *extra])
    assert out["questions"] == 2 and out["k"] == 2 and out["out"] == str(run)
    entries = read_run(run)
    assert [e["id"] for e in entries] == ["q1", "q2"]
    assert entries[0]["perspectives"] == QUESTIONS[0]["perspectives"]
    assert {c["id"] for c in entries[0]["ctxs"]} == {"p1", "p2"}
    assert {c["id"] for c in entries[1]["ctxs"]} == {"p3", "p4"}
    assert all(set(c) == {"id", "title", "text", "score"} for e in entries for c in e["ctxs"])
    assert not [p for p in run.parent.iterdir() if p.name.endswith(".tmp")]


def test_retrieve_k_larger_than_corpus(files, capsys):
    tmp, corpus, questions = files
    run = tmp / "run.jsonl"
    _json(capsys, ["retrieve", "--questions", str(questions), "--corpus", str(corpus), "--k", "100",
                   "--out", str(run), "--json", "--quiet"])
    assert all(len(e["ctxs"]) == 5 for e in read_run(run))


def _fails(capsys, argv, *needles):
    code = main(argv)
    out, err = capsys.readouterr()
    assert code == 2 and out == ""
    line = err.strip()
    assert "\n" not in line
    for n in needles:
        assert n in line, line
    return line


def test_bad_input_exits_2_with_one_line(files, capsys):
    tmp, corpus, questions = files
    bad = tmp / "bad.jsonl"
    bad.write_text('{"id": "a", "text": "fine"}\n{"id": "b"}\n', encoding="utf-8")
    _fails(capsys, ["index", "--corpus", str(bad), "--json"], f"{bad}:2:", "field 'text'", "missing")
    empty = tmp / "empty.jsonl"
    empty.write_text("", encoding="utf-8")
    _fails(capsys, ["index", "--corpus", str(empty)], str(empty), "corpus is empty")
    _fails(capsys, ["index", "--corpus", str(tmp / "missing.jsonl")], "file not found")
    _fails(capsys, ["index", "--corpus", str(corpus), "--model", "x"], "--model", "bm25 takes no model")
    _fails(capsys, ["retrieve", "--questions", str(questions), "--corpus", str(bad), "--out", str(tmp / "r.jsonl")],
           f"{bad}:2:")
    bad_q = tmp / "bad_q.jsonl"
    bad_q.write_text('{"id": "q", "question": "Why?", "perspectives": []}\n', encoding="utf-8")
    _fails(capsys, ["retrieve", "--questions", str(bad_q), "--corpus", str(corpus), "--out", str(tmp / "r.jsonl")],
           str(bad_q), "perspectives")
    _fails(capsys, ["retrieve", "--questions", str(questions), "--corpus", str(corpus), "--k", "0",
                    "--out", str(tmp / "r.jsonl")], "--k")
    _fails(capsys, ["index", "--corpus", str(corpus), "--retriever", "dense", "--model",
                    str(tmp / "no-such-model")], "--model", "cannot load embedder")
    _fails(capsys, ["index", "--corpus", str(corpus), "--retriever", "dense", "--device", "gpu0"], "--device")
    _fails(capsys, ["index", "--corpus", str(corpus), "--retriever", "dense", "--encoding", "int8",
                    "--device", "cuda"], "--encoding", "CPU only")
    assert not (tmp / "r.jsonl").exists()


def test_failed_retrieve_keeps_the_old_run(files, capsys):
    tmp, corpus, questions = files
    run = tmp / "run.jsonl"
    run.write_text("precious\n", encoding="utf-8")
    bad = tmp / "bad.jsonl"
    bad.write_text("{oops\n", encoding="utf-8")
    _fails(capsys, ["retrieve", "--questions", str(questions), "--corpus", str(bad), "--out", str(run)], str(bad))
    assert run.read_text(encoding="utf-8") == "precious\n"


def test_subprocess_exit_code_and_streams(files):
    tmp, corpus, questions = files
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[1]))
    bad = tmp / "bad.tsv"
    bad.write_text("id\tbody\n1\tx\n", encoding="utf-8")
    proc = subprocess.run([sys.executable, "-m", "berds_core", "index", "--corpus", str(bad), "--json"],
                          capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.strip().endswith(f"{bad}:1: field 'text': header must name a 'text' column (its first line "
                                        "has 2 cells, none named 'text'; e.g. id, title, text)")
    ok = subprocess.run([sys.executable, "-m", "berds_core", "index", "--corpus", str(corpus), "--json"],
                        capture_output=True, text=True, env=env, timeout=120)
    assert ok.returncode == 0 and json.loads(ok.stdout)["passages"] == 5
