"""Real browser, lab mode served as a lab runs it (`streamlit run serve.py`, BERDS_AUTH=lab).

- An outside visitor reaches nothing but the sign-in form: no page, no sidebar, no upload, no warm-up.
- Signed in, a judge address typed in the sidebar that is not on the operator's list is refused without a
  request, and hf: folders outside the allowed roots give one answer whether they exist or not.
- A crafted name in ``?annotator=`` is rendered as text in the reviewer's heading (no link, no image fetched).
- The session survives a reload and a new tab (HttpOnly, SameSite=Strict cookie holding the token); sign-out
  ends it everywhere, a copy of the cookie taken to another browser is refused, and so is a disabled user's.
- An annotator's Playground lists the dataset's questions without their subsets; a reviewer's with them.
"""
import hashlib
from urllib.parse import quote

import pytest

from berds_core.lab.accounts import Accounts
from berds_core.lab.store import Pair, Store
from berds_core.lab.tasks import TaskSetSpec, build_task_set
from browser_harness import ROOT, screenshot, skip_reason, streamlit_server, wait_for_app, wait_idle
from web_servers import recording_server

pytestmark = [pytest.mark.browser, pytest.mark.slow]

PASSWORD = "lab password 2026"
PAGES = ["", "playground", "evaluate", "annotate", "agreement", "leaning", "answers", "convincing"]


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    reason = skip_reason()
    if reason:
        pytest.skip(reason)
    tmp = tmp_path_factory.mktemp("lab")
    db = tmp / "lab.db"
    with Store(db) as s:
        s.add_pairs([Pair(f"p{i}", f"Question {i}?", f"Passage {i}", f"Perspective {i}", question_id=f"q{i}")
                     for i in range(4)])
        build_task_set(s, s.pairs(), TaskSetSpec(name="r1", source="test", n=4, strategy="random",
                                                 annotators=("ann1",), overlap=0.0, seed=1))
        acc = Accounts(s)
        for name, role in (("ann1", "annotator"), ("ann2", "annotator"), ("rev", "reviewer")):
            acc.add(name, role, PASSWORD)
    with recording_server() as site, streamlit_server(ROOT / "serve.py", timeout=180,
                                              env={"BERDS_ANNOTATIONS_DB": str(db), "BERDS_AUTH": "lab"}) as url:
        yield {"url": url, "db": db, "site": site}


@pytest.fixture()
def browser():
    from playwright.sync_api import sync_playwright

    from browser_harness import CHROMIUM, CHROMIUM_ARGS

    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        yield b
        b.close()


def _sign_in(page, name):
    page.get_by_label("User name").fill(name)
    page.get_by_label("Password", exact=True).fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    page.get_by_role("button", name="Sign out").first.wait_for(timeout=60_000)
    wait_idle(page)
    page.wait_for_function("() => window.__berdsSessionCookie === 'POST 204'", timeout=30_000)  # cookie set


def _signed_in(page) -> bool:
    """Whether the page, once drawn, shows the signed-in app (a Sign out button) or the sign-in form."""
    wait_for_app(page)
    out, into = page.get_by_role("button", name="Sign out"), page.get_by_role("button", name="Sign in")
    out.or_(into).first.wait_for(timeout=60_000)
    wait_idle(page)
    return out.count() > 0


def _form_only(page) -> None:
    """The page shows the sign-in form and nothing of the app."""
    page.get_by_role("button", name="Sign in").wait_for(timeout=60_000)
    wait_idle(page)
    app = page.inner_text('[data-testid="stApp"]')
    for word in ("Dataset", "Corpus", "Retriever", "Judge", "Playground", "Evaluate", "Annotate", "Question 0",
                 "Open mode", "Models load"):
        assert word not in app, word
    assert page.locator('[data-testid="stSidebarNav"]').count() == 0
    assert page.locator('[data-testid="stFileUploader"]').count() == 0


def test_an_outside_visitor_reaches_only_the_sign_in_form(lab, browser):
    ctx = browser.new_context(viewport={"width": 1300, "height": 900})
    page = ctx.new_page()
    for path in PAGES:
        page.goto(f"{lab['url']}/{path}")
        wait_for_app(page)
        _form_only(page)
    screenshot(page, "lab-gate-visitor")
    # uploads: the HTTP endpoint itself refuses a visitor without a session (before Streamlit sees the bytes)
    xsrf = next((c["value"] for c in ctx.cookies() if c["name"] == "_streamlit_xsrf"), "")
    r = page.request.put(f"{lab['url']}/_stcore/upload_file/some-session/some-file", headers={"X-Xsrftoken": xsrf},
                         multipart={"file": {"name": "x.jsonl", "mimeType": "text/plain", "buffer": b"{}"}})
    assert r.status == 403 and "sign in" in r.text()
    # no warm-up ran for the visitor: nothing was loaded into the server's cache
    assert not any((lab["db"].parent).glob("**/embeddings*"))
    # signed in, the same request passes the guard (and meets Streamlit's own checks instead)
    _sign_in(page, "ann1")
    r = page.request.put(f"{lab['url']}/_stcore/upload_file/some-session/some-file", headers={"X-Xsrftoken": xsrf},
                         multipart={"file": {"name": "x.jsonl", "mimeType": "text/plain", "buffer": b"{}"}})
    assert "sign in first" not in r.text()
    ctx.close()


def test_typed_addresses_and_folders_are_checked_before_any_request(lab, browser):
    ctx = browser.new_context(viewport={"width": 1300, "height": 900})
    page = ctx.new_page()
    page.goto(f"{lab['url']}/playground")
    wait_for_app(page)
    _sign_in(page, "ann1")
    side = page.locator('[data-testid="stSidebar"]')
    for attempt in range(4):  # the sidebar re-renders while the warm-up reports: the list may close under us
        try:
            side.get_by_label("Judge", exact=True).click(timeout=15_000)
            page.get_by_role("option", name="custom spec").click(timeout=10_000)
            side.get_by_label("Judge spec").wait_for(timeout=20_000)
            break
        except Exception:
            if attempt == 3:
                raise
            page.keyboard.press("Escape")
            wait_idle(page)
    wait_idle(page)
    spec = side.get_by_label("Judge spec")
    spec.fill(f"openai:m@{lab['site'].url}/v1")
    spec.press("Enter")
    wait_idle(page)
    side.get_by_text("allowed endpoints").first.wait_for(timeout=60_000)
    page.wait_for_timeout(1500)
    assert lab["site"].requests == []  # refused without a request
    answers = []
    for typed in ("/root/.cache", "/nonexistent-dir"):
        spec.fill(f"hf:{typed}")
        spec.press("Enter")
        wait_idle(page)
        line = side.get_by_text(f"'{typed}' is outside the folders").first
        line.wait_for(timeout=60_000)
        answers.append(line.inner_text().replace(typed, "PATH"))
    assert answers[0] == answers[1]
    ctx.close()


def test_a_crafted_name_is_shown_as_text(lab, browser):
    site = lab["site"]
    crafted = (f"[Your session expired – sign in here](http://evil.example/login) "
               f"![x]({site.url}/pixel.png)")
    ctx = browser.new_context(viewport={"width": 1300, "height": 900})
    page = ctx.new_page()
    page.goto(f"{lab['url']}/annotate")
    wait_for_app(page)
    _sign_in(page, "rev")
    page.goto(f"{lab['url']}/annotate?annotator=" + quote(crafted))
    wait_for_app(page)
    page.get_by_role("heading", name="Labels of another annotator").first.wait_for(timeout=60_000)
    wait_idle(page)
    main = page.locator('[data-testid="stMain"]')
    assert f"Annotator: {crafted}" in main.inner_text()  # every character as typed
    links = main.locator("a").evaluate_all("els => els.map(e => e.getAttribute('href'))")
    assert not [h for h in links if "evil" in h or "pixel" in h], links  # no link, not even a linkified URL
    assert main.locator("img").count() == 0
    page.wait_for_timeout(1000)
    assert not [r for r in site.requests if "pixel" in r["path"]]  # the reviewer's browser fetched nothing
    screenshot(page, "lab-crafted-name")
    ctx.close()


def test_the_session_survives_a_reload_and_sign_out_ends_it_everywhere(lab, browser):
    url, db = lab["url"], lab["db"]
    ctx = browser.new_context(viewport={"width": 1300, "height": 900})
    page = ctx.new_page()
    page.goto(f"{url}/annotate")
    wait_for_app(page)
    _sign_in(page, "ann1")
    page.get_by_text("Question 0?").first.wait_for(timeout=60_000)
    cookie = next(c for c in ctx.cookies() if c["name"] == "berds_session")
    assert cookie["httpOnly"] is True and cookie["sameSite"] == "Strict" and cookie["path"] == "/"
    with Store(db) as s:
        stored = {r[0] for r in s.query("SELECT token_hash FROM sessions WHERE revoked = 0")}
    assert hashlib.sha256(cookie["value"].encode()).hexdigest() in stored  # the token; only its hash stored
    assert page.evaluate("document.cookie").find("berds_session") == -1  # JavaScript cannot read it
    page.reload()
    assert _signed_in(page)  # a reload keeps the session
    page.get_by_text("Question 0?").first.wait_for(timeout=60_000)
    tab2 = ctx.new_page()
    tab2.goto(f"{url}/playground")
    assert _signed_in(tab2)  # so does a new tab
    # sign out in the first tab: the second one is signed out too, and a copied cookie is refused
    page.get_by_role("button", name="Sign out").first.click()
    page.get_by_role("button", name="Sign in").wait_for(timeout=60_000)
    tab2.reload()
    _form_only(tab2)
    other = browser.new_context()
    other.add_cookies([{k: cookie[k] for k in ("name", "value", "domain", "path", "httpOnly", "sameSite")}])
    p3 = other.new_page()
    p3.goto(f"{url}/annotate")
    wait_for_app(p3)
    _form_only(p3)
    other.close()
    # a disabled user's session ends at the next reload
    page.reload()
    wait_for_app(page)
    _sign_in(page, "ann2")
    with Store(db) as s:
        Accounts(s).disable("ann2")
    page.reload()
    wait_for_app(page)
    _form_only(page)
    ctx.close()


def _question_choices(page) -> list[str]:
    """The Playground's dataset questions as its list shows them (the list opened, read, closed)."""
    page.get_by_role("heading", name="Plain retrieval").first.wait_for(timeout=240_000)  # models loaded, drawn
    wait_idle(page)
    main = page.locator('[data-testid="stMain"]')
    box = main.locator('[data-testid="stSelectbox"]').first
    for attempt in range(4):  # a rerun may close the list under us
        try:
            box.get_by_role("button", name="Open").click(timeout=15_000)
            page.get_by_role("option").first.wait_for(timeout=10_000)
            got = [o.inner_text() for o in page.get_by_role("option").all()]
            page.keyboard.press("Escape")
            return got
        except Exception:
            if attempt == 3:
                raise
            page.keyboard.press("Escape")
            wait_idle(page)
    return []


def test_an_annotator_is_not_shown_which_subset_a_question_is_in(lab, browser):
    """Issue 63: a round's queue is stratified by subset, and the Playground listed ``question · subset``. In lab mode
    an annotator's tool pages carry no subset; a reviewer's still do."""
    seen = {}
    for name in ("ann1", "rev"):
        ctx = browser.new_context(viewport={"width": 1400, "height": 1000})
        page = ctx.new_page()
        page.goto(f"{lab['url']}/playground")
        wait_for_app(page)
        _sign_in(page, name)
        seen[name] = _question_choices(page)
        ctx.close()
    assert len(seen["ann1"]) == len(seen["rev"]) >= 5
    assert all("·" in label for label in seen["rev"])  # the lead's view: question · subset
    assert not any("·" in label for label in seen["ann1"])
    assert [x.split("·")[0].strip() for x in seen["rev"]] == [x.strip() for x in seen["ann1"]]
