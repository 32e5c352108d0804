"""The harness that keeps Ray drivers out of the pytest process (``ray_harness``, issue 63): a test marked
``ray_driver`` runs in a pytest child process; one that ends its process the way Ray's C++ core does (abort), one
that fails, one stuck where no signal reaches it: each fails alone, with what its child printed, and the run
goes on to its summary line. Run here as a pytest run of its own over a file of such tests."""
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow
TESTS = Path(__file__).parent

CASES = '''
import os, signal, time
import pytest

@pytest.mark.ray_driver
def test_passes_in_a_child():
    assert os.environ.get("BERDS_TEST_RAY_CHILD") == "1"

@pytest.mark.ray_driver
def test_ends_its_process():
    print("the driver says goodbye", flush=True)
    os.abort()  # what a failed check of Ray's C++ core does to its process

@pytest.mark.ray_driver
def test_fails_in_a_child():
    assert 1 == 2, "the child's own assertion message"

@pytest.mark.ray_driver
@pytest.mark.timeout(30)
def test_overruns_its_time():
    time.sleep(600)

@pytest.mark.ray_driver
@pytest.mark.timeout(30)
def test_stuck_where_no_signal_reaches():
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGALRM, signal.SIGINT})
    time.sleep(600)

@pytest.mark.ray_driver
def test_skips_in_a_child():
    pytest.skip("nothing to drive here")

def test_after_them():
    assert os.environ.get("BERDS_TEST_RAY_CHILD") is None
'''


def test_a_driver_that_ends_its_process_fails_only_its_test(tmp_path):
    for name in ("conftest.py", "ray_harness.py"):
        shutil.copy(TESTS / name, tmp_path / name)
    (tmp_path / "test_cases.py").write_text(CASES)
    env = {k: v for k, v in os.environ.items() if not k.startswith("BERDS_TEST_RAY")}
    p = subprocess.run([sys.executable, "-m", "pytest", "test_cases.py", "-p", "no:cacheprovider", "-rfEs",
                        "--rootdir", str(tmp_path), "-o", "timeout=300", "-o", "timeout_method=signal"],
                       cwd=tmp_path, capture_output=True, text=True, timeout=600, env=env)
    out = p.stdout
    assert p.returncode == 1, out[-3000:] + p.stderr[-3000:]
    summary = out.strip().splitlines()[-1]
    assert "4 failed, 2 passed, 1 skipped" in summary, out[-3000:]
    failed = {ln.split()[1].split("::")[1]: ln for ln in out.splitlines() if ln.startswith("FAILED ")}
    assert set(failed) == {"test_ends_its_process", "test_fails_in_a_child", "test_overruns_its_time",
                           "test_stuck_where_no_signal_reaches"}
    assert "the driver says goodbye" in out and "exited -6" in out  # SIGABRT: what it printed is shown
    assert "the child's own assertion message" in out
    assert "Timeout" in out  # the child's own time limit, with its stacks
    assert "ran past" in out and "was stopped" in out  # the stuck child: stopped by the parent
    assert "nothing to drive here" in out
