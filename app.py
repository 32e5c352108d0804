"""BERDS Studio: ``streamlit run app.py``. Navigation between the tools and the shared sidebar only."""
from pathlib import Path

import streamlit as st

from pages.common import shell, sidebar

ROOT = Path(__file__).parent

st.set_page_config(page_title="BERDS Studio", page_icon="🧭", layout="wide")

# (file, title, icon, default) -- a tool appears once its page file exists.
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
nav = st.navigation(pages)
sidebar()
with shell():
    nav.run()
