"""The lab gate in app.py without a browser (AppTest): lab mode shows the sign-in form and nothing else until
a user signs in; open mode is unchanged and says so on every page; guideline images become links."""
from pathlib import Path

import pytest

pytest.importorskip("streamlit")
from streamlit.testing.v1 import AppTest  # noqa: E402

from berds_core.lab.accounts import Accounts  # noqa: E402
from berds_core.lab.store import Store  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
PASSWORD = "a long enough password"


@pytest.fixture()
def entry(tmp_path):
    """app.py run from a folder without pages/ (see tests/test_app_pages.py: AppTest's MPA v1 detection)."""
    path = tmp_path / "entry" / "app_entry.py"
    path.parent.mkdir()
    path.write_text(f"import runpy, sys\nsys.path.insert(0, {str(ROOT)!r})\n"
                    f"runpy.run_path({str(ROOT / 'app.py')!r}, run_name='__main__')\n")
    return str(path)


def _sidebar_widgets(at) -> list[str]:
    return [w.key for kind in ("selectbox", "text_input", "radio", "file_uploader") for w in at.sidebar.get(kind)
            if getattr(w, "key", None)]


def test_lab_mode_shows_only_the_sign_in_form_until_signed_in(entry, tmp_path, monkeypatch):
    db = tmp_path / "lab.db"
    with Store(db) as s:
        Accounts(s).add("ann", "annotator", PASSWORD)
    monkeypatch.setenv("BERDS_ANNOTATIONS_DB", str(db))
    monkeypatch.setenv("BERDS_AUTH", "lab")
    monkeypatch.setenv("BERDS_CACHE", str(tmp_path / "cache"))
    from berds_core.runtime.background import JOBS

    submitted = []
    real_submit = JOBS.submit
    monkeypatch.setattr(JOBS, "submit", lambda key, *a, **k: submitted.append(key) or real_submit(key, *a, **k))
    at = AppTest.from_file(entry, default_timeout=120).run()
    assert not at.exception
    assert [s.value for s in at.subheader] == ["Sign in"] and not at.title  # no page ran
    assert not _sidebar_widgets(at) and "config" not in at.session_state  # no sidebar, no configuration
    assert submitted == []  # no warm-up for a visitor
    at.text_input(key="lab_login_name").input("ann")
    at.text_input(key="lab_login_password").input("wrong wrong wrong")
    at.button[0].click().run()
    assert not _sidebar_widgets(at) and "wrong name or password" in " ".join(e.value for e in at.error)
    at.text_input(key="lab_login_name").input("ann")
    at.text_input(key="lab_login_password").input(PASSWORD)
    at.button[0].click().run()
    assert not at.exception
    assert "sb_dataset" in _sidebar_widgets(at) and [t.value for t in at.title]  # the app, with its sidebar
    assert submitted  # signed in, Home starts its warm-up as in open mode
    assert any(b.label == "Sign out" for b in at.sidebar.button)
    at.sidebar.button(key="lab_sidebar_logout").click().run()
    assert [s.value for s in at.subheader] == ["Sign in"] and not _sidebar_widgets(at)
    assert "You are signed out." in [i.value for i in at.info]


def test_open_mode_is_unchanged_and_says_so(entry, monkeypatch, tmp_path):
    monkeypatch.delenv("BERDS_AUTH", raising=False)
    monkeypatch.setenv("BERDS_ANNOTATIONS_DB", str(tmp_path / "open.db"))
    at = AppTest.from_file(entry, default_timeout=120).run()
    assert not at.exception and "sb_dataset" in _sidebar_widgets(at)
    assert any("Open mode: no sign-in" in c.value for c in at.sidebar.caption)
    assert not at.get("text_input") or "lab_login_name" not in [t.key for t in at.text_input]


def test_guideline_images_become_links():
    from studio_ui.lab_ui import safe_markdown

    md = safe_markdown("See ![chart](https://tracker.example/p.png) and ![ref][r]\n\n[r]: https://x.example/i.png")
    assert "![" not in md and "&#33;[chart](https://tracker.example/p.png)" in md
