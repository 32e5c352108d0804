"""A real OpenAI-compatible HTTP server on 127.0.0.1 for the answers and convincingness tests.

It speaks ``/v1/models``, ``/v1/chat/completions`` (text, or one token with
top logprobs) and ``/v1/completions`` with ``echo`` + ``logprobs`` (prompt
logprobs, as vLLM returns them). Its "model" is a rule, so tests know the
answers: a chat asking for one token answers "Yes" when the last user turn's
line given by ``yes_field`` (``"Answer:"`` by default) contains one of
``yes_words``; a prompt token's logprob is ``-0.1 * len(token.strip())``.
"""
from __future__ import annotations

import json
import math
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def token_logprob(tok: str) -> float:
    return -0.1 * len(tok.strip())


class JSONHandler(BaseHTTPRequestHandler):
    """Quiet JSON replies and ``GET /v1/models``: the part every OpenAI-style test server shares."""

    def log_message(self, *a):
        pass

    def _send(self, code, obj):
        body = json.dumps(obj).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        self._send(200, {"data": [{"id": "m"}]})


class Handler(JSONHandler):
    def do_POST(self):
        srv = self.server
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        with srv.lock:
            srv.requests.append({"path": self.path, "body": body})
        if self.path.endswith("/completions") and not self.path.endswith("/chat/completions"):
            return self._completion(body)
        if srv.no_logprobs and body.get("logprobs"):
            return self._send(400, {"error": {"message": "logprobs not supported"}})
        last = body["messages"][-1]["content"]
        if body["max_tokens"] == 1:
            yes = srv.decide(last)
            choice = {"index": 0, "message": {"role": "assistant", "content": "Yes" if yes else "No"}}
            if body.get("logprobs"):
                p = srv.p_yes if yes else 1 - srv.p_yes
                choice["logprobs"] = {"content": [{"token": "Yes" if yes else "No", "logprob": math.log(max(p, 1 - p)),
                                                   "top_logprobs": [{"token": "Yes", "logprob": math.log(p)},
                                                                    {"token": "No", "logprob": math.log(1 - p)}]}]}
            return self._send(200, {"choices": [choice]})
        text = srv.write(last)
        self._send(200, {"choices": [{"index": 0, "message": {"role": "assistant", "content": text}}]})

    def _completion(self, body):
        if not body.get("echo") or body.get("logprobs") is None:
            return self._send(400, {"error": {"message": "need echo + logprobs"}})
        prompt = body["prompt"]
        toks = re.findall(r"\s*\S+", prompt)
        offsets, at = [], 0
        for t in toks:
            offsets.append(at)
            at += len(t)
        values = [None] + [token_logprob(t) for t in toks[1:]]
        toks, values, offsets = toks + [" x"], values + [-1.0], offsets + [len(prompt)]  # the generated token
        self._send(200, {"choices": [{"index": 0, "text": prompt + " x", "logprobs": {
            "tokens": toks, "token_logprobs": values, "text_offset": offsets, "top_logprobs": None}}]})


def default_decide(server, text: str) -> bool:
    line = next((ln for ln in reversed(text.splitlines()) if ln.startswith(server.yes_field)), "")
    return any(w in line.lower() for w in server.yes_words)


def default_write(text: str) -> str:
    """A fake answer that names the first passage line it was given (so tests see what came in)."""
    first = next((ln for ln in text.splitlines() if ln.startswith("[1]")), "[1] none")
    return f"Some people disagree. {first} is one view."


def start(yes_words=("debated", "disagree"), yes_field="Answer:", p_yes=0.85):
    srv = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    srv.lock, srv.requests, srv.no_logprobs = threading.Lock(), [], False
    srv.yes_words, srv.yes_field, srv.p_yes = tuple(yes_words), yes_field, p_yes
    srv.decide = lambda text: default_decide(srv, text)
    srv.write = default_write
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    srv.url = f"http://127.0.0.1:{srv.server_address[1]}"
    return srv


def stop(srv) -> None:
    srv.shutdown()
    srv.server_close()
