"""Real browser, lab mode: four annotators label one round at once, by keyboard; a reviewer reads who to trust.

`streamlit run serve.py` with BERDS_AUTH=lab; every pair goes to all four annotators, with gold checks mixed
in (one item in five, floor 0.7). Two annotators label carefully; one clicks through at random, fast; one
answers every gold check right (this test tells them which pairs are checks, the worst case) and the rest at
random. The checks pause the clicker (their page says so, without naming a check); they miss the gamer; the
reviewer's Annotators tab ranks both careful annotators above both others (the estimate across redundant
labels), Round health shows the pause with its message to the lead, and Resume reopens the queue.

Nothing here depends on the machine's speed: each answer is a function of the annotator and the pair (a coin
seeded by both, never a stream shared by pages whose turns a slow server reorders), so the server's state at
the end is the same on every run (the clicker paused after its fifth check, 2 of 5 right; checked once
without a browser); the test waits on that state (the pause in the database, every other queue empty)
before it asks the pages, and every wait is long enough for a loaded machine.
"""
import time

import numpy as np
import pytest

from berds_core.lab.accounts import Accounts
from berds_core.lab import rounds
from berds_core.lab.checks import check_scores, pauses
from berds_core.lab.controls import RoundControls
from berds_core.lab.reliability import reliability_report
from berds_core.lab.store import Pair, Store
from berds_core.lab.tasks import TaskSetSpec, build_task_set
from browser_harness import ROOT, screenshot, skip_reason, streamlit_server, wait_for_app, wait_idle

pytestmark = [pytest.mark.browser, pytest.mark.slow]

PASSWORD = "lab password 2026"
WIDGET = '[data-testid="berds-annotator"]'
PEOPLE = ["careful1", "careful2", "clicker", "gamer"]
PAUSED_TEXT = "paused by the round's quality control"
COIN_SEED = 13  # with it, the clicker's answers pause it (2 of 5 checks right) and the others finish
WAIT_MS = 180_000  # a loaded two-core machine: the server may take long, the test never races it


def _coin(annotator: str, pid: str) -> int:
    """A random answer that depends only on who answers which pair."""
    return int(np.random.default_rng([COIN_SEED, PEOPLE.index(annotator), ord(pid[0]), int(pid[1:])]).random() < 0.5)


def _wait_for(predicate, what: str, timeout_s: float = WAIT_MS / 1000) -> None:
    """Poll the server's state (the database) until ``predicate()`` holds."""
    deadline = time.monotonic() + timeout_s
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"the server never reached: {what}")
        time.sleep(0.25)


def _make_round(db):
    rng = np.random.default_rng(7)
    pairs = [Pair(f"t{i}", f"Is claim number {i} well argued?", f"Passage about claim {i}.", f"Claim {i} holds.",
                  question_id=f"q{i // 4}") for i in range(36)]
    pool = [Pair(f"g{i}", f"Is check claim {i} well argued?", f"Passage about check claim {i}.", f"Check claim {i} holds.",
                 question_id=f"gq{i // 4}") for i in range(30)]
    truth = {p.pair_id: int(rng.random() < 0.4) for p in pairs}
    truth.update({p.pair_id: i % 2 for i, p in enumerate(pool)})
    with Store(db) as s:
        s.add_pairs(pool)
        s.set_reference_labels({p.pair_id: truth[p.pair_id] for p in pool}, source="dataset gold")
        # the checks come from the round's own candidates (issue 63): 36 of the 66 are the tasks, the rest the pool
        build_task_set(s, pairs + pool, TaskSetSpec(name="round", source="test", n=36, strategy="random",
                                                    annotators=tuple(PEOPLE), overlap=1.0, per_shared=4, seed=5,
                                                    controls=RoundControls(check_rate=0.2, check_floor=0.7,
                                                                           check_min=3, seed=5)),
                       reference=truth)
        acc = Accounts(s)
        for name in PEOPLE:
            acc.add(name, "annotator", PASSWORD)
        acc.add("rev", "reviewer", PASSWORD)
    return {p.question: p.pair_id for p in pairs + pool}, truth


def _page(browser):
    """A page in its own browser context whose every wait (navigation, click, fill, reading an element) allows
    WAIT_MS: Playwright's default is 30 s, which a loaded server's first answer to a page load can exceed."""
    context = browser.new_context(viewport={"width": 1300, "height": 950})
    context.set_default_timeout(WAIT_MS)
    context.set_default_navigation_timeout(WAIT_MS)
    return context.new_page()


def _login(page, url, path, name):
    page.goto(f"{url}/{path}")
    wait_for_app(page, WAIT_MS)
    page.get_by_label("User name").wait_for(timeout=WAIT_MS)  # the form of a page a loaded server still draws
    page.get_by_label("User name").fill(name)
    page.get_by_label("Password", exact=True).fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    page.get_by_text(f"Signed in as {name}").wait_for(timeout=WAIT_MS)
    wait_idle(page)


def _screen(page, timeout_ms=WAIT_MS, *, answered: str = "") -> str:
    """The question on screen, or PAUSED / DONE (waits while the widget fetches more pairs, and while the
    question ``answered`` (the one a key was just pressed for) is still shown: every pair is asked once)."""
    return page.wait_for_function(
        """([paused, answered]) => {
            const main = document.querySelector('[data-testid="stMain"]');
            if (main && main.innerText.includes(paused)) return 'PAUSED';
            const card = document.querySelector('.berds-ann-card');
            const q = document.querySelector('.berds-ann-question');
            if (card && card.offsetParent !== null && card.style.display !== 'none' && q && q.innerText)
                return q.innerText === answered ? null : q.innerText;
            const done = document.querySelector('.berds-ann-done');
            if (done && done.innerText.includes('All pairs')) return 'DONE';
            return null;
        }""", arg=[PAUSED_TEXT, answered], timeout=timeout_ms).json_value()


def _open_pauses(db) -> list[dict]:
    with Store(db) as s:
        return pauses(s, open_only=True)


def _open_tab(page, name: str) -> None:
    """Click a tab of the Agreement page and wait (long) until it is the selected one and the page's run that
    draws it is over; the click is repeated only if the tab never became selected."""
    tab = page.get_by_role("tab", name=name)
    for attempt in range(3):
        tab.click(timeout=WAIT_MS)
        try:
            page.wait_for_function("(n) => [...document.querySelectorAll('[role=tab]')].some("
                                   "t => t.innerText.trim() === n && t.getAttribute('aria-selected') === 'true')",
                                   arg=name, timeout=WAIT_MS // 3)
        except Exception:
            if attempt == 2:
                raise
            continue
        wait_idle(page, WAIT_MS)
        return


def test_checks_pause_the_clicker_and_the_estimate_finds_the_gamer(tmp_path):
    reason = skip_reason()
    if reason:
        pytest.skip(reason)
    from playwright.sync_api import sync_playwright

    from browser_harness import CHROMIUM, CHROMIUM_ARGS

    db = tmp_path / "lab.db"
    pair_of, truth = _make_round(db)
    env = {"BERDS_ANNOTATIONS_DB": str(db), "BERDS_AUTH": "lab"}
    with streamlit_server(ROOT / "serve.py", env=env, timeout=180) as url, sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        pages = {a: _page(browser) for a in PEOPLE + ["rev"]}
        for a in PEOPLE:
            _login(pages[a], url, "annotate", a)
            pages[a].evaluate("document.activeElement && document.activeElement.blur()")
        # whether the clicker's page ever says its pairs are all done (its queue is paused, not done), even for
        # a moment between two runs of the page
        pages["clicker"].evaluate("""() => {
            window.__saidDone = false;
            const look = () => {
                const d = document.querySelector('.berds-ann-done');
                if (d && d.textContent.includes('All pairs')) window.__saidDone = true;
            };
            new MutationObserver(look).observe(document.body, {subtree: true, childList: true, characterData: true});
        }""")
        state = dict.fromkeys(PEOPLE, "")
        made = dict.fromkeys(PEOPLE, 0)
        for _ in range(120):  # everyone labels at the same time, one key each per turn
            active = [a for a in PEOPLE if state[a] not in ("PAUSED", "DONE")]
            if not active:
                break
            for a in active:
                shown = _screen(pages[a], answered=state[a])
                state[a] = shown
                if shown in ("PAUSED", "DONE"):
                    continue
                pid = pair_of[shown]
                if a == "careful1":
                    y = truth[pid]
                elif a == "careful2":
                    y = truth[pid] if made[a] % 9 != 4 else 1 - truth[pid]  # a slip now and then
                elif a == "gamer":
                    with Store(db) as s:
                        is_check = bool(s.query("SELECT 1 FROM assignments WHERE annotator = 'gamer' AND pair_id = ? "
                                                "AND kind = 'check'", (pid,)))
                    y = truth[pid] if is_check else _coin(a, pid)
                else:
                    y = _coin(a, pid)
                pages[a].keyboard.press("y" if y else "n")
                made[a] += 1
        # the server's state first: the clicker's pause recorded, every other queue empty
        def left(a):
            with Store(db) as s:
                return rounds.progress(s, a, "round")["remaining"]

        _wait_for(lambda: [p["annotator"] for p in _open_pauses(db)] == ["clicker"], "the clicker's pause")
        for a in ("careful1", "careful2", "gamer"):
            _wait_for(lambda: left(a) == 0, f"{a}'s queue done")
        assert state["clicker"] == "PAUSED", state
        assert not pages["clicker"].evaluate("window.__saidDone"), "a paused queue was shown as all done"
        for a in ("careful1", "careful2", "gamer"):
            assert state[a] == "DONE", state
            pages[a].wait_for_function(f"() => document.querySelector('{WIDGET}').dataset.pending === '0'",
                                       timeout=WAIT_MS)
        clicker_text = pages["clicker"].inner_text('[data-testid="stMain"]')
        assert "Nothing you labelled is lost" in clicker_text and "check" not in clicker_text.lower()
        screenshot(pages["clicker"], "lab-quality-paused")

        with Store(db) as s:
            scores = check_scores(s)
            rep = reliability_report(s)
        assert scores["gamer"]["accuracy"] == 1.0 and not rep["annotators"]["gamer"]["paused_in"]
        assert rep["annotators"]["clicker"]["paused_in"] == ["round"]
        assert set(rep["order"][:2]) == {"careful1", "careful2"} and set(rep["order"][2:]) == {"clicker", "gamer"}

        # the reviewer: Annotators ranks the careful two first (the competence chart's bars, left to right)
        rev = pages["rev"]
        _login(rev, url, "agreement", "rev")
        _open_tab(rev, "Annotators")
        ticks = rev.locator(".st-key-agr_competence .xtick text")
        ticks.first.wait_for(timeout=WAIT_MS)
        names = ticks.all_text_contents()  # SVG text has no innerText
        assert set(names[:2]) == {"careful1", "careful2"} and set(names[2:]) == {"clicker", "gamer"}, names
        screenshot(rev, "lab-quality-annotators")
        # Round health: the pause and its message to the lead; Resume reopens the clicker's queue
        _open_tab(rev, "Round health")
        rev.get_by_text("Waiting for adjudication").wait_for(timeout=WAIT_MS)  # the tab is drawn once it is open
        # the pause's message is drawn after the metrics, in the same run: wait for it, not only for the first
        rev.get_by_text("below the floor of 70%").wait_for(timeout=WAIT_MS)
        main = rev.inner_text('[data-testid="stMain"]')
        assert "clicker:" in main and "below the floor of 70%" in main
        rev.get_by_role("button", name="Resume").first.click()
        _wait_for(lambda: _open_pauses(db) == [], "the clicker resumed")
        wait_idle(rev)
        with Store(db) as s:
            assert pauses(s, open_only=True) == [] and pauses(s)[0]["resumed_by"] == "rev"
        pages["clicker"].reload()
        wait_for_app(pages["clicker"], WAIT_MS)
        assert _screen(pages["clicker"]) not in ("PAUSED", "DONE")
        browser.close()
