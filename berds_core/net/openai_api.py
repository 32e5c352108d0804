"""The address and the key of an OpenAI-compatible server, shared by the client that works with it
(``generators.openai.OpenAIClient``) and the check that it is there (``net.reach``).

The API key comes from ``api_key=`` or the environment (``BERDS_OPENAI_API_KEY``,
``OPENAI_API_KEY``) and goes into the Authorization header only: never logged, named or written.
"""
from __future__ import annotations

import os

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
