"""Outputs that are not regular files (issue 38, item 1).

Atomic replace is for regular files only. A character device, a FIFO and a link through
``/proc/self/fd/N`` (what ``/dev/stdout`` is) are written through as they are and stay what they were; a
symbolic link to a file updates the file and stays a link; a dangling link is refused in one line; ``-``
is standard output wherever a verb writes one file. Real nodes: a FIFO with a reader, a character device
made with ``os.mknod`` under the test's temporary folder (root only; skipped elsewhere).
"""
from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

import pytest

from berds_core.cli import main

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    d = tmp_path_factory.mktemp("special")
    assert main(["import", "demo", "--out", str(d / "d"), "--quiet"]) == 0
    return d / "d"


def _retrieve(demo, out) -> list[str]:
    return ["retrieve", "--questions", str(demo / "questions.jsonl"), "--corpus", str(demo / "corpus.jsonl"),
            "--k", "3", "--out", str(out), "--quiet"]


def _cli(argv, **kw) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "berds_core", *map(str, argv)], capture_output=True, env=env,
                          timeout=300, cwd=tempfile.mkdtemp(prefix="berds-cwd-"), **kw)


def _jsonl_ids(data: bytes) -> list[str]:
    return [json.loads(line)["id"] for line in data.decode("utf-8").splitlines() if line.strip()]


def test_a_character_device_stays_a_device(demo, tmp_path):
    dev = tmp_path / "devnull"
    try:
        os.mknod(dev, 0o666 | stat.S_IFCHR, os.makedev(1, 3))  # the null device, in a temporary folder
    except PermissionError:
        pytest.skip("making a device node needs root")
    assert main(_retrieve(demo, dev)) == 0
    st = os.lstat(dev)
    assert stat.S_ISCHR(st.st_mode) and os.major(st.st_rdev) == 1 and os.minor(st.st_rdev) == 3
    assert sorted(p.name for p in tmp_path.iterdir()) == ["devnull"]  # no temporary file left beside it


def test_a_fifo_is_written_through_to_its_reader(demo, tmp_path):
    fifo = tmp_path / "run.fifo"
    os.mkfifo(fifo)
    got = {}

    def read():
        with open(fifo, "rb") as fh:
            got["data"] = fh.read()

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    assert main(_retrieve(demo, fifo)) == 0
    reader.join(timeout=60)
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    ids = _jsonl_ids(got["data"])
    assert len(ids) == 14 and ids[0]


def test_a_link_to_proc_self_fd_1_reaches_stdout(demo, tmp_path):
    link = tmp_path / "stdout"
    link.symlink_to("/proc/self/fd/1")  # what /dev/stdout is
    res = _cli(_retrieve(demo, link))
    assert res.returncode == 0, res.stderr.decode()
    assert link.is_symlink() and os.readlink(link) == "/proc/self/fd/1"
    ids = _jsonl_ids(res.stdout.split(b"\nout\t")[0] if b"\nout\t" in res.stdout else res.stdout)
    assert len(ids) == 14


def test_a_link_to_dev_stdout_reaches_stdout(demo, tmp_path):
    """A chain of links through ``/dev/stdout`` (never ``/dev/stdout`` itself: a regressed writer run as root
    would replace the system's node; here it could only replace the temporary link)."""
    if not os.path.islink("/dev/stdout"):
        pytest.skip("no /dev/stdout link on this system")
    link = tmp_path / "out"
    link.symlink_to("/dev/stdout")
    res = _cli(_retrieve(demo, link))
    assert res.returncode == 0, res.stderr.decode()
    assert len(_jsonl_ids(res.stdout)) == 14
    assert b"questions\t14" in res.stderr  # the summary moved out of the way of the data
    assert link.is_symlink() and os.path.islink("/dev/stdout")


def test_a_dangling_link_is_refused_in_one_line(demo, tmp_path):
    link = tmp_path / "run.jsonl"
    link.symlink_to(tmp_path / "missing" / "run.jsonl")
    res = _cli(_retrieve(demo, link))
    err = res.stderr.decode()
    assert res.returncode == 2 and len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert "dangling" in err and "--out" in err
    assert link.is_symlink() and not (tmp_path / "missing").exists()


def test_a_link_to_a_file_updates_the_file_and_stays_a_link(demo, tmp_path):
    real = tmp_path / "data" / "run.jsonl"
    real.parent.mkdir()
    real.write_text('{"old": 1}\n')
    link = tmp_path / "latest.jsonl"
    link.symlink_to(real)
    assert main(_retrieve(demo, link)) == 0
    assert link.is_symlink() and os.readlink(link) == str(real)
    assert len(_jsonl_ids(real.read_bytes())) == 14
    assert sorted(p.name for p in real.parent.iterdir()) == ["run.jsonl"]


def test_dash_is_stdout_and_the_summary_goes_to_stderr(demo):
    res = _cli(_retrieve(demo, "-"))
    assert res.returncode == 0, res.stderr.decode()
    assert len(_jsonl_ids(res.stdout)) == 14
    assert b"questions\t14" in res.stderr


def test_dash_with_json_is_refused_in_one_line(demo):
    res = _cli(_retrieve(demo, "-") + ["--json"])
    err = res.stderr.decode()
    assert res.returncode == 2 and len(err.strip().splitlines()) == 1 and "--json" in err
    assert res.stdout == b""


def test_a_reader_that_leaves_early_is_no_traceback(demo):
    proc = subprocess.Popen([sys.executable, "-m", "berds_core", *_retrieve(demo, "-")], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env={**os.environ, "PYTHONPATH": str(ROOT)})
    proc.stdout.read(10)
    proc.stdout.close()
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=120) in (0, 141)
    assert "Traceback" not in err


def test_annotations_export_and_judge_eval_write_dash_to_stdout(demo, tmp_path):
    db = tmp_path / "ann.db"
    assert main(["annotations", "demo", "--db", str(db), "--annotators", "ann1", "--quiet"]) == 0
    res = _cli(["annotations", "export", "--db", db, "--format", "csv", "--what", "reference", "--out", "-"])
    assert res.returncode == 0, res.stderr.decode()
    assert res.stdout.startswith(b"question,id,document")
    assert b"rows\t" in res.stderr


@pytest.mark.slow
def test_judge_eval_tsv_to_dash(tmp_path):
    pairs = tmp_path / "pairs.tsv"
    pairs.write_text("question\tid\tdocument\tperspective\tlabel\nQ?\t1\tCars pollute.\tCars are bad.\t1\n")
    res = _cli(["judge-eval", "--pairs", pairs, "--out", "-", "--quiet"])
    assert res.returncode == 0, res.stderr.decode()
    assert res.stdout.startswith(b"question\tid\tdocument\tperspective\tlabel\tprobability\tprediction\n")
    assert b"Kappa" in res.stderr and b"wrote -" in res.stderr


def test_atomic_write_of_a_device_never_renames(tmp_path):
    from berds_core.files.jsonio import atomic_write

    fifo = tmp_path / "f"
    os.mkfifo(fifo)
    got = {}
    t = threading.Thread(target=lambda: got.setdefault("d", open(fifo, "rb").read()), daemon=True)
    t.start()
    with atomic_write(fifo) as fh:
        fh.write("hello\n")
    t.join(timeout=30)
    assert got["d"] == b"hello\n" and stat.S_ISFIFO(os.lstat(fifo).st_mode)
