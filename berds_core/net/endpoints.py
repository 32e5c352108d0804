"""Which servers the app may call on a visitor's say-so: the operator's list of endpoints.

A generator or judge spec typed into the app names a server
(``openai:<model>@<url>``, ``berds-evaluator:<url>``); calling it is a request
the server makes for the visitor -- to an address inside the server's own
network, with the operator's API key in its headers. So in the app such an
address must be on the list the operator sets, ``BERDS_ALLOWED_ENDPOINTS``
(comma-separated base URLs: ``http://127.0.0.1:8000/v1, https://api.openai.com/v1``);
anything else is refused before any request is made.

- Lab mode (``BERDS_AUTH=lab``): the list is always enforced; unset, no
  typed address is allowed.
- Open mode (one person on their own laptop): enforced once the operator sets
  the list; unset, any address may be typed (as before).

An entry matches a typed address with the same scheme, host and port and the
same path (both read as OpenAI-style base URLs: ``http://h:8000`` is
``http://h:8000/v1``); an entry given as a bare origin (``http://h:8000/``)
allows every path on it. Addresses with a user name, password, query or
fragment are refused. The CLI is not limited: its user owns the machine.
"""
from __future__ import annotations

import os
from urllib.parse import urlsplit

from ..errors import InputError
from ..runtime.mode import lab_mode

ENV = "BERDS_ALLOWED_ENDPOINTS"
_DEFAULT_PORT = {"http": 80, "https": 443}


def _parts(url: str) -> tuple[str, str, int, str] | None:
    """``(scheme, host, port, path)`` of an http(s) URL, or None when it is not a plain one."""
    text = str(url or "").strip()
    if "://" not in text:
        text = "http://" + text
    try:
        u = urlsplit(text)
        port = u.port
    except ValueError:
        return None
    scheme = u.scheme.lower()
    if scheme not in _DEFAULT_PORT or not u.hostname or u.username or u.password or u.query or u.fragment:
        return None
    if any(seg in (".", "..") for seg in u.path.split("/")):
        return None
    return scheme, u.hostname.lower().rstrip("."), port or _DEFAULT_PORT[scheme], u.path


def _api_path(path: str) -> str:
    path = "/" + path.strip("/")
    return path if path.endswith("/v1") else path.rstrip("/") + "/v1"


def allowed_endpoints() -> list[str]:
    return [e.strip() for e in os.environ.get(ENV, "").replace("\n", ",").split(",") if e.strip()]


def enforced() -> bool:
    """Whether typed addresses are checked: always in lab mode, in open mode once the list is set."""
    return lab_mode() or bool(allowed_endpoints())


def is_allowed(url: str, entries: list[str] | None = None) -> bool:
    got = _parts(url)
    if got is None:
        return False
    for entry in allowed_endpoints() if entries is None else entries:
        want = _parts(entry)
        if want is None or want[:3] != got[:3]:
            continue
        if want[3].strip("/") == "" and entry.rstrip().endswith("/"):  # a bare origin: every path on it
            return True
        if _api_path(want[3]) == _api_path(got[3]):
            return True
    return False


def check_endpoint(url: str, what: str = "server address") -> str:
    """``url`` when the app may call it; InputError (no request made) when it may not."""
    if not enforced():  # open mode without a list: as before
        return url
    if not is_allowed(url):
        raise InputError(what, None, None, f"'{url}' is not on this server's list of allowed endpoints; ask the "
                                           f"operator to add it to {ENV}")
    return url
