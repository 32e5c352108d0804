"""Real browser, no network, nothing configured (issue 24, item 4): what a speaker can show offline.

- Discover perspectives works out of the box on the built-in demo pool (selected by default);
- Web (live) with no search backend replays the built-in recording, labelled as a recording with its dates;
- the Playground's "Diverse preset" switch adds the studio's own re-ranker as a column.

Screenshots under test-artifacts/.
"""
from __future__ import annotations

import json

import pytest

from browser_harness import (ROOT, chromium_page, playground_type_my_own, screenshot, skip_reason, streamlit_server,
                             type_question, wait_for_app, wait_idle)

pytestmark = [pytest.mark.browser, pytest.mark.slow]

QUESTION = "Should cities ban cars from their centres?"  # held by the demo pool and by the recording


@pytest.fixture(scope="module")
def offline_app(tmp_path_factory):
    reason = skip_reason()
    if reason:
        pytest.skip(reason)
    snaps = tmp_path_factory.mktemp("snaps")
    # a speaker's laptop: no search backend, no perspective pool, no generator configured
    env = {"BERDS_SEARCH": "", "BERDS_PERSPECTIVE_POOL": "", "BERDS_GENERATOR": "", "BERDS_WEB_SNAPSHOTS": str(snaps)}
    with streamlit_server(ROOT / "app.py", env=env) as url:
        yield url, snaps


def _pool_texts() -> set[str]:
    from berds_core.datasets.demo import demo_pool_path

    return {json.loads(line)["text"] for line in demo_pool_path().read_text().splitlines() if line.strip()}


def test_discover_perspectives_uses_the_demo_pool_by_default(offline_app):
    url, _ = offline_app
    with chromium_page() as page:
        page.goto(url)
        wait_for_app(page)
        playground_type_my_own(page)
        type_question(page, QUESTION)
        wait_idle(page, 180_000)
        assert "Pool: built-in demo pool" in page.inner_text("body")
        page.get_by_role("button", name="Discover perspectives").click()
        wait_idle(page, 300_000)
        page.wait_for_selector("text=perspectives discovered", timeout=300_000)
        lines = [x for x in page.get_by_role("textbox", name="Perspectives, one per line (optional)")
                 .input_value().splitlines() if x.strip()]
        pool = _pool_texts()
        assert len(lines) >= 2
        for line in lines:
            tag, _, text = line.partition("] ")
            assert tag in ("[support", "[undermine") and text in pool, line
        assert any("car" in line.lower() for line in lines)  # on the question's topic
        page.wait_for_function(f"() => document.querySelectorAll('[data-testid=\"perspective-line\"]').length"
                               f" === {len(lines)}", timeout=180_000)
        assert page.locator('[data-testid="stException"]').count() == 0
        screenshot(page, "speaker-demo-pool")


def test_web_live_without_a_backend_replays_the_recording(offline_app):
    url, snaps = offline_app
    with chromium_page() as page:
        page.goto(url)
        wait_for_app(page)
        playground_type_my_own(page)
        page.get_by_text("Web (live)", exact=True).click()
        page.wait_for_selector("text=No web search backend is configured", timeout=120_000)
        wait_idle(page)
        body = page.inner_text("body")
        assert "No web search backend is configured" in body and "It is not the live web" in body
        # the recorded questions are one click away
        page.get_by_role("button", name="Ask this question").click()
        wait_idle(page, 240_000)
        assert page.get_by_label("Your question").input_value() == QUESTION
        page.wait_for_selector("[data-testid='web-corpus-summary']", timeout=240_000)
        wait_idle(page, 240_000)
        summary = page.inner_text("[data-testid='web-corpus-summary']")
        assert "a recording, not the live web" in summary and "2026-11-20" in summary
        assert "6 of 7 pages gave text" in summary
        page.wait_for_function("() => document.querySelectorAll('.bc-card').length === 20", timeout=240_000)
        cards = " ".join(page.locator(".bc-card").all_inner_texts())
        assert "Home" not in cards.split() and "Privacy" not in cards  # boilerplate never reaches a passage
        page.get_by_text("Fetch log (7 pages) and snapshot folder").click()
        page.wait_for_selector('[data-testid="stDataFrame"]', timeout=30_000)
        assert page.locator('[data-testid="stException"]').count() == 0
        screenshot(page, "speaker-web-recording")
    manifest = json.loads(next(snaps.glob("recordings/typed-*/manifest.json")).read_text())
    assert manifest["backend"] == "replay:demo" and manifest["recording"]["searched_at"] == "2026-11-20"


def test_playground_diverse_preset_switch(offline_app):
    url, _ = offline_app
    with chromium_page() as page:
        page.goto(url)
        wait_for_app(page)
        page.get_by_role("link", name="Playground").first.click()
        page.wait_for_selector(".bc-card", timeout=180_000)
        wait_idle(page, 180_000)
        headings = page.locator("h4").all_inner_texts()
        assert "+ Diverse preset" not in headings
        page.get_by_text("Diverse preset", exact=True).click()
        wait_idle(page, 300_000)
        page.wait_for_selector("h4:has-text('+ Diverse preset')", timeout=300_000)
        wait_idle(page, 300_000)
        headings = page.locator("h4").all_inner_texts()
        assert headings[-1] == "+ Diverse preset" and len(headings) == 5
        k = 5
        page.wait_for_function(f"() => document.querySelectorAll('.bc-card').length === {5 * k}", timeout=300_000)
        from berds_core.diversify import get_preset

        assert str(get_preset("diverse")) in page.inner_text("body")  # the caption is its saved pipeline
        assert page.locator('[data-testid="stException"]').count() == 0
        assert page.locator('[data-testid="stAlertContentError"]').count() == 0  # an st.error, not a word
        screenshot(page, "playground-diverse-preset")


SWITCHES_JS = """() => {
  const keys = Array.from(document.querySelectorAll('[class*="st-key-pg_"]'))
    .filter(e => e.querySelector('[data-testid="stCheckbox"]'));
  return keys.map(e => {
    const p = e.querySelector('[data-testid="stWidgetLabel"] p');
    const sw = e.querySelector('[data-testid="stCheckbox"]').getBoundingClientRect();
    const r = p.getBoundingClientRect();
    return {text: p.innerText, truncated: p.scrollWidth > p.clientWidth + 1,
            label: [r.left, r.right, r.top], box: [sw.left, sw.top]};
  });
}"""


@pytest.mark.parametrize("width", [1100, 1400])
def test_playground_switch_labels_are_whole(offline_app, width):
    """Every Playground switch shows its whole label, a long one on two lines on a narrow screen (it used to end
    in an ellipsis: "Perspective re-r...", "Diverse pre..." in six equal columns), and no label runs into the
    next switch of its row."""
    from berds_core.diversify.methods import METHOD_TABLE

    url, _ = offline_app
    with chromium_page(viewport=(width, 1000)) as page:
        page.goto(url)
        wait_for_app(page)
        page.get_by_role("link", name="Playground").first.click()
        page.wait_for_selector(".bc-card", timeout=180_000)
        wait_idle(page, 180_000)
        switches = page.evaluate(SWITCHES_JS)
        assert [s["text"] for s in switches] == [m.toggle for m in METHOD_TABLE if m.toggle]
        for s in switches:
            assert not s["truncated"], (width, s)
        for a, b in zip(switches, switches[1:]):
            if abs(a["box"][1] - b["box"][1]) < 5:  # the same row
                assert a["label"][1] <= b["box"][0] + 1, (width, a, b)
