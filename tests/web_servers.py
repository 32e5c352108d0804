"""Real HTTP servers on 127.0.0.1 for the web-corpus tests (http.server in threads).

``search_server(results)`` speaks the JSON of SearXNG (``GET /search?format=json``),
Serper (``POST /serper/search``), Brave (``GET /brave/res/v1/web/search``), Bing
(``GET /bing/v7.0/search``) and Google Programmable Search
(``GET /cse/customsearch/v1``); the commercial ones check their key header and
answer 401 without it. ``site_server()`` serves the pages a web corpus meets:
articles, a boilerplate-heavy page, a 404, a page that never answers in time, a
redirect loop, a normal redirect, a PDF, 20 MB pages (with and without
Content-Length), Latin-1 pages (charset in the header / in a ``<meta>``), a page
whose text contains ``<script>`` and Markdown, a page that answers 503 once, a
plain-text page and a page robots.txt disallows. Both record their requests.
``recording_server()`` answers every GET with an empty OpenAI-style model list and
records it: an internal service or an outside site that must *not* be called.
"""
from __future__ import annotations

import contextlib
import json
import threading
import time
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

KEYS = {"serper": "serper-KEY-d41d8cd98f", "brave": "brave-KEY-0cc175b9c0", "bing": "bing-KEY-92eb5ffee6",
        "cse": "cse-KEY-4a8a08f09d"}

ARTICLES = {
    "cars-ban": ("Car-free city centres cut pollution",
                 "City councils that banned private cars from their centres report cleaner air within a year. "
                 "Nitrogen dioxide levels near schools fell sharply, and doctors say children with asthma "
                 "needed fewer emergency visits. Shop owners feared losing customers, but footfall in the "
                 "pedestrianised streets rose as people lingered in cafes and markets. Supporters argue that "
                 "banning cars makes streets safer for walking and cycling and frees space for trees and "
                 "benches. Transport planners add that buses run faster and more reliably once private traffic "
                 "is gone, which helps workers who cannot afford a car. "),
    "cars-against": ("Why banning cars hurts small businesses",
                     "Retailers in several towns say a ban on cars in the centre drove away older shoppers and "
                     "families who carry heavy goods. Delivery firms complain of longer routes and higher costs. "
                     "Critics argue that bans push traffic onto residential streets at the edge of the zone, "
                     "moving pollution rather than removing it. People with disabilities report that the nearest "
                     "parking is now too far from clinics and banks. Opponents say better public transport should "
                     "come first, and that a ban without alternatives punishes those who live in villages "
                     "without a bus service. "),
}
BOILER_NAV = " ".join(f"<li><a href='/section{i}'>Section {i} news headlines</a></li>" for i in range(40))


def article_html(title: str, body: str, repeat: int = 3) -> str:
    paras = "".join(f"<p>{body}</p>" for _ in range(repeat))
    return (f"<!doctype html><html><head><meta charset='utf-8'><title>{title}</title></head><body>"
            f"<article><h1>{title}</h1>{paras}</article></body></html>")


def boilerplate_html() -> str:
    main = ARTICLES["cars-ban"][1]
    return ("<!doctype html><html><head><meta charset='utf-8'><title>City news: traffic debate</title>"
            "<script>window.trackingPixel = 'TRACKER-JS-CODE';</script><style>.nav{color:red}</style></head><body>"
            "<div id='cookie-banner'>We use cookies. Accept all cookies to continue reading our site.</div>"
            f"<header><nav><ul>{BOILER_NAV}</ul></nav></header>"
            "<aside class='sidebar'><h3>Most read</h3><ul>" + "".join(
                f"<li><a href='/popular{i}'>Celebrity gossip story number {i}</a></li>" for i in range(25)) +
            "</ul><div class='ad'>ADVERTISEMENT Buy discount sofas now</div></aside>"
            "<main><article><h1>Residents debate the traffic ban</h1>"
            f"<p>{main}</p><p>Residents at a packed town-hall meeting on Tuesday were divided on the plan, "
            "with parents largely in favour and shop owners largely against it.</p></article></main>"
            "<footer><p>Subscribe to our newsletter for daily updates.</p><p>Copyright 2024 Example Media Group. "
            "All rights reserved. Privacy policy. Terms of use. Cookie settings.</p></footer></body></html>")


TRICKY_TEXT = ('Write &lt;script&gt;alert("pwned")&lt;/script&gt; in a comment and nothing should run. '
               "Markdown like **not bold**, [a link](javascript:alert(1)) and # not a heading must stay "
               "literal text. Cities that ban cars say the streets become calmer and safer for everyone.")


def tricky_html() -> str:
    return ("<!doctype html><html><head><meta charset='utf-8'><title>Markup &lt;b&gt;in&lt;/b&gt; **titles**</title>"
            "<script>document.title = 'INJECTED-BY-SCRIPT';</script></head><body><article>"
            f"<h1>Escaping test</h1><p>{TRICKY_TEXT}</p><p>{TRICKY_TEXT}</p>"
            "<script>var hidden = 'SCRIPT-BODY-NEVER-A-PASSAGE';</script></article></body></html>")


LATIN1_TEXT = ("Le café crème de la façade coûte trois euros. Les élèves naïfs préfèrent la rue piétonne "
               "sans voitures, disent les habitants du quartier. ") * 4
LATIN1_META_TEXT = ("À Genève, la zone piétonne déçoit les commerçants: « moins de clients », disent-ils, "
                    "et les livreurs se plaignent des détours. ") * 4


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, addr, handler):
        super().__init__(addr, handler)
        self.lock = threading.Lock()
        self.requests: list[dict] = []
        self.counts: Counter = Counter()
        self.inflight = 0
        self.max_inflight = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


class _Base(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):  # quiet
        pass

    def _record(self):
        srv = self.server
        with srv.lock:
            srv.requests.append({"method": self.command, "path": self.path, "headers": dict(self.headers)})
            srv.counts[urlsplit(self.path).path] += 1

    def _send(self, code: int, body: bytes = b"", ctype: str | None = "text/html; charset=utf-8",
              headers: dict | None = None):
        self.send_response(code)
        if ctype:
            self.send_header("Content-Type", ctype)
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _json(self, code: int, obj) -> None:
        self._send(code, json.dumps(obj).encode(), "application/json")


# --------------------------------------------------------------------------- search


class _SearchHandler(_Base):
    def _results(self, query: str) -> list[tuple[str, str, str]]:
        table = self.server.results
        return table.get(query, table.get("*", []))

    def _key_ok(self, header: str, kind: str) -> bool:
        if self.headers.get(header) != KEYS[kind]:
            self._json(401, {"message": "Unauthorized.", "statusCode": 401})
            return False
        return True

    def do_GET(self):
        self._record()
        parts = urlsplit(self.path)
        qs = {k: v[0] for k, v in parse_qs(parts.query).items()}
        q = qs.get("q", "")
        res = self._results(q)
        if parts.path == "/search":  # SearXNG
            if qs.get("format") != "json":
                return self._send(403, b"format not allowed", "text/plain")
            page = int(qs.get("pageno", "1"))
            chunk = res[(page - 1) * 10: page * 10]
            return self._json(200, {"query": q, "number_of_results": len(res), "results": [
                {"url": u, "title": t, "content": s, "engine": "duckduckgo", "engines": ["duckduckgo"],
                 "score": 1.0 / (i + 1), "category": "general", "parsed_url": list(urlsplit(u))}
                for i, (u, t, s) in enumerate(chunk)], "answers": [], "corrections": [], "infoboxes": [],
                "suggestions": [], "unresponsive_engines": []})
        if parts.path == "/brave/res/v1/web/search":
            if not self._key_ok("X-Subscription-Token", "brave"):
                return
            count, offset = int(qs.get("count", "20")), int(qs.get("offset", "0"))
            chunk = res[offset * count:(offset + 1) * count]
            return self._json(200, {"type": "search", "query": {"original": q, "more_results_available":
                                                                   len(res) > (offset + 1) * count},
                                    "web": {"type": "search", "results": [
                                        {"title": t, "url": u, "description": s, "type": "search_result"}
                                        for u, t, s in chunk]}})
        if parts.path == "/bing/v7.0/search":
            if not self._key_ok("Ocp-Apim-Subscription-Key", "bing"):
                return
            count, offset = int(qs.get("count", "10")), int(qs.get("offset", "0"))
            chunk = res[offset:offset + count]
            return self._json(200, {"_type": "SearchResponse", "queryContext": {"originalQuery": q},
                                    "webPages": {"totalEstimatedMatches": len(res), "value": [
                                        {"id": f"https://api.bing.microsoft.com/api/v7/#WebPages.{i}", "name": t,
                                         "url": u, "snippet": s} for i, (u, t, s) in enumerate(chunk)]}})
        if parts.path == "/cse/customsearch/v1":
            if not self._key_ok("X-goog-api-key", "cse"):
                return
            if qs.get("cx") != "test-cx":
                return self._json(400, {"error": {"code": 400, "message": "Invalid cx"}})
            num, start = int(qs.get("num", "10")), int(qs.get("start", "1"))
            chunk = res[start - 1:start - 1 + num]
            return self._json(200, {"kind": "customsearch#search", "items": [
                {"kind": "customsearch#result", "title": t, "link": u, "snippet": s} for u, t, s in chunk]})
        self._json(404, {"error": "not found"})

    def do_POST(self):
        self._record()
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
        if urlsplit(self.path).path != "/serper/search":
            return self._json(404, {"error": "not found"})
        if not self._key_ok("X-API-KEY", "serper"):
            return
        res = self._results(body.get("q", ""))
        num, page = int(body.get("num", 10)), int(body.get("page", 1))
        chunk = res[(page - 1) * num: page * num]
        self._json(200, {"searchParameters": {"q": body.get("q"), "type": "search", "engine": "google",
                                              "num": num, "page": page},
                         "organic": [{"title": t, "link": u, "snippet": s, "position": i + 1}
                                     for i, (u, t, s) in enumerate(chunk)],
                         "credits": 1})


# --------------------------------------------------------------------------- the web site


class _SiteHandler(_Base):
    def do_GET(self):
        self._record()
        srv = self.server
        with srv.lock:
            srv.inflight += 1
            srv.max_inflight = max(srv.max_inflight, srv.inflight)
        try:
            self._route(urlsplit(self.path).path)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up (size cap, timeout): fine
        finally:
            with srv.lock:
                srv.inflight -= 1

    def _route(self, path: str) -> None:
        srv = self.server
        if srv.delay:
            time.sleep(srv.delay)
        if path == "/robots.txt":
            if srv.robots_status == "huge":
                return self._huge_robots()
            if srv.robots_status != 200:
                return self._send(srv.robots_status, b"robots trouble", "text/plain")
            return self._send(200, b"User-agent: *\nDisallow: /private/\n\nUser-agent: EvilBot\nDisallow: /\n",
                              "text/plain")
        if path.startswith("/articles/"):
            name = path.rsplit("/", 1)[-1]
            if name in ARTICLES:
                return self._send(200, article_html(*ARTICLES[name]).encode())
            if name.startswith("gen-"):  # generated articles (benchmarks, concurrency)
                return self._send(200, article_html(f"Article {name}", f"Text of article {name} about city "
                                                                       f"traffic and air. " * 40, 1).encode())
        if path == "/boilerplate":
            return self._send(200, boilerplate_html().encode())
        if path == "/missing":
            return self._send(404, b"<html><body>Not found</body></html>")
        if path == "/slow":
            time.sleep(srv.slow_seconds)
            return self._send(200, article_html("Slow", "too late " * 50).encode())
        if path == "/loop/a":
            return self._send(302, b"", None, {"Location": "/loop/b"})
        if path == "/loop/b":
            return self._send(302, b"", None, {"Location": "/loop/a"})
        if path == "/moved":
            return self._send(301, b"", None, {"Location": "/articles/cars-against#comments"})
        if path == "/paper.pdf":
            return self._send(200, b"%PDF-1.4\n1 0 obj << /Type /Catalog >> endobj\n%%EOF\n", "application/pdf")
        if path in ("/huge", "/huge-stream"):
            return self._huge(chunked=path == "/huge-stream")
        if path == "/latin1":
            body = (f"<html><head><title>Caf\u00e9 cr\u00e8me</title></head><body><article><p>{LATIN1_TEXT}</p>"
                    "</article></body></html>").encode("latin-1")
            return self._send(200, body, "text/html; charset=ISO-8859-1")
        if path == "/latin1-meta":
            body = (f"<html><head><meta http-equiv='Content-Type' content='text/html; charset=iso-8859-1'>"
                    f"<title>Fa\u00e7ade</title></head><body><article><p>{LATIN1_META_TEXT}</p></article></body></html>"
                    ).encode("latin-1")
            return self._send(200, body, "text/html")
        if path == "/tricky":
            return self._send(200, tricky_html().encode())
        if path == "/flaky":
            with srv.lock:
                srv.flaky_left -= 1
                fail = srv.flaky_left >= 0
            if fail:
                return self._send(503, b"busy", "text/plain", {"Retry-After": "0"})
            return self._send(200, article_html("Recovered after a 503", ARTICLES["cars-against"][1], 1).encode())
        if path == "/limited":
            with srv.lock:
                srv.limited_left -= 1
                fail = srv.limited_left >= 0
            if fail:
                return self._send(429, b"slow down", "text/plain", {"Retry-After": "0"})
            return self._send(200, article_html("Served after a 429", ARTICLES["cars-ban"][1], 1).encode())
        if path == "/cp1252-undeclared":
            body = ("<html><body><article><p>" + "Les élèves préfèrent la façade du café, où l'on paie trois "
                    "euros. " * 12 + "</p></article></body></html>").encode("cp1252")
            return self._send(200, body, "text/html")
        if path == "/plain.txt":
            return self._send(200, ("Plain text notes on traffic bans. " * 30).encode(), "text/plain; charset=utf-8")
        if path.startswith("/private/"):
            return self._send(200, article_html("Private", "robots said no " * 30).encode())
        self._send(404, b"<html><body>Not found</body></html>")

    def _huge_robots(self) -> None:
        """A 300 MiB robots.txt (its rules first, then comment lines), streamed chunked; ``robots_sent``
        counts the bytes written before the client stopped reading."""
        srv = self.server
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        self.wfile.write(_frame(b"User-agent: *\nDisallow: /private/\n", True))
        block = b"# " + b"a comment line of a robots.txt far too long " * 1400 + b"\n"
        sent = 0
        while sent < 300 * 2**20:
            self.wfile.write(_frame(block, True))
            sent += len(block)
            srv.robots_sent = sent
        self.wfile.write(b"0\r\n\r\n")

    def _huge(self, chunked: bool) -> None:
        size = 20 * 1024 * 1024
        # ~62 KB per write: the handler thread shares the GIL with the client under test, and 1 KB writes
        # kept it busy enough to stall the client's other reads past their timeout on a loaded machine
        block = (b"<p>" + b"filler text " * 80 + b"</p>\n") * 64
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        if chunked:
            self.send_header("Transfer-Encoding", "chunked")
        else:
            self.send_header("Content-Length", str(size))
        self.end_headers()
        self.wfile.write(_frame(b"<html><body>", chunked))
        sent = 12
        while sent < size:
            part = block[: size - sent]
            self.wfile.write(_frame(part, chunked))
            sent += len(part)
        if chunked:
            self.wfile.write(b"0\r\n\r\n")


def _frame(data: bytes, chunked: bool) -> bytes:
    return f"{len(data):x}\r\n".encode() + data + b"\r\n" if chunked else data


# --------------------------------------------------------------------------- starting them


@contextlib.contextmanager
def _serve(handler, **attrs):
    srv = _Server(("127.0.0.1", 0), handler)
    for k, v in attrs.items():
        setattr(srv, k, v)
    t = threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    t.start()
    try:
        yield srv
    finally:
        srv.shutdown()
        srv.server_close()


def search_server(results: dict[str, list[tuple[str, str, str]]]):
    """``results``: query -> [(url, title, snippet)], ``"*"`` for any other query."""
    return _serve(_SearchHandler, results=results)


def site_server(*, slow_seconds: float = 3.0, flaky: int = 1, limited: int = 1, delay: float = 0.0,
                robots_status: "int | str" = 200):
    """The test web site; ``/slow`` answers after ``slow_seconds``, ``/flaky`` (503) and ``/limited`` (429)
    fail ``flaky`` / ``limited`` times first; every answer waits ``delay`` seconds; ``robots_status="huge"``:
    a 300 MiB robots.txt (:meth:`_SiteHandler._huge_robots`)."""
    return _serve(_SiteHandler, slow_seconds=slow_seconds, flaky_left=flaky, limited_left=limited, delay=delay,
                  robots_status=robots_status, robots_sent=0)


GOOD = ["/articles/cars-ban", "/articles/cars-against", "/boilerplate", "/latin1", "/latin1-meta", "/tricky",
        "/flaky", "/plain.txt", "/moved"]
BAD = {"/missing": "HTTP 404", "/slow": "timed out", "/loop/a": "redirect loop", "/paper.pdf": "application/pdf",
       "/huge": "cap", "/huge-stream": "cap", "/private/page": "robots.txt"}


def site_results(site_url: str) -> list[tuple[str, str, str]]:
    """Search results over every page of the site, good and bad, in a fixed order."""
    paths = ["/articles/cars-ban", "/missing", "/boilerplate", "/slow", "/loop/a", "/articles/cars-against",
             "/paper.pdf", "/huge", "/latin1", "/tricky", "/huge-stream", "/private/page", "/flaky",
             "/latin1-meta", "/plain.txt", "/moved"]
    return [(site_url + p, f"Result {p}", f"Snippet for {p}") for p in paths]


class _RecordingHandler(_Base):
    def do_GET(self):
        self._record()
        self._json(200, {"data": [{"id": "m"}]})


def recording_server():
    """A server that records every request (``.requests``, ``.url``) and answers ``{"data": [...]}``."""
    return _serve(_RecordingHandler)
