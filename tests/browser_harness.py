"""A reusable harness for real-browser tests of the Streamlit app.

``streamlit_server(script)`` starts ``streamlit run <script>`` on a free
localhost port in a subprocess with a fresh ``BERDS_CACHE``, waits until
``/_stcore/health`` answers, yields the URL and stops the server.
``chromium_page()`` launches the system Chromium (``/usr/bin/chromium``)
headless through Playwright and yields a page. Both are plain context
managers, so any test module can wrap them in its own fixtures::

    from browser_harness import browser_page, streamlit_app_url, wait_for_app  # tests/ is on sys.path

    @pytest.mark.browser
    def test_x(streamlit_app_url, browser_page):
        browser_page.goto(streamlit_app_url)
        wait_for_app(browser_page)

Tests are skipped (with the reason) only when ``/usr/bin/chromium`` or the
playwright package is missing.
"""
from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = os.environ.get("BERDS_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"]
ARTIFACTS = ROOT / "test-artifacts"


def free_port() -> int:
    """A TCP port on localhost that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _healthy(url: str) -> bool:
    try:
        with urllib.request.urlopen(url + "/_stcore/health", timeout=2) as r:
            return r.status == 200
    except (urllib.error.URLError, ConnectionError, OSError):
        return False


class ServerURL(str):
    """The server's base URL; ``.pid`` is the streamlit process (and its process group)."""

    pid: int


@contextlib.contextmanager
def streamlit_server(script: str | os.PathLike = "app.py", *, timeout: float = 90.0,
                     env: dict | None = None, cwd: str | os.PathLike = ROOT, file_watcher: str | None = "none",
                     port: int | None = None):
    """Run ``streamlit run script`` on a free port (or ``port``: a server started again where a browser
    still points); yield ``http://127.0.0.1:<port>``.

    The server gets its own empty BERDS_CACHE (unless ``env`` sets one), no
    hub access and no usage statistics. Its output goes to a log file that is
    printed into the failure message when the server does not come up.
    ``file_watcher=None`` leaves the watcher to the project's ``.streamlit/config.toml``.
    """
    port = port or free_port()
    url = f"http://127.0.0.1:{port}"
    tmp = Path(tempfile.mkdtemp(prefix="berds-browser-"))
    full_env = dict(os.environ)
    full_env.update({
        "BERDS_CACHE": str(tmp / "cache"),
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "TOKENIZERS_PARALLELISM": "false",
        "PYTHONUNBUFFERED": "1",
    })
    full_env.update(env or {})
    cmd = [sys.executable, "-m", "streamlit", "run", str(script),
           "--server.port", str(port), "--server.address", "127.0.0.1",
           "--server.headless", "true", "--browser.gatherUsageStats", "false"]
    if file_watcher is not None:
        cmd += ["--server.fileWatcherType", file_watcher]
    log_path = tmp / "streamlit.log"
    log = open(log_path, "wb")
    proc = subprocess.Popen(cmd, cwd=str(cwd), env=full_env, stdout=log, stderr=subprocess.STDOUT,
                            start_new_session=True)
    try:
        deadline = time.monotonic() + timeout
        while not _healthy(url):
            if proc.poll() is not None:
                raise RuntimeError(f"streamlit exited with {proc.returncode}:\n{log_path.read_text(errors='replace')[-4000:]}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"streamlit not healthy after {timeout:.0f}s:\n{log_path.read_text(errors='replace')[-4000:]}")
            time.sleep(0.25)
        served = ServerURL(url)
        served.pid = proc.pid
        yield served
    finally:
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=10)
        log.close()
        server_log = log_path.read_text(errors="replace") if log_path.exists() else ""
        shutil.rmtree(tmp, ignore_errors=True)
        if "Traceback" in server_log:  # surface server-side errors in the test output
            sys.stderr.write("---- streamlit server log ----\n" + server_log[-4000:] + "\n")


def skip_reason() -> str | None:
    """Why browser tests cannot run here, or None when they can."""
    if not os.path.exists(CHROMIUM):
        return f"{CHROMIUM} is missing (install it: apt-get install -y chromium)"
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "the playwright package is not installed (pip install -r requirements-dev.txt)"
    return None


@contextlib.contextmanager
def chromium_page(viewport=(1400, 1000)):
    """A Playwright page in the system Chromium, headless."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        try:
            context = browser.new_context(viewport={"width": viewport[0], "height": viewport[1]})
            page = context.new_page()
            yield page
            context.close()
        finally:
            browser.close()


def wait_for_app(page, timeout_ms: int = 120_000) -> None:
    """Wait until the Streamlit app has rendered and finished its current run."""
    page.wait_for_selector('[data-testid="stApp"]', timeout=timeout_ms)
    wait_idle(page, timeout_ms)


def wait_idle(page, timeout_ms: int = 120_000) -> None:
    """Wait until no script run is in progress (the status widget shows no 'Running')."""
    page.wait_for_timeout(300)
    page.wait_for_function(
        """() => {
            const s = document.querySelector('[data-testid="stStatusWidget"]');
            return !s || !/Running|Stop/.test(s.innerText);
        }""",
        timeout=timeout_ms,
    )


def screenshot(page, name: str, max_height: int = 4000) -> Path:
    """Save a screenshot of the whole app under test-artifacts/ and return its path.

    Streamlit scrolls inside its main container, so the viewport is grown to
    the content's height (up to ``max_height``) for the shot, then restored.
    """
    ARTIFACTS.mkdir(exist_ok=True)
    path = ARTIFACTS / f"{name}.png"
    size = page.viewport_size
    height = page.evaluate("""() => {
        const m = document.querySelector('[data-testid="stMain"]') || document.body;
        return m.scrollHeight;
    }""")
    if size and height > size["height"]:
        page.set_viewport_size({"width": size["width"], "height": min(int(height) + 40, max_height)})
        page.wait_for_timeout(300)
    try:
        page.screenshot(path=str(path), full_page=True)
    finally:
        if size:
            page.set_viewport_size(size)
    return path


# ---- pytest fixtures (import them into a test module to use them) ----

@pytest.fixture(scope="module")
def streamlit_app_url():
    """A live ``streamlit run app.py`` for the whole module."""
    reason = skip_reason()
    if reason:
        pytest.skip(reason)
    with streamlit_server(ROOT / "app.py") as url:
        yield url


@pytest.fixture()
def browser_page():
    """A fresh headless Chromium page per test."""
    reason = skip_reason()
    if reason:
        pytest.skip(reason)
    with chromium_page() as page:
        yield page


def playground_type_my_own(page) -> None:
    """From any page of the running app: open the Playground and switch to "Type my own"."""
    page.get_by_role("link", name="Playground").first.click()
    page.wait_for_selector(".bc-card", timeout=180_000)
    wait_idle(page)
    page.get_by_text("Type my own", exact=True).click()
    wait_idle(page)


def type_question(page, question: str) -> None:
    """Type a question into the Playground's "Your question" box and submit it."""
    box = page.get_by_label("Your question")
    box.fill(question)
    box.press("Enter")
