"""Is the server a spec names there? Asked once, before a command does any work.

A spec such as ``openai:<model>@http://127.0.0.1:8000`` or
``berds-evaluator:http://127.0.0.1:8000`` names an HTTP server. A command that
would only find out at its first request spends its retries (seconds) and may
already have drawn a 0 % progress bar; :func:`check_servers` asks each server
once (``GET <base>/models``, a cheap request every OpenAI-compatible server
answers) and turns a refused or unanswered connection into one
:class:`~berds_core.errors.InputError` line naming the option and the server.

A local model (``hf:<model>[+<adapter>]``) is checked the same way, on disk: a folder without its files
fails at once (:func:`local_model_error`). Only an unreachable server (no TCP connection) or a refused
API key fails the server check: a server that answers anything else, even slowly, is left to the
command (its own retries and errors).
"""
from __future__ import annotations

from ..errors import InputError
from ..specs import SpecError, split_model_url
from .hub import locate
from .openai_api import api_key, headers, normalize_base_url

CONNECT_TIMEOUT = 5.0


def server_url(spec) -> str | None:
    """The base URL a generator or judge spec names (None for local models and non-server specs)."""
    spec = (spec or "").strip()
    name, sep, arg = spec.partition(":")
    if not sep or not arg:
        return None
    if name == "openai":
        try:
            return split_model_url(arg)[1].strip() or None
        except SpecError:  # the spec's own parser refuses it, in one line
            return None
    if name in ("berds-evaluator", "searxng"):
        return arg.strip() or None
    return None


def _sends_key(spec) -> bool:
    """Whether the server of ``spec`` is an OpenAI-compatible one that may be sent the API key (a search
    server, such as SearXNG, is never sent it)."""
    return not str(spec or "").strip().startswith("searxng:")


def unreachable(base_url: str, timeout: float = CONNECT_TIMEOUT, *, send_key: bool = True) -> str | None:
    """Why ``base_url`` cannot be used (one phrase), or None when it answered. ``send_key``: send the
    OpenAI-compatible API key (never to a search server: any HTTP answer from it is enough)."""
    import httpx

    client = None
    try:
        if send_key:
            client = httpx.Client(base_url=normalize_base_url(base_url), headers=headers(api_key()))
            r = client.get("/models", timeout=httpx.Timeout(30.0, connect=timeout))
        else:  # a search server: its front page, no key
            client = httpx.Client(headers={"User-Agent": "berds-studio reachability check"})
            r = client.get(base_url.rstrip("/") + "/", timeout=httpx.Timeout(30.0, connect=timeout))
    except httpx.ConnectTimeout:
        return f"no answer within {timeout:g} s"
    except httpx.ConnectError as e:
        text = str(e).lower()
        if "refused" in text:
            return "connection refused: nothing listens there"
        if "name or service" in text or "nodename" in text or "getaddrinfo" in text:
            return "unknown host"
        return f"cannot connect ({str(e).splitlines()[0] if str(e) else type(e).__name__})"
    except httpx.TimeoutException:  # connected, but slow to answer: the command's own timeouts decide
        return None
    except httpx.HTTPError as e:  # e.g. a malformed URL, a TLS failure
        return f"cannot connect ({type(e).__name__}: {str(e).splitlines()[0] if str(e) else 'no detail'})"
    finally:
        if client is not None:
            client.close()
    if send_key and r.status_code in (401, 403):
        return f"it refused the API key (HTTP {r.status_code}; set BERDS_OPENAI_API_KEY)"
    return None


def local_model_error(spec) -> str | None:
    """Why the model or adapter an ``hf:<model>[+<adapter>]`` spec names cannot be loaded without trying (a
    missing or empty local folder, a hub id offline and not cached: :func:`berds_core.net.hub.locate`), or None."""
    name, sep, arg = str(spec or "").strip().partition(":")
    if name != "hf" or not sep or not arg:
        return None
    model, _, adapter = arg.partition("+")
    return (locate(model, "model")[1] if model else None) or (locate(adapter, "adapter")[1] if adapter else None)


def check_servers(pairs) -> None:
    """``pairs``: (flag, spec). InputError (one line, naming the flag and the server) for the first
    spec whose server cannot be reached; each URL is asked once."""
    seen: set[str] = set()
    for flag, spec in pairs:
        why = local_model_error(spec)
        if why:
            raise InputError(flag, None, None, why)
        url = server_url(spec)
        if url is None:
            continue
        if not _sends_key(spec) and not url.strip().lower().startswith(("http://", "https://")):
            continue  # the search spec's own check names a malformed endpoint
        base = normalize_base_url(url) if _sends_key(spec) else url.strip().rstrip("/")
        if base in seen:
            continue
        seen.add(base)
        why = unreachable(base, send_key=_sends_key(spec))
        if why:
            raise InputError(flag, None, None, f"cannot reach the server {base} ({why}); start it or "
                                               "correct the URL")
