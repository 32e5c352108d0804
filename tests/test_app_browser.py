"""Real-browser test: ``streamlit run app.py`` driven by headless Chromium (Playwright)."""
from __future__ import annotations

import pytest

from browser_harness import (browser_page, playground_type_my_own, screenshot, streamlit_app_url,  # noqa: F401
                             type_question, wait_for_app, wait_idle)

pytestmark = pytest.mark.browser

HEADS = ["Plain retrieval", "+ MMR", "+ Query expansion", "+ Re-ranker"]


def _column_heads(page) -> list[str]:
    return [h.strip() for h in page.locator("h4").all_inner_texts() if h.strip() in HEADS]


def test_home_then_playground_typed_question_mmr_toggle(streamlit_app_url, browser_page):
    page = browser_page
    page.goto(streamlit_app_url)
    wait_for_app(page)
    page.wait_for_selector("text=BERDS Studio", timeout=60_000)
    page.wait_for_selector("text=Questions", timeout=120_000)  # the Home page's data loads after the first paint
    screenshot(page, "home")

    playground_type_my_own(page)
    type_question(page, "Should homework be banned in primary schools?")
    wait_idle(page, 180_000)
    # the four columns fill in one after another: wait for all of them
    page.wait_for_function("() => document.querySelectorAll('.bc-card').length === 20", timeout=180_000)
    wait_idle(page)
    assert _column_heads(page) == HEADS
    # at a laptop's width "+ Query expansion" wraps and the descriptions differ in length: the figures still line up
    size = page.viewport_size
    page.set_viewport_size({"width": 1280, "height": size["height"]})
    page.wait_for_timeout(500)
    tops = page.evaluate("() => [...document.querySelectorAll('.bc-metrics')]"
                         ".map(e => Math.round(e.getBoundingClientRect().top))")
    assert len(tops) == 4 and len(set(tops)) == 1, tops
    page.set_viewport_size(size)
    n_cards = page.locator(".bc-card").count()
    assert n_cards == 4 * 5
    chips = page.locator(".bc-card .bc-chip")
    assert chips.count() >= n_cards * 2  # one chip per perspective, at least two perspectives
    assert chips.first.inner_text().startswith("P1 ")
    screenshot(page, "playground-typed")

    # MMR off: three columns; on again: four
    page.get_by_text("MMR", exact=True).click()
    wait_idle(page)
    page.wait_for_function("() => document.querySelectorAll('.bc-card').length === 15", timeout=60_000)
    assert "+ MMR" not in _column_heads(page)
    page.get_by_text("MMR", exact=True).click()
    wait_idle(page)
    page.wait_for_function("() => document.querySelectorAll('.bc-card').length === 20", timeout=120_000)
    assert _column_heads(page) == HEADS
    assert page.locator(".bc-card .bc-chip").count() >= 40
    # nothing raised on the server side
    assert page.locator('[data-testid="stException"]').count() == 0
    screenshot(page, "playground-mmr")
