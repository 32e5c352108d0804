"""How to start a local model server, shown where a page needs a generator (Answers, Which side wins?).

A helper module of the pages (not a page of its own): the exact command to run
in a terminal and the spec to paste, each in a code block with a copy button,
and a button that pastes the spec into the page's model field. The command and
the spec come from the engine (:mod:`berds_core.generators.local_server`).
"""
from __future__ import annotations

import streamlit as st

from berds_core.generators import local_server as ls


def _paste(field_key: str) -> None:
    st.session_state[field_key] = ls.SPEC


def server_help(field_key: str, *, expanded: bool, needs: str) -> None:
    """An expander: start a local OpenAI-compatible server, then paste its spec into ``field_key``."""
    with st.expander("Start a local model server (OpenAI-compatible)", expanded=expanded):
        st.caption("1. In a terminal, on a machine with a GPU (pip install vllm):")
        st.code(ls.COMMAND, language="bash")
        st.caption(f"2. Once it answers, paste this spec into the field above ({needs}):")
        st.code(ls.SPEC, language=None)
        st.button("Paste this spec", key=f"{field_key}_paste", on_click=_paste, args=(field_key,))
        st.caption("No GPU: llama.cpp's server answers the same API with a quantised copy of the same model, "
                   "then paste the same spec:")
        st.code(ls.CPU_COMMAND, language="bash")
