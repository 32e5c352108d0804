"""Lab mode in the pages: which annotation store a page opens, login, the current actor.

**Open mode** (the default; ``BERDS_AUTH`` unset or ``open``): one person on
a laptop, no login. The actor is an admin named by the page (``?annotator=``).
A database typed into a page goes through
:func:`berds_core.files.safepaths.resolve_user_path` (allowed roots only, checked
before anything is read or created); a database can also be uploaded.

**Lab mode** (``BERDS_AUTH=lab``, set by the operator): the database is the
one the operator configured (``BERDS_ANNOTATIONS_DB`` or
``annotations/berds.db``), accounts come from ``berds users add``, and every
page asks for a login. Roles are checked by :class:`berds_core.lab.access.Lab` on
the server for each request.

How a sign-in works in a Streamlit app: Streamlit has no local accounts and
cannot set an HTTP cookie from Python. A sign-in checks the argon2 hash
(:class:`berds_core.lab.accounts.Accounts`, rate-limited), creates a server-side
session (a random token; the database keeps its SHA-256 and its expiry) and
keeps the token in this tab's ``st.session_state``. When the server was
started through ``serve.py`` (Streamlit's ``st.App`` with one extra route,
:mod:`berds_core.lab.session`), the browser also exchanges a one-time code for
an HttpOnly, SameSite=Strict cookie holding the token, so a reload or a new
tab stays signed in; the page reads it back with ``st.context.cookies``. Every
run re-checks the session (idle and absolute expiry, revocation, account
still active): sign-out, a password reset or a disabled account end it in
every tab and browser at once.

In lab mode app.py calls :func:`gate` before anything else: a visitor who has
not signed in gets the sign-in form and nothing else (no page, no sidebar, no
upload, no warm-up).
"""
from __future__ import annotations

import re

import streamlit as st

from berds_core.lab import session as lab_session
from berds_core.lab.access import AccessDenied, Actor, Lab
from berds_core.lab.accounts import Accounts, LoginError, client_address, lab_mode
from berds_core.errors import InputError
from berds_core.lab.store import Store, StoreError, default_db_path
from studio_ui.text import esc

DEFAULT_DB_TEXT = str(default_db_path())


@st.cache_resource(show_spinner=False)
def get_store(path: str) -> Store:
    """One store per database file, shared by every session of this server (thread-safe)."""
    return Store(path)


def error_line(message) -> None:
    """One error line, shown literally (no Markdown, no HTML)."""
    st.error(esc(str(message).splitlines()[0] if str(message) else ""), icon=":material/error:")


def refuse(err: AccessDenied) -> None:
    """Show a refusal (already logged by the engine) and stop the page."""
    st.error(esc(f"Refused: {err}. This request was logged."), icon=":material/block:")
    st.stop()


def safe_markdown(text: str) -> str:
    """Markdown written by an admin, made safe: HTML is shown as text, links only to http(s)/mailto, and
    no image: ``![alt](url)`` becomes a link to the image, so no annotator's browser fetches anything
    from another server just by opening the guidelines."""
    text = str(text or "").replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    text = text.replace("![", "&#33;[")
    return re.sub(r"\]\(\s*(?!https?://|mailto:)[^)]*\)", "]", text)


def _open(path: str) -> Store | None:
    try:
        return get_store(path)
    except Exception as e:  # not a database, newer schema...
        error_line(f"cannot open this annotation database ({type(e).__name__})")
        return None


def page_store(prefix: str, *, must_exist: bool, allow_upload: bool = False) -> Store | None:
    """The store this page works on (None after an error line).

    Lab mode: the operator's database, never a field. Open mode: the default
    database, or a path under the allowed roots, or an uploaded file.
    """
    from berds_core.files.safepaths import resolve_user_path

    if lab_mode():
        path = default_db_path()
        if not path.is_file():
            error_line("Lab mode is on but the lab database does not exist yet: the operator creates it with "
                       "`berds users add NAME --role admin`.")
            return None
        return _open(str(path))
    with st.expander("Database", expanded=False):
        text = st.text_input("Annotation database", value=DEFAULT_DB_TEXT, key=f"{prefix}_db",
                             help="A SQLite file under the folders this app may open (annotations/, or folders "
                                  "the operator lists in BERDS_DATA_ROOTS).")
        up = st.file_uploader("… or upload a database", type=["db", "sqlite"], key=f"{prefix}_db_upload") \
            if allow_upload else None
    if up is not None:
        from studio_ui.sidebar import save_upload

        return _open(save_upload(up, "annotations"))
    text = (text or "").strip()
    if text == DEFAULT_DB_TEXT:
        path = default_db_path()
        if must_exist and not path.is_file():
            st.info("No annotation database yet: label some pairs on the Annotate page first, or upload one.")
            return None
        return _open(str(path))
    try:
        path = resolve_user_path(text, what="annotation database", must_exist=must_exist)
    except InputError as e:
        error_line(e)
        return None
    if path.is_dir() or (not path.exists() and not path.parent.is_dir()):
        error_line(f"annotation database: '{text}' is not a file in an existing folder{_relative_hint(text)}")
        return None
    return _open(str(path))


def _relative_hint(text: str) -> str:
    """For a relative path: where it was looked for, and what to type instead (no server folder is named)."""
    from pathlib import Path

    from berds_core.files.safepaths import allowed_roots, annotations_root

    p = Path(text).expanduser()
    if p.is_absolute():
        return ""
    root = allowed_roots()[0]
    where = (f"the annotations folder ({root.name}/)" if root == annotations_root()
             else "the first folder in BERDS_DATA_ROOTS")
    hint = f"; relative paths start in {where}, so this names {root.name}/{p.as_posix()}"
    if p.parts and p.parts[0] in (root.name, "annotations") and len(p.parts) > 1:
        hint += f": type '{Path(*p.parts[1:]).as_posix()}'"
    return hint + " (or give a full path)"


# --------------------------------------------------------------------------- who is using the page


def _client() -> str:
    """The client address sign-in attempts count against (the operator's proxy header, if named)."""
    try:
        ip, headers = st.context.ip_address, st.context.headers
    except Exception:  # no browser connection (tests)
        ip, headers = None, None
    return client_address(ip if isinstance(ip, str) else None, headers)


def _cookie_token() -> str | None:
    """The session token of the browser's cookie, unless this tab signed it out."""
    try:
        token = st.context.cookies.get(lab_session.COOKIE)
    except Exception:
        return None
    if not isinstance(token, str) or not token or token == st.session_state.get("lab_signed_out_token"):
        return None
    return token


def session_token() -> str | None:
    """This tab's session token, else the one in the browser's cookie (a reload, a new tab)."""
    return st.session_state.get("lab_token") or _cookie_token()


_bridge = st.components.v2.component(
    "berds_session_bridge",
    js="""
export default function ({ data }) {
  if (!data || !data.nonce || window.__berdsSessionBridge === data.nonce) return;
  window.__berdsSessionBridge = data.nonce;
  const init = { method: data.method, credentials: "same-origin", cache: "no-store" };
  if (data.method === "POST") {
    init.headers = { "Content-Type": "application/json" };
    init.body = JSON.stringify({ code: data.code });
  }
  fetch(data.url, init).then((r) => { window.__berdsSessionCookie = data.method + " " + r.status; })
    .catch(() => { window.__berdsSessionCookie = data.method + " failed"; });
}
""",
)


def cookie_bridge() -> None:
    """Let the browser set (after a sign-in) or clear (after a sign-out) the HttpOnly session cookie.

    The request is drawn for a few seconds of runs (a page that reruns at once must not drop it before
    the browser has mounted it); the browser sends each one once (its nonce), the code works once.
    """
    import secrets
    import time

    ss = st.session_state
    code, clear = ss.pop("lab_cookie_code", None), ss.pop("lab_cookie_clear", False)
    if lab_session.installed() and (code or clear):
        ss["lab_cookie_pending"] = {"data": {"url": lab_session.ROUTE, "method": "DELETE" if clear else "POST",
                                             "code": code, "nonce": secrets.token_hex(8)},
                                    "until": time.monotonic() + 20}
    pending = ss.get("lab_cookie_pending")
    if not pending:
        return
    if time.monotonic() > pending["until"]:
        ss.pop("lab_cookie_pending", None)
        return
    _bridge(key=f"lab_bridge_{pending['data']['nonce']}", data=pending["data"])


def sign_out(store: Store) -> None:
    """End this session on the server (every tab and browser holding it) and clear the cookie."""
    ss = st.session_state
    token = ss.pop("lab_token", None)
    ss.pop(lab_session.MEDIA_OWNER_KEY, None)
    cookie = _cookie_token()
    for t in {token, cookie} - {None}:
        Accounts(store).logout(t)
    if cookie:
        ss["lab_signed_out_token"] = cookie  # this connection's cookie header is stale until a reload
    ss["lab_cookie_clear"] = True
    ss["lab_signed_out"] = True


def login_form(store: Store) -> None:
    """The login form; on success the session token goes into this tab's session state (and cookie)."""
    ss = st.session_state
    if ss.pop("lab_signed_out", False):
        st.info("You are signed out.")
    elif ss.pop("lab_ended", False):
        st.warning("Your session ended (signed out, expired, or the account changed). Sign in again.")
    st.subheader("Sign in")
    with st.form("lab_login", clear_on_submit=True):
        name = st.text_input("User name", key="lab_login_name", max_chars=64)
        password = st.text_input("Password", type="password", key="lab_login_password", max_chars=200)
        go = st.form_submit_button("Sign in", type="primary")
    cookie_bridge()
    if go:
        try:
            with st.spinner("Checking…"):
                token, _ = Accounts(store).login(name, password, client=_client())
        except LoginError as e:
            error_line(e)
            return
        finally:
            password = None
        ss["lab_token"] = token
        ss.pop("lab_signed_out_token", None)
        ss["lab_cookie_code"] = lab_session.handoff(token)
        st.rerun()


def current_actor(store: Store, *, ask_name: bool = True) -> Actor | None:
    """The actor of this page run, or None after drawing the login form / name prompt.

    Lab mode: the signed-in user (session re-checked every run). Open mode: an
    admin named by ``?annotator=`` (asked once when ``ask_name``), else ``local``.
    """
    ss = st.session_state
    if lab_mode():
        token = session_token()
        user = Accounts(store).session_user(token) if token else None
        if user is None:
            ss.pop(lab_session.MEDIA_OWNER_KEY, None)
            if token:
                ss.pop("lab_token", None)
                ss["lab_signed_out_token"] = token  # a dead cookie is not tried again in this tab
                ss["lab_ended"] = True
            login_form(store)
            return None
        ss[lab_session.MEDIA_OWNER_KEY] = user.name  # whose downloads this tab's media files are (guards.media_owners)
        return Actor(user.name, user.role)
    name = (st.query_params.get("annotator") or ss.get("ann_annotator") or "").strip()
    if name:
        ss["ann_annotator"] = name
        if st.query_params.get("annotator") != name:
            st.query_params["annotator"] = name
        return Actor(name, "admin", open_mode=True)
    if not ask_name:
        return Actor("local", "admin", open_mode=True)
    st.info("Give your name once; it stays in this page's address so you can come back where you stopped.")
    with st.form("ann_name_form"):
        typed = st.text_input("Annotator name", key="ann_name_input", max_chars=100)
        if st.form_submit_button("Start labelling", type="primary") and typed.strip():
            ss["ann_annotator"] = typed.strip()
            st.query_params["annotator"] = typed.strip()
            st.rerun()
    return None


def account_bar(lab: Lab, slot=None) -> None:
    """Who is signed in, and a way out (lab mode) or to another name (open mode)."""
    slot = slot or st
    actor = lab.actor
    cols = slot.columns([5, 1])
    if actor.open_mode:
        cols[0].text(f"Annotator: {actor.name} · open mode (no login)")  # a name from the address: plain text
        if cols[1].button("Switch", key="lab_switch", help="Label under another name"):
            st.session_state.pop("ann_annotator", None)
            st.query_params.clear()
            st.rerun()
        return
    cols[0].markdown(f"Signed in as **{esc(actor.name)}** · {esc(actor.role)}")
    if cols[1].button("Sign out", key="lab_logout"):
        sign_out(lab.store)
        st.rerun()


ROLE_KEY = "lab_role"  # the signed-in user's role, as app.py's gate read it this run
LEADS = ("reviewer", "admin")


def sees_subsets() -> bool:
    """Whether this run may show the dataset's subsets: open mode, or a lab session of a reviewer or an admin
    (an annotator's queue is stratified by subset; a run whose gate did not say who is signed in: no)."""
    return not lab_mode() or st.session_state.get(ROLE_KEY) in LEADS


def signed_in() -> bool:
    """Whether this run may see the app (open mode, or a live lab session), deciding only: nothing drawn."""
    if not lab_mode():
        return True
    path = default_db_path()
    token = session_token()
    if not token or not path.is_file():
        return False
    try:
        return Accounts(get_store(str(path))).session_user(token) is not None
    except Exception:
        return False


def gate() -> bool:
    """app.py's check, before the navigation runs a page or draws the sidebar.

    Open mode: True (and the sidebar says it is open mode). Lab mode: True
    with the signed-in user's line and a sign-out button in the sidebar;
    otherwise the sign-in form, nothing else, and False.
    """
    if not lab_mode():
        st.sidebar.caption(":material/lock_open: Open mode: no sign-in; anyone who can reach this server can "
                           "use every page. A lab runs with BERDS_AUTH=lab.")
        return True
    store = page_store("gate", must_exist=True)
    if store is None:
        return False
    actor = current_actor(store)
    if actor is None:
        st.session_state.pop(ROLE_KEY, None)
        return False
    st.session_state[ROLE_KEY] = actor.role
    cookie_bridge()
    with st.sidebar:
        c = st.columns([3, 2], vertical_alignment="center")
        c[0].markdown(f":material/person: **{esc(actor.name)}** · {esc(actor.role)}")
        if c[1].button("Sign out", key="lab_sidebar_logout"):
            sign_out(store)
            st.rerun()
    return True


def lab_for_page(store: Store, *, ask_name: bool = True) -> Lab:
    """The :class:`Lab` of this run, or stop the page after the login form."""
    actor = current_actor(store, ask_name=ask_name)
    if actor is None:
        st.stop()
    return Lab(store, actor, per_request=True)  # one page run: the actor's round is read once


__all__ = ["AccessDenied", "StoreError", "account_bar", "cookie_bridge", "current_actor", "error_line", "gate", "sees_subsets",
           "signed_in",
           "get_store", "lab_for_page", "login_form", "page_store", "refuse", "safe_markdown", "session_token",
           "sign_out"]
