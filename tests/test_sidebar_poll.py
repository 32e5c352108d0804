"""The sidebar polls the warm-up (a fragment rerun every second) only where there is something to wait for: on
a page that starts the warm-up (app.py's WARM_PAGES), or while one runs. A page that starts none (Annotate,
Agreement) drew the polling fragment for ever, so every open lab page reran it each second and loaded the
server (the quality browser test's reviewer page waited minutes for its annotator model on a loaded machine)."""
from pathlib import Path

import pytest

pytest.importorskip("streamlit")
import streamlit  # noqa: E402
from streamlit.testing.v1 import AppTest  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = (
    "import sys\n"
    f"sys.path.insert(0, {str(ROOT)!r})\n"
    "import streamlit as st\n"
    "from studio_ui.config import current_config\n"
    "from studio_ui.sidebar import sidebar\n"
    "from studio_ui.warmup import warmup_job\n"
    "st.session_state['job_before'] = warmup_job(current_config()) is not None\n"
    "sidebar(warms=WARMS)\n"
)


@pytest.mark.parametrize("warms", [False, True])
def test_the_warmup_is_polled_only_where_a_warmup_starts_or_runs(monkeypatch, warms):
    polls = []
    real = streamlit.fragment

    def fragment(func=None, *, run_every=None):
        polls.append(run_every)  # what the sidebar asked for; the fragment itself is not scheduled
        return real(func)

    monkeypatch.setattr(streamlit, "fragment", fragment)
    import studio_ui.warmup as warmup

    monkeypatch.setattr(warmup, "JOBS", {})  # no warm-up job in this process (an earlier test may have left one)
    at = AppTest.from_string(f"WARMS = {warms!r}\n" + SCRIPT, default_timeout=120)
    at.run()
    assert not at.exception, at.exception
    assert at.session_state["job_before"] is False  # no warm-up exists: the case this is about
    assert polls == ([1.0] if warms else []), polls
