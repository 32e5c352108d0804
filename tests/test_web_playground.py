"""The Playground's "Web (live)" corpus through Streamlit's AppTest, against search and web servers on
127.0.0.1 (the browser test with a screenshot is tests/test_web_playground_browser.py)."""
from __future__ import annotations

import html
import json
import os
from pathlib import Path

import pytest

pytest.importorskip("streamlit")
from streamlit.testing.v1 import AppTest  # noqa: E402

from web_servers import KEYS, search_server, site_results, site_server  # noqa: E402

pytestmark = pytest.mark.slow  # each test loads the app, its judge and embedder

ROOT = Path(__file__).resolve().parents[1]
QUESTION = "Should cities ban cars from their centres?"


@pytest.fixture(scope="module")
def servers():
    with site_server(slow_seconds=2.0) as site:
        with search_server({"*": site_results(site.url)}) as search:
            yield site, search


@pytest.fixture()
def entry(tmp_path) -> str:
    path = tmp_path / "app_entry.py"  # outside the repo: app.py's navigation runs on every rerun (see test_app_pages)
    path.write_text(f"import runpy, sys\nsys.path.insert(0, {str(ROOT)!r})\n"
                    f"runpy.run_path({str(ROOT / 'app.py')!r}, run_name='__main__')\n")
    return str(path)


@pytest.fixture()
def web_env(tmp_path, monkeypatch, servers):
    site, search = servers
    monkeypatch.setenv("BERDS_SEARCH", f"serper, searxng:{search.url}")
    monkeypatch.setenv("SERPER_API_KEY", KEYS["serper"])
    monkeypatch.setenv("BERDS_SERPER_URL", search.url + "/serper/search")
    monkeypatch.setenv("BERDS_WEB_SNAPSHOTS", str(tmp_path / "snaps"))
    monkeypatch.setenv("BERDS_WEB_ALLOW_PRIVATE", "1")
    return tmp_path, site, search


def _typed_web(entry: str, question: str = QUESTION, secrets: dict | None = None) -> AppTest:
    at = AppTest.from_file(entry, default_timeout=240)
    for k, v in (secrets or {}).items():
        at.secrets[k] = v
    at.run()
    at.switch_page(str(ROOT / "pages/playground.py"))
    at.run()
    at.radio(key="pg_mode").set_value("Type my own").run()
    at.radio(key="pg_corpus_src").set_value("Web (live)").run()
    at.text_input(key="pg_text").set_value(question).run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def _md(at) -> str:
    return "\n".join(m.value for m in at.markdown)


def test_typed_question_gets_a_live_web_corpus(entry, web_env):
    tmp, site, search = web_env
    at = _typed_web(entry)
    assert not at.error, [e.value for e in at.error]
    md = _md(at)
    assert md.count('data-testid="passage-card"') == 4 * 5
    # the app waits up to 8 s for a page, so /slow (2 s) arrives; the other 7 bad pages fail or are skipped
    assert "Web corpus (fetched now): 9 of 16 pages gave text" in md
    # the page text with markup in it is shown as text, never interpreted
    assert "<script>alert" not in md and "**not bold**" not in md
    snaps = list((tmp / "snaps").glob("*/typed-*/manifest.json"))
    assert len(snaps) == 1
    manifest = json.loads(snaps[0].read_text())
    assert manifest["question"] == QUESTION and manifest["backend"].startswith("serper@")
    assert manifest["counts"]["fetched"] == 9 and len(manifest["failed"]) + len(manifest["skipped"]) == 7
    log = [r for r in at.dataframe]
    assert log  # the fetch log is shown as a table
    for f in (tmp / "snaps").rglob("*"):
        if f.is_file():
            assert not any(k.encode() in f.read_bytes() for k in KEYS.values()), f
    assert not any(k in md for k in KEYS.values())

    # a rerun (another k) reopens the snapshot: nothing is fetched again
    before = dict(site.counts)
    at.slider(key="pg_k").set_value(3).run()
    assert not at.exception and dict(site.counts) == before
    assert "Web corpus (saved snapshot)" in _md(at) and _md(at).count('data-testid="passage-card"') == 4 * 3


def test_no_backend_configured_replays_the_recording(entry, monkeypatch, tmp_path):
    """No backend: not a dead end. The built-in recording is replayed, labelled as a recording with its dates;
    a question it does not hold is one line that lists the questions it holds."""
    monkeypatch.delenv("BERDS_SEARCH", raising=False)
    monkeypatch.setenv("BERDS_WEB_SNAPSHOTS", str(tmp_path / "snaps"))
    at = _typed_web(entry)  # the Playground's placeholder question, which the recording holds
    assert not at.error, [e.value for e in at.error]
    assert any("No web search backend is configured" in i.value and "It is not the live web" in i.value
               for i in at.info)
    md = html.unescape(_md(at))
    assert "a recording, not the live web: the search of 2026-11-20 and its pages as fetched on 2026-11-20" in md
    assert md.count('data-testid="passage-card"') == 4 * 5
    manifest = json.loads(next((tmp_path / "snaps").glob("recordings/typed-*/manifest.json")).read_text())
    assert manifest["backend"] == "replay:demo" and manifest["recording"]["fetched_from"] == "2026-11-20"
    assert not list((tmp_path / "snaps").glob("20*"))  # never filed as a live snapshot of today

    at.text_input(key="pg_text").set_value("Is coffee good for you?").run()
    errs = [e.value for e in at.error]
    assert errs and "Not in the recording" in errs[0] and "Should voting be compulsory" in errs[0]
    assert 'data-testid="passage-card"' not in _md(at)
    # "Ask this question" puts a recorded question in the box
    at.selectbox(key="pg_web_recorded").set_value("Should voting be compulsory?").run()
    at.button(key="pg_web_ask").click().run()
    assert at.text_input(key="pg_text").value == "Should voting be compulsory?"
    assert not at.error and 'data-testid="passage-card"' in _md(at)


def test_key_from_secrets_private_addresses_refused_and_typed_folder_checked(entry, web_env, monkeypatch):
    tmp, site, search = web_env
    monkeypatch.delenv("BERDS_WEB_ALLOW_PRIVATE")
    monkeypatch.delenv("SERPER_API_KEY")
    monkeypatch.delenv("BERDS_SEARCH")
    at = _typed_web(entry, "Do car bans hurt shops?",
                    secrets={"SERPER_API_KEY": KEYS["serper"], "BERDS_SEARCH": "serper"})
    assert not at.error, [e.value for e in at.error]  # the key from the secrets was accepted (no HTTP 401)
    assert any("No page gave any text" in w.value for w in at.warning)  # 127.0.0.1 pages refused by default
    log = json.loads(next((tmp / "snaps").glob("*/typed-*/fetch-log.jsonl")).read_text().splitlines()[0])
    assert "private or local address" in log["reason"]
    assert 'data-testid="passage-card"' not in _md(at)
    at.text_input(key="pg_web_dir").set_value("/etc/berds-snapshots").run()
    assert not at.exception
    errs = [e.value for e in at.error]
    assert errs and "outside the folders this app may open" in errs[0]
    assert not os.path.exists("/etc/berds-snapshots")
