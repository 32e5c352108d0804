"""Real browser: a deep link (bookmark or refresh) on a freshly started server keeps the app shell.

Streamlit resolves ``/leaning`` on a fresh server through its ``pages/``
folder mode, which runs the page file alone; ``studio_ui.shell.ensure_shell``
must route it through app.py's navigation and shared sidebar instead.
"""
from __future__ import annotations

import pytest

from browser_harness import ROOT, chromium_page, skip_reason, streamlit_server, wait_for_app

pytestmark = pytest.mark.browser


def test_first_request_is_a_deep_link():
    reason = skip_reason()
    if reason:
        pytest.skip(reason)
    with streamlit_server(ROOT / "app.py") as url, chromium_page() as page:
        page.goto(f"{url}/leaning")  # the server's very first session
        wait_for_app(page, 240_000)
        page.wait_for_selector("h1:has-text('Leaning and sycophancy')", timeout=240_000)
        nav = " ".join(page.locator('[data-testid="stSidebarNav"]').inner_text().split())
        # app.py's titled navigation, not the file names of the pages/ folder
        assert "Playground" in nav and "Leaning" in nav
        assert "common" not in nav.lower() and "app" not in nav.split()
        # the shared sidebar of app.py is there
        # (its widgets may mount a moment after its headings)
        page.wait_for_function("() => /Retriever/.test(document.querySelector('[data-testid=\"stSidebar\"]').innerText)",
                               timeout=60_000)
        sidebar = page.locator('[data-testid="stSidebar"]').inner_text()
        assert "Retriever" in sidebar and "Judge" in sidebar
