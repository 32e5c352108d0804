"""Real browser: `streamlit run pages/annotate.py`; label by keyboard; SIGKILL under eight sessions loses nothing."""
import os
import signal
import time

import pytest

from berds_core.lab.store import Pair, Store
from browser_harness import ROOT, chromium_page, screenshot, skip_reason, streamlit_server, wait_for_app

pytestmark = [pytest.mark.browser, pytest.mark.slow]

WIDGET = '[data-testid="berds-annotator"]'


def _wait_for_question(page, text: str, timeout: float = 60.0) -> None:
    page.locator(".berds-ann-question", has_text=text).wait_for(timeout=timeout * 1000)


def _wait_saved(page, timeout: float = 60.0) -> None:
    page.wait_for_function(f"() => document.querySelector('{WIDGET}').dataset.pending === '0'",
                           timeout=timeout * 1000)


def _wait_for_labels(db, annotator: str, count: int, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with Store(db) as s:
            if len(s.labels(annotator)) == count:
                return
        time.sleep(0.1)
    raise AssertionError(f"expected {count} labels of {annotator}")


def test_label_by_keyboard_next_pair_at_once_saved_in_background(tmp_path):
    reason = skip_reason()
    if reason:
        pytest.skip(reason)
    db = tmp_path / "browser.db"
    with Store(db) as s:
        s.add_pairs([Pair(f"b{i}", f"Question {i}?", f"Passage {i} <script>alert(1)</script> **text**",
                          f"Perspective {i}", title=f"Title <b>{i}</b>") for i in range(9)])
        s.tasks.create("browser", {"kim": [f"b{i}" for i in range(9)]})
        s.set_judge_preds("judgeB", {f"b{i}": (0.9, 1) for i in range(9)})
    keys = ["y", "n", "y", "s", "n"]  # expected: b0=1, b1=0, b2=1, b3=skip, b4=0
    with streamlit_server(ROOT / "pages" / "annotate.py", env={"BERDS_ANNOTATIONS_DB": str(db)}) as url, \
            chromium_page() as page:
        page.goto(f"{url}/?annotator=kim")
        wait_for_app(page)
        _wait_for_question(page, "Question 0?")
        main = page.inner_text('[data-testid="stMain"]')
        assert page.locator("script", has_text="alert(1)").count() == 0  # the passage is text, not HTML
        assert "<script>alert(1)</script> **text**" in main and "Title <b>0</b>" in main
        assert "b0" not in main and "judgeB" not in main  # no pair ids, no judge names
        page.evaluate("document.activeElement && document.activeElement.blur()")
        for i, key in enumerate(keys):  # typed without waiting for the server: the next pair is already there
            page.keyboard.press(key)
            _wait_for_question(page, f"Question {i + 1}?", timeout=5)
        _wait_saved(page)
        _wait_for_labels(db, "kim", 5)
        # undo with the keyboard: b4 comes back at once, and is undone on the server
        page.keyboard.press("u")
        _wait_for_question(page, "Question 4?", timeout=5)
        _wait_saved(page)
        _wait_for_labels(db, "kim", 4)
        page.keyboard.press("n")
        _wait_for_question(page, "Question 5?", timeout=5)
        _wait_saved(page)
        assert "5 of 9 done" in page.inner_text(WIDGET)
        latencies = page.evaluate("window.__berdsAnnotator.latencies")
        assert len(latencies) == 6  # recorded by the widget (keypress to painted next pair), not asserted on
        screenshot(page, "annotate-keyboard")
    with Store(db) as s:
        got = {l.pair_id: l.value for l in s.labels("kim")}
        assert got == {"b0": 1, "b1": 0, "b2": 1, "b3": "skip", "b4": 0}
        assert all(l.time_ms is not None and l.judge_visible is False for l in s.labels("kim"))
        kinds = [e["kind"] for e in s.history("kim")]
        assert kinds == ["label", "label", "label", "skip", "label", "undo", "label"]


def test_sigkill_after_acknowledged_labels_under_eight_browser_sessions(tmp_path):
    """Eight annotators label at once; the server is SIGKILLed right after a label is acknowledged in a
    browser; every label any browser saw acknowledged is in the database."""
    reason = skip_reason()
    if reason:
        pytest.skip(reason)
    from playwright.sync_api import sync_playwright

    from browser_harness import CHROMIUM, CHROMIUM_ARGS

    db = tmp_path / "kill.db"
    names = [f"ann{i}" for i in range(8)]
    with Store(db) as s:
        s.add_pairs([Pair(f"{n}-{j}", f"Question {n} {j}?", f"Passage {j}", f"Perspective {j}")
                     for n in names for j in range(6)])
        for n in names:
            s.tasks.create(f"set-{n}", {n: [f"{n}-{j}" for j in range(6)]})
    with streamlit_server(ROOT / "pages" / "annotate.py", env={"BERDS_ANNOTATIONS_DB": str(db)}) as url, \
            sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        pages = []
        for n in names:
            ctx = browser.new_context(viewport={"width": 1000, "height": 800})
            page = ctx.new_page()
            page.goto(f"{url}/?annotator={n}")
            pages.append(page)
        for n, page in zip(names, pages):
            wait_for_app(page)
            _wait_for_question(page, f"Question {n} 0?")
            page.evaluate("document.activeElement && document.activeElement.blur()")
        for j in range(3):  # three rounds: every session presses a key, no waiting in between
            for i, page in enumerate(pages):
                page.keyboard.press("yn"[(i + j) % 2])
        for page in pages:
            _wait_saved(page)
        for page in pages:  # one more label each; kill the server as soon as the first is acknowledged
            page.keyboard.press("y")
        pages[0].wait_for_function(f"() => document.querySelector('{WIDGET}').dataset.acked === '4'",
                                   timeout=60_000)
        os.killpg(url.pid, signal.SIGKILL)  # no graceful shutdown, no flush
        acked = {n: int(p.evaluate(f"() => document.querySelector('{WIDGET}').dataset.acked"))
                 for n, p in zip(names, pages)}
        browser.close()
    assert acked["ann0"] == 4 and all(v >= 3 for v in acked.values())
    with Store(db) as s:
        assert s._conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        for i, n in enumerate(names):
            got = {l.pair_id: l.value for l in s.labels(n)}
            assert len(got) >= acked[n], f"{n}: {acked[n]} acknowledged, {len(got)} stored"
            for j in range(3):
                assert got[f"{n}-{j}"] == ("yn"[(i + j) % 2] == "y") * 1
            assert set(got) <= {f"{n}-{j}" for j in range(6)}  # only their own queue


def test_keypresses_while_the_server_is_down_are_reported_not_dropped(tmp_path):
    """Issue 38, item 10: the server goes away; two keys pressed meanwhile show the next pairs at once, the
    widget says the server does not answer; the server comes back (a new process on the same port): the
    widget says the two decisions could not be confirmed, and their pairs are in the queue again."""
    reason = skip_reason()
    if reason:
        pytest.skip(reason)
    from browser_harness import free_port

    db = tmp_path / "down.db"
    with Store(db) as s:
        s.add_pairs([Pair(f"d{i}", f"Question {i}?", f"Passage {i}", f"Perspective {i}") for i in range(6)])
        s.tasks.create("down", {"kim": [f"d{i}" for i in range(6)]})
    port = free_port()
    env = {"BERDS_ANNOTATIONS_DB": str(db)}
    with chromium_page() as page:
        with streamlit_server(ROOT / "pages" / "annotate.py", env=env, port=port) as url:
            page.goto(f"{url}/?annotator=kim")
            wait_for_app(page)
            _wait_for_question(page, "Question 0?")
            page.evaluate("document.activeElement && document.activeElement.blur()")
            page.keyboard.press("y")
            _wait_for_question(page, "Question 1?", timeout=5)
            _wait_saved(page)
            _wait_for_labels(db, "kim", 1)
            os.killpg(url.pid, signal.SIGKILL)  # the server is gone
        page.keyboard.press("n")
        _wait_for_question(page, "Question 2?", timeout=5)
        page.keyboard.press("y")
        _wait_for_question(page, "Question 3?", timeout=5)
        page.wait_for_function(f"() => document.querySelector('{WIDGET}').dataset.silent === '1'", timeout=30_000)
        assert "Not saved yet: the server does not answer (2 waiting" in page.inner_text(WIDGET)
        with streamlit_server(ROOT / "pages" / "annotate.py", env=env, port=port):  # back, as a new process
            page.wait_for_function(f"() => document.querySelector('{WIDGET}').dataset.lost === '2'",
                                   timeout=120_000)
            text = page.inner_text(WIDGET)
            assert "2 decisions made while the server was unreachable could not be confirmed" in text
            _wait_for_question(page, "Question 1?", timeout=30)  # not saved: shown again
            screenshot(page, "annotate-server-came-back")
            page.keyboard.press("n")  # deciding again works, and the notice goes
            _wait_for_question(page, "Question 2?", timeout=5)
            _wait_saved(page)
            _wait_for_labels(db, "kim", 2)
            assert "could not be confirmed" not in page.inner_text(WIDGET)
    with Store(db) as s:
        assert {l.pair_id: l.value for l in s.labels("kim")} == {"d0": 1, "d1": 0}
