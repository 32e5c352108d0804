"""The openai judge against a REAL HTTP server started on 127.0.0.1 (http.server in a thread).

The server implements ``/v1/chat/completions`` and answers deterministically
from the prompt: "Yes" when the document contains the word "indeed", "No"
otherwise; with or without logprobs, rejecting logprobs, answering "Banana"
for documents with "BANANA", HTTP 422 for documents with "GARBAGE", wordy
replies to 16-token requests ("verbose"), or 429 once per document before
succeeding. (A real vLLM server is tested in test_vllm_server.py.)
"""
import json
import math
import re
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np
import pytest

from berds_core.judges import JudgeError, get_judge, prediction_cache
from berds_core.net.openai_api import normalize_base_url

SECRET = "sk-test-very-secret-123"


HTML_PAGE = ("<!DOCTYPE html><html><head><title>404 Not Found</title><style>body{color:red}</style>"
             "<script>alert('x')</script></head><body><h1>Not Found</h1><p>The requested URL was not found on "
             "this server.</p>" + "<div class='pad'>filler words here</div>" * 200 + "</body></html>")


class _Handler(BaseHTTPRequestHandler):
    def log_message(self, *a):  # quiet
        pass

    def _send(self, code, obj=None, raw=None, headers=None, ctype="application/json"):
        body = raw if raw is not None else json.dumps(obj).encode()
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        if self.path == "/v1/models":
            self._send(200, {"data": [{"id": "tiny"}]})
        else:
            self._send(404, {"error": "not found"})

    def do_POST(self):
        srv = self.server
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        with srv.lock:
            srv.requests.append({"body": body, "auth": self.headers.get("Authorization")})
        if self.path != "/v1/chat/completions":
            return self._send(404, {"error": "not found"})
        prompt = body["messages"][-1]["content"]
        m = re.search(r"Document: (.*?)\n(?:Statement:|Does the document)", prompt, re.S)
        doc = m.group(1) if m else prompt  # a free-form yes/no question (Judge.yes_probability)
        mode = srv.mode
        if mode == "reject_logprobs" and body.get("logprobs"):
            return self._send(400, {"error": {"message": "logprobs not supported"}})
        if mode == "429_once":
            with srv.lock:
                first = doc not in srv.seen
                srv.seen.add(doc)
            if first:
                return self._send(429, {"error": "slow down"}, headers={"Retry-After": "0"})
        if mode in ("html 404", "html 200"):  # a web server or proxy in front of the wrong port
            return self._send(int(mode[5:]), raw=HTML_PAGE.encode(), ctype="text/html; charset=utf-8")
        if mode == "500":
            return self._send(500, raw=b"internal error")
        if "GARBAGE" in doc:
            return self._send(422, {"error": {"message": "unprocessable"}})
        if "BANANA" in doc:
            return self._send(200, {"choices": [{"index": 0, "message": {"role": "assistant",
                                                                         "content": "Banana"}}]})
        yes = "indeed" in doc
        answer = "Yes" if yes else "No"
        if mode == "verbose" and body["max_tokens"] > 1:  # wordy replies the authors' parser reads
            answer = "The answer is Yes." if yes else '{"Answer": "No"}'
        if mode == "verbose" and body["max_tokens"] == 1:
            answer = "The" if yes else "{"  # logprobs without Yes/No among them
        choice = {"index": 0, "message": {"role": "assistant", "content": answer}, "finish_reason": "length"}
        if body.get("logprobs") and mode == "verbose":
            choice["logprobs"] = {"content": [{"token": answer, "logprob": -0.1, "top_logprobs": [
                {"token": answer, "logprob": -0.1}, {"token": "Maybe", "logprob": -3.0}]}]}
        if body.get("logprobs") and mode in ("logprobs", "429_once"):
            p_yes = 0.8 if yes else 0.3
            choice["logprobs"] = {"content": [{"token": "Yes" if yes else " No", "logprob": math.log(max(p_yes, 1 - p_yes)),
                                               "top_logprobs": [
                                                   {"token": "Yes", "logprob": math.log(p_yes)},
                                                   {"token": " No", "logprob": math.log(1 - p_yes) - 0.0},
                                                   {"token": "Maybe", "logprob": -9.0}]}]}
        self._send(200, {"id": "x", "object": "chat.completion", "choices": [choice]})


@pytest.fixture
def server():
    srv = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    srv.lock = threading.Lock()
    srv.requests, srv.seen, srv.mode = [], set(), "logprobs"
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    srv.url = f"http://127.0.0.1:{srv.server_address[1]}"
    yield srv
    srv.shutdown()
    srv.server_close()


PAIRS = [("It is indeed good.", "Good."), ("It is bad.", "Good."), ("Indeed not; indeed.", "Bad."),
         ("Nothing here.", "Bad.")]


def _judge(url, **kw):
    kw.setdefault("retries", 2)
    kw.setdefault("backoff", 0.01)
    kw.setdefault("timeout", 5)
    return get_judge(f"openai:tiny@{url}", **kw)


def test_base_url_forms():
    assert normalize_base_url("http://h:1") == "http://h:1/v1"
    assert normalize_base_url("http://h:1/v1/") == "http://h:1/v1"
    assert normalize_base_url("localhost:8000") == "http://localhost:8000/v1"


def test_logprobs_path(server):
    j = _judge(server.url, concurrency=3, threshold=0.5)
    probs, labels = j.predict(PAIRS)
    np.testing.assert_allclose(probs, [0.8, 0.3, 0.8, 0.3], atol=1e-6)
    assert labels.tolist() == [True, False, True, False]
    body = server.requests[0]["body"]
    assert body["logprobs"] is True and body["top_logprobs"] >= 2 and body["max_tokens"] == 1
    assert body["model"] == "tiny" and body["messages"][-1]["role"] == "user"
    assert j.status()["ok"] is True


def test_text_answers_when_logprobs_rejected(server):
    server.mode = "reject_logprobs"
    j = _judge(server.url, concurrency=1)
    probs, labels = j.predict(PAIRS)
    assert probs.tolist() == [1.0, 0.0, 1.0, 0.0]
    assert not server.requests[-1]["body"].get("logprobs")  # it stopped asking


def test_text_answers_without_logprobs_in_reply(server):
    server.mode = "text"
    probs, _ = _judge(server.url).predict(PAIRS[:2])
    assert probs.tolist() == [1.0, 0.0]


def test_cached_second_call_sends_nothing(server):
    j = _judge(server.url)
    j.predict(PAIRS)
    n = len(server.requests)
    probs, _ = _judge(server.url).predict(PAIRS)
    assert len(server.requests) == n
    np.testing.assert_allclose(probs, [0.8, 0.3, 0.8, 0.3], atol=1e-6)


def test_429_then_success(server):
    server.mode = "429_once"
    j = _judge(server.url, concurrency=2, retries=3)
    probs, _ = j.predict(PAIRS[:2])
    np.testing.assert_allclose(probs, [0.8, 0.3], atol=1e-6)
    assert len(server.requests) == 4  # one 429 and one success per pair


def test_server_down_is_one_clear_line():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    j = _judge(f"http://127.0.0.1:{port}", retries=1)
    with pytest.raises(JudgeError) as err:
        j.predict(PAIRS[:1])
    msg = str(err.value)
    assert "\n" not in msg and f"127.0.0.1:{port}" in msg and "cannot connect" in msg and "2 tries" in msg
    assert j.status()["ok"] is False


def test_persistent_5xx_gives_up(server):
    server.mode = "500"
    with pytest.raises(JudgeError, match="HTTP 500"):
        _judge(server.url, retries=2).predict(PAIRS[:1])
    assert len(server.requests) == 3


@pytest.mark.parametrize("mode", ["html 404", "html 200"])
def test_an_html_page_is_described_in_plain_words(server, mode):
    """A server answering an HTML page (an error page, or a web server on the wrong port) gives one line: the
    status, the content type and the page's first words without tags, never the raw HTML."""
    server.mode = mode
    with pytest.raises(JudgeError) as err:
        _judge(server.url, retries=0).predict(PAIRS[:1])
    msg = str(err.value)
    status = mode.split()[1]
    assert f"HTTP {status}, text/html: 404 Not Found Not Found The requested URL was not found" in msg, msg
    assert "\n" not in msg and "<" not in msg and ">" not in msg and "alert" not in msg and "color" not in msg
    assert len(msg) < 400 and msg.endswith("..." + (")" if status == "200" else "")), msg


def test_unclear_answer_is_no_as_the_authors_parse_it(server):
    server.mode = "text"
    j = _judge(server.url, concurrency=1)
    probs, labels = j.predict([("A indeed fine doc.", "P1"), ("BANANA doc.", "P1")])
    assert probs.tolist() == [1.0, 0.0] and labels.tolist() == [True, False]
    assert j.decided_by == {"logprobs": 0, "text": 2}
    last = server.requests[-1]["body"]
    assert last["max_tokens"] == 16 and last["temperature"] == 0.0 and not last.get("logprobs")


def test_failing_request_keeps_predictions_already_made(server):
    server.mode = "text"
    pairs = [("A indeed fine doc.", "P1"), ("A plain doc.", "P1"), ("GARBAGE doc.", "P1")]
    j = _judge(server.url, concurrency=1)
    with pytest.raises(JudgeError, match="HTTP 422"):
        j.predict(pairs)
    # the two good answers were committed; re-judging them sends no request
    n = len(server.requests)
    probs, _ = _judge(server.url).predict(pairs[:2])
    assert probs.tolist() == [1.0, 0.0] and len(server.requests) == n


def test_api_key_sent_but_never_exposed(server, monkeypatch, capsys):
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    j = _judge(server.url)
    j.predict(PAIRS[:1])
    assert server.requests[-1]["auth"] == f"Bearer {SECRET}"
    assert SECRET not in j.name and SECRET not in repr(j) and SECRET not in json.dumps(j.status())
    import pickle

    assert SECRET.encode() not in pickle.dumps(j)
    out = capsys.readouterr()
    assert SECRET not in out.out + out.err
    db = prediction_cache().path.read_bytes()
    assert SECRET.encode() not in db
    monkeypatch.delenv("OPENAI_API_KEY")
    j2 = _judge(server.url, api_key="sk-passed")
    j2.predict(PAIRS[1:2])
    assert server.requests[-1]["auth"] == "Bearer sk-passed"


def test_cli_judge_eval_against_server(server, tmp_path, capsys):
    from berds_core.cli import main

    tsv = tmp_path / "pairs.tsv"
    tsv.write_text("question\tid\tdocument\tperspective\tlabel\n"
                   "Q?\t1\tIt is indeed so.\tP\t1\n"
                   "Q?\t2\tNo way.\tP\t0\n"
                   "Q?\t3\t\"Quoted \"\"indeed\"\" doc\"\tP\t0\n", encoding="utf-8")
    rc = main(["judge-eval", "--pairs", str(tsv), "--judge", f"openai:tiny@{server.url}", "--json", "--quiet"])
    assert rc == 0
    res = json.loads(capsys.readouterr().out)
    assert res["n"] == 3 and res["accuracy"] == pytest.approx(2 / 3) and res["f1"] == pytest.approx(2 / 3)


def test_free_form_yes_probability_decides_sides(server):
    from berds_core.eval.leaning import infer_sides_llm

    j = _judge(server.url, concurrency=2)
    probs = j.yes_probability(["Is it indeed so?", "Is it so?"])
    np.testing.assert_allclose(probs, [0.8, 0.3], atol=1e-6)
    assert server.requests[-1]["body"]["messages"][0]["role"] == "user"
    sides = infer_sides_llm("Q?", ["It is not.", "It is indeed."], j.yes_probability)
    assert (sides.support, sides.oppose, sides.source) == (1, 0, "llm")


def test_leaning_cli_sides_from_an_llm(server, tmp_path, capsys):
    from berds_core.cli import main

    run = tmp_path / "run.jsonl"
    run.write_text(json.dumps({"id": "q", "question": "Is it so?", "perspectives": ["It is not.", "It is indeed."],
                               "ctxs": [{"id": "p", "text": "t"}]}) + "\n")
    gold = tmp_path / "gold.jsonl"
    gold.write_text(json.dumps({"question_id": "q", "passage_id": "p", "perspective": 1}) + "\n")
    args = ["leaning", "--run", str(run), "--gold", str(gold), "--k", "1", "--json"]
    assert main(args + ["--sides-llm", f"openai:tiny@{server.url}"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["support_only"] == 1.0  # the LLM says perspective 1 ("indeed") answers yes
    assert main(args + ["--sides", "order"]) == 0  # dataset order: perspective 0 supports
    assert json.loads(capsys.readouterr().out)["oppose_only"] == 1.0
    assert main(args + ["--sides-llm", "embedded"]) == 2
    assert "cannot answer free prompts" in capsys.readouterr().err


def test_berds_prompt_goes_out_with_its_system_turn(server):
    from berds_core.judges.prompts import SYSTEM_ZERO

    _judge(server.url).predict([("It is indeed good. Title", "Good.")])
    msgs = server.requests[-1]["body"]["messages"]
    assert [m["role"] for m in msgs] == ["system", "user"]  # a chat API keeps the system turn
    assert msgs[0]["content"] == SYSTEM_ZERO.strip()
    assert msgs[1]["content"].startswith("Document: It is indeed good. Title\nStatement: Good.\nInstruction: ")
    assert msgs[1]["content"].endswith("\nAnswer:")
    _judge(server.url, shot=1).predict([("It is indeed good.", "Good.")])
    assert [m["role"] for m in server.requests[-1]["body"]["messages"]] == ["system", "user", "assistant", "user"]


def test_berds_evaluator_preset_drops_the_system_turn(server):
    j = get_judge(f"berds-evaluator:{server.url}", retries=1, backoff=0.01)
    probs, _ = j.predict(PAIRS[:2])
    np.testing.assert_allclose(probs, [0.8, 0.3], atol=1e-6)
    body = server.requests[-1]["body"]
    assert body["model"] == "berds-evaluator" and [m["role"] for m in body["messages"]] == ["user"]


def test_generate_mode_parses_wordy_replies(server):
    server.mode = "verbose"
    j = _judge(server.url, decode="generate")
    probs, labels = j.predict(PAIRS)
    assert labels.tolist() == [True, False, True, False] and probs.tolist() == [1.0, 0.0, 1.0, 0.0]
    bodies = [r["body"] for r in server.requests]
    assert all(b["max_tokens"] == 16 and not b.get("logprobs") and b["temperature"] == 0.0 for b in bodies)
    # logits mode on a server whose top logprobs hold neither Yes nor No: the parsed reply decides
    k = _judge(server.url)
    assert k.predict(PAIRS)[1].tolist() == [True, False, True, False]
    assert k.decided_by == {"logprobs": 0, "text": 4}


def test_cli_compare_decode_reports_disagreement(server, tmp_path, capsys):
    from berds_core.cli import main

    server.mode = "logprobs"
    tsv = tmp_path / "pairs.tsv"
    tsv.write_text("question\tid\tdocument\tperspective\tlabel\n"
                   "Q?\t1\tIt is indeed so.\tP\t1\n"
                   "Q?\t2\tNo way.\tP\t0\n", encoding="utf-8")
    rc = main(["judge-eval", "--pairs", str(tsv), "--judge", f"openai:tiny@{server.url}", "--compare-decode",
               "--threshold", "0.85", "--json", "--quiet"])
    assert rc == 0
    res = json.loads(capsys.readouterr().out)
    c = res["decode_comparison"]
    # logits: P(yes) 0.8 and 0.3, both below 0.85 -> No, No; generate: Yes, No -> one disagreement
    assert (c["pairs"], c["disagree"], c["logits_no_generate_yes"], c["logits_yes_generate_no"]) == (2, 1, 1, 0)
    assert c["rate"] == 0.5 and c["generate_judge"].endswith("-gen-t0.85") and res["judge"] == c["logits_judge"]
    assert c["other_vs_humans"]["accuracy"] == 1.0 and res["accuracy"] == 0.5
