"""Text on the pages: escaping (nothing a user typed, loaded or fetched is rendered as raw HTML or Markdown),
one error line, and the caveat beside a judge's verdicts."""
from __future__ import annotations

import re

import streamlit as st

_ENTITIES = {c: f"&#{ord(c)};" for c in "&<>\"'\\`*_{}[]()#+-.!|~:$="}


def esc(text) -> str:
    """Text safe to put inside HTML rendered by ``st.markdown``.

    Every character HTML or Markdown would interpret (tags, quotes, ``**``,
    ``[]()``, ``:emoji:``, ``$math$`` ...) becomes a numeric entity, so a
    passage shows exactly the characters it contains; whitespace collapses.
    """
    return re.sub(r"\s+", " ", "".join(_ENTITIES.get(c, c) for c in str(text))).strip()


def show_error(err, prefix: str = "") -> None:
    """One clear line for bad input, never a traceback; shown literally (paths and values a
    visitor typed or a file holds are not Markdown: ``root:x:0`` must not become an emoji).
    ``prefix`` (e.g. ``"Generator: "``) goes before it, also literally."""
    line = " ".join(str(err).split("\n", 1)[0].split()) if str(err).strip() else type(err).__name__
    st.error(esc(prefix + line), icon=":material/error:")


# Engine objects live in one process-wide store (``berds_core.runtime.background.MEMO``, like
# ``st.cache_resource``) so that the background warm-up thread, which has no Streamlit
# context, and the pages share them: a model is loaded once, whoever asks first.


def judge_caveat(spec_or_names) -> bool:
    """Say what a judge measures where its verdicts are shown: for the offline ``embedded`` judge (a small
    stance model, with its out-of-fold agreement with people) one caption pointing to the LLM judges. Takes a
    spec, a stored judge name, or several names (one caption at most). True when a caveat was shown."""
    from berds_core.judges import describe_judge

    names = [spec_or_names] if isinstance(spec_or_names, str) or spec_or_names is None else list(spec_or_names)
    caveat = next((c for c in (describe_judge(n)["caveat"] for n in names if n) if c), None)
    if caveat:
        st.caption(f":material/info: {caveat}")
    return bool(caveat)
