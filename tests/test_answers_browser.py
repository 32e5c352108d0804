"""Real-browser test of the Answers page: ``streamlit run app.py`` with a REAL localhost OpenAI-style server as
the generator (BERDS_GENERATOR), driven by headless Chromium: two answers side by side, scored, and an answer's
HTML shown as text."""
from __future__ import annotations

import pytest

import answer_server
from browser_harness import (ROOT, browser_page, screenshot, skip_reason, streamlit_server,  # noqa: F401
                             wait_for_app, wait_idle)

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def served():
    reason = skip_reason()
    if reason:
        pytest.skip(reason)
    srv = answer_server.start()
    srv.write = lambda text: "Some people disagree. <b>not bold</b> " + answer_server.default_write(text)
    with streamlit_server(ROOT / "app.py", env={"BERDS_GENERATOR": f"openai:m@{srv.url}"}) as url:
        yield url, srv
    answer_server.stop(srv)


def test_two_answers_side_by_side_in_the_browser(served, browser_page):
    url, srv = served
    page = browser_page
    page.goto(url)
    wait_for_app(page)
    page.get_by_role("link", name="Answers").first.click()
    page.wait_for_selector("text=Write both answers", timeout=240_000)
    # the page draws its controls before both configurations' passages are retrieved (the models are ready,
    # the rest follows): wait until both sides are drawn before clicking
    da_js = ("() => [...document.querySelectorAll('[data-testid=\"stMetric\"]')]"
             ".map(e => e.innerText).filter(t => t.startsWith('D.A.'))")
    page.wait_for_function(f"() => ({da_js})().length === 2", timeout=240_000)
    wait_idle(page, 240_000)
    page.get_by_role("button", name="Write both answers").click()
    page.wait_for_function("() => document.querySelectorAll('.an-answer').length === 2", timeout=240_000)
    page.wait_for_function(f"() => {{ const d = ({da_js})(); return d.length === 2 && d.every(t => !t.endsWith('–')); }}",
                           timeout=240_000)
    wait_idle(page, 240_000)
    answers = page.locator(".an-answer").all_inner_texts()
    assert all(a.startswith("Some people disagree. <b>not bold</b>") for a in answers)
    assert page.locator(".an-answer b").count() == 0  # the model's HTML is text, not markup
    metrics = page.locator('[data-testid="stMetric"]').all_inner_texts()
    da = [m for m in metrics if m.startswith("D.A.")]
    assert len(da) == 2 and all(m.split()[-1] == "0.85" for m in da)  # P(Yes) from the server's logprobs
    pd = [m for m in metrics if m.startswith("P.D.")]
    assert len(pd) == 2 and all(float(m.split()[-1]) > 0 for m in pd)
    assert any(r["path"].endswith("/completions") and r["body"].get("echo") for r in srv.requests)  # P.D. scored
    assert page.locator(".an-yes").count() >= 1  # the demo's gold labels: some perspective is covered
    assert page.locator(".an-yes").count() + page.locator(".an-no").count() == 4 * 4  # 2 configs x 2 lists x 4
    screenshot(page, "answers-two-configurations")
