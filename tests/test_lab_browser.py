"""Real browser, lab mode: three annotators and a reviewer run a blind double-annotation round end to end.

`streamlit run serve.py` with BERDS_AUTH=lab, as a lab runs it; each person signs in in their own browser
context. The annotators label by keyboard at the same time, each seeing only their own queue; an annotator's
direct requests for the reviewer page and for another annotator's labels are refused (and logged); the
reviewer adjudicates a disagreement. Also: the only cookie holding the login is the HttpOnly, SameSite=Strict
session cookie (its token's hash is what the database keeps), Streamlit's XSRF cookie is SameSite=Strict,
and HTML in guidelines and passages is shown as text.
"""
import hashlib

import pytest

from berds_core.lab.access import Actor, Lab
from berds_core.lab.accounts import Accounts
from berds_core.lab.store import Pair, Store
from berds_core.lab.tasks import TaskSetSpec, build_task_set
from browser_harness import ROOT, screenshot, skip_reason, streamlit_server, wait_for_app, wait_idle

pytestmark = [pytest.mark.browser, pytest.mark.slow]

PASSWORD = "lab password 2026"
WIDGET = '[data-testid="berds-annotator"]'
ANNOTATORS = ["ann1", "ann2", "ann3"]


def _make_lab(db):
    with Store(db) as s:
        s.add_pairs([Pair(f"p{i}", f"Question {i}?", f"Passage {i} <img src=x onerror=alert(1)>", f"Perspective {i}",
                          question_id=f"q{i // 3}", title=f"Title {i}") for i in range(9)])
        s.set_judge_preds("judgeZ", {f"p{i}": (0.7, 1) for i in range(9)})
        # blind double annotation: every pair to two of the three annotators
        res = build_task_set(s, s.pairs(), TaskSetSpec(name="round1", source="test", n=9, strategy="random",
                                                       annotators=tuple(ANNOTATORS), overlap=1.0, per_shared=2, seed=3))
        assert res["shared"] == 9
        acc = Accounts(s)
        for name in ANNOTATORS:
            acc.add(name, "annotator", PASSWORD)
        acc.add("rev", "reviewer", PASSWORD)
        Lab(s, Actor("boss", "admin")).set_guidelines("Read it all. <script>window.__pwned=1</script>")
        return {a: s.tasks.queue(a) for a in ANNOTATORS}, {p.pair_id: p.question for p in s.pairs()}


def _login(page, url, path, name):
    page.goto(f"{url}/{path}")
    wait_for_app(page)
    page.get_by_label("User name").fill(name)
    page.get_by_label("Password", exact=True).fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    page.get_by_text(f"Signed in as {name}").wait_for(timeout=60_000)
    wait_idle(page)
    page.wait_for_function("() => window.__berdsSessionCookie === 'POST 204'", timeout=30_000)


def _question(page) -> str:
    """The pair on screen (waits while the widget is fetching more pairs; a key pressed then is ignored)."""
    page.locator(".berds-ann-card").wait_for(state="visible", timeout=30_000)
    return page.locator(".berds-ann-question").inner_text(timeout=30_000)


def _tab(page, name: str) -> None:
    """Open a tab (retried: on a loaded machine the first click can land while the page re-renders)."""
    for attempt in range(3):
        try:
            page.get_by_role("tab", name=name).click(timeout=15_000)
            wait_idle(page)
            if page.get_by_role("tab", name=name).get_attribute("aria-selected") == "true":
                return
        except Exception:
            if attempt == 2:
                raise
        wait_idle(page)
    raise AssertionError(f"tab {name} did not open")


def test_lab_round_three_annotators_and_a_reviewer(tmp_path):
    reason = skip_reason()
    if reason:
        pytest.skip(reason)
    from playwright.sync_api import sync_playwright

    from browser_harness import CHROMIUM, CHROMIUM_ARGS

    db = tmp_path / "lab.db"
    queues, questions = _make_lab(db)
    env = {"BERDS_ANNOTATIONS_DB": str(db), "BERDS_AUTH": "lab"}
    with streamlit_server(ROOT / "serve.py", env=env, timeout=180) as url, sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        ctxs = {a: browser.new_context(viewport={"width": 1300, "height": 950}) for a in ANNOTATORS + ["rev"]}
        pages = {a: c.new_page() for a, c in ctxs.items()}
        for a in ANNOTATORS:
            _login(pages[a], url, "annotate", a)
        seen = {a: [] for a in ANNOTATORS}
        for a in ANNOTATORS:
            page = pages[a]
            _question(page)
            main = page.inner_text('[data-testid="stMain"]')
            assert "<script>window.__pwned=1</script>" in main and page.evaluate("window.__pwned") is None
            assert "<img src=x onerror=alert(1)>" in main  # the passage is text
            assert "judgeZ" not in main and not any(pid in main.split() for pid in queues[a])
            page.evaluate("document.activeElement && document.activeElement.blur()")
        # all three label at once, by keyboard, through their whole queues (6 pairs each)
        for step in range(6):
            for i, a in enumerate(ANNOTATORS):
                seen[a].append(_question(pages[a]))
                pages[a].keyboard.press("y" if (i + step) % 3 else "n")
        for a in ANNOTATORS:
            pages[a].wait_for_function(f"() => document.querySelector('{WIDGET}').dataset.pending === '0'",
                                       timeout=60_000)
            assert "6 of 6 done" in pages[a].inner_text(WIDGET)
        # each saw exactly their own queue, in order
        for a in ANNOTATORS:
            assert seen[a] == [questions[pid] for pid in queues[a]]
        screenshot(pages["ann1"], "lab-annotator-done")

        # cookies: the login is in the HttpOnly session cookie only; Streamlit's XSRF cookie is SameSite=Strict
        with Store(db) as s:
            token_hashes = {r[0] for r in s.query("SELECT token_hash FROM sessions")}
        assert len(token_hashes) == 3
        cookies = {c["name"]: c for c in ctxs["ann1"].cookies()}
        assert set(cookies) == {"_streamlit_xsrf", "berds_session"}
        assert hashlib.sha256(cookies["berds_session"]["value"].encode()).hexdigest() in token_hashes
        assert hashlib.sha256(cookies["_streamlit_xsrf"]["value"].encode()).hexdigest() not in token_hashes
        assert cookies["berds_session"]["httpOnly"] is True and cookies["berds_session"]["sameSite"] == "Strict"
        assert cookies["_streamlit_xsrf"]["sameSite"] == "Strict"
        assert cookies["_streamlit_xsrf"]["httpOnly"] is False  # by Streamlit's design (its JS reads it)

        # ann1 asks for the reviewer page (the app's own navigation, same session): refused and logged
        page = pages["ann1"]
        page.get_by_role("link", name="Agreement").click()
        page.get_by_text("Refused").wait_for(timeout=60_000)
        assert "Krippendorff" not in page.inner_text('[data-testid="stMain"]')
        # ... and for ann2's labels by URL (a new page load: still signed in, by the session cookie)
        page.goto(f"{url}/annotate?annotator=ann2")
        wait_for_app(page)
        page.get_by_text("Refused").wait_for(timeout=60_000)
        with Store(db) as s:
            refused = [(r["actor"], r["action"], r["target"]) for r in s.audit.rows(refused_only=True)]
        assert ("ann1", "agreement", "agreement page") in refused and ("ann1", "labels.other", "ann2") in refused

        # the reviewer adjudicates a disagreement
        rev = pages["rev"]
        _login(rev, url, "agreement", "rev")
        _tab(rev, "Disagreements")
        with Store(db) as s:
            humans = [d for d in __import__("berds_core.lab.agreement", fromlist=["x"]).disagreements(s, "judgeZ")
                      if "humans" in d["kind"]]
        assert humans, "the keys above make the annotators disagree on some pairs"
        rev.get_by_role("button", name="Gold: supports").click()
        wait_idle(rev)
        _tab(rev, "Paper table")
        rev.locator('[data-testid="stDataFrame"]').first.wait_for(timeout=30_000)  # cells are drawn on a canvas
        assert "Refused" not in rev.inner_text('[data-testid="stMain"]')
        screenshot(rev, "lab-reviewer")
        browser.close()
    with Store(db) as s:
        for a in ANNOTATORS:  # everyone's labels are theirs, on their own queue
            assert {l.pair_id for l in s.labels(a)} == set(queues[a])
        assert len(s.gold()) == 1 and s.history(pair_id=next(iter(s.gold())))[-1]["annotator"] == "rev"
        per_pair = {}
        for lab in s.labels():
            per_pair.setdefault(lab.pair_id, []).append(lab.annotator)
        assert all(len(v) == 2 for v in per_pair.values())  # double annotation done
