"""BERDS Studio with the lab's sign-in cookie: ``streamlit run serve.py`` (same flags as app.py).

``app.py`` is the app; this launcher serves it through Streamlit's ``st.App``
with one extra route, ``/berds/session``, that sets the lab's HttpOnly,
SameSite=Strict session cookie (so a sign-in survives a reload and a new
tab), and a guard that refuses file uploads from visitors who have not signed
in (:mod:`berds_core.lab.session`). A lab (``BERDS_AUTH=lab``) runs this;
``streamlit run app.py`` still works, with sign-ins that last one tab.
"""
import os

# Streamlit serves through uvicorn, whose default believes X-Forwarded-For from 127.0.0.1: a client on this
# host (or behind a pass-through front end) could then write its own address and get a fresh sign-in
# budget with each one. Trust no forwarding header unless the operator names its proxy (FORWARDED_ALLOW_IPS,
# uvicorn's own setting; the lab's rate limits read the proxy's header through BERDS_PROXY_HEADER).
os.environ.setdefault("FORWARDED_ALLOW_IPS", "")


def _trust_only_named_proxies() -> None:
    """uvicorn read its trust setting before importing this file (``streamlit run`` hands it ``serve:app``),
    and wraps the app in its ProxyHeadersMiddleware just after the import: give that wrapper the setting
    above instead (the operator's FORWARDED_ALLOW_IPS when named, else nobody)."""
    try:
        import uvicorn.config as uvicorn_config
    except ImportError:  # pragma: no cover - Streamlit's server is uvicorn
        return
    real = getattr(uvicorn_config.ProxyHeadersMiddleware, "berds_real", uvicorn_config.ProxyHeadersMiddleware)

    def proxy_headers(app, trusted_hosts="127.0.0.1"):
        return real(app, trusted_hosts=os.environ.get("FORWARDED_ALLOW_IPS", ""))

    proxy_headers.berds_real = real
    uvicorn_config.ProxyHeadersMiddleware = proxy_headers


_trust_only_named_proxies()

import streamlit as st  # noqa: E402

from berds_core.lab.session import middleware, routes  # noqa: E402
from studio_ui.guards import install as install_guards  # noqa: E402

install_guards()  # clear_cache from the websocket: a signed-in admin's tab only, in lab mode

app = st.App("app.py", routes=routes(), middleware=middleware())

if __name__ == "__main__":
    app.run()
