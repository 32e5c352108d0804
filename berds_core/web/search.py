"""Web search backends behind one interface, named by spec strings, with a per-day result cache.

Specs (``SEARCH.choices()``)::

    searxng:<base url>   a self-hosted SearXNG instance: GET <base>/search?q=...&format=json
    serper               Serper's Google results (the BERDS paper's): POST https://google.serper.dev/search
    brave                Brave Search API: GET https://api.search.brave.com/res/v1/web/search
    bing                 Bing Web Search v7: GET https://api.bing.microsoft.com/v7.0/search
    google-cse[:<cx>]    Google Programmable Search: GET https://www.googleapis.com/customsearch/v1

Keys come from the ``api_key`` option (the app passes Streamlit secrets) or
the environment (``SERPER_API_KEY``, ``BRAVE_API_KEY``, ``BING_SUBSCRIPTION_KEY``,
``GOOGLE_API_KEY`` + ``GOOGLE_CSE_ID``). They travel in request headers only
(never in a URL), are held as :class:`~berds_core.web.http.Secret`, and never
appear in a backend's ``name`` (the cache key), in logs or in error messages.

Each commercial endpoint can be moved with an environment variable
(``BERDS_SERPER_URL``, ``BERDS_BRAVE_URL``, ``BERDS_BING_URL``,
``BERDS_GOOGLE_CSE_URL``) or the ``endpoint`` option: a proxy, a regional
endpoint, or a test server on 127.0.0.1 speaking the same JSON.

``cached_search(backend, query, n)`` keeps results in SQLite under
``cache_dir("web")`` per (backend name, query, UTC date): the same question
on the same day costs one request.
"""
from __future__ import annotations

import json
import os
import time
from datetime import datetime, timezone
from pathlib import Path
from urllib.parse import urldefrag, urlsplit

from ..files.cache import cache_dir
from ..files.kvcache import KeyValueCache
from ..specs import Registry
from .http import RETRY_STATUS, USER_AGENT, Secret, find_key, public_url, retry_delay
from .replay import ReplaySearch
from .results import SearchError, SearchResult


def today() -> str:
    return datetime.now(timezone.utc).date().isoformat()


class SearchBackend:
    """One search API. Subclasses set ``kind``, ``per_page``, ``max_pages`` and implement ``_page``."""

    kind = "search"
    per_page = 10
    max_pages = 10
    key_env: tuple[str, ...] = ()
    url_env: str | None = None
    default_endpoint: str = ""

    def __init__(self, *, api_key: str | None = None, endpoint: str | None = None, timeout: float = 15.0,
                 retries: int = 2, backoff: float = 0.5, transport=None):
        self.timeout, self.retries, self.backoff = float(timeout), max(0, int(retries)), float(backoff)
        self.endpoint = (endpoint or (os.environ.get(self.url_env, "").strip() if self.url_env else "")
                         or self.default_endpoint).rstrip("/")
        self._transport = transport
        self._key: Secret | None = None
        self.key_source: str | None = None
        if self.key_env:
            self._key, self.key_source = find_key(self.key_env, api_key)
            if not self._key:
                raise SearchError(f"search backend '{self.kind}' needs an API key: set {self.key_env[0]} "
                                  f"(or pass it from the app's secrets)", fatal=True)
        _check_endpoint(self.endpoint, self.kind)

    # -- identity ---------------------------------------------------------
    @property
    def name(self) -> str:
        """Stable and secret-free: ``serper``, ``serper@127.0.0.1:8123/search``, ``searxng:http://host``."""
        if self.endpoint == self.default_endpoint:
            return self.kind
        return f"{self.kind}@{public_url(self.endpoint).split('://', 1)[-1]}"

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name}>"

    def __getstate__(self):  # never pickle the key along
        state = dict(self.__dict__)
        state["_key"] = None
        return state

    # -- searching --------------------------------------------------------
    def search(self, query: str, n: int = 10) -> list[SearchResult]:
        """Up to ``n`` results, ranked 1..n, http(s) URLs only, each URL once (fragments ignored)."""
        import httpx

        n = max(1, int(n))
        size = min(self.per_page, n) if self.per_page_exact else self.per_page  # the same on every page
        out: list[SearchResult] = []
        seen: set[str] = set()
        raw_seen: set[str] = set()
        consumed = 0  # raw items read so far (offset-based APIs continue from here)
        with httpx.Client(timeout=self.timeout, transport=self._transport, follow_redirects=True,
                          headers={"User-Agent": USER_AGENT, "Accept": "application/json"}) as client:
            for page in range(self.max_pages):
                items = self._page(client, query, page, consumed, size)
                consumed += len(items)
                new_raw = 0
                for item in items:
                    raw = str(item.get("url") or "").strip()
                    new_raw += raw not in raw_seen
                    raw_seen.add(raw)
                    url = urldefrag(raw)[0]
                    if not url.lower().startswith(("http://", "https://")) or url in seen:
                        continue
                    seen.add(url)
                    out.append(SearchResult(url, _text(item.get("title")), _text(item.get("snippet")), len(out) + 1))
                    if len(out) >= n:
                        return out
                if not new_raw or (self.per_page_exact and len(items) < size):
                    break  # the end of the results (or an API that ignores paging)
        return out

    per_page_exact = True  # the API honours a page size; SearXNG does not take one

    def _page(self, client, query: str, page: int, offset: int, count: int) -> list[dict]:
        """One page of results as ``{url, title, snippet}`` dicts."""
        raise NotImplementedError

    key_header: str | None = None  # the request header that carries the key

    def _headers(self) -> dict:
        return {self.key_header: self._key.reveal()} if self.key_header and self._key else {}

    def _call(self, client, method: str, url: str, **kw) -> dict:
        """One API call with retries on 429/5xx/timeouts; errors name the endpoint, never the key."""
        import httpx

        where = public_url(url)
        last = ""
        for attempt in range(self.retries + 1):
            try:
                r = client.request(method, url, headers=self._headers(), **kw)
            except httpx.TimeoutException:
                last = f"timed out after {self.timeout:g}s"
            except httpx.HTTPError as e:
                last = f"cannot connect ({type(e).__name__})"
            else:
                if r.status_code in (401, 403):
                    hint = f"; check {self.key_source}" if self.key_source else ""
                    raise SearchError(self._scrub(f"search backend '{self.kind}' at {where} refused the request "
                                                  f"(HTTP {r.status_code}{hint})"), fatal=True)
                if r.status_code in RETRY_STATUS:
                    last = f"HTTP {r.status_code}"
                    if attempt < self.retries:
                        time.sleep(retry_delay(attempt + 1, self.backoff, r.headers.get("retry-after"), cap=30.0))
                    continue
                if r.status_code >= 400:
                    raise SearchError(self._scrub(f"search backend '{self.kind}' at {where} answered "
                                                  f"HTTP {r.status_code}"), fatal=r.status_code == 404)
                try:
                    data = r.json()
                except ValueError:
                    raise SearchError(f"search backend '{self.kind}' at {where} answered non-JSON "
                                      f"({r.headers.get('content-type', 'no content type')})",
                                      fatal=True) from None
                if not isinstance(data, dict):
                    raise SearchError(f"search backend '{self.kind}' at {where} answered JSON that is not an object",
                                      fatal=True)
                return data
            if attempt < self.retries:
                time.sleep(retry_delay(attempt + 1, self.backoff, cap=30.0))
        raise SearchError(self._scrub(f"search backend '{self.kind}' at {where}: {last} "
                                      f"(gave up after {self.retries + 1} tries)"))

    def _scrub(self, text: str) -> str:
        return self._key.scrub(text) if self._key else text


def _text(val) -> str:
    return " ".join(str(val).split()) if val is not None else ""


def _check_endpoint(url: str, kind: str) -> None:
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise SearchError(f"search backend '{kind}': endpoint must be an http(s) URL, got '{public_url(url) or url[:40]}'",
                          fatal=True)


def _items(data: dict, path: tuple[str, ...], url: str, title: str, snippet: str) -> list[dict]:
    """The result objects at ``path`` in an API answer, as ``{url, title, snippet}`` dicts."""
    for key in path:
        data = data.get(key) if isinstance(data, dict) else None
    return [{"url": it.get(url), "title": it.get(title), "snippet": it.get(snippet)}
            for it in (data if isinstance(data, list) else []) if isinstance(it, dict)]


# --------------------------------------------------------------------------- the backends


class SearxngSearch(SearchBackend):
    """SearXNG's JSON API (the instance must enable the ``json`` format in ``search.formats``)."""

    kind = "searxng"
    per_page_exact = False
    max_pages = 12

    def __init__(self, base_url: str, **opts):
        super().__init__(endpoint=str(base_url or "").strip(), **opts)

    @property
    def name(self) -> str:
        return f"searxng:{public_url(self.endpoint)}"

    def _page(self, client, query, page, offset, count):
        data = self._call(client, "GET", f"{self.endpoint}/search",
                          params={"q": query, "format": "json", "pageno": page + 1})
        return _items(data, ("results",), "url", "title", "content")


class SerperSearch(SearchBackend):
    """serper.dev Google results: POST ``{"q", "num", "page"}`` with ``X-API-KEY``; ``organic[]``."""

    kind = "serper"
    per_page = 100
    max_pages = 3
    key_env = ("SERPER_API_KEY",)
    key_header = "X-API-KEY"
    url_env = "BERDS_SERPER_URL"
    default_endpoint = "https://google.serper.dev/search"


    def _page(self, client, query, page, offset, count):
        data = self._call(client, "POST", self.endpoint, json={"q": query, "num": count, "page": page + 1})
        return _items(data, ("organic",), "link", "title", "snippet")


class BraveSearch(SearchBackend):
    """Brave Search API: ``count`` <= 20 per page, ``offset`` = page number (<= 9); ``web.results[]``."""

    kind = "brave"
    per_page = 20
    max_pages = 10
    key_env = ("BRAVE_API_KEY", "BRAVE_SEARCH_API_KEY")
    key_header = "X-Subscription-Token"
    url_env = "BERDS_BRAVE_URL"
    default_endpoint = "https://api.search.brave.com/res/v1/web/search"


    def _page(self, client, query, page, offset, count):
        data = self._call(client, "GET", self.endpoint, params={"q": query, "count": count, "offset": page})
        return _items(data, ("web", "results"), "url", "title", "description")


class BingSearch(SearchBackend):
    """Bing Web Search v7: ``count`` <= 50, ``offset`` = results to skip; ``webPages.value[]``."""

    kind = "bing"
    per_page = 50
    max_pages = 4
    key_env = ("BING_SUBSCRIPTION_KEY", "BING_SEARCH_KEY")
    key_header = "Ocp-Apim-Subscription-Key"
    url_env = "BERDS_BING_URL"
    default_endpoint = "https://api.bing.microsoft.com/v7.0/search"


    def _page(self, client, query, page, offset, count):
        data = self._call(client, "GET", self.endpoint,
                          params={"q": query, "count": count, "offset": offset, "responseFilter": "Webpages"})
        return _items(data, ("webPages", "value"), "url", "name", "snippet")


class GoogleCSESearch(SearchBackend):
    """Google Programmable Search (Custom Search JSON API): ``num`` <= 10, ``start`` 1-based, 100 results
    at most; ``items[]``. The key goes in the ``X-goog-api-key`` header, not the URL."""

    kind = "google-cse"
    per_page = 10
    max_pages = 10
    key_env = ("GOOGLE_API_KEY", "GOOGLE_CSE_KEY")
    key_header = "X-goog-api-key"
    url_env = "BERDS_GOOGLE_CSE_URL"
    default_endpoint = "https://www.googleapis.com/customsearch/v1"

    def __init__(self, cx: str | None = None, **opts):
        super().__init__(**opts)
        self.cx = (cx or os.environ.get("GOOGLE_CSE_ID", "")).strip()
        if not self.cx:
            raise SearchError("search backend 'google-cse' needs a search engine id: google-cse:<cx> "
                              "or set GOOGLE_CSE_ID", fatal=True)

    @property
    def name(self) -> str:
        return f"{super().name}:{self.cx}"


    def _page(self, client, query, page, offset, count):
        if offset + count > 100:
            count = 100 - offset
        if count <= 0:
            return []
        data = self._call(client, "GET", self.endpoint,
                          params={"q": query, "cx": self.cx, "num": count, "start": offset + 1})
        return _items(data, ("items",), "link", "title", "snippet")


SEARCH = Registry("search backend")


@SEARCH.register("searxng", usage="searxng:<base url>", needs_arg=True,
                 help="a self-hosted SearXNG instance (its JSON API; no key)", builds=SearxngSearch)
def _searxng(arg, **opts):
    return SearxngSearch(arg, **opts)


@SEARCH.register("serper", help="Serper's Google results, as in the BERDS paper (SERPER_API_KEY)",
                 builds=SerperSearch)
def _serper(arg, **opts):
    return SerperSearch(**opts)


@SEARCH.register("brave", help="Brave Search API (BRAVE_API_KEY)", builds=BraveSearch)
def _brave(arg, **opts):
    return BraveSearch(**opts)


@SEARCH.register("bing", help="Bing Web Search v7 (BING_SUBSCRIPTION_KEY)", builds=BingSearch)
def _bing(arg, **opts):
    return BingSearch(**opts)


@SEARCH.register("google-cse", usage="google-cse[:<cx>]", takes_arg=True,
                 help="Google Programmable Search (GOOGLE_API_KEY; engine id as <cx> or GOOGLE_CSE_ID)",
                 builds=GoogleCSESearch)
def _cse(arg, **opts):
    return GoogleCSESearch(arg, **opts)


@SEARCH.register("replay", usage="replay[:<recording.jsonl>]", takes_arg=True,
                 help="replays a recorded search and its pages, no network (bare: the built-in demo recording)",
                 builds=ReplaySearch)
def _replay(arg, **opts):
    return ReplaySearch(arg or None)


def key_names(spec: str) -> tuple[str, ...]:
    """The environment variables (or secrets) a spec's backend reads its key from; () for none."""
    return tuple(getattr(SEARCH.builds(spec), "key_env", ()))


def get_search(spec: str, **opts) -> SearchBackend:
    """The backend a spec names; ``opts``: ``api_key``, ``endpoint``, ``timeout``, ``retries``, ``backoff``.

    Raises :class:`~berds_core.specs.SpecError` for an unknown spec and :class:`SearchError` (fatal)
    for a missing key or a malformed endpoint.
    """
    return SEARCH.create(spec, **opts)


# --------------------------------------------------------------------------- the cache


class SearchCache(KeyValueCache):
    """Results per (backend name, query, date) in SQLite (``files.kvcache``): the value is the ``n`` the
    list was fetched for and the list. A stored list serves any ``n`` up to the ``n`` it was fetched for
    (or any ``n`` when the backend had fewer results than asked)."""

    table, namespace, keys, value, value_type = "web_search", "backend", ("query", "date"), "entry", "TEXT"

    def __init__(self, path: str | os.PathLike | None = None):
        path = Path(path or default_search_cache_path())
        path.parent.mkdir(parents=True, exist_ok=True)
        super().__init__(path)
        self._adopt_earlier_table()

    def _adopt_earlier_table(self) -> None:
        """Rows of the table earlier versions wrote (``search``: backend, query, date, n, results) move
        into this one, in one transaction, the first time the file is opened (a row whose results are not
        JSON, a torn write, is dropped: it is a cache, the search runs again)."""
        with self._lock:
            if not self._conn.execute("SELECT 1 FROM sqlite_master WHERE type='table' AND name='search'").fetchone():
                return
            self._conn.execute(f"INSERT OR IGNORE INTO {self.table} SELECT backend, query, date, "
                               "json_object('n', n, 'results', json(results)) FROM search WHERE json_valid(results)")
            self._conn.execute("DROP TABLE search")
            self._conn.commit()

    def encode(self, value) -> str:
        n, results = value
        return json.dumps({"n": int(n), "results": [r.to_json() for r in results]})

    def decode(self, stored) -> dict:
        return json.loads(stored)

    def get(self, backend: str, query: str, date: str, n: int) -> list[SearchResult] | None:
        entry = self.get_many(backend, [(query, date)]).get((query, date))
        if entry is None:
            return None
        stored_n, results = int(entry["n"]), [SearchResult(**r) for r in entry["results"]]
        if stored_n >= n or len(results) < stored_n:
            return results[:n]
        return None

    def put(self, backend: str, query: str, date: str, n: int, results: list[SearchResult]) -> None:
        self.put_many(backend, [((query, date), (n, results))])


def default_search_cache_path() -> Path:
    return cache_dir("web") / "search.sqlite"


def search_cache() -> SearchCache:
    """The process-wide search cache of the current cache folder."""
    return SearchCache.shared(default_search_cache_path())


def cached_search(backend: SearchBackend, query: str, n: int, *, date: str | None = None,
                  cache: SearchCache | None | bool = True) -> tuple[list[SearchResult], bool]:
    """``(results, from_cache)``: the backend's top ``n`` for ``query`` today (or on ``date``)."""
    date = date or today()
    store = search_cache() if cache is True else (cache or None)
    if store is not None:
        hit = store.get(backend.name, query, date, n)
        if hit is not None:
            return hit, True
    results = backend.search(query, n)
    if store is not None:
        store.put(backend.name, query, date, n, results)
    return results, False
