"""Ray for the cluster tests, kept out of the pytest process (issue 63).

Ray's C++ core ends the whole process when one of its checks fails (a driver disconnected while a Ray Data
thread still fetches objects: "Check failed: s.ok() IOError: Broken pipe", exit 1). With the driver inside
pytest, that ended the test run at 40% with no summary line. So nothing of Ray runs in the pytest process:

- :func:`two_nodes`: the two-node cluster (a head and a second node, one CPU each,
  ``ray.cluster_utils.Cluster``) lives in a child process of its own (``python ray_harness.py cluster``); it
  prints the head's address and keeps the cluster until its standard input closes (at the fixture's end, or
  when the pytest process ends whatever way).
- a test marked ``ray_driver`` (its body calls ``ray.init``, ``ray_session`` or the CLI's ``main`` with
  ``--ray``) runs in a pytest child process of its own (:func:`run_in_child`, from ``conftest.py``'s
  ``pytest_pyfunc_call``), with a time limit: the same test, its assertions as written, its fixtures made there;
  the Ray fixtures it names (``RAY_FIXTURES``) get the parent's values (the cluster's address). The parent passes
  or fails with the child; a child that crashes or overruns fails its one test, with its output and the end of
  Ray's logs (the driver's core log, the workers' error files, the raylet's and the GCS's), and the suite goes
  on. Tests whose driver is already a ``berds`` subprocess need no mark.
"""
from __future__ import annotations

import contextlib
import json
import os
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CHILD = "BERDS_TEST_RAY_CHILD"  # set in a child: run the test here
CHILD_TIMEOUT = "BERDS_TEST_RAY_CHILD_TIMEOUT"  # the child's time limit for the test (its mark's, made shorter)
FIXTURE_ENV = "BERDS_TEST_RAY_FIXTURE_"  # + NAME: the parent's value of a Ray fixture, as JSON
RAY_FIXTURES = ("cluster", "cluster_to_damage")
CLUSTER_LINE = "RAY-CLUSTER "
KILL_GRACE = 60  # at most: between a child's stack dump, its time limit, the parent's SIGINT and its SIGKILL


def in_child() -> bool:
    return os.environ.get(CHILD) == "1"


def child_timeout(items) -> None:
    """(In a child.) The test's time limit is the one its parent gave, in place of its mark's."""
    import pytest

    if in_child() and os.environ.get(CHILD_TIMEOUT):
        for item in items:
            item.add_marker(pytest.mark.timeout(float(os.environ[CHILD_TIMEOUT])), append=False)


def from_parent(name: str):
    """In a child, the parent's value of the Ray fixture ``name`` (else None)."""
    raw = os.environ.get(FIXTURE_ENV + name.upper()) if in_child() else None
    return None if raw is None else json.loads(raw)


# ------------------------------------------------------------------ logs


def ray_logs(since: float, *, tail: int = 2500, most: int = 6) -> str:
    """The end of the Ray log files under ``RAY_TMPDIR`` written since ``since`` that say why a process died:
    drivers' core logs, workers' error output, the raylet's and the GCS's (newest last)."""
    root = os.environ.get("RAY_TMPDIR")
    if not root or not Path(root).is_dir():
        return ""
    found = set()
    for f in Path(root).glob("**/logs/*"):
        name = f.name
        if not (name.startswith("python-core-driver-") or (name.startswith("worker-") and name.endswith(".err"))
                or name in ("raylet.out", "raylet.err", "gcs_server.err")):
            continue
        with contextlib.suppress(OSError):
            f = f.resolve()
            st = f.stat()
            if st.st_size and st.st_mtime >= since:
                found.add((st.st_mtime, str(f)))
    out = []
    for _, path in sorted(found)[-most:]:
        with contextlib.suppress(OSError):
            out.append(f"\n--- {path}:\n{Path(path).read_text(errors='replace')[-tail:]}")
    return "".join(out)


def _stop(p: subprocess.Popen, first=signal.SIGINT, grace: float = KILL_GRACE) -> None:
    """Stop ``p`` and its process group: ``first``, then SIGKILL after ``grace`` seconds."""
    if p.poll() is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        os.killpg(p.pid, first)
    try:
        p.wait(grace)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(p.pid, signal.SIGKILL)
        p.wait()


# ------------------------------------------------------------------ the cluster


def _serve_cluster(client_port: int) -> None:
    """(In the cluster's child process.) Start the two nodes, print the address, keep them until stdin closes."""
    from ray.cluster_utils import Cluster

    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    signal.signal(signal.SIGINT, lambda *_: sys.exit(0))
    os.environ.setdefault("RAY_worker_niceness", "0")  # as `--ray local` runs them (runtime.WORKER_NICENESS)
    head = {"num_cpus": 1, "object_store_memory": 150 * 2**20, "include_dashboard": False}
    if client_port:
        head["ray_client_server_port"] = client_port
    c = Cluster(initialize_head=True, head_node_args=head)
    try:
        c.add_node(num_cpus=1, object_store_memory=150 * 2**20)
        c.wait_for_nodes()
        print(CLUSTER_LINE + json.dumps({"address": c.address}), flush=True)
        sys.stdin.read()  # until the test closes it, or its process ends
    finally:
        c.shutdown()


@contextlib.contextmanager
def two_nodes(client_port: int | None = None, *, timeout: float = 300):
    """A head (with a Ray Client server when ``client_port`` is given) and a second node, one CPU each, in a
    child process; yields the head's address, stops both at the end."""
    err = Path(os.environ.get("RAY_TMPDIR", "/tmp")) / f"cluster-{time.time_ns()}.err"
    t0 = time.time()
    with open(err, "w") as log:
        p = subprocess.Popen([sys.executable, __file__, "cluster", str(client_port or 0)], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, stderr=log, text=True, start_new_session=True)
    try:
        address = None
        deadline = time.time() + timeout
        while address is None and time.time() < deadline and p.poll() is None:
            ready, _, _ = select.select([p.stdout], [], [], 1.0)
            line = p.stdout.readline() if ready else ""
            if line.startswith(CLUSTER_LINE):
                address = json.loads(line[len(CLUSTER_LINE):])["address"]
        if address is None:
            why = f"exited {p.returncode}" if p.poll() is not None else f"gave no address in {timeout:.0f} s"
            raise RuntimeError(f"the two-node Ray cluster did not start ({why}):\n"
                               f"{err.read_text(errors='replace')[-3000:]}{ray_logs(t0)}")
        yield address
    finally:
        with contextlib.suppress(OSError):
            p.stdin.close()  # the child shuts the cluster down
        try:
            p.wait(120)
        except subprocess.TimeoutExpired:
            _stop(p, signal.SIGTERM)


# ------------------------------------------------------------------ a test in a child


def item_timeout(item, default: float = 900) -> float:
    """The test's pytest-timeout (its mark, else the configured one)."""
    mark = item.get_closest_marker("timeout")
    if mark is not None and (mark.args or mark.kwargs.get("timeout")):
        return float(mark.args[0] if mark.args else mark.kwargs["timeout"])
    value = item.config.getoption("timeout", None) or item.config.getini("timeout")
    return float(value) if value else default


def run_in_child(item) -> None:
    """Run the test ``item`` in a pytest child process (see the module's docstring); pass, skip or fail as
    it does. The child gets the test's time limit less three grace periods (a tenth of it, at most
    KILL_GRACE): its pytest-timeout fails the test there; a child stuck where no signal reaches has its stacks
    dumped (``faulthandler_timeout``) a grace period before that, and the parent stops it a grace period
    after."""
    import pytest

    whole = item_timeout(item)
    grace = min(KILL_GRACE, whole / 10)
    limit = whole - 3 * grace  # the child's own time limit; the parent stops it by whole - grace at the latest
    env = {**os.environ, CHILD: "1", CHILD_TIMEOUT: f"{limit:.0f}"}
    for name in RAY_FIXTURES:
        if name in item.funcargs:
            env[FIXTURE_ENV + name.upper()] = json.dumps(item.funcargs[name])
    base = tempfile.mkdtemp(prefix="berds-ray-child-")
    cmd = [sys.executable, "-m", "pytest", item.nodeid, "-q", "-s", "-rfEs", "-p", "no:cacheprovider",
           "--basetemp", str(Path(base) / "t"), "-o", f"faulthandler_timeout={limit - grace:.0f}"]
    t0 = time.time()
    p = subprocess.Popen(cmd, cwd=str(item.config.rootpath), env=env, stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, text=True, start_new_session=True)
    why = None
    try:
        out, _ = p.communicate(timeout=limit + grace)
    except subprocess.TimeoutExpired:
        _stop(p, grace=grace)
        out, _ = p.communicate()
        why = f"ran past {limit + grace:.0f} s and was stopped"
    finally:
        _stop(p, grace=grace)
        shutil.rmtree(base, ignore_errors=True)
    summary = out.strip().splitlines()[-1] if out.strip() else ""
    if why is None and p.returncode == 0 and " passed" in summary:
        return
    if why is None and p.returncode == 0 and " skipped" in summary:
        reason = [ln for ln in out.splitlines() if ln.startswith("SKIPPED")]
        pytest.skip(reason[-1] if reason else summary)
    why = why or f"exited {p.returncode}"
    pytest.fail(f"the test's Ray driver (a pytest child process) {why}:\n{out[-12000:]}{ray_logs(t0)}",
                pytrace=False)


if __name__ == "__main__" and sys.argv[1:2] == ["cluster"]:
    _serve_cluster(int(sys.argv[2]))
