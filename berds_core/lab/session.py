"""The lab's sign-in cookie: one small HTTP route beside Streamlit, so a sign-in survives a reload.

Python code in a Streamlit page cannot set a cookie, and a cookie set by
JavaScript cannot be HttpOnly. Streamlit 1.67 offers the honest way: an
``st.App`` launcher (``serve.py``) mounts extra Starlette routes beside the
app. This module is that route and a guard for uploads:

- ``POST /berds/session`` with a one-time code: after a password check the
  page (:mod:`studio_ui.lab_ui`) gets a code (:func:`handoff`, random, 60 s, used
  once) and its browser exchanges it here for the cookie
  ``berds_session=<session token>; HttpOnly; SameSite=Strict; Path=/``
  (``Secure`` over TLS, or with ``BERDS_COOKIE_SECURE=1`` behind a TLS proxy),
  ``Max-Age`` = the session's lifetime. Only same-origin requests are served
  (``Sec-Fetch-Site`` / ``Origin``).
- ``DELETE /berds/session``: sign-out clears the cookie (and revokes its
  session, which the page has revoked already).

The cookie holds the session token itself (256 random bits); the database
keeps only its SHA-256 with the user, idle and absolute expiry and a revoked
flag (:mod:`berds_core.lab.accounts`). A token is not a signed claim that the
server trusts on sight: every page run looks it up (``Accounts.session_user``),
so sign-out, expiry, a password reset or a disabled account end it at once,
for every tab and for a copy taken to another browser. JavaScript never sees
it (HttpOnly), another site never sends it (SameSite=Strict).

- :class:`UploadGuard` (lab mode): file uploads
  (``PUT /_stcore/upload_file/...``) need a live session cookie, so a visitor
  who has not signed in cannot even put bytes into the server's memory; and
  so do the files Streamlit serves at ``/media/...`` (downloads such as the
  admin's label export, for about two minutes after they are drawn): a
  visitor without a session gets 403, not the file. A signed-in user gets a
  media file only when one of their own tabs holds it (Streamlit keeps each
  tab's files; the app tells whose tab is whose through :func:`set_media_owners`,
  :func:`studio_ui.guards.media_owners`): another user who has the URL gets 404,
  as for a file that is not there. Without that lookup installed, no media file
  is served in lab mode. Streamlit's metrics (``/_stcore/metrics``: the lab's
  activity) go to reviewers and admins only: a signed-in annotator gets 403.

Starlette only (a Streamlit dependency); no Streamlit import.
"""
from __future__ import annotations

import hashlib
import json
import os
import secrets
import threading
import time
from urllib.parse import urlsplit

from ..runtime.mode import lab_mode
from .accounts import Accounts, session_limits
from .store import default_db_path, Store

COOKIE = "berds_session"
ROUTE = "/berds/session"
HANDOFF_SECONDS = 60.0
ENV_SECURE = "BERDS_COOKIE_SECURE"

_LOCK = threading.Lock()
_HANDOFFS: dict[str, tuple[str, float]] = {}  # sha256(code) -> (session token, expiry)
_STATE = {"installed": False}
MEDIA_OWNER_KEY = "lab_user_name"  # the session-state key where a lab page run records its signed-in user
_MEDIA: dict = {"owners": None}  # file id -> names of the users whose tabs hold the media file


def installed() -> bool:
    """Whether this server mounted the cookie route (started through ``serve.py``)."""
    return _STATE["installed"]


def _h(code: str) -> str:
    return hashlib.sha256(code.encode("utf-8")).hexdigest()


def handoff(token: str, *, now: float | None = None) -> str | None:
    """A one-time code the browser exchanges for the session cookie (None when there is no route)."""
    if not installed() or not token:
        return None
    now = time.monotonic() if now is None else now
    code = secrets.token_urlsafe(32)
    with _LOCK:
        for k in [k for k, (_, exp) in _HANDOFFS.items() if exp <= now]:
            del _HANDOFFS[k]
        _HANDOFFS[_h(code)] = (token, now + HANDOFF_SECONDS)
    return code


def take(code: str, *, now: float | None = None) -> str | None:
    """The token of a live one-time code, once (None when unknown, used or expired)."""
    if not isinstance(code, str) or not code:
        return None
    now = time.monotonic() if now is None else now
    with _LOCK:
        got = _HANDOFFS.pop(_h(code), None)
    if got is None or got[1] <= now:
        return None
    return got[0]


def _store():
    path = str(default_db_path())
    with _LOCK:
        s = _STATE.get("store")
        if s is None or str(s.path) != path:
            s = _STATE["store"] = Store(path, create=False)
        return s


def session_user(token: str | None):
    """The user of a live session token, or None (no database, unknown, ended)."""
    if not token:
        return None
    try:
        return Accounts(_store()).session_user(token)
    except Exception:  # no lab database yet
        return None


def _same_origin(request) -> bool:
    site = request.headers.get("sec-fetch-site")
    if site is not None and site != "same-origin":
        return False
    origin = request.headers.get("origin")
    if origin is not None:
        host = request.headers.get("host", "")
        if urlsplit(origin).netloc.lower() != host.lower():
            return False
    return site is not None or origin is not None  # a browser's fetch says one of them


def _secure(request) -> bool:
    return request.url.scheme == "https" or os.environ.get(ENV_SECURE, "").strip() in ("1", "true", "yes")


async def session_endpoint(request):
    from starlette.concurrency import run_in_threadpool
    from starlette.responses import Response

    headers = {"Cache-Control": "no-store"}
    if not _same_origin(request):
        return Response("cross-site request refused", status_code=403, headers=headers)
    if request.method == "DELETE":
        token = request.cookies.get(COOKIE)
        if token:
            def revoke():
                try:
                    Accounts(_store()).logout(token)
                except Exception:
                    pass

            await run_in_threadpool(revoke)
        resp = Response(status_code=204, headers=headers)
        resp.delete_cookie(COOKIE, path="/", secure=_secure(request), httponly=True, samesite="strict")
        return resp
    body = await request.body()
    if len(body) > 1024:
        return Response("too large", status_code=413, headers=headers)
    try:
        code = json.loads(body or b"{}").get("code")
    except (ValueError, AttributeError):
        code = None
    token = take(code)
    user = await run_in_threadpool(session_user, token) if token else None
    if user is None:
        return Response("unknown or expired code", status_code=400, headers=headers)
    _, lifetime = session_limits()
    resp = Response(status_code=204, headers=headers)
    resp.set_cookie(COOKIE, token, max_age=int(lifetime), path="/", secure=_secure(request), httponly=True,
                    samesite="strict")
    return resp


def set_media_owners(owners) -> None:
    """Install ``owners(file_id) -> set of user names``: whose tabs hold the media file ``file_id`` (the app's
    lookup into Streamlit's media file manager; the engine does not import Streamlit)."""
    _MEDIA["owners"] = owners


def media_file_id(path: str) -> str:
    """The file id of a ``.../media/<file id>.<extension>`` path (as Streamlit's media storage reads it)."""
    return os.path.splitext(path.rsplit("/media/", 1)[-1].strip("/"))[0]


def may_fetch_media(path: str, user) -> bool:
    """Whether ``user`` (signed in) may fetch the media file at ``path``: one of their tabs holds it.
    False when no lookup is installed or it fails (closed, never open)."""
    owners = _MEDIA["owners"]
    if owners is None or user is None:
        return False
    try:
        return user.name in owners(media_file_id(path))
    except Exception:
        return False


def _media(scope) -> bool:
    return "/media/" in scope.get("path", "") and scope.get("method") in ("GET", "HEAD")


def _metrics(scope) -> bool:
    return scope.get("path", "").rstrip("/").endswith("/_stcore/metrics")


LEAD_ROLES = ("reviewer", "admin")  # who reads Streamlit's metrics: the lab's activity, like Round health


def _guarded(scope) -> bool:
    """Requests that need a live session in lab mode: uploads, the media files (downloads) Streamlit
    serves (``/media/...``, under any base path), and Streamlit's metrics (``/_stcore/metrics``: they show
    the lab's activity; a lead's session, not an annotator's)."""
    path = scope.get("path", "")
    if "/_stcore/upload_file/" in path and scope.get("method") == "PUT":
        return True
    if _metrics(scope):
        return True
    return _media(scope)


class UploadGuard:
    """ASGI middleware: in lab mode, file uploads, media downloads and the metrics need a live session cookie
    (403 otherwise), a media file is served only to a user one of whose tabs holds it (404 otherwise), and the
    metrics only to a reviewer or an admin (403 for an annotator)."""

    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        if scope["type"] == "http" and _guarded(scope) and lab_mode():
            from starlette.concurrency import run_in_threadpool
            from starlette.requests import Request
            from starlette.responses import Response

            token = Request(scope).cookies.get(COOKIE)
            user = await run_in_threadpool(session_user, token) if token else None
            if user is None:
                await Response("sign in first", status_code=403)(scope, receive, send)
                return
            if _metrics(scope) and user.role not in LEAD_ROLES:
                await Response("for reviewers and admins only", status_code=403)(scope, receive, send)
                return
            if _media(scope) and not await run_in_threadpool(may_fetch_media, scope.get("path", ""), user):
                await Response("File not found", status_code=404)(scope, receive, send)
                return
        await self.app(scope, receive, send)


def routes() -> list:
    """The route to mount beside Streamlit (``st.App(..., routes=routes())``)."""
    from starlette.routing import Route

    _STATE["installed"] = True
    return [Route(ROUTE, session_endpoint, methods=["POST", "DELETE"])]


def middleware() -> list:
    from starlette.middleware import Middleware

    return [Middleware(UploadGuard)]
