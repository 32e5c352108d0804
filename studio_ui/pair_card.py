"""One (passage, perspective) pair on a page, as the Annotate page shows it to decide and the Agreement page
shows it to adjudicate: the question, the perspective, then the passage (its title apart), all as text."""
from __future__ import annotations

import streamlit as st

from studio_ui.text import esc


def show_pair(view, *, to_decide: bool = False, height: int | str = "content") -> None:
    """Draw one pair: ``view`` is a :meth:`berds_core.lab.access.Lab.pair_view` dict or a
    :class:`~berds_core.lab.records.Pair` (``question``, ``perspective``, ``title``, ``document``).

    ``to_decide``: ask over the passage whether it supports the perspective (the annotator's question); ``height``: the passage's box scrolls
    past this many pixels (``"content"``: as tall as the passage)."""
    get = view.get if isinstance(view, dict) else (lambda k: getattr(view, k))
    st.markdown("**Question**")
    st.markdown(esc(get("question")))
    st.markdown("**Perspective**")
    st.info(esc(get("perspective")))
    if to_decide:
        st.markdown("**Passage** — does it support the perspective?")
    with st.container(border=True, height=height):
        if get("title"):
            st.markdown(f"**{esc(get('title'))}**")
        st.markdown(esc(get("document")))
