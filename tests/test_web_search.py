"""Search backends against a real server on 127.0.0.1 speaking SearXNG's, Serper's, Brave's, Bing's and
Google Programmable Search's JSON; keys never leave the request headers."""
from __future__ import annotations

import pickle

import pytest

from berds_core.specs import SpecError
from berds_core.web import SEARCH, SearchError, SearchResult, cached_search, get_search
from berds_core.web.search import SearchCache, key_names
from web_servers import KEYS, search_server

RESULTS = [(f"https://site{i}.example/page{i}", f"Title {i}", f"snippet {i}") for i in range(1, 131)]
# dupes, fragments and non-http URLs the backends must drop
RESULTS[5] = ("https://site1.example/page1#section", "dup", "dup")
RESULTS[6] = ("ftp://files.example/x", "ftp", "ftp")


@pytest.fixture(scope="module")
def server():
    with search_server({"*": RESULTS, "nothing": []}) as srv:
        yield srv


@pytest.fixture()
def env(monkeypatch, server):
    monkeypatch.setenv("SERPER_API_KEY", KEYS["serper"])
    monkeypatch.setenv("BRAVE_API_KEY", KEYS["brave"])
    monkeypatch.setenv("BING_SUBSCRIPTION_KEY", KEYS["bing"])
    monkeypatch.setenv("GOOGLE_API_KEY", KEYS["cse"])
    monkeypatch.setenv("BERDS_SERPER_URL", server.url + "/serper/search")
    monkeypatch.setenv("BERDS_BRAVE_URL", server.url + "/brave/res/v1/web/search")
    monkeypatch.setenv("BERDS_BING_URL", server.url + "/bing/v7.0/search")
    monkeypatch.setenv("BERDS_GOOGLE_CSE_URL", server.url + "/cse/customsearch/v1")
    return server


SPECS = ["searxng", "serper", "brave", "bing", "google-cse:test-cx"]


def _spec(name: str, server) -> str:
    return f"searxng:{server.url}" if name == "searxng" else name


@pytest.mark.parametrize("name", SPECS)
@pytest.mark.parametrize("n", [7, 100])
def test_backend_parses_its_api_and_pages_through(env, name, n):
    backend = get_search(_spec(name, env), retries=0)
    got = backend.search("Should cities ban cars?", n)
    if name.startswith("google-cse"):
        n = min(n, 98)  # the API serves 100 results at most, two of which are dropped (duplicate, ftp)
    assert len(got) == n
    assert [r.rank for r in got] == list(range(1, n + 1))
    urls = [r.url for r in got]
    assert len(set(urls)) == n and all(u.startswith("https://") for u in urls)
    assert "https://site1.example/page1" in urls and not any("#" in u or u.startswith("ftp") for u in urls)
    first = got[0]
    assert (first.url, first.title, first.snippet) == ("https://site1.example/page1", "Title 1", "snippet 1")
    assert KEYS["serper"] not in backend.name and KEYS["brave"] not in repr(backend)


def test_keys_travel_in_headers_only(env):
    env.requests.clear()
    for name in SPECS[1:]:
        get_search(name, retries=0).search("q", 10)
    seen = {r["path"]: r["headers"] for r in env.requests}
    assert any(h.get("X-API-KEY") == KEYS["serper"] for h in seen.values())
    assert any(h.get("X-Subscription-Token") == KEYS["brave"] for h in seen.values())
    assert any(h.get("Ocp-Apim-Subscription-Key") == KEYS["bing"] for h in seen.values())
    assert any(h.get("X-goog-api-key") == KEYS["cse"] for h in seen.values())
    for path, headers in seen.items():
        assert not any(k in path for k in KEYS.values()), path  # never in a URL
        assert "BERDS-Studio" in headers.get("User-Agent", "")


def test_searxng_pages_until_short(env):
    env.requests.clear()
    got = get_search(f"searxng:{env.url}").search("q", 25)
    assert len(got) == 25
    pages = [r["path"] for r in env.requests if r["path"].startswith("/search")]
    assert len(pages) == 3 and all("format=json" in p for p in pages)


def test_empty_results(env):
    for name in SPECS:
        assert get_search(_spec(name, env)).search("nothing", 10) == []


@pytest.mark.parametrize("name,var", [("serper", "SERPER_API_KEY"), ("brave", "BRAVE_API_KEY"),
                                      ("bing", "BING_SUBSCRIPTION_KEY"), ("google-cse:test-cx", "GOOGLE_API_KEY")])
def test_wrong_key_is_fatal_and_never_quoted(env, monkeypatch, name, var):
    wrong = "WRONG-key-7f3a9c2e"
    monkeypatch.setenv(var, wrong)
    with pytest.raises(SearchError) as err:
        get_search(name, retries=0).search("q", 5)
    msg = str(err.value)
    assert err.value.fatal and "HTTP 401" in msg and var in msg
    assert wrong not in msg and not any(k in msg for k in KEYS.values())


def test_key_passed_in_beats_environment_and_is_not_pickled(env, monkeypatch):
    monkeypatch.delenv("SERPER_API_KEY")
    with pytest.raises(SearchError, match="SERPER_API_KEY"):
        get_search("serper")
    backend = get_search("serper", api_key=KEYS["serper"])
    assert backend.key_source == "argument"
    assert len(backend.search("q", 3)) == 3
    blob = pickle.dumps(backend)
    assert KEYS["serper"].encode() not in blob
    assert KEYS["serper"] not in repr(backend.__dict__)  # the Secret hides itself


def test_spec_errors_list_the_choices(env):
    with pytest.raises(SpecError, match="serper"):
        get_search("altavista")
    with pytest.raises(SpecError, match="needs an argument"):
        get_search("searxng")
    with pytest.raises(SpecError, match="takes no argument"):
        get_search("serper:x")
    with pytest.raises(SearchError, match="http"):
        get_search("searxng:not-a-url")
    assert set(SEARCH.names()) == {"searxng", "serper", "brave", "bing", "google-cse", "replay"}
    assert key_names("serper") == ("SERPER_API_KEY",) and key_names(f"searxng:{env.url}") == ()
    assert key_names("replay") == ()


def test_google_cse_needs_an_engine_id(env, monkeypatch):
    monkeypatch.delenv("GOOGLE_CSE_ID", raising=False)
    with pytest.raises(SearchError, match="GOOGLE_CSE_ID"):
        get_search("google-cse")
    monkeypatch.setenv("GOOGLE_CSE_ID", "test-cx")
    assert len(get_search("google-cse").search("q", 12)) == 12


def test_unreachable_backend_is_a_clear_non_fatal_error():
    from browser_harness import free_port

    backend = get_search(f"searxng:http://127.0.0.1:{free_port()}", retries=1, backoff=0.01, timeout=2)
    with pytest.raises(SearchError, match="cannot connect") as err:
        backend.search("q", 5)
    assert not err.value.fatal


def test_cache_per_backend_query_and_date(env, tmp_path):
    cache = SearchCache(tmp_path / "s.sqlite")
    backend = get_search("serper")
    env.requests.clear()
    a, hit = cached_search(backend, "ban cars?", 20, date="2026-01-01", cache=cache)
    assert not hit and len(a) == 20
    before = len(env.requests)
    b, hit = cached_search(backend, "ban cars?", 10, date="2026-01-01", cache=cache)
    assert hit and b == a[:10] and len(env.requests) == before  # a smaller n: served from the larger list
    _, hit = cached_search(backend, "ban cars?", 20, date="2026-01-02", cache=cache)
    assert not hit  # another day: another search
    _, hit = cached_search(backend, "ban bikes?", 20, date="2026-01-01", cache=cache)
    assert not hit
    _, hit = cached_search(get_search("brave"), "ban cars?", 20, date="2026-01-01", cache=cache)
    assert not hit  # another backend
    _, hit = cached_search(backend, "ban cars?", 40, date="2026-01-01", cache=cache)
    assert not hit  # more than was stored
    before = len(env.requests)
    _, hit = cached_search(backend, "ban cars?", 40, date="2026-01-01", cache=cache)
    assert hit and len(env.requests) == before
    raw = (tmp_path / "s.sqlite").read_bytes()
    assert not any(k.encode() in raw for k in KEYS.values())


def test_cache_adopts_the_table_an_earlier_version_wrote(tmp_path):
    """A search.sqlite written before the cache moved onto the key-value base (table ``search`` with an
    ``n`` column) is read as it is: its rows move into the new table, once, and serve the same hits."""
    import json
    import sqlite3

    path = tmp_path / "s.sqlite"
    old = [{"url": f"https://example.org/{i}", "title": f"T{i}", "snippet": "s", "rank": i + 1} for i in range(5)]
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE search (backend TEXT, query TEXT, date TEXT, n INTEGER, results TEXT, "
                "PRIMARY KEY (backend, query, date))")
    con.execute("INSERT INTO search VALUES (?, ?, ?, ?, ?)", ("serper", "ban cars?", "2026-01-01", 5, json.dumps(old)))
    con.execute("INSERT INTO search VALUES (?, ?, ?, ?, ?)", ("serper", "torn?", "2026-01-01", 5, '[{"url": "ht'))
    con.commit()
    con.close()
    cache = SearchCache(path)
    hit = cache.get("serper", "ban cars?", "2026-01-01", 3)
    assert [r.to_json() for r in hit] == [SearchResult(**r).to_json() for r in old[:3]]
    assert cache.get("serper", "ban cars?", "2026-01-01", 6) is None  # fetched for 5: more is a new search
    assert cache.get("serper", "ban cars?", "2026-01-02", 3) is None
    tables = {r[0] for r in sqlite3.connect(path).execute("SELECT name FROM sqlite_master WHERE type='table'")}
    assert tables == {"web_search"} and SearchCache(path).count("serper") == 1  # the torn row dropped
    assert cache.get("serper", "torn?", "2026-01-01", 3) is None
