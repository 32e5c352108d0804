"""The ``replay`` search backend (issue 24, item 4): a recorded search and its pages run through the real
web-corpus pipeline with no network; the built-in recording and the demo perspective pool are checked too."""
from __future__ import annotations

import json
import socket

import pytest

from berds_core.records import Question
from berds_core.web import WebOptions, build_question_corpus, get_search, load_snapshot_corpus, read_manifest


@pytest.fixture()
def no_network(monkeypatch, tmp_path):
    """Any outgoing connection fails the test (the replay must not touch the network)."""
    monkeypatch.setenv("BERDS_CACHE", str(tmp_path / "cache"))

    def refuse(*a, **k):
        raise AssertionError("the replay opened a network connection")

    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setattr(socket.socket, "connect", refuse)


def _recording(tmp_path):
    page = ("<html><head><title>Bans work</title></head><body><nav>Home News Sport</nav><article><p>"
            + "Car-free streets cut asthma among children living near busy roads. " * 20
            + "</p></article><footer>Copyright</footer></body></html>")
    rec = {"question": "Should cities ban cars?", "searched_at": "2025-03-01",
           "results": [{"url": "https://a.example/1", "title": "A", "snippet": "s", "rank": 1},
                       {"url": "https://b.example/2", "title": "B", "snippet": "s", "rank": 2}],
           "pages": {"https://a.example/1": {"fetched_at": "2025-03-01T10:00:00Z", "status": 200,
                                             "content_type": "text/html; charset=utf-8", "html": page},
                     "https://b.example/2": {"fetched_at": "2025-03-02T10:00:00Z", "status": 404,
                                             "reason": "HTTP 404"}}}
    path = tmp_path / "rec.jsonl"
    path.write_text(json.dumps(rec) + "\n")
    return path


def test_replay_runs_the_pipeline_offline_and_labels_the_snapshot(tmp_path, no_network):
    backend = get_search(f"replay:{_recording(tmp_path)}")
    q = Question("q1", "should cities  ban cars", ["Yes", "No"])  # case, spacing and the ? are ignored
    res = build_question_corpus(q, backend, tmp_path / "snap", WebOptions(top=10))
    assert (res.results, res.fetched, res.failed, res.search_error) == (2, 1, 1, None)
    manifest = read_manifest(res.folder)
    assert manifest["backend"] == "replay:rec.jsonl" and manifest["date"] == "2025-03-01"
    assert manifest["recording"]["fetched_from"] == "2025-03-01" and manifest["recording"]["fetched_to"] == "2025-03-02"
    log = [json.loads(x) for x in (res.folder / "fetch-log.jsonl").read_text().splitlines()]
    assert [r["fetched_at"] for r in log] == ["2025-03-01T10:00:00Z", "2025-03-02T10:00:00Z"]
    corpus = load_snapshot_corpus(res.folder)
    assert len(corpus) >= 1 and all("Home News" not in t and "Copyright" not in t for t in corpus.texts)
    # a second build reuses the snapshot (nothing replayed again)
    again = build_question_corpus(q, backend, tmp_path / "snap", WebOptions(top=10))
    assert again.reused


def test_a_question_not_in_the_recording_is_a_search_error_naming_what_it_holds(tmp_path, no_network):
    backend = get_search(f"replay:{_recording(tmp_path)}")
    res = build_question_corpus(Question("q2", "Is coffee good?", ["Yes"]), backend, tmp_path / "snap")
    assert "holds no search for 'Is coffee good?'" in res.search_error and "Should cities ban cars?" in res.search_error
    assert res.passages == 0


def test_builtin_recording_covers_its_questions_with_both_sides(tmp_path, no_network):
    backend = get_search("replay")
    assert backend.name == "replay:demo" and len(backend.questions()) == 3
    for question in backend.questions():
        res = build_question_corpus(Question(question[:8], question, ["Yes", "No"]), backend, tmp_path / "s")
        assert res.search_error is None and res.fetched >= 5 and res.passages >= 8, (question, res.summary())
        info = read_manifest(res.folder)["recording"]
        assert info["source"] == "replay:demo" and info["searched_at"] and info["fetched_from"]
        for page in (res.folder / "pages").iterdir():
            assert ".example" not in page.name  # pages are stored by hash, as for live fetches


def test_cli_corpus_web_replays_offline(tmp_path, no_network, capsys):
    from berds_core.cli import main

    qfile = tmp_path / "q.jsonl"
    qfile.write_text(json.dumps({"id": "cars", "question": "Should cities ban cars from their centres?",
                                 "perspectives": ["Yes", "No"]}) + "\n")
    assert main(["corpus", "web", "--questions", str(qfile), "--search", "replay", "--out", str(tmp_path / "web"),
                 "--json", "--quiet"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["backend"] == "replay:demo" and out["pages_fetched"] == 6 and out["pages_failed"] == 1


def test_demo_pool_loads_by_name_and_covers_the_demo_questions():
    from berds_core.datasets import load_demo
    from berds_core.discovery.pool import load_pool, pool_path

    pool = load_pool("demo")
    assert pool_path("demo").name == "perspective_pool.jsonl" and len(pool) >= 100
    topics = {json.loads(x)["topic"] for x in pool_path("demo").read_text().splitlines()}
    assert {q.question for q in load_demo().questions} <= topics
    assert "Should cities ban cars from their centres?" in topics


def test_cli_replay_of_questions_the_recording_lacks_exits_2_before_any_work(tmp_path, no_network, capsys):
    """Issue 38, item 3: a replay of questions not recorded is one line, exit 2, nothing written; with
    --skip-missing the recorded ones are built and the others named in a warning."""
    from berds_core.cli import main

    qfile = tmp_path / "q.jsonl"
    qfile.write_text(json.dumps({"id": "coffee", "question": "Is coffee good for you?", "perspectives": ["Y", "N"]})
                     + "\n" + json.dumps({"id": "cars", "question": "Should cities ban cars from their centres?",
                                          "perspectives": ["Yes", "No"]}) + "\n")
    out = tmp_path / "web"
    argv = ["corpus", "web", "--questions", str(qfile), "--search", "replay", "--out", str(out), "--json", "--quiet"]
    assert main(argv) == 2
    cap = capsys.readouterr()
    err = cap.err.strip().splitlines()
    assert len(err) == 1 and "1 of 2 questions are not in the recording replay:demo (first: 'coffee'" in err[0]
    assert "--skip-missing" in err[0] and cap.out == "" and not out.exists()
    assert main(argv + ["--skip-missing"]) == 0
    cap = capsys.readouterr()
    res = json.loads(cap.out)
    assert res["search_failed"] == ["coffee"] and res["complete"] == 1 and "warning: 1 of 2" in cap.err
