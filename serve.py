"""BERDS Studio with the lab's sign-in cookie: ``streamlit run serve.py`` (same flags as app.py).

``app.py`` is the app; this launcher serves it through Streamlit's ``st.App``
with one extra route, ``/berds/session``, that sets the lab's HttpOnly,
SameSite=Strict session cookie (so a sign-in survives a reload and a new
tab), and a guard that refuses file uploads from visitors who have not signed
in (:mod:`berds_core.lab.session`). A lab (``BERDS_AUTH=lab``) runs this;
``streamlit run app.py`` still works, with sign-ins that last one tab.
"""
import streamlit as st

from berds_core.lab.session import middleware, routes

app = st.App("app.py", routes=routes(), middleware=middleware())

if __name__ == "__main__":
    app.run()
