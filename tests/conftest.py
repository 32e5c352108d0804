"""Shared test set-up: an isolated cache and no hub access, for every test."""
import os

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


@pytest.fixture(autouse=True, scope="session")
def _isolated_cache(tmp_path_factory):
    """Every test session gets its own BERDS_CACHE so tests never see a user's cache."""
    path = tmp_path_factory.mktemp("berds-cache")
    old = os.environ.get("BERDS_CACHE")
    os.environ["BERDS_CACHE"] = str(path)
    yield path
    if old is None:
        os.environ.pop("BERDS_CACHE", None)
    else:
        os.environ["BERDS_CACHE"] = old


@pytest.fixture()
def annotation_db_path(tmp_path, monkeypatch):
    """Where the lab pages find their database in this test (``BERDS_ANNOTATIONS_DB``, open mode, no extra
    data roots); the file is not created."""
    path = tmp_path / "ann.db"
    monkeypatch.setenv("BERDS_ANNOTATIONS_DB", str(path))
    monkeypatch.delenv("BERDS_AUTH", raising=False)
    monkeypatch.delenv("BERDS_DATA_ROOTS", raising=False)
    return path


@pytest.fixture(autouse=True, scope="module")
def _no_background_jobs_across_modules():
    """App tests start the warm-up worker (it loads models); stop what it still runs when their
    module ends, so a warm-up from one module never runs under the tests of the next."""
    yield
    import sys

    background = sys.modules.get("berds_core.runtime.background")
    if background is not None:
        background.JOBS.cancel(timeout=120)


@pytest.hookimpl(tryfirst=True)
def pytest_pyfunc_call(pyfuncitem):
    """A test marked ``ray_driver`` runs in a pytest child process (``ray_harness.run_in_child``): no Ray driver
    lives in this process, whose crash would end the whole run (issue 63)."""
    if pyfuncitem.get_closest_marker("ray_driver") is None:
        return None
    import ray_harness

    if ray_harness.in_child():
        return None
    ray_harness.run_in_child(pyfuncitem)
    return True


def pytest_collection_modifyitems(config, items):
    """Real-browser tests (headless Chromium against a live Streamlit server) re-run up to twice on failure
    (pytest-rerunfailures): on a loaded machine a Playwright wait can time out. A failure that repeats three
    times still fails. Nothing else re-runs: the two flakes page and cluster tests were re-run for are fixed at
    their cause (issue 39): CPython's AST conversion under threads (``studio_ui.guards.serialize_ast_conversion``)
    and Ray Data failing a job on a pool actor that died before it ran (``distributed.runtime.INIT_DEATHS``).
    In a Ray driver's child process (``ray_harness``) the test's time limit is the one its parent gave."""
    import ray_harness

    ray_harness.child_timeout(items)
    if not config.pluginmanager.hasplugin("rerunfailures"):
        return
    for item in items:
        name = getattr(item.module, "__name__", "")
        if item.get_closest_marker("browser") or name.endswith("_browser"):
            item.add_marker(pytest.mark.flaky(reruns=2, reruns_delay=2))


_RERUN_FAILURES = []


def pytest_runtest_logreport(report):
    """Keep why a re-run test failed its earlier tries (pytest-rerunfailures reports them as "rerun")."""
    if report.outcome == "rerun":
        _RERUN_FAILURES.append((report.nodeid, report.when, str(report.longrepr)))


def pytest_terminal_summary(terminalreporter):
    """A test that passed on a re-run is named in the short summary (``-rR``); this section says why each
    earlier try failed (the end of its error), so a flaky test in a CI log can be fixed at its cause."""
    if not _RERUN_FAILURES:
        return
    terminalreporter.section("why re-run tests failed their earlier tries")
    for nodeid, when, text in _RERUN_FAILURES:
        lines = text.strip().splitlines()
        errors = [ln for ln in lines if ln.startswith("E ")]
        terminalreporter.write_line(f"{nodeid} ({when}):")
        for ln in (errors[-12:] or lines[-12:]):
            terminalreporter.write_line(f"    {ln[:300]}")
