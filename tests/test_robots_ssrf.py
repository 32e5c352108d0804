"""Server-side requests through robots.txt (issue 38, item 9), against real servers on the loopback.

"The public site" listens on 127.0.0.2 and the test tells the fetcher's address check that 127.0.0.2 is
public (only that address: 127.0.0.1 stays a local one). Its robots.txt redirects to "the internal
service" on 127.0.0.1: with private addresses off (the app), the redirect is followed hop by hop through
the same check, so the internal service gets no request at all. And the fetcher connects to the address
it checked: a name that only the check's lookup knows is fetched at that address, with its own Host.
"""
from __future__ import annotations

import asyncio
import ipaddress
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from berds_core.web import fetch
from berds_core.web.fetch import FetchConfig, fetch_pages

PUBLIC_IP = "127.0.0.2"


class _Handler(BaseHTTPRequestHandler):
    def do_GET(self):
        srv = self.server
        srv.requests.append((self.path, self.headers.get("Host")))
        route = srv.routes.get(self.path)
        if route is None:
            self.send_response(404)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        status, headers, body = route
        self.send_response(status)
        for k, v in headers.items():
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *a):
        pass


def _serve(host: str, routes: dict):
    try:
        srv = ThreadingHTTPServer((host, 0), _Handler)
    except OSError as e:
        pytest.skip(f"cannot listen on {host}: {e}")
    srv.routes, srv.requests = routes, []
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    return srv


PAGE = (200, {"Content-Type": "text/html; charset=utf-8"},
        b"<html><head><title>A page</title></head><body><p>" + b"Words of a public page. " * 30 + b"</p></body></html>")


@pytest.fixture()
def public_is_127_0_0_2(monkeypatch):
    real = fetch._not_public

    def not_public(ip):
        return False if ip == ipaddress.ip_address(PUBLIC_IP) else real(ip)

    monkeypatch.setattr(fetch, "_not_public", not_public)


@pytest.fixture()
def internal():
    srv = _serve("127.0.0.1", {"/admin": (200, {"Content-Type": "text/plain"}, b"internal secret")})
    yield srv
    srv.shutdown()


def test_a_robots_redirect_to_a_local_address_is_never_requested(public_is_127_0_0_2, internal):
    target = f"http://127.0.0.1:{internal.server_address[1]}/admin"
    site = _serve(PUBLIC_IP, {"/robots.txt": (302, {"Location": target}, b""), "/article": PAGE})
    try:
        url = f"http://{PUBLIC_IP}:{site.server_address[1]}/article"
        res = fetch_pages([url], FetchConfig(allow_private=False, timeout=3, retries=0))[0]
        assert internal.requests == []  # the internal service was never asked
        assert res.outcome == "skipped" and "robots.txt redirects where it may not be fetched" in res.reason
        assert [p for p, _ in site.requests] == ["/robots.txt"]  # and the page was not fetched either
        # the CLI (private addresses allowed: the user owns the machine) follows it as before
        res = fetch_pages([url], FetchConfig(allow_private=True, timeout=3, retries=0))[0]
        assert res.ok and [p for p, _ in internal.requests] == ["/admin"]
    finally:
        site.shutdown()


def test_a_robots_redirect_to_a_public_address_is_followed(public_is_127_0_0_2):
    rules = (200, {"Content-Type": "text/plain"}, b"User-agent: *\nDisallow: /private\n")
    site = _serve(PUBLIC_IP, {"/robots.txt": (301, {"Location": "/real-robots.txt"}, b""),
                              "/real-robots.txt": rules, "/article": PAGE, "/private": PAGE})
    try:
        base = f"http://{PUBLIC_IP}:{site.server_address[1]}"
        res = fetch_pages([base + "/article", base + "/private"], FetchConfig(allow_private=False, timeout=3,
                                                                             retries=0, per_host=1))
        assert res[0].ok and res[1].outcome == "skipped" and "robots.txt disallows" in res[1].reason
    finally:
        site.shutdown()


def test_the_request_goes_to_the_address_that_was_checked(public_is_127_0_0_2, monkeypatch):
    """``public.invalid`` resolves only in the check's lookup (to 127.0.0.2): were the request to look the
    name up again, it would fail; it reaches the checked address, asking for the name in ``Host``."""
    site = _serve(PUBLIC_IP, {"/robots.txt": (404, {}, b""), "/article": PAGE})
    port = site.server_address[1]
    real = asyncio.BaseEventLoop.getaddrinfo

    async def getaddrinfo(self, host, *a, **k):
        if host == "public.invalid":
            return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (PUBLIC_IP, port))]
        return await real(self, host, *a, **k)

    monkeypatch.setattr(asyncio.BaseEventLoop, "getaddrinfo", getaddrinfo)
    try:
        res = fetch_pages([f"http://public.invalid:{port}/article"], FetchConfig(allow_private=False, timeout=3,
                                                                                 retries=0))[0]
        assert res.ok, res.reason
        assert site.requests == [("/robots.txt", f"public.invalid:{port}"), ("/article", f"public.invalid:{port}")]
        assert res.final_url == f"http://public.invalid:{port}/article"
    finally:
        site.shutdown()
