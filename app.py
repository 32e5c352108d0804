"""BERDS Studio: ``streamlit run app.py``. Navigation between the tools and the shared sidebar only."""
from pathlib import Path

import streamlit as st

from studio_ui.shell import shell
from studio_ui.sidebar import sidebar
from studio_ui.warmup import start_warmup
from studio_ui.guards import install as install_guards
from studio_ui.lab_ui import gate, signed_in

install_guards()  # also under `streamlit run app.py` (serve.py installs them before the server starts)

ROOT = Path(__file__).parent

st.set_page_config(page_title="BERDS Studio", page_icon="🧭", layout="wide")

# (file, title, icon, default) -- a tool appears once its page file exists.
# Pages that retrieve with the sidebar's configuration; only they start its background warm-up
# (an annotator's or a reviewer's session never spends the server's cores on retrieval models).
WARM_PAGES = {"Home", "Playground", "Evaluate", "Leaning"}
TOOLS = [
    ("pages/home.py", "Home", ":material/home:", True),
    ("pages/playground.py", "Playground", ":material/search:", False),
    ("pages/evaluate.py", "Evaluate", ":material/analytics:", False),
    ("pages/annotate.py", "Annotate", ":material/edit_note:", False),
    ("pages/agreement.py", "Agreement", ":material/handshake:", False),
    ("pages/leaning.py", "Leaning", ":material/balance:", False),
    ("pages/answers.py", "Answers", ":material/chat:", False),
    ("pages/convincing.py", "Which side wins?", ":material/swords:", False),
]

pages = [st.Page(str(ROOT / f), title=t, icon=i, default=d) for f, t, i, d in TOOLS if (ROOT / f).exists()]
# Lab mode (BERDS_AUTH=lab): one gate for every page, the sidebar, uploads and warm-ups. A visitor who
# has not signed in gets the sign-in form only; the address (a deep link) is kept for after the sign-in.
# The navigation is set up before the gate draws anything: a form drawn before st.navigation belongs to
# the first run's page context, and Streamlit dropped its submitted values when the next run resolved the
# page (the first sign-in on a fresh server did nothing). signed_in() draws nothing.
nav = st.navigation(pages, position="sidebar" if signed_in() else "hidden")
if not gate():
    st.stop()
sidebar(warms=nav.title in WARM_PAGES)
try:
    with shell():
        nav.run()
finally:  # also after a page's st.stop(): submitting a job draws nothing
    if nav.title in WARM_PAGES:
        start_warmup()  # models and passage embeddings load in the background after the page is drawn
