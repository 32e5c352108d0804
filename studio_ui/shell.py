"""The app shell: a page runs inside app.py's navigation and shared sidebar, also when it is opened first.

On a fresh server, a deep link or a browser refresh (``/leaning``) is resolved by Streamlit's ``pages/``
folder mode, which runs the page file alone; :func:`ensure_shell` runs app.py's navigation instead, and
app.py marks the pages it runs with :func:`shell`.
"""
from __future__ import annotations

import runpy
import threading
from contextlib import contextmanager
from pathlib import Path

import streamlit as st

APP = Path(__file__).resolve().parents[1] / "app.py"
_shell = threading.local()  # per script-run thread: is app.py's navigation running this page?


@contextmanager
def shell():
    """Marks the pages that app.py's ``st.navigation`` runs (see :func:`ensure_shell`)."""
    _shell.active = True
    try:
        yield
    finally:
        _shell.active = False


def ensure_shell() -> None:
    """Run the page inside app.py's navigation and shared sidebar.

    On a fresh server, a deep link or a browser refresh (``/leaning``) is
    resolved by Streamlit's ``pages/`` folder mode, which runs the page file
    alone: no navigation, no shared sidebar. A page calls this first; when the
    server's main script is app.py but the shell is not running, it runs the
    shell (which routes to the page) and stops. ``streamlit run pages/x.py``
    still runs a page on its own.
    """
    if getattr(_shell, "active", False):
        return
    from streamlit.runtime.scriptrunner import get_script_run_ctx

    ctx = get_script_run_ctx()
    if ctx is not None and Path(ctx.main_script_path).resolve() == APP:
        # as app.py's own runs do: widgets drawn outside a page (lab mode's sign-in form) keep their ids
        # from this run to the next, so the first click on a deep link is not lost
        scoped = getattr(ctx, "run_with_active_hash", None)
        main_hash = getattr(getattr(ctx, "pages_manager", None), "main_script_hash", None)
        if scoped is not None and main_hash:
            with scoped(main_hash):
                runpy.run_path(str(APP), run_name="__main__")
        else:
            runpy.run_path(str(APP), run_name="__main__")
        st.stop()
