"""Real browser: the Annotate page's admin imports a pairs TSV by file upload (what AppTest cannot drive).
A bad file gets one error line naming the uploaded file, line and field, and imports nothing; the good
file's pairs and reference labels reach the database, shown as text."""
import pytest

from berds_core.lab.store import Store
from browser_harness import ROOT, chromium_page, screenshot, skip_reason, streamlit_server, wait_for_app, wait_idle

pytestmark = [pytest.mark.browser, pytest.mark.slow]

HEADER = "question\tid\tdocument\tperspective\tlabel\n"
GOOD = HEADER + "".join(f"Should we {w}?\tu{i}\tA passage about {w} <b>bold</b>\t{w} is good\t{i % 2}\n"
                        for i, w in enumerate(["tax", "vote", "build"]))
BAD = HEADER + "Should we tax?\tu0\tA passage\ttax is good\t1\nShould we vote?\tu1\tA passage\tvoting\tmaybe\n"


def _upload(page, path) -> None:
    page.locator('input[type="file"][accept*=".tsv"]').set_input_files(str(path))  # the Pairs TSV uploader
    wait_idle(page)


def test_admin_imports_pairs_by_upload_and_a_bad_file_is_one_error_line(tmp_path):
    reason = skip_reason()
    if reason:
        pytest.skip(reason)
    db = tmp_path / "upload.db"
    bad, good = tmp_path / "my pairs (bad).tsv", tmp_path / "pairs_good.tsv"
    bad.write_text(BAD)
    good.write_text(GOOD)
    with streamlit_server(ROOT / "pages" / "annotate.py", env={"BERDS_ANNOTATIONS_DB": str(db)}) as url, \
            chromium_page() as page:
        page.goto(f"{url}/?annotator=ada")
        wait_for_app(page)
        page.get_by_text("Admin: import pairs, build task sets, guidelines, exports").click()
        page.get_by_role("tab", name="Import pairs").wait_for(timeout=30_000)
        _upload(page, bad)
        alert = page.locator('[data-testid="stAlert"]', has_text="my pairs (bad).tsv")
        alert.wait_for(timeout=30_000)
        lines = [ln for ln in alert.inner_text().splitlines() if ln.strip() and ln.strip() != "error"]  # the icon
        assert lines == ["uploaded my pairs (bad).tsv:3: field 'label': expected 0, 1 or an empty cell"]
        assert page.get_by_role("button", name="Import").count() == 0
        _upload(page, good)  # the good file replaces it
        alert.wait_for(state="detached", timeout=30_000)
        page.get_by_text("3 pairs, 3 of them with a label.").wait_for(timeout=30_000)
        page.get_by_text("reference labels (gold known in advance; used to calibrate annotators)").click()
        wait_idle(page)
        page.get_by_role("button", name="Import").click()
        page.get_by_text("Imported 3 pairs (3 new)").wait_for(timeout=30_000)
        # the stale warning goes in the same script run, after the message (the page may show the message first)
        page.get_by_text("No pairs are assigned to you yet").wait_for(state="detached", timeout=30_000)
        assert page.locator("b", has_text="bold").count() == 0  # nothing from the file renders as HTML
        screenshot(page, "annotate-upload")
    with Store(db) as s:
        got = {p.pair_id: p for p in s.pairs()}
        assert set(got) == {"u0", "u1", "u2"}
        assert got["u0"].document == "A passage about tax <b>bold</b>" and got["u1"].source == "uploaded pairs_good.tsv"
        assert s.reference_labels() == {"u0": 0, "u1": 1, "u2": 0}
