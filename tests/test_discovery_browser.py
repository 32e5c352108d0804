"""Real-browser test: the Playground's "Discover perspectives" fills the perspectives box from a pool."""
from __future__ import annotations

import json

import pytest

from browser_harness import (ROOT, chromium_page, playground_type_my_own, screenshot, skip_reason, streamlit_server,
                             type_question, wait_for_app, wait_idle)
from test_discovery import SPACE, UNIFORMS

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def app_with_pool(tmp_path_factory):
    reason = skip_reason()
    if reason:
        pytest.skip(reason)
    folder = tmp_path_factory.mktemp("pool-root")
    pool = folder / "pool.jsonl"
    pool.write_text("".join(json.dumps({"id": f"s{i + 1}", "text": t}) + "\n" for i, t in enumerate(UNIFORMS + SPACE)))
    env = {"BERDS_DATA_ROOTS": str(folder), "BERDS_PERSPECTIVE_POOL": str(pool)}
    with streamlit_server(ROOT / "app.py", env=env) as url:
        yield url


def typed_question_then_discover(page, url: str, question: str) -> None:
    """Playground -> "Type my own" -> the question -> click "Discover perspectives"."""
    page.goto(url)
    wait_for_app(page)
    playground_type_my_own(page)
    type_question(page, question)
    wait_idle(page, 180_000)
    page.get_by_role("button", name="Discover perspectives").click()


def test_playground_discover_perspectives_fills_the_box(app_with_pool):
    with chromium_page() as page:
        typed_question_then_discover(page, app_with_pool, "Should students wear school uniforms?")
        wait_idle(page, 300_000)
        page.wait_for_selector("text=perspectives discovered", timeout=300_000)
        area = page.get_by_role("textbox", name="Perspectives, one per line (optional)")
        lines = [x for x in area.input_value().splitlines() if x.strip()]
        assert lines, "the perspectives box stayed empty"
        for line in lines:
            tag, _, text = line.partition("] ")
            assert tag in ("[support", "[undermine") and text in UNIFORMS + SPACE
        assert sum(line.partition("] ")[2] in UNIFORMS for line in lines) >= len(lines) / 2
        # the page searched with them: one P-line per perspective, each with its stance
        page.wait_for_function(f"() => document.querySelectorAll('[data-testid=\"perspective-line\"]').length"
                               f" === {len(lines)}", timeout=180_000)
        assert page.locator(".bc-persp .bc-stance").count() == len(lines)
        page.wait_for_selector(".bc-card", timeout=180_000)
        screenshot(page, "playground-discover")

        # editable before searching: keep two lines, one re-tagged, and search again
        kept = [lines[0], "[undermine] " + lines[1].partition("] ")[2]] if len(lines) > 1 else lines[:1]
        area.fill("\n".join(kept))
        area.press("Control+Enter")
        wait_idle(page, 180_000)
        page.wait_for_function(f"() => document.querySelectorAll('[data-testid=\"perspective-line\"]').length"
                               f" === {len(kept)}", timeout=180_000)
        stances = page.locator(".bc-persp .bc-stance").all_inner_texts()
        # a re-tagged line shows the side it now takes ("undermine" is the opposing side's tag)
        if len(kept) > 1:
            assert stances[-1] == "oppose"
        # the cards are redrawn for the edited perspectives: one chip per perspective
        page.wait_for_function("() => { const c = document.querySelector('.bc-card');"
                               f" return c && c.querySelectorAll('.bc-chip').length === {len(kept)}; }}",
                               timeout=180_000)
        assert page.locator('[data-testid="stException"]').count() == 0
        screenshot(page, "playground-discover-edited")


def test_playground_pool_outside_allowed_roots_is_one_line_error(tmp_path_factory):
    reason = skip_reason()
    if reason:
        pytest.skip(reason)
    outside = tmp_path_factory.mktemp("elsewhere") / "pool.txt"
    outside.write_text("Uniforms cut bullying.\n")
    allowed = tmp_path_factory.mktemp("allowed")
    env = {"BERDS_DATA_ROOTS": str(allowed), "BERDS_PERSPECTIVE_POOL": str(outside)}
    with streamlit_server(ROOT / "app.py", env=env) as url, chromium_page() as page:
        typed_question_then_discover(page, url, "Should students wear school uniforms?")
        wait_idle(page, 120_000)
        page.wait_for_selector("text=outside the folders this app may open", timeout=60_000)
        assert page.get_by_role("textbox", name="Perspectives, one per line (optional)").input_value() == ""
        assert page.locator('[data-testid="stException"]').count() == 0
