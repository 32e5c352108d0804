"""``net.reach`` asks a server with the key the client would send (``net.openai_api``), without going
through ``generators/``: a server that wants a key refuses a check without one and accepts it with it."""
from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from berds_core.errors import InputError
from berds_core.generators.openai import OpenAIClient
from berds_core.net import reach
from berds_core.net.openai_api import headers, normalize_base_url

KEY = "sk-test-4f1b2c"


class _KeyServer(BaseHTTPRequestHandler):
    seen: list = []

    def do_GET(self):  # noqa: N802
        type(self).seen.append((self.path, self.headers.get("Authorization")))
        ok = self.headers.get("Authorization") == f"Bearer {KEY}"
        body = b'{"object": "list", "data": []}' if ok else b'{"error": "bad key"}'
        self.send_response(200 if ok else 401)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *a):
        pass


@pytest.fixture
def server():
    srv = ThreadingHTTPServer(("127.0.0.1", 0), _KeyServer)
    _KeyServer.seen = []
    th = threading.Thread(target=srv.serve_forever, daemon=True)
    th.start()
    yield f"http://127.0.0.1:{srv.server_address[1]}"
    srv.shutdown()
    srv.server_close()
    th.join()


def test_a_refused_key_is_one_line_naming_the_flag_not_the_key(server, monkeypatch):
    for name in ("BERDS_OPENAI_API_KEY", "OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    assert "refused the API key (HTTP 401" in reach.unreachable(server)
    with pytest.raises(InputError) as err:
        reach.check_servers([("--judge", f"openai:m@{server}")])
    assert str(err.value).startswith("--judge: cannot reach the server") and "\n" not in str(err.value)
    assert _KeyServer.seen[-1] == ("/v1/models", None)


def test_the_key_from_the_environment_is_sent(server, monkeypatch):
    monkeypatch.setenv("BERDS_OPENAI_API_KEY", KEY)
    assert reach.unreachable(server) is None
    reach.check_servers([("--judge", f"openai:m@{server}/v1/")])
    assert _KeyServer.seen[-1] == ("/v1/models", f"Bearer {KEY}")


def test_client_and_check_share_the_address_and_header_rules():
    assert normalize_base_url("localhost:8000/") == "http://localhost:8000/v1"
    assert OpenAIClient("localhost:8000/", api_key=KEY).base_url == normalize_base_url("localhost:8000/")
    assert headers(KEY)["Authorization"] == f"Bearer {KEY}" and "Authorization" not in headers(None)
