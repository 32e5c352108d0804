"""The page fetcher against a real web server on 127.0.0.1 serving good and bad pages."""
from __future__ import annotations

import pytest

from berds_core.web import FetchConfig, fetch_pages
from berds_core.web.fetch import decode_body
from web_servers import LATIN1_META_TEXT, LATIN1_TEXT, site_server

FAST = FetchConfig(timeout=0.5, page_timeout=5.0, max_bytes=1_000_000, backoff=0.01)


@pytest.fixture(scope="module")
def site():
    with site_server(slow_seconds=2.0, flaky=1, limited=1) as srv:
        yield srv


def _by_path(site, results):
    return {r.url[len(site.url):]: r for r in results}


def test_every_page_gets_one_result_with_its_reason(site):
    paths = ["/articles/cars-ban", "/missing", "/slow", "/loop/a", "/paper.pdf", "/huge", "/huge-stream",
             "/private/page", "/latin1", "/tricky", "/moved", "/plain.txt", "/boilerplate"]
    seen = []
    results = fetch_pages([site.url + p for p in paths], FAST, on_page=lambda i, r: seen.append(i))
    assert sorted(seen) == list(range(len(paths)))  # on_page once per URL
    by = _by_path(site, results)
    assert [r.url for r in results] == [site.url + p for p in paths]  # input order
    ok = {p for p, r in by.items() if r.ok}
    assert ok == {"/articles/cars-ban", "/latin1", "/tricky", "/moved", "/plain.txt", "/boilerplate"}
    assert (by["/missing"].outcome, by["/missing"].status, by["/missing"].reason) == ("failed", 404, "HTTP 404")
    assert by["/slow"].outcome == "failed" and by["/slow"].reason.startswith("timed out (read")
    assert by["/slow"].transient
    assert by["/loop/a"].outcome == "failed" and "redirect loop" in by["/loop/a"].reason
    assert by["/paper.pdf"].outcome == "skipped" and by["/paper.pdf"].reason == "skipped: content type application/pdf"
    assert by["/huge"].outcome == "skipped" and "20,971,520 bytes" in by["/huge"].reason  # Content-Length
    assert by["/huge-stream"].outcome == "skipped" and "cap" in by["/huge-stream"].reason, \
        by["/huge-stream"].reason  # cut while streaming
    assert by["/private/page"].outcome == "skipped" and "robots.txt" in by["/private/page"].reason
    assert by["/moved"].final_url == site.url + "/articles/cars-against"  # fragment dropped
    assert by["/plain.txt"].content_type == "text/plain"
    assert all("\n" not in r.reason for r in results)
    assert site.counts["/private/page"] == 0  # robots.txt is read before, not after
    assert site.counts["/robots.txt"] >= 1
    ua = {r["headers"].get("User-Agent") for r in site.requests}
    assert len(ua) == 1 and "BERDS-Studio" in ua.pop()


def test_charsets_from_header_meta_and_detection(site):
    by = _by_path(site, fetch_pages([site.url + p for p in ("/latin1", "/latin1-meta", "/cp1252-undeclared")],
                                    FAST))
    assert by["/latin1"].charset == "cp1252" and LATIN1_TEXT[:60] in by["/latin1"].text
    assert by["/latin1-meta"].charset == "cp1252" and LATIN1_META_TEXT[:60] in by["/latin1-meta"].text
    assert "élèves préfèrent la façade du café" in by["/cp1252-undeclared"].text
    assert "\ufffd" not in by["/cp1252-undeclared"].text


def test_decode_body_rules():
    assert decode_body("été".encode("utf-8"), "") == ("été", "utf-8")
    assert decode_body("été".encode("latin-1"), "text/html; charset=ISO-8859-1") == ("été", "cp1252")
    assert decode_body(b"<meta charset='koi8-r'>" + "Мир".encode("koi8-r"), "text/html")[1] == "koi8-r"
    assert decode_body(b"\xef\xbb\xbfhello", "")[0] == "hello"
    assert decode_body(b"\xe9t\xe9", "text/html; charset=no-such-codec")[0]  # unknown: detection, no crash
    russian = "Города запрещают машины в центре, и жители спорят об этом решении. " * 6
    assert decode_body(russian.encode("cp1251"), "text/html")[0] == russian  # detection is not always cp1252


def test_retries_on_503_and_429_then_gives_up_transiently():
    with site_server(flaky=1, limited=1) as srv:
        by = _by_path(srv, fetch_pages([srv.url + "/flaky", srv.url + "/limited"], FAST))
        assert by["/flaky"].ok and by["/limited"].ok
        assert srv.counts["/flaky"] == 2 and srv.counts["/limited"] == 2
    with site_server(flaky=5) as srv:
        res = fetch_pages([srv.url + "/flaky"], FetchConfig(retries=2, backoff=0.01, timeout=2))[0]
        assert (res.outcome, res.status, res.transient) == ("failed", 503, True)
        assert res.reason == "HTTP 503 after 3 tries" and srv.counts["/flaky"] == 3


def test_page_timeout_bounds_the_whole_page(site):
    res = fetch_pages([site.url + "/slow"], FetchConfig(timeout=5, page_timeout=0.3))[0]
    assert res.outcome == "failed" and "whole page" in res.reason


def test_a_huge_robots_txt_is_read_streamed_under_its_cap():
    """A 300 MiB robots.txt: its first 500 KiB are read and obeyed, the rest is never downloaded (it was read
    whole: 730 MiB resident). The server stops at what the loopback's socket buffers hold."""
    with site_server(robots_status="huge") as srv:
        res = fetch_pages([srv.url + "/private/page", srv.url + "/articles/cars-ban"], FetchConfig(per_host=1))
        assert res[0].outcome == "skipped" and "robots.txt disallows it" in res[0].reason
        assert res[1].ok
        assert srv.counts["/private/page"] == 0 and srv.counts["/robots.txt"] == 1
        assert srv.robots_sent < 64 * 2**20, srv.robots_sent


def test_robots_txt_unavailable_disallows_the_host_and_404_allows_it():
    with site_server(robots_status=503) as srv:
        res = fetch_pages([srv.url + "/articles/cars-ban"], FAST)[0]
        assert res.outcome == "skipped" and "robots.txt unavailable (HTTP 503)" in res.reason
        assert srv.counts["/articles/cars-ban"] == 0
    with site_server(robots_status=404) as srv:
        assert fetch_pages([srv.url + "/private/page"], FAST)[0].ok
    with site_server() as srv:  # robots can be turned off (a site of one's own)
        assert fetch_pages([srv.url + "/private/page"], FetchConfig(respect_robots=False))[0].ok


def test_private_addresses_refused_when_asked_and_odd_urls_skipped(site):
    res = fetch_pages([site.url + "/articles/cars-ban", "ftp://example.org/x", "mailto:a@b.c"],
                      FetchConfig(allow_private=False, timeout=2))
    assert res[0].outcome == "skipped" and "private or local address" in res[0].reason
    assert [r.outcome for r in res[1:]] == ["skipped", "skipped"]
    assert all("not an http(s) URL" in r.reason for r in res[1:])


def test_concurrency_bounded_per_host_and_in_total():
    urls = [f"/articles/gen-{i}" for i in range(12)]
    with site_server(delay=0.15) as srv:
        res = fetch_pages([srv.url + u for u in urls], FetchConfig(per_host=2, concurrency=16))
        assert all(r.ok for r in res)
        assert srv.max_inflight <= 2
    with site_server(delay=0.15) as srv:  # two host names for one server: the total bound holds
        port = srv.server_address[1]
        hosts = [f"http://127.0.0.1:{port}", f"http://localhost:{port}"]
        res = fetch_pages([hosts[i % 2] + u for i, u in enumerate(urls)], FetchConfig(per_host=4, concurrency=3))
        assert all(r.ok for r in res)
        assert srv.max_inflight <= 3
    with site_server(delay=0.15) as srv:
        fetch_pages([srv.url + u for u in urls], FetchConfig(per_host=6, concurrency=16))
        assert srv.max_inflight > 2  # the bound is the limit, not a serialisation


def test_config_checks():
    with pytest.raises(ValueError):
        FetchConfig(concurrency=0)
    with pytest.raises(ValueError):
        FetchConfig(timeout=0)
