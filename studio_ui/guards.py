"""Server-side guards on Streamlit's own websocket messages in lab mode (installed by serve.py and app.py).

``clear_cache`` (the toolbar's "Clear cache", also sendable by any websocket client) wipes every user's
cached results and models (``st.cache_data`` and ``st.cache_resource`` are global). The toolbar hides it
(``client.toolbarMode = "minimal"``), but a crafted message still reached the handler: in lab mode it is
now honoured only from a tab where an admin has signed in, and ignored (logged) otherwise.
"""
from __future__ import annotations

import logging

log = logging.getLogger("berds.access")
_STATE = {"installed": False}


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


def install() -> None:
    """Wrap ``AppSession``'s clear-cache handler (once per process)."""
    if _STATE["installed"]:
        return
    from streamlit.runtime.app_session import AppSession

    from berds_core.runtime.mode import lab_mode

    original = AppSession._handle_clear_cache_request

    def guarded(self) -> None:
        if lab_mode() and not _admin_signed_in(getattr(self, "_session_state", None) or {}):
            log.warning("refused clear_cache from a session that is not a signed-in admin")
            return
        original(self)

    guarded.__wrapped__ = original
    AppSession._handle_clear_cache_request = guarded
    _STATE["installed"] = True
