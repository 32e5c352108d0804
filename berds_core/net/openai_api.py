"""The address and the key of an OpenAI-compatible server, shared by the client that works with it
(``generators.openai.OpenAIClient``) and the check that it is there (``net.reach``).

A reply that is not the JSON asked for goes into a one-line error as :func:`describe_reply` puts it: its
status, content type and first words of plain text (an HTML page's tags and scripts stripped, never raw).

The API key comes from ``api_key=`` or the environment (``BERDS_OPENAI_API_KEY``,
``OPENAI_API_KEY``) and goes into the Authorization header only: never logged, named or written.
"""
from __future__ import annotations

import os
from html.parser import HTMLParser

KEY_ENV = ("BERDS_OPENAI_API_KEY", "OPENAI_API_KEY")


def normalize_base_url(url: str) -> str:
    """``http://host:port`` or ``.../v1`` -> ``.../v1`` (no trailing slash)."""
    url = url.strip().rstrip("/")
    if not url.startswith(("http://", "https://")):
        url = "http://" + url
    if not url.endswith("/v1"):
        url += "/v1"
    return url


def api_key(given: str | None = None) -> str | None:
    """``given``, else the first of ``KEY_ENV`` that is set, else None."""
    return given or next((os.environ[k] for k in KEY_ENV if os.environ.get(k)), None)


def headers(key: str | None) -> dict[str, str]:
    """The request headers: JSON, and the bearer key when there is one."""
    out = {"Content-Type": "application/json"}
    if key:
        out["Authorization"] = f"Bearer {key}"
    return out


class _PlainText(HTMLParser):
    """The text of an HTML page outside scripts and styles."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self._hidden = 0

    def handle_starttag(self, tag, attrs):
        self._hidden += tag in ("script", "style", "template")

    def handle_endtag(self, tag):
        if tag in ("script", "style", "template") and self._hidden:
            self._hidden -= 1

    def handle_data(self, data):
        if not self._hidden:
            self.parts.append(data)


def describe_reply(response, words: int = 16, chars: int = 160) -> str:
    """``HTTP <status>, <content type>: <first words>`` for a reply that goes into a one-line error: markup
    stripped (an HTML error page from a proxy or a web server, never its raw tags), one line, at most
    ``words`` words and ``chars`` characters of text."""
    ctype = (response.headers.get("content-type") or "").split(";")[0].strip().lower() or "no content type"
    text = response.text[:65536]
    if "html" in ctype or "xml" in ctype or text.lstrip()[:1] == "<":
        parser = _PlainText()
        try:
            parser.feed(text)
            parser.close()
        except Exception:  # markup the parser gives up on: no text rather than raw tags
            parser.parts = []
        text = " ".join(parser.parts)
    head = " ".join(text.split()[:words])
    if len(head) > chars:
        head = head[:chars].rsplit(" ", 1)[0] + " ..."
    elif len(text.split()) > words:
        head += " ..."
    head = "".join(c for c in head if c.isprintable())
    return f"HTTP {response.status_code}, {ctype}" + (f": {head}" if head else "")
