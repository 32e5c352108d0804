"""Guards the app installs in its process: one on Streamlit's own websocket messages in lab mode
(installed by serve.py and app.py), and one on CPython's AST conversion (installed when ``studio_ui`` is
imported, before any page is parsed).

**AST conversion** (:func:`serialize_ast_conversion`). CPython before 3.13 (reproduced on 3.11.7) keeps the
recursion counter of the C-to-Python AST conversion (``ast.parse``, ``compile(..., PyCF_ONLY_AST)``) in
per-interpreter state, shared by every thread. A garbage collection in the middle of one conversion can switch threads (a
finalizer runs Python code); a second thread's conversion then resets the shared counter, and the first
fails with ``SystemError: AST constructor recursion depth mismatch`` (CPython issue 106905).
Streamlit parses each page with ``ast.parse`` (its "magic") while the warm-up thread imports modules that
parse sources too (anyio's lazy imports, for one): a page failed to load about once a suite run.
``bench/ast_race.py`` reproduces it and times the guard. The guard runs every AST conversion of the
process under one lock; other compiles are not touched.

``clear_cache`` (the toolbar's "Clear cache", also sendable by any websocket client) wipes every user's
cached results and models (``st.cache_data`` and ``st.cache_resource`` are global). The toolbar hides it
(``client.toolbarMode = "minimal"``), but a crafted message still reached the handler: in lab mode it is
now honoured only from a tab where an admin has signed in, and ignored (logged) otherwise.

**Engine imports** (:func:`import_engine`). Python takes a module's import lock before it imports the
module's package, so two threads importing a package and one of its modules for the first time at once (two
sessions' pages, a page and a background job) wait on each other; CPython breaks the wait by handing one
thread the half-initialized module, and the page fails with "cannot import name ... from partially
initialized module" (two threads importing ``studio_ui.warmup`` and ``studio_ui.engines`` did so every time).
Every module of ``berds_core`` is therefore imported once, when ``studio_ui`` is imported, before any page
runs; later imports of the engine only read ``sys.modules``. The heavy libraries (torch, transformers,
FAISS) stay imported where they are used.

**Media files** (:func:`media_owners`). A download button's data is served at ``/media/<hash>`` to anyone
with the URL; in lab mode the cookie guard (:mod:`berds_core.lab.session`) serves it only to a signed-in
user one of whose tabs holds it: this lookup reads which tabs (Streamlit sessions) hold the file and the
user each tab's last run recorded (``lab_ui.current_actor``).
"""
from __future__ import annotations

import ast
import builtins
import logging
import sys
import threading

log = logging.getLogger("berds.access")
_STATE = {"installed": False, "ast": False}
_AST_LOCK = threading.RLock()  # re-entrant: a finalizer on this thread may parse while it holds the lock


def serialize_ast_conversion() -> bool:
    """Run every ``compile(..., ast.PyCF_ONLY_AST)`` of this process (``ast.parse`` included) under one lock,
    on CPython before 3.13 (see the module docstring). Idempotent; True when the guard is in place."""
    if sys.version_info >= (3, 13) or sys.implementation.name != "cpython":
        return False
    if _STATE["ast"]:
        return True
    original = builtins.compile

    def compile(source, filename, mode, flags=0, dont_inherit=False, optimize=-1, **kw):
        if flags & ast.PyCF_ONLY_AST:
            with _AST_LOCK:
                return original(source, filename, mode, flags, dont_inherit, optimize, **kw)
        return original(source, filename, mode, flags, dont_inherit, optimize, **kw)

    compile.__wrapped__ = original
    builtins.compile = compile
    _STATE["ast"] = True
    return True


def import_engine() -> int:
    """Import every module of ``berds_core`` in this thread (see the module docstring); the count imported.
    Idempotent: the second call finds them all in ``sys.modules``. A module whose optional library is not
    installed is left for its first use, which names the library."""
    import importlib
    import pkgutil

    import berds_core

    count = 0
    for info in pkgutil.walk_packages(berds_core.__path__, "berds_core."):
        if info.name.rsplit(".", 1)[-1] == "__main__":  # the CLI's entry point runs the CLI
            continue
        try:
            importlib.import_module(info.name)
        except ModuleNotFoundError as e:
            if (e.name or "").split(".")[0] == "berds_core":
                raise
            continue
        count += 1
    return count


def _admin_signed_in(session_state) -> bool:
    from berds_core.lab.accounts import Accounts
    from berds_core.lab.store import Store, default_db_path

    try:
        token = session_state["lab_token"] if "lab_token" in session_state else None
    except Exception:
        token = None
    if not token:
        return False
    path = default_db_path()
    if not path.is_file():
        return False
    try:
        with Store(path, create=False) as store:
            user = Accounts(store).session_user(token)
    except Exception:
        return False
    return user is not None and user.role == "admin"


def _state_value(session_state, key):
    try:
        return session_state[key] if key in session_state else None
    except Exception:
        return None


def media_owners(file_id: str, runtime=None) -> set[str]:
    """The names of the lab users whose tabs hold the media file ``file_id``: the Streamlit sessions whose
    elements point at it (the media file manager's map by session and element), and the user each session's
    last page run recorded (``berds_core.lab.session.MEDIA_OWNER_KEY``). ``runtime``: Streamlit's (default:
    the running one)."""
    from berds_core.lab.session import MEDIA_OWNER_KEY

    if runtime is None:
        from streamlit import runtime as st_runtime

        if not st_runtime.exists():
            return set()
        runtime = st_runtime.get_instance()
    mgr = runtime.media_file_mgr
    with mgr._lock:
        sessions = [sid for sid, by_coord in mgr._files_by_session_and_coord.items() if file_id in by_coord.values()]
    names = set()
    for sid in sessions:
        info = runtime._session_mgr.get_session_info(sid)
        name = _state_value(getattr(info.session, "_session_state", None) or {}, MEDIA_OWNER_KEY) if info else None
        if isinstance(name, str) and name:
            names.add(name)
    return names


def install() -> None:
    """Wrap ``AppSession``'s clear-cache handler and give the media guard its lookup (once per process)."""
    if _STATE["installed"]:
        return
    from streamlit.runtime.app_session import AppSession

    from berds_core.lab.session import set_media_owners
    from berds_core.runtime.mode import lab_mode

    set_media_owners(media_owners)

    original = AppSession._handle_clear_cache_request

    def guarded(self) -> None:
        if lab_mode() and not _admin_signed_in(getattr(self, "_session_state", None) or {}):
            log.warning("refused clear_cache from a session that is not a signed-in admin")
            return
        original(self)

    guarded.__wrapped__ = original
    AppSession._handle_clear_cache_request = guarded
    _STATE["installed"] = True
