"""A real lab server (`streamlit run serve.py`, BERDS_AUTH=lab) in a real browser (issue 38, items 8 and 10).

- The first sign-in on a fresh server signs in (it was ignored: the form was drawn before the navigation
  resolved the page, and Streamlit dropped its submitted values on the next run).
- A client that writes its own ``X-Forwarded-For`` (a real header on the real websocket handshake) is
  counted as the connection it came from: rotating the header gives no fresh sign-in budget.
"""
from __future__ import annotations

import pytest

from berds_core.lab.accounts import Accounts
from berds_core.lab.store import Store
from browser_harness import ROOT, skip_reason, streamlit_server, wait_for_app, wait_idle

pytestmark = [pytest.mark.browser, pytest.mark.slow]

PASSWORD = "lab password 2026"


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    reason = skip_reason()
    if reason:
        pytest.skip(reason)
    db = tmp_path_factory.mktemp("proxy") / "lab.db"
    with Store(db) as s:
        for name in ("ann1", "ann2"):
            Accounts(s).add(name, "annotator", PASSWORD)
    env = {"BERDS_ANNOTATIONS_DB": str(db), "BERDS_AUTH": "lab"}
    with streamlit_server(ROOT / "serve.py", timeout=180, env=env) as url:
        yield {"url": url, "db": db}


@pytest.fixture()
def browser():
    from playwright.sync_api import sync_playwright

    from browser_harness import CHROMIUM, CHROMIUM_ARGS

    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        yield b
        b.close()


def _submit(page, name, password):
    page.get_by_role("button", name="Sign in").wait_for(timeout=120_000)
    page.get_by_label("User name").fill(name)
    page.get_by_label("Password", exact=True).fill(password)
    page.get_by_role("button", name="Sign in").click()


def test_the_first_sign_in_on_a_fresh_server_signs_in(lab, browser):
    """The module's server has run no page yet: this is its first sign-in."""
    page = browser.new_page()
    page.goto(lab["url"] + "/annotate")  # a deep link, kept for after the sign-in
    wait_for_app(page)
    _submit(page, "ann1", PASSWORD)
    page.get_by_role("button", name="Sign out").first.wait_for(timeout=30_000)
    wait_idle(page)
    assert "/annotate" in page.url
    page.close()


def test_a_forwarded_for_header_the_client_wrote_is_not_its_address(lab, browser):
    with Store(lab["db"]) as s:
        before = s.query("SELECT MAX(id) FROM login_attempts")[0][0] or 0
    for fake in ("203.0.113.9", "198.51.100.77"):  # a rotating header, as in the attack
        ctx = browser.new_context(extra_http_headers={"X-Forwarded-For": fake})
        page = ctx.new_page()
        page.goto(lab["url"])
        wait_for_app(page)
        _submit(page, "ann2", "not the password of ann2")
        page.get_by_text("wrong name or password").wait_for(timeout=30_000)
        ctx.close()
    with Store(lab["db"]) as s:
        clients = [r[0] for r in s.query("SELECT client FROM login_attempts WHERE id > ?", (before,))]
    assert clients == ["127.0.0.1", "127.0.0.1"]  # the connection's address, both times
