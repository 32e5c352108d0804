"""Fetching web pages politely and robustly: one :class:`PageResult` per URL, never an exception.

``fetch_pages(urls, FetchConfig(...), on_page=callback)`` downloads concurrently
with httpx (at most ``concurrency`` requests in all and ``per_host`` per host, a host
being a name and a port),
and for every URL reports, as soon as it is done, either the decoded page or
why not:

- **failed**: HTTP 4xx/5xx (5xx and 429 retried with backoff first, honouring
  ``Retry-After``), timeouts (per operation, and ``page_timeout`` for the whole
  page), connection errors, redirect loops, more than ``max_redirects`` hops;
- **skipped** on purpose: robots.txt disallows it (RFC 9309: a 4xx robots.txt
  allows everything, an unreachable one disallows the host; only its first 500 KiB are downloaded and
  parsed, as the RFC allows), a content type other
  than HTML/XHTML/plain text (PDFs, images...), a body over ``max_bytes``
  (checked on ``Content-Length`` and while streaming), a non-http(s) URL, and,
  when ``allow_private`` is off (the app), hosts that resolve to private,
  loopback or link-local addresses. That check runs on every hop, robots.txt
  redirects included, and the request then goes to the address it checked
  (the URL carries the address, ``Host`` and TLS the name), so a second DNS
  answer cannot send it elsewhere.

Bodies are decoded by the charset of the ``Content-Type`` header, else a
byte-order mark, a ``<meta charset>`` / ``http-equiv`` declaration, strict
UTF-8, or charset-normalizer's detection; ISO-8859-1 and ASCII are read as
windows-1252, as browsers do. Every request carries :data:`USER_AGENT`.
"""
from __future__ import annotations

import asyncio
import codecs
import functools
import ipaddress
import re
import socket
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Callable
from urllib.parse import urldefrag, urljoin, urlsplit

from charset_normalizer import from_bytes
from protego import Protego

from .http import AGENT_TOKEN, RETRY_STATUS, USER_AGENT, retry_delay

HTML_TYPES = ("text/html", "application/xhtml+xml")
TEXT_TYPES = ("text/plain",)
ROBOTS_MAX_BYTES = 500 * 1024  # RFC 9309: parse at least 500 KiB
WHATWG_ALIASES = {"iso-8859-1": "cp1252", "latin-1": "cp1252", "latin1": "cp1252", "l1": "cp1252",
                  "iso8859-1": "cp1252", "us-ascii": "cp1252", "ascii": "cp1252", "iso_8859-1": "cp1252"}


@dataclass(frozen=True)
class FetchConfig:
    """How pages are fetched. Times in seconds, sizes in bytes (of the decoded body)."""

    concurrency: int = 16
    per_host: int = 2
    timeout: float = 10.0  # connect, read, write and pool, each
    page_timeout: float = 30.0  # a whole page, redirects and retries included
    max_bytes: int = 5_000_000
    max_redirects: int = 5
    retries: int = 2  # extra tries on 429 and 5xx
    backoff: float = 0.5
    max_retry_after: float = 10.0
    respect_robots: bool = True
    allow_private: bool = True  # the CLI's user owns the machine; the app turns this off
    user_agent: str = USER_AGENT

    def __post_init__(self):
        for name in ("concurrency", "per_host", "max_bytes"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1")
        for name in ("timeout", "page_timeout"):
            if getattr(self, name) <= 0:
                raise ValueError(f"{name} must be positive")
        if self.max_redirects < 0 or self.retries < 0 or self.backoff < 0:
            raise ValueError("max_redirects, retries and backoff must be 0 or more")


@dataclass
class PageResult:
    """One URL's outcome. ``status``: the last HTTP status (None when no response came)."""

    url: str
    outcome: str  # "ok", "failed" or "skipped"
    reason: str  # "ok" or why not, one line
    status: int | None = None
    final_url: str | None = None
    content_type: str = ""
    charset: str = ""
    text: str = field(default="", repr=False)  # the decoded body
    bytes: int = 0
    seconds: float = 0.0
    transient: bool = False  # worth trying again later (timeouts, 5xx, connection errors)
    fetched_at: str | None = None  # when the answer came (UTC, ISO 8601); set for recorded pages

    @property
    def ok(self) -> bool:
        return self.outcome == "ok"

    def log_record(self) -> dict:
        """The page's line in a fetch log (no body)."""
        rec = {"url": self.url, "outcome": self.outcome, "status": self.status, "reason": self.reason}
        if self.final_url and self.final_url != self.url:
            rec["final_url"] = self.final_url
        if self.ok:
            rec.update(fetched=True, content_type=self.content_type, charset=self.charset, bytes=self.bytes)
        if self.transient:
            rec["transient"] = True
        if self.fetched_at:
            rec["fetched_at"] = self.fetched_at
        rec["seconds"] = round(self.seconds, 3)
        return rec


class _Stop(Exception):
    """A page that will not be fetched: carries the outcome for its PageResult."""

    def __init__(self, reason: str, status: int | None = None, *, skipped: bool = False, transient: bool = False):
        super().__init__(reason)
        self.reason, self.status, self.skipped, self.transient = reason, status, skipped, transient


# --------------------------------------------------------------------------- decoding


_META_CHARSET = re.compile(rb"""<meta[^>]+charset\s*=\s*["']?\s*([A-Za-z0-9._:-]+)""", re.I)


def _codec(name: str | None) -> str | None:
    if not name:
        return None
    name = name.strip().strip("\"'").lower()
    name = WHATWG_ALIASES.get(name, name)
    try:
        return codecs.lookup(name).name
    except LookupError:
        return None


def header_charset(content_type: str) -> str | None:
    m = re.search(r"charset\s*=\s*[\"']?([^\s;\"']+)", content_type or "", re.I)
    return m.group(1) if m else None


def _detect(body: bytes) -> str:
    """charset-normalizer's best guess; among equally good guesses windows-1252, the web's legacy default
    (it and windows-1250 decode most Western text identically, and detection cannot tell them apart)."""
    matches = list(from_bytes(body))
    if not matches:
        return "cp1252"
    best = matches[0]
    ties = [m for m in matches if m.chaos == best.chaos and m.coherence == best.coherence]
    if any("cp1252" in m.could_be_from_charset for m in ties):
        return "cp1252"
    return _codec(best.encoding) or "cp1252"


def decode_body(body: bytes, content_type: str = "") -> tuple[str, str]:
    """``(text, codec)``: the body decoded by the declared or detected charset (undecodable bytes replaced)."""
    charset = _codec(header_charset(content_type))
    if charset is None:
        for bom, name in ((codecs.BOM_UTF8, "utf-8-sig"), (codecs.BOM_UTF16_LE, "utf-16"),
                          (codecs.BOM_UTF16_BE, "utf-16")):
            if body.startswith(bom):
                charset = name
                break
    if charset is None:
        m = _META_CHARSET.search(body[:4096])
        charset = _codec(m.group(1).decode("ascii", "replace")) if m else None
    if charset is None:
        try:
            return body.decode("utf-8"), "utf-8"
        except UnicodeDecodeError:
            charset = _detect(body[:200_000])
    return body.decode(charset, errors="replace"), charset


# --------------------------------------------------------------------------- the fetcher


def _not_public(ip) -> bool:
    """Whether an address is private, loopback, link-local, reserved, multicast or unspecified."""
    return bool(ip.is_private or ip.is_loopback or ip.is_link_local or ip.is_reserved or ip.is_multicast
                or ip.is_unspecified)


def _private(host: str, infos) -> bool:
    for info in infos:
        try:
            ip = ipaddress.ip_address(info[4][0])
        except ValueError:
            continue
        if _not_public(ip):
            return True
    return False


def _pinned(url: str, ip: str | None) -> tuple[str, dict, dict]:
    """``(request URL, headers, extensions)`` that connect to the checked ``ip`` while asking for ``url``'s
    host: the URL carries the address, ``Host`` the name, TLS the name (SNI and certificate check), so no
    second DNS lookup can send the request elsewhere. ``ip`` None: the URL as it is."""
    if ip is None:
        return url, {}, {}
    parts = urlsplit(url)
    where = f"[{ip}]" if ":" in ip else ip
    netloc = where + (f":{parts.port}" if parts.port else "")
    host = parts.hostname + (f":{parts.port}" if parts.port else "")
    target = parts._replace(netloc=netloc).geturl()
    ext = {"sni_hostname": parts.hostname} if parts.scheme == "https" else {}
    return target, {"Host": host}, ext


@functools.lru_cache(maxsize=1)
def _ssl_context():
    """One TLS context per process: loading the CA bundle takes ~50-250 ms, once per client otherwise."""
    import httpx

    return httpx.create_ssl_context()


class Fetcher:
    """Fetches a list of URLs on one asyncio loop; see the module docstring."""

    def __init__(self, config: FetchConfig | None = None):
        self.cfg = config or FetchConfig()
        self._robots: dict[str, object] = {}
        self._robot_locks: dict[str, asyncio.Lock] = {}
        self._host_sems: dict[str, asyncio.Semaphore] = {}

    async def run(self, urls: list[str], on_page: Callable[[int, PageResult], None] | None = None) -> list[PageResult]:
        import httpx

        cfg = self.cfg
        results: list[PageResult | None] = [None] * len(urls)
        limits = httpx.Limits(max_connections=cfg.concurrency, max_keepalive_connections=cfg.concurrency)
        async with httpx.AsyncClient(timeout=httpx.Timeout(cfg.timeout), limits=limits, follow_redirects=False,
                                     verify=_ssl_context(),
                                     headers={"User-Agent": cfg.user_agent,
                                              "Accept": "text/html,application/xhtml+xml,text/plain;q=0.9,*/*;q=0.1"}
                                     ) as client:
            total = asyncio.Semaphore(cfg.concurrency)
            tasks = [asyncio.create_task(self._one(client, total, i, u)) for i, u in enumerate(urls)]
            try:
                for fut in asyncio.as_completed(tasks):
                    i, res = await fut
                    results[i] = res
                    if on_page is not None:
                        on_page(i, res)
            finally:
                for t in tasks:
                    t.cancel()
        return results  # type: ignore[return-value]

    async def _one(self, client, total: asyncio.Semaphore, i: int, url: str) -> tuple[int, PageResult]:
        parts = urlsplit(url)
        host = f"{(parts.hostname or '').lower()}:{parts.port or ''}"  # a host is a name and a port, as for robots.txt
        sem = self._host_sems.setdefault(host, asyncio.Semaphore(self.cfg.per_host))
        async with sem:  # host first: a busy host never holds global slots while it waits
            async with total:
                t0 = time.perf_counter()
                try:
                    res = await asyncio.wait_for(self._fetch(client, url), self.cfg.page_timeout)
                except _Stop as s:
                    res = PageResult(url, "skipped" if s.skipped else "failed", s.reason, s.status,
                                     transient=s.transient)
                except asyncio.TimeoutError:
                    res = PageResult(url, "failed", f"timed out after {self.cfg.page_timeout:g}s (whole page)",
                                     transient=True)
                except Exception as e:  # one page never fails the corpus
                    res = PageResult(url, "failed", f"error: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
                                     .rstrip(": "))
                res.seconds = time.perf_counter() - t0
                return i, res

    async def _fetch(self, client, url: str) -> PageResult:
        cfg = self.cfg
        current, chain, status = url, [url], None
        for _hop in range(cfg.max_redirects + 1):
            parts = urlsplit(current)
            if parts.scheme not in ("http", "https") or not parts.hostname:
                raise _Stop(f"skipped: not an http(s) URL ({parts.scheme or 'no scheme'})", status, skipped=True)
            pin = None
            if not cfg.allow_private:
                pin = await self._check_public(parts.hostname, parts.port or (443 if parts.scheme == "https" else 80))
            if cfg.respect_robots:
                await self._check_robots(client, current)
            status, headers, body = await self._get(client, current, pin)
            if body is None:  # a redirect
                loc = headers.get("location")
                if not loc:
                    raise _Stop(f"HTTP {status} redirect without a Location", status)
                nxt = urldefrag(urljoin(current, loc.strip()))[0]
                if nxt in chain:
                    raise _Stop(f"redirect loop after {len(chain)} hops", status)
                chain.append(nxt)
                current = nxt
                continue
            ctype_header = headers.get("content-type", "")
            ctype = ctype_header.split(";")[0].strip().lower()
            if not ctype:
                head = body[:1024]
                if head.startswith(b"%PDF") or b"\x00" in head:
                    raise _Stop("skipped: binary content without a content type", status, skipped=True)
                ctype = "text/html" if b"<" in head else "text/plain"
            text, charset = decode_body(body, ctype_header)
            return PageResult(url, "ok", "ok", status, current, ctype, charset, text, len(body))
        raise _Stop(f"too many redirects (more than {cfg.max_redirects})", status)

    async def _get(self, client, url: str, pin: str | None = None):
        """``(status, headers, body)``; body None for a redirect. Raises _Stop for everything else.
        ``pin``: the checked address to connect to (:func:`_pinned`)."""
        import httpx

        cfg = self.cfg
        target, headers, ext = _pinned(url, pin)
        for attempt in range(cfg.retries + 1):
            delay = None
            try:
                async with client.stream("GET", target, headers=headers, extensions=ext) as r:
                    status = r.status_code
                    if status in RETRY_STATUS and attempt < cfg.retries:
                        delay = retry_delay(attempt + 1, cfg.backoff, r.headers.get("retry-after"),
                                            cap=cfg.max_retry_after)
                    elif r.is_redirect:
                        return status, r.headers, None
                    elif status >= 400:
                        tries = f" after {attempt + 1} tries" if attempt else ""
                        raise _Stop(f"HTTP {status}{tries}", status, transient=status in RETRY_STATUS)
                    else:
                        ctype = r.headers.get("content-type", "").split(";")[0].strip().lower()
                        if ctype and ctype not in HTML_TYPES + TEXT_TYPES:
                            raise _Stop(f"skipped: content type {ctype}", status, skipped=True)
                        length = r.headers.get("content-length", "")
                        if length.isdigit() and int(length) > cfg.max_bytes:
                            raise _Stop(f"skipped: {int(length):,} bytes, over the {cfg.max_bytes:,}-byte cap",
                                        status, skipped=True)
                        buf = bytearray()
                        async for chunk in r.aiter_bytes():
                            buf += chunk
                            if len(buf) > cfg.max_bytes:
                                raise _Stop(f"skipped: over the {cfg.max_bytes:,}-byte cap", status, skipped=True)
                        return status, r.headers, bytes(buf)
            except httpx.TimeoutException as e:
                what = {"ConnectTimeout": "connect", "ReadTimeout": "read", "WriteTimeout": "write",
                        "PoolTimeout": "pool"}.get(type(e).__name__, "request")
                raise _Stop(f"timed out ({what}, {cfg.timeout:g}s)", transient=True) from None
            except httpx.HTTPError as e:
                raise _Stop(f"connection failed ({type(e).__name__})", transient=True) from None
            await asyncio.sleep(delay or 0)
        raise AssertionError("unreachable")  # pragma: no cover

    async def _check_public(self, host: str, port: int) -> str:
        """The address to connect to: every address ``host`` resolves to must be public (one lookup; the
        request then goes to the first of them, never to a second lookup's answer)."""
        try:
            infos = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
        except OSError:
            raise _Stop(f"cannot resolve host {host}", transient=True) from None
        if not infos or _private(host, infos):
            raise _Stop(f"skipped: {host} is a private or local address", skipped=True)
        return str(infos[0][4][0])

    async def _check_robots(self, client, url: str) -> None:
        parts = urlsplit(url)
        origin = f"{parts.scheme}://{parts.netloc}"
        lock = self._robot_locks.setdefault(origin, asyncio.Lock())
        async with lock:
            if origin not in self._robots:
                self._robots[origin] = await self._load_robots(client, origin)
        rules = self._robots[origin]
        if isinstance(rules, str):
            raise _Stop(f"skipped: {rules}", skipped=True)
        if rules is not None and not rules.can_fetch(url, AGENT_TOKEN):
            raise _Stop("skipped: robots.txt disallows it", skipped=True)

    async def _load_robots(self, client, origin: str):
        """Protego rules, None (everything allowed) or a reason string (the host is off limits).

        Redirects are followed hop by hop (at most ``max_redirects``, RFC 9309 asks for five), each hop
        through the same checks as a page: an http(s) URL and, when private addresses are off, a public
        address, connected to as checked. A robots.txt that leads to a private address puts the host
        off limits (nothing is requested there)."""
        import httpx

        url, r = f"{origin}/robots.txt", None
        for _hop in range(self.cfg.max_redirects + 1):
            parts = urlsplit(url)
            if parts.scheme not in ("http", "https") or not parts.hostname:
                return "robots.txt redirects to a URL that is not http(s)"
            pin = None
            if not self.cfg.allow_private:
                try:
                    pin = await self._check_public(parts.hostname,
                                                   parts.port or (443 if parts.scheme == "https" else 80))
                except _Stop as s:
                    return f"robots.txt redirects where it may not be fetched ({s.reason.removeprefix('skipped: ')})"
            target, headers, ext = _pinned(url, pin)
            try:  # streamed: only the first ROBOTS_MAX_BYTES of a body are read, the rest never downloaded
                async with client.stream("GET", target, headers=headers, extensions=ext,
                                         follow_redirects=False) as r:
                    body = await _head_of(r, ROBOTS_MAX_BYTES) if 200 <= r.status_code < 300 else b""
            except httpx.HTTPError as e:
                return f"robots.txt unreachable ({type(e).__name__})"
            if not r.is_redirect:
                break
            loc = r.headers.get("location")
            if not loc:
                return None  # a redirect without a target: no robots.txt
            url = urldefrag(urljoin(url, loc.strip()))[0]
        else:
            return None  # more redirects than RFC 9309 asks to follow: treated as unavailable (4xx)
        if 400 <= r.status_code < 500:
            return None
        if r.status_code >= 500:
            return f"robots.txt unavailable (HTTP {r.status_code})"
        if r.status_code >= 300:
            return None
        text, _ = decode_body(body, r.headers.get("content-type", ""))
        try:
            return Protego.parse(text)
        except Exception:  # a robots.txt Protego cannot parse: treat it as absent
            return None


async def _head_of(response, cap: int) -> bytes:
    """The first ``cap`` bytes of a streamed body (decoded from its content encoding); the rest is never
    read: leaving the stream closes the connection."""
    buf = bytearray()
    async for chunk in response.aiter_bytes():
        buf += chunk[:cap - len(buf)]
        if len(buf) >= cap:
            break
    return bytes(buf)


def fetch_pages(urls: list[str], config: FetchConfig | None = None,
                on_page: Callable[[int, PageResult], None] | None = None) -> list[PageResult]:
    """Fetch ``urls`` (see the module docstring); ``on_page(index, result)`` as each one finishes.

    Results are in the order of ``urls``. Runs its own event loop (in a worker thread when the caller
    already runs one).
    """
    fetcher = Fetcher(config)
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(fetcher.run(list(urls), on_page))

    with ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, fetcher.run(list(urls), on_page)).result()
