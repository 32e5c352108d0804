"""Web corpus speed against a local web site: pages/s and passages/s, concurrent vs sequential fetching.

    python bench/web.py [--pages 120] [--hosts 12] [--latency 0.05] [--repeats 3] [--json]

Starts, on 127.0.0.1, ``--hosts`` small web servers (one port = one host, so the
per-host bound applies as it does on the web) serving ``--pages`` generated news
pages (~20 KB of HTML each: script, navigation, sidebar, ads and footer around
~900 words of text), from a separate process,, every answer delayed by ``--latency`` seconds to stand in for network
round trips, and a SearXNG-format search endpoint listing them. Then measures,
``--repeats`` times each, medians reported:

  * fetching only (``berds_core.web.fetch_pages``): the default concurrent
    fetcher (16 at once, 2 per host) vs sequential fetching (1 at a time), pages/s
    and the ratio;
  * extraction + 100-word splitting of the fetched pages, offline: trafilatura
    (default) vs readability + html2text (the paper's), pages/s and passages/s;
  * the whole pipeline (``build_question_corpus``: search, fetch, extract, split,
    save the snapshot) with default settings: pages/s and passages/s.

Writes bench/results/web-<time>.json and prints a table (``--json``: the JSON on stdout).
"""
from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import tempfile
import threading
import time
from contextlib import ExitStack
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

WORDS = ("city council traffic ban cars centre pollution shops residents cyclists buses delivery air quality "
         "children school street parking business footfall survey mayor transport plan cost benefit health "
         "asthma noise safety commuters village zone policy evidence study report year week market").split()


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def make_page(i: int, rng: random.Random) -> bytes:
    paras = "".join("<p>" + " ".join(rng.choice(WORDS) for _ in range(rng.randint(60, 120))) + ".</p>"
                    for _ in range(10))
    nav = "".join(f"<li><a href='/section/{k}'>Section {k} headlines today</a></li>" for k in range(60))
    side = "".join(f"<li><a href='/popular/{k}'>Most read story number {k} of the day</a></li>" for k in range(40))
    filler = "<div class='ad'>" + "advertisement " * 200 + "</div>"
    return (f"<!doctype html><html><head><meta charset='utf-8'><title>Story {i}: traffic and the city</title>"
            f"<script>{'var x=1;' * 400}</script></head><body><header><nav><ul>{nav}</ul></nav></header>"
            f"<aside><ul>{side}</ul>{filler}</aside><main><article><h1>Story {i}</h1>{paras}</article></main>"
            f"<footer>{'Copyright and privacy terms. ' * 40}</footer></body></html>").encode()


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def do_GET(self):
        srv = self.server
        time.sleep(srv.latency)
        parts = urlsplit(self.path)
        if parts.path == "/robots.txt":
            body, ctype = b"User-agent: *\nDisallow: /private/\n", "text/plain"
        elif parts.path == "/search":
            page = int(parse_qs(parts.query).get("pageno", ["1"])[0])
            chunk = srv.urls[(page - 1) * 10: page * 10]
            body = json.dumps({"results": [{"url": u, "title": f"Result {u}", "content": ""} for u in chunk]}).encode()
            ctype = "application/json"
        elif parts.path.startswith("/story/"):
            body, ctype = srv.pages[int(parts.path.rsplit("/", 1)[1])], "text/html; charset=utf-8"
        else:
            body, ctype = b"not found", "text/plain"
        self.send_response(200 if ctype != "text/plain" or parts.path == "/robots.txt" else 404)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


def _serve_forever(conn, hosts: int, latency: float, n_pages: int) -> None:
    """The site, in its own process (its CPU time is not the fetcher's): ``hosts`` servers; sends the ports."""
    rng = random.Random(0)
    pages = [make_page(i, rng) for i in range(n_pages)]
    servers = []
    for _ in range(hosts):
        srv = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        srv.daemon_threads = True
        srv.latency, srv.pages, srv.urls = latency, pages, []
        threading.Thread(target=srv.serve_forever, daemon=True).start()
        servers.append(srv)
    ports = [srv.server_address[1] for srv in servers]
    servers[0].urls = [f"http://127.0.0.1:{ports[i % hosts]}/story/{i}" for i in range(n_pages)]
    conn.send((ports, sum(map(len, pages)) / len(pages)))
    conn.recv()  # until the benchmark is done


def start_site(stack: ExitStack, hosts: int, latency: float, n_pages: int) -> tuple[list[int], float]:
    import multiprocessing as mp

    ctx = mp.get_context("fork")
    parent, child = ctx.Pipe()
    proc = ctx.Process(target=_serve_forever, args=(child, hosts, latency, n_pages), daemon=True)
    proc.start()
    stack.callback(proc.join, 5)
    stack.callback(parent.send, "stop")
    return parent.recv()


def median(xs):
    return statistics.median(xs)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    ap.add_argument("--pages", type=int, default=120, help="pages on the local site (default 120)")
    ap.add_argument("--hosts", type=int, default=12, help="local servers, one per host (default 12)")
    ap.add_argument("--latency", type=float, default=0.05, help="seconds each answer is delayed (default 0.05)")
    ap.add_argument("--repeats", type=int, default=3, help="repeats per measurement (default 3)")
    ap.add_argument("--json", action="store_true", help="print the JSON result on stdout")
    args = ap.parse_args(argv)
    os.environ["BERDS_CACHE"] = tempfile.mkdtemp(prefix="berds-bench-web-")

    from berds_core.corpora.memory import split_words
    from berds_core.records import Question
    from berds_core.web import FetchConfig, WebOptions, build_question_corpus, extract_page, fetch_pages, get_search

    with ExitStack() as stack:
        ports, mean_bytes = start_site(stack, args.hosts, args.latency, args.pages)
        out: dict = {"pages": args.pages, "hosts": args.hosts, "latency_s": args.latency, "repeats": args.repeats,
                     "html_kb_per_page": round(mean_bytes / 1024, 1), "cpus": os.cpu_count(),
                     "load_avg_1m_at_start": round(os.getloadavg()[0], 2)}
        urls = [f"http://127.0.0.1:{ports[i % args.hosts]}/story/{i}" for i in range(args.pages)]

        fetch_pages(urls[:2], FetchConfig())  # warm-up: imports and the TLS context are not what is measured
        fetch = {}
        for name, cfg in (("concurrent", FetchConfig()), ("sequential", FetchConfig(concurrency=1, per_host=1))):
            rates = []
            for r in range(args.repeats):
                t0 = time.perf_counter()
                res = fetch_pages(urls, cfg)
                dt = time.perf_counter() - t0
                assert all(p.ok for p in res), [p.reason for p in res if not p.ok][:3]
                rates.append(len(urls) / dt)
                log(f"fetch {name} #{r + 1}: {len(urls) / dt:.1f} pages/s")
            fetch[name] = {"pages_per_s": round(median(rates), 1), "runs": [round(x, 1) for x in rates],
                           "concurrency": cfg.concurrency, "per_host": cfg.per_host}
        fetch["speedup"] = round(fetch["concurrent"]["pages_per_s"] / fetch["sequential"]["pages_per_s"], 2)
        out["fetch"] = fetch
        bodies = [p.text for p in res]

        extract = {}
        for name in ("trafilatura", "readability"):
            rates, prates = [], []
            for r in range(args.repeats):
                t0 = time.perf_counter()
                n_pass = sum(len(split_words(extract_page(b, "text/html", u, name).text)) for b, u in zip(bodies, urls))
                dt = time.perf_counter() - t0
                rates.append(len(bodies) / dt)
                prates.append(n_pass / dt)
                log(f"extract {name} #{r + 1}: {len(bodies) / dt:.1f} pages/s, {n_pass / dt:.1f} passages/s")
            extract[name] = {"pages_per_s": round(median(rates), 1), "passages_per_s": round(median(prates), 1),
                             "passages": n_pass}
        extract["trafilatura_vs_readability"] = round(extract["trafilatura"]["pages_per_s"] /
                                                      extract["readability"]["pages_per_s"], 2)
        out["extract"] = extract

        backend = get_search(f"searxng:http://127.0.0.1:{ports[0]}")
        q = Question("bench", "Should cities ban cars?", ["yes", "no"])
        rates, prates = [], []
        for r in range(args.repeats):
            with tempfile.TemporaryDirectory() as d:
                t0 = time.perf_counter()
                res = build_question_corpus(q, backend, d, WebOptions(top=args.pages))
                dt = time.perf_counter() - t0
            assert res.fetched == args.pages, res.summary()
            rates.append(res.fetched / dt)
            prates.append(res.passages / dt)
            log(f"pipeline #{r + 1}: {res.fetched / dt:.1f} pages/s, {res.passages / dt:.1f} passages/s")
        out["pipeline"] = {"pages_per_s": round(median(rates), 1), "passages_per_s": round(median(prates), 1),
                           "passages": res.passages, "extractor": "trafilatura"}

    results = ROOT / "bench" / "results"
    results.mkdir(parents=True, exist_ok=True)
    path = results / f"web-{time.strftime('%Y%m%d-%H%M%S')}.json"
    path.write_text(json.dumps(out, indent=1) + "\n")
    if args.json:
        print(json.dumps(out))
    else:
        f, e, p = out["fetch"], out["extract"], out["pipeline"]
        print(f"local site: {args.pages} pages (~{out['html_kb_per_page']} KB HTML) on {args.hosts} hosts, "
              f"{args.latency * 1000:.0f} ms per answer; medians of {args.repeats}")
        print(f"fetch      concurrent (16, 2/host) {f['concurrent']['pages_per_s']:8.1f} pages/s   "
              f"sequential {f['sequential']['pages_per_s']:8.1f} pages/s   ({f['speedup']}x)")
        print(f"extract    trafilatura {e['trafilatura']['pages_per_s']:8.1f} pages/s {e['trafilatura']['passages_per_s']:8.1f} "
              f"passages/s   readability+html2text {e['readability']['pages_per_s']:8.1f} pages/s "
              f"{e['readability']['passages_per_s']:8.1f} passages/s")
        print(f"pipeline   search+fetch+extract+split+save {p['pages_per_s']:8.1f} pages/s {p['passages_per_s']:8.1f} "
              f"passages/s")
        print(f"written: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
