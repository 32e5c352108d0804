"""Nothing but pages in ``pages/`` (issue 38, item 10).

Streamlit serves every ``.py`` file under ``pages/`` at its own URL. Before ``app.py`` first runs on a
restarted server, those URLs ran the file alone, ungated, with a sidebar listing every module: the helper
modules (``common``, ``lab_ui``, ``web_live``, ``local_server``, ``annotate_admin``, ``annotator_widget``) now
live in ``studio_ui/``, and ``pages/`` holds exactly the pages of ``app.py``'s ``TOOLS``. A real server is
asked for the old helper URLs before any page has run.
"""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
HELPERS = ("common", "lab_ui", "web_live", "local_server", "annotate_admin", "annotator_widget")
# where each helper lives now (issue 39 split ``common`` by concern)
HOMES = {"common": ("shell", "text", "config", "engines", "warmup", "sidebar")}


def _tools() -> set[str]:
    tree = ast.parse((ROOT / "app.py").read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "TOOLS" for t in node.targets):
            return {elt.elts[0].value for elt in node.value.elts}
    raise AssertionError("app.py has no TOOLS")


def test_pages_folder_holds_only_the_pages_of_tools():
    files = {f"pages/{p.name}" for p in (ROOT / "pages").rglob("*.py")}
    assert files == _tools()
    for name in HELPERS:
        assert not (ROOT / "pages" / f"{name}.py").exists()
        assert all((ROOT / "studio_ui" / f"{home}.py").is_file() for home in HOMES.get(name, (name,)))
    assert not (ROOT / "pages" / "assets").exists()


def test_no_page_imports_helpers_from_pages():
    for path in list((ROOT / "pages").glob("*.py")) + list((ROOT / "studio_ui").glob("*.py")) + [ROOT / "app.py"]:
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "pages":
                raise AssertionError(f"{path.name} imports from pages: {node.module}")


@pytest.mark.browser
@pytest.mark.slow
def test_a_fresh_lab_server_serves_no_helper_module(tmp_path):
    """Straight after the server starts (no page has run), the helper modules' old URLs are not pages."""
    import urllib.request

    from browser_harness import skip_reason, streamlit_server
    from berds_core.lab.accounts import Accounts
    from berds_core.lab.store import Store

    reason = skip_reason()
    if reason:
        pytest.skip(reason)
    db = tmp_path / "lab.db"
    with Store(db) as s:
        Accounts(s).add("admin1", "admin", "lab password 2026 for tests")
    with streamlit_server(ROOT / "serve.py", timeout=180,
                          env={"BERDS_ANNOTATIONS_DB": str(db), "BERDS_AUTH": "lab"}) as url:
        with urllib.request.urlopen(f"{url}/_stcore/health", timeout=30) as r:
            assert r.status == 200
        # Streamlit's page list, as the browser gets it before any script ran: the app's pages only
        from playwright.sync_api import sync_playwright

        from browser_harness import CHROMIUM, CHROMIUM_ARGS, wait_for_app

        with sync_playwright() as pw:
            b = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
            page = b.new_page()
            for name in HELPERS:
                page.goto(f"{url}/{name}")
                wait_for_app(page)
                page.get_by_role("button", name="Sign in").wait_for(timeout=60_000)
                text = page.inner_text('[data-testid="stApp"]')
                assert "Traceback" not in text and "Annotation database" not in text
                assert page.locator('[data-testid="stSidebarNav"]').count() == 0
            b.close()
