"""A newcomer's first hour in a real browser (issue 18): first view before the models, a warm-up
with a progress bar, whole card titles, file content shown literally, no file watcher."""
from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

import pytest

from browser_harness import (ROOT, chromium_page, skip_reason, streamlit_server, wait_for_app,  # noqa: F401
                             wait_idle)

pytestmark = [pytest.mark.browser, pytest.mark.slow]

MARKDOWN = "root:x:0:0 **bold** [link](http://e.x) <b>tag</b> :red[red]"


@pytest.fixture(scope="module")
def data_root():
    d = Path(tempfile.mkdtemp(prefix="berds-browser-data-"))
    rows = [{"id": MARKDOWN, "question": "A?", "perspectives": ["x", "y"]},
            {"id": MARKDOWN, "question": "B?", "perspectives": ["x", "y"]}]
    (d / "dup.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return d


@pytest.fixture(scope="module")
def server(data_root):
    reason = skip_reason()
    if reason:
        pytest.skip(reason)
    with streamlit_server(ROOT / "app.py", env={"BERDS_DATA_ROOTS": str(data_root)}) as url:
        yield url


@pytest.fixture()
def page():
    reason = skip_reason()
    if reason:
        pytest.skip(reason)
    with chromium_page() as p:
        yield p


def test_first_view_then_a_warm_up_progress_bar_then_whole_titles(server, page):
    page.goto(server)
    page.wait_for_selector("h1:has-text('BERDS Studio')", timeout=120_000)
    wait_idle(page)
    # Home is usable while the models load: the sidebar says so instead of blocking the page
    sidebar = page.inner_text('[data-testid="stSidebar"]')
    assert "loading in the background" in sidebar or "Warm-up" in sidebar, sidebar
    page.get_by_role("link", name="Playground").first.click()
    # the page itself (not only the sidebar) shows the warm-up as a progress bar, not a spinner
    bar = page.wait_for_selector('[data-testid="stMain"] [data-testid="stProgress"]:has-text("Warm-up")',
                                 timeout=120_000)
    assert bar is not None and page.locator('[data-testid="stMain"] [data-testid="stSpinner"]').count() == 0
    page.wait_for_function("() => document.querySelectorAll('.bc-card').length >= 20", timeout=1_800_000)
    wait_idle(page, 600_000)
    assert page.locator('[data-testid="stException"]').count() == 0
    cut = page.evaluate("""() => [...document.querySelectorAll('.bc-title')]
        .filter(e => e.scrollWidth > e.clientWidth + 1 || e.scrollHeight > e.clientHeight + 1)
        .map(e => e.textContent)""")
    long_titles = page.evaluate("() => [...document.querySelectorAll('.bc-title')].filter(e => e.textContent.length > 30).length")
    assert long_titles > 0 and cut == []


def test_error_box_shows_file_content_literally(server, page, data_root):
    page.goto(server)
    wait_for_app(page)
    # the select itself (its help button's label, "Help for Dataset", matches a plain "Dataset" label too)
    page.locator('[data-testid="stSelectbox"]').filter(has_text="Dataset").get_by_role("combobox").first.click()
    page.get_by_role("option", name="File path").click()
    wait_idle(page)
    box = page.get_by_label("Questions file")
    box.fill(str(data_root / "dup.jsonl"))
    box.press("Enter")
    wait_idle(page)
    # the error about this file (the empty path's "give the path" error may still be on screen while the
    # rerun starts: wait for the one that names the file)
    alert = page.locator('[data-testid="stAlertContentError"]', has_text="dup.jsonl").first
    alert.wait_for(timeout=60_000)
    text = " ".join(alert.inner_text().split())
    assert MARKDOWN in text, text
    assert "❌" not in text


def test_the_project_config_turns_the_file_watcher_off(page):
    """No inotify watch on the app folder (its .venv overflowed the inotify queue)."""
    with streamlit_server(ROOT / "app.py", file_watcher=None) as url:
        page.goto(url)
        wait_for_app(page)
        fds = Path(f"/proc/{url.pid}/fd")
        if not fds.exists():
            pytest.skip("no /proc here")
        links = []
        for fd in fds.iterdir():
            try:
                links.append(os.readlink(fd))
            except OSError:
                pass
        assert not [x for x in links if "inotify" in x], links
