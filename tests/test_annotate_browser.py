"""Real browser: `streamlit run pages/annotate.py`, label five pairs with the keyboard, check the database."""
import os
import signal
import time

import pytest

from berds_core.store import Pair, Store
from browser_harness import ROOT, chromium_page, screenshot, skip_reason, streamlit_server, wait_for_app, wait_idle

pytestmark = pytest.mark.browser


def _wait_for_pair(page, n: int, timeout: float = 60.0) -> None:
    """Pair n is on screen and its buttons (whose shortcuts listen for keys) are rendered."""
    page.get_by_text(f"Question {n}?", exact=True).wait_for(timeout=timeout * 1000)
    page.locator(".st-key-btn_yes button").wait_for(timeout=timeout * 1000)
    wait_idle(page)


def _wait_for_labels(db, annotator: str, count: int, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with Store(db) as s:
            if len(s.labels(annotator)) == count:
                return
        time.sleep(0.1)
    raise AssertionError(f"expected {count} labels of {annotator}")


def test_label_five_pairs_with_the_keyboard(tmp_path):
    reason = skip_reason()
    if reason:
        pytest.skip(reason)
    db = tmp_path / "browser.db"
    with Store(db) as s:
        s.add_pairs([Pair(f"b{i}", f"Question {i}?", f"Passage {i} <script>alert(1)</script> text",
                          f"Perspective {i}") for i in range(7)])
        s.create_task_set("browser", {"kim": [f"b{i}" for i in range(7)]})
        s.set_judge_preds("judgeB", {f"b{i}": (0.9, 1) for i in range(7)})
    keys = ["y", "n", "y", "s", "n"]  # expected: b0=1, b1=0, b2=1, b3=skip, b4=0
    with streamlit_server(ROOT / "pages" / "annotate.py", env={"BERDS_ANNOTATIONS_DB": str(db)}) as url, \
            chromium_page() as page:
        page.goto(f"{url}/?annotator=kim")
        wait_for_app(page)
        _wait_for_pair(page, 0)
        assert page.locator("script", has_text="alert(1)").count() == 0  # the passage is text, not HTML
        assert "<script>alert(1)</script>" in page.inner_text('[data-testid="stMain"]')
        for i, key in enumerate(keys):
            page.evaluate("document.activeElement && document.activeElement.blur()")  # keys go to the page
            page.keyboard.press(key)
            _wait_for_labels(db, "kim", i + 1)
            _wait_for_pair(page, i + 1)
            wait_idle(page)
        # undo with the keyboard: b4 comes back
        page.keyboard.press("u")
        _wait_for_labels(db, "kim", 4)
        _wait_for_pair(page, 4)
        wait_idle(page)
        page.keyboard.press("n")
        _wait_for_labels(db, "kim", 5)
        _wait_for_pair(page, 5)
        wait_idle(page)
        assert "5 of 7 done" in page.inner_text('[data-testid="stMain"]')
        screenshot(page, "annotate-keyboard")
    with Store(db) as s:
        got = {l.pair_id: l.value for l in s.labels("kim")}
        assert got == {"b0": 1, "b1": 0, "b2": 1, "b3": "skip", "b4": 0}
        kinds = [e["kind"] for e in s.history("kim")]
        assert kinds == ["label", "label", "label", "skip", "label", "undo", "label"]


def test_label_acknowledged_in_the_ui_survives_sigkill_of_the_server(tmp_path):
    """The page shows the next pair only after the label is committed; SIGKILL right then loses nothing."""
    reason = skip_reason()
    if reason:
        pytest.skip(reason)
    db = tmp_path / "kill.db"
    with Store(db) as s:
        s.add_pairs([Pair(f"k{i}", f"Question {i}?", f"Passage {i}", f"Perspective {i}") for i in range(3)])
        s.create_task_set("kill", {"ana": [f"k{i}" for i in range(3)]})
    with streamlit_server(ROOT / "pages" / "annotate.py", env={"BERDS_ANNOTATIONS_DB": str(db)}) as url, \
            chromium_page() as page:
        page.goto(f"{url}/?annotator=ana")
        wait_for_app(page)
        _wait_for_pair(page, 0)
        page.evaluate("document.activeElement && document.activeElement.blur()")
        page.keyboard.press("n")
        page.get_by_text("Question 1?", exact=True).wait_for(timeout=60_000)  # the UI's acknowledgement
        os.killpg(url.pid, signal.SIGKILL)  # no graceful shutdown, no flush
    with Store(db) as s:
        assert {lab.pair_id: lab.value for lab in s.labels("ana")} == {"k0": 0}
        assert [e["kind"] for e in s.history("ana")] == ["label"]
