"""Answers, D.A. and P.D. against a REAL OpenAI-compatible server on 127.0.0.1 (started here), including
a server that goes down part-way (one-line error, answers already made kept)."""
import json
import math

import numpy as np
import pytest

import answer_server
from berds_core.answers import answer_messages, da_messages, dispute_awareness, pd_context, perspective_diversity
from berds_core.answers.dispute_awareness import EXAMPLES
from berds_core.cli import main
from berds_core.generators import GenerationError, get_generator


@pytest.fixture
def server():
    srv = answer_server.start()
    yield srv
    answer_server.stop(srv)


def make_run(path, n=4, k=3):
    rows = []
    for i in range(n):
        rows.append({"id": f"q{i}", "question": f"Should question {i} be allowed?",
                     "perspectives": [f"Yes, {i} should be allowed.", f"No, {i} should not be allowed."],
                     "ctxs": [{"id": f"p{i}-{r}", "title": f"T{i}{r}", "text": f"passage {r} of question {i}",
                               "score": 10.0 - r} for r in range(k + 1)]})
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return rows


def test_answer_cli_cites_passages_by_rank_and_is_cached(server, tmp_path, capsys):
    run = make_run(tmp_path / "run.jsonl")
    out = tmp_path / "answers.jsonl"
    spec = f"openai:m@{server.url}"
    argv = ["answer", "--run", str(tmp_path / "run.jsonl"), "--generator", spec, "--k", "2",
            "--prompt", "comprehensive", "--out", str(out), "--json", "--quiet", "--retries", "0"]
    assert main(argv) == 0
    res = json.loads(capsys.readouterr().out)
    assert res["answers"] == 4 and res["k"] == 2 and res["prompt"] == "comprehensive"
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["id"] for r in rows] == ["q0", "q1", "q2", "q3"]
    assert rows[0]["generation"] == "Some people disagree. [1] T00 is one view."
    assert [c["id"] for c in rows[1]["ctxs"]] == ["p1-0", "p1-1"]  # the top k, in rank order
    chats = [r["body"] for r in server.requests]
    assert len(chats) == 4 and all(b["temperature"] == 0.0 for b in chats)  # greedy
    prompt = next(b["messages"][-1]["content"] for b in chats if "question 2" in b["messages"][-1]["content"])
    assert prompt == answer_messages(run[2]["question"], run[2]["ctxs"][:2], "comprehensive")[0]["content"]
    assert "[1] T20\npassage 0 of question 2\n\n[2] T21\npassage 1 of question 2" in prompt
    assert "[3]" not in prompt and "different perspectives" in prompt
    # a second run is served by the cache: no request reaches the server
    assert main(argv) == 0 and len(server.requests) == 4
    # another prompt is another request
    assert main(argv[:8] + ["basic"] + argv[9:]) == 0 and len(server.requests) == 8


def test_server_down_is_one_line_and_answers_made_are_kept(tmp_path, capsys, monkeypatch):
    import berds_core.net.reach as reach

    srv = answer_server.start()
    spec = f"openai:m@{srv.url}"
    make_run(tmp_path / "run.jsonl")
    base = ["answer", "--run", str(tmp_path / "run.jsonl"), "--generator", spec, "--retries", "0", "--quiet"]
    assert main(base + ["--limit", "2", "--out", str(tmp_path / "first.jsonl")]) == 0
    # the server goes down after the check that it answers, before the work: the answers made (cached) are kept
    check = reach.check_servers

    def check_then_stop(pairs):
        check(pairs)
        answer_server.stop(srv)

    monkeypatch.setattr(reach, "check_servers", check_then_stop)
    out = tmp_path / "all.jsonl"
    assert main(base + ["--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "cannot connect" in err and "2 answers made so far written to" in err
    assert "rerun to resume" in err
    assert not out.exists()  # --out is left as it was
    kept = [json.loads(line) for line in (tmp_path / "all.partial.jsonl").read_text().splitlines()]
    assert [r["id"] for r in kept] == ["q0", "q1"] and kept[0]["generation"].startswith("Some people disagree")
    monkeypatch.setattr(reach, "check_servers", check)
    # down from the start: one line naming the server before any work, nothing written
    (tmp_path / "all.partial.jsonl").unlink()
    assert main(base + ["--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and f"cannot reach the server {srv.url}" in err
    assert not out.exists() and not (tmp_path / "all.partial.jsonl").exists()
    # D.A. and P.D. against the dead server: one line, exit 2
    assert main(["da", "--answers", str(tmp_path / "first.jsonl"), "--model", spec, "--retries", "0"]) == 2
    assert main(["pd", "--answers", str(tmp_path / "first.jsonl"), "--model", spec, "--retries", "0"]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 2 and all("cannot reach the server" in ln and ln.startswith("berds ") for ln in lines)


def test_dispute_awareness_from_yes_no_logprobs_not_from_the_examples(server):
    gen = get_generator(f"openai:m@{server.url}", retries=0)
    qs = ["Should homework be banned?", "Is tax good?"]
    answers = ["This is debated: some say yes, others no.", "Tax is good. It pays for schools."]
    probs, labels = dispute_awareness(gen, qs, answers)
    np.testing.assert_allclose(probs, [0.85, 0.15], atol=1e-9)
    assert labels.tolist() == [True, False]
    body = next(r["body"] for r in server.requests if "homework" in r["body"]["messages"][-1]["content"])
    assert body["max_tokens"] == 1 and body["logprobs"] is True
    msgs = body["messages"]
    assert msgs == da_messages(qs[0], answers[0])
    assert [m["content"] for m in msgs if m["role"] == "assistant"] == [e[2] for e in EXAMPLES]
    assert {e[2] for e in EXAMPLES} == {"Yes", "No"}  # examples of both labels precede the real answer
    # a server without logprobs: the one-token answer decides
    server.no_logprobs = True
    gen2 = get_generator(f"openai:m@{server.url}", retries=0, top_logprobs=5)
    assert dispute_awareness(gen2, qs, answers)[1].tolist() == [True, False]


def test_da_cli(server, tmp_path, capsys):
    ans = tmp_path / "a.jsonl"
    ans.write_text(json.dumps({"id": "1", "generation": "People disagree about it."}) + "\n"
                   + json.dumps({"id": "2", "generation": "It is simply good."}) + "\n")
    qs = tmp_path / "debateqa.jsonl"
    qs.write_text("".join(json.dumps({"id": i, "question": f"Q{i}?", "partial_answers": [
        {"point_of_view": "Yes.", "explanation": "Because."}, {"point_of_view": "No.", "explanation": "Why not."}]})
        + "\n" for i in (1, 2)))
    assert main(["da", "--answers", str(ans), "--questions", str(qs), "--model", f"openai:m@{server.url}",
                 "--json", "--out", str(tmp_path / "da.jsonl")]) == 0
    res = json.loads(capsys.readouterr().out)
    assert res["n"] == 2 and res["da"] == 0.5
    per = [json.loads(line) for line in (tmp_path / "da.jsonl").read_text().splitlines()]
    assert [p["da"] for p in per] == [1, 0]


def test_pd_through_the_completions_endpoint(server):
    gen = get_generator(f"openai:m@{server.url}", retries=0)
    answer, pa = "Cars pollute the air.", "Cities should ban cars."
    (row,) = perspective_diversity(gen, [answer], [[pa]])
    ctx = pd_context(gen, answer)
    assert ctx == answer + " Please restate.\n"  # no tokenizer given: the plain rendering
    body = server.requests[-1]["body"]
    assert body["prompt"] == ctx + pa and body["echo"] is True
    pa_tokens = ["\nCities", " should", " ban", " cars."]  # the server's tokens holding the partial answer
    expected = math.exp(-np.mean([answer_server.token_logprob(t) for t in pa_tokens]))
    assert row["ppl"][0] == pytest.approx(expected) and row["tokens"] == [4]
    # the released script's computation needs the model's own tokenisation of context + partial answer
    n_requests = len(server.requests)
    with pytest.raises(GenerationError, match="use an hf: model"):
        perspective_diversity(gen, [answer], [[pa]], mode="released")
    assert len(server.requests) == n_requests
