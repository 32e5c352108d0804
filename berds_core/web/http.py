"""What the search clients and the page fetcher share: the User-Agent, retry rules, secret keys."""
from __future__ import annotations

import os
import random
from datetime import datetime, timezone
from email.utils import parsedate_to_datetime
from urllib.parse import urlsplit, urlunsplit

AGENT_TOKEN = "BERDS-Studio"
USER_AGENT = (f"Mozilla/5.0 (compatible; {AGENT_TOKEN}/0.1; research corpus builder; "
              "+https://github.com/timchen0618/BERDS)")
RETRY_STATUS = frozenset({429, 500, 502, 503, 504})


def retry_delay(attempt: int, backoff: float, retry_after: str | None = None, cap: float = 30.0) -> float:
    """Seconds to wait before retry ``attempt`` (1-based): the server's ``Retry-After`` (seconds or an
    HTTP date) when given, else ``backoff * 2**(attempt-1)`` with up to 25% jitter; at most ``cap``."""
    if retry_after:
        text = retry_after.strip()
        try:
            return max(0.0, min(float(text), cap))
        except ValueError:
            try:
                when = parsedate_to_datetime(text)
                return max(0.0, min((when - datetime.now(timezone.utc)).total_seconds(), cap))
            except (TypeError, ValueError):
                pass
    return min(backoff * (2 ** (attempt - 1)) * (1 + 0.25 * random.random()), cap)


def public_url(url: str) -> str:
    """``url`` without user:password and without its query string (which may carry a key):
    what messages and cache keys may show of an endpoint."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    if parts.port:
        host = f"{host}:{parts.port}"
    return urlunsplit((parts.scheme, host, parts.path, "", ""))


class Secret:
    """An API key that does not show itself: ``str``/``repr`` are ``'***'``; ``reveal()`` gives the value.

    Keeps keys out of tracebacks, logs, pickles and f-strings by accident.
    """

    __slots__ = ("_value",)

    def __init__(self, value: str):
        self._value = str(value)

    def reveal(self) -> str:
        return self._value

    def __bool__(self) -> bool:
        return bool(self._value)

    def __repr__(self) -> str:
        return "Secret('***')"

    __str__ = __repr__

    def __reduce__(self):  # never pickled along (st.cache_data, multiprocessing)
        return (Secret, ("",))

    def scrub(self, text: str) -> str:
        """``text`` with every occurrence of the key replaced by ``***``."""
        return text.replace(self._value, "***") if self._value else text


def find_key(names: tuple[str, ...], given: str | None = None) -> tuple[Secret | None, str | None]:
    """The key passed in, else the first of ``names`` set in the environment.

    Returns ``(secret, where)``; ``where`` names its source (``"argument"`` or the variable), never the value.
    """
    if given:
        return Secret(given), "argument"
    for name in names:
        val = os.environ.get(name, "").strip()
        if val:
            return Secret(val), name
    return None, None
