"""Real browser: a question typed in the Playground gets a live web corpus from the configured backend
(Serper's API on a local search server) over a local web site; screenshot under test-artifacts/."""
from __future__ import annotations

import json

import pytest

from browser_harness import (ROOT, chromium_page, playground_type_my_own, screenshot, skip_reason, streamlit_server,
                             type_question, wait_for_app, wait_idle)
from web_servers import KEYS, search_server, site_results, site_server

pytestmark = [pytest.mark.browser, pytest.mark.slow]

QUESTION = "Should cities ban cars from their centres?"


def test_playground_web_live_corpus(tmp_path):
    reason = skip_reason()
    if reason:
        pytest.skip(reason)
    with site_server(slow_seconds=2.0, delay=0.05) as site, \
            search_server({"*": site_results(site.url)}) as search:
        env = {"BERDS_SEARCH": "serper", "SERPER_API_KEY": KEYS["serper"],
               "BERDS_SERPER_URL": search.url + "/serper/search", "BERDS_WEB_ALLOW_PRIVATE": "1",
               "BERDS_WEB_SNAPSHOTS": str(tmp_path / "snaps")}
        with streamlit_server(ROOT / "app.py", env=env) as url, chromium_page() as page:
            page.goto(url)
            wait_for_app(page)
            playground_type_my_own(page)
            page.get_by_text("Web (live)", exact=True).click()
            wait_idle(page)
            type_question(page, QUESTION)
            # the progress bar shows while pages arrive
            page.wait_for_selector('[data-testid="stProgress"]', timeout=60_000)
            page.wait_for_selector("text=Web corpus (fetched now)", timeout=240_000)
            wait_idle(page, 240_000)
            page.wait_for_function("() => document.querySelectorAll('.bc-card').length === 20", timeout=240_000)
            body = page.inner_text("body")
            assert "9 of 16 pages gave text" in body
            assert page.locator(".bc-card script, .bc-card b, .bc-card a").count() == 0  # page text stays text
            assert page.locator('[data-testid="stException"]').count() == 0
            page.get_by_text("Fetch log (16 pages) and snapshot folder").click()
            page.wait_for_selector('[data-testid="stDataFrame"]', timeout=30_000)
            screenshot(page, "playground-web-live")
            html = page.content()
            assert not any(k in html for k in KEYS.values())

    manifests = list((tmp_path / "snaps").glob("*/typed-*/manifest.json"))
    assert len(manifests) == 1
    manifest = json.loads(manifests[0].read_text())
    assert manifest["question"] == QUESTION and manifest["counts"]["fetched"] == 9
    for f in (tmp_path / "snaps").rglob("*"):
        if f.is_file():
            assert not any(k.encode() in f.read_bytes() for k in KEYS.values()), f
    assert (ROOT / "test-artifacts" / "playground-web-live.png").stat().st_size > 10_000
