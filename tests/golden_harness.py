"""Golden outputs of the ``berds`` verbs: run a script of commands, reduce what they print and write to
plain JSON, and compare it with what was recorded (``tests/golden/``).

A recording is the contract of a refactoring: the verbs must print and write the same rankings,
scores, labels and metrics before and after. What is compared:

- the ``--json`` object each command prints, without what changes from run to run (timings, cache
  paths and hits; the temporary folder is written ``{tmp}``);
- every file a command writes: run files reduced to their questions and, per passage, id, score and
  every judge's ``-preds`` / ``-probs``; JSON files as they are; other text files line by line.

Floats are compared with a tolerance (``REL``, ``ABS``) and a ranking may swap passages whose scores
tie within ``TIE``: encoders in fp32 give the same figures to about 1e-6 on every CPU, not bit for bit
(a number a file prints to 4+ decimals may move by one unit of its last digit).
``BERDS_UPDATE_GOLDEN=1`` writes the recordings instead of comparing (after a change that is meant to
change an output; the diff of ``tests/golden/`` then shows what changed).
"""
from __future__ import annotations

import contextlib
import hashlib
import io
import json
import math
import os
import re
from pathlib import Path

GOLDEN = Path(__file__).parent / "golden"
UPDATE = os.environ.get("BERDS_UPDATE_GOLDEN") == "1"
REL, ABS, TIE = 1e-4, 1e-6, 1e-5

# keys whose values change from run to run (time, where the cache is, whether it was warm)
VOLATILE = re.compile(r"(seconds|elapsed|per_s(ec(ond)?)?$|_per_s$|throughput|cache_path|cache_hit|cache_dir|"
                      r"^cached$|warm|started|finished|_at$|timestamp|^when$|^date$|db_path|app_version)")


def run_cli(argv: list[str], fresh: bool = False) -> tuple[int, dict | None, str]:
    """``berds argv`` in this process, or with ``fresh`` in a new one as a user runs it (no model or cache
    object left by earlier tests: which passages share an encoder batch moves float sums by ~1e-7, enough to
    swap near-tied picks): (exit code, the --json object or None, stderr)."""
    if fresh:
        import subprocess
        import sys

        p = subprocess.run([sys.executable, "-m", "berds_core", *argv], capture_output=True, text=True,
                           env=dict(os.environ), timeout=1800)
        code, stdout, stderr = p.returncode, p.stdout, p.stderr
    else:
        from berds_core.cli import main

        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = main(argv)
            except SystemExit as e:  # argparse
                code = e.code if isinstance(e.code, int) else 2
        stdout, stderr = out.getvalue(), err.getvalue()
    text = stdout.strip()
    obj = None
    if text:
        try:
            obj = json.loads(text.splitlines()[-1])
        except json.JSONDecodeError:
            obj = {"stdout": text}
    return code, obj, stderr


def scrub(value, tmp: str, mark: str = "{tmp}"):
    """``value`` without volatile keys, with the folder ``tmp`` written ``mark`` (``{tmp}`` for the
    temporary folder, ``{data}`` for the development data folder, which sits elsewhere on each machine)."""
    if isinstance(value, dict):
        return {str(k).replace(tmp, mark): scrub(v, tmp, mark) for k, v in value.items()
                if not VOLATILE.search(str(k))}
    if isinstance(value, list):
        return [scrub(v, tmp, mark) for v in value]
    if isinstance(value, str):
        return value.replace(tmp, mark)
    return value


def digest_run(path: Path) -> list[dict]:
    """A run file reduced to what a refactoring must keep: per question its fields but the passages, and
    per passage id, score and the judges' verdicts."""
    rows = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        q = json.loads(line)
        ctxs = []
        for c in q.get("ctxs", []):
            keep = {"id": c.get("id"), "score": c.get("score")}
            keep.update({k: v for k, v in c.items() if k.endswith("-preds") or k.endswith("-probs")})
            ctxs.append(keep)
        rest = {k: v for k, v in q.items() if k != "ctxs"}
        rows.append({**rest, "ctxs": ctxs})
    return rows


def shorten(value):
    """Long strings (passage texts, documents) as their hash and length: a change still shows, the
    recording stays small."""
    if isinstance(value, dict):
        return {k: shorten(v) for k, v in value.items()}
    if isinstance(value, list):
        return [shorten(v) for v in value]
    if isinstance(value, str) and len(value) > 160:
        return f"sha1:{hashlib.sha1(value.encode('utf-8')).hexdigest()[:16]} len {len(value)}"
    return value


def digest_file(path: Path, tmp: str):
    return shorten(_digest_file(path, tmp))


def _digest_file(path: Path, tmp: str):
    text = path.read_text(encoding="utf-8")
    name = path.name
    if name.endswith(".jsonl") and '"ctxs"' in text[:200000]:
        return {"run": digest_run(path)}
    if name.endswith(".json"):
        return {"json": scrub(json.loads(text), tmp)}
    if name.endswith((".tsv", ".csv")):  # a table: rows as dicts, so volatile columns drop out
        import csv

        rows = list(csv.DictReader(io.StringIO(text), delimiter="\t" if name.endswith(".tsv") else ","))
        return {"table": scrub(rows, tmp)}
    if name.endswith(".jsonl"):
        return {"jsonl": [scrub(json.loads(x), tmp) for x in text.splitlines() if x.strip()]}
    return {"lines": [x.replace(tmp, "{tmp}") for x in text.splitlines()]}


def record(name: str, argv: list[str], tmp: Path, outputs: list[str] = (), fresh: bool = False) -> dict:
    """Run one command and reduce its results; ``outputs``: files (relative to ``tmp``) it writes
    (``"dir/"``: every file of that folder); ``fresh``: in a new process (``run_cli``)."""
    code, obj, err = run_cli(argv, fresh)
    if code != 0:
        raise AssertionError(f"{name}: berds {' '.join(argv)} exited {code}: {err.strip().splitlines()[-1:]} ")
    got = {"argv": [a.replace(str(tmp), "{tmp}") for a in argv], "json": scrub(obj, str(tmp))}
    for rel in outputs:  # "dir/" stands for every file in that folder
        paths = sorted(p for p in (tmp / rel).iterdir() if p.is_file()) if rel.endswith("/") else [tmp / rel]
        for path in paths:
            got.setdefault("files", {})[str(path.relative_to(tmp))] = digest_file(path, str(tmp))
    return got


# ------------------------------------------------------------------ comparing
def _close(a: float, b: float) -> bool:
    if math.isnan(a) and math.isnan(b):
        return True
    return abs(a - b) <= max(ABS, REL * max(abs(a), abs(b)))


def compare(want, got, where: str = "") -> list[str]:
    """The differences between a recording and a new result (empty: the same)."""
    if isinstance(want, bool) or isinstance(got, bool):
        return [] if type(want) is type(got) and want == got else [f"{where}: {want!r} -> {got!r}"]
    if isinstance(want, (int, float)) and isinstance(got, (int, float)):
        return [] if _close(float(want), float(got)) else [f"{where}: {want!r} -> {got!r}"]
    if isinstance(want, dict) and isinstance(got, dict):
        diffs = []
        for k in sorted(set(want) | set(got)):
            if k not in got:
                diffs.append(f"{where}.{k}: missing now")
            elif k not in want:
                diffs.append(f"{where}.{k}: new ({_short(got[k])})")
            elif k == "ctxs" and isinstance(want[k], list):
                diffs += compare_ranking(want[k], got[k], f"{where}.ctxs")
            else:
                diffs += compare(want[k], got[k], f"{where}.{k}")
        return diffs
    if isinstance(want, list) and isinstance(got, list):
        if len(want) != len(got):
            return [f"{where}: {len(want)} items -> {len(got)}"]
        diffs = []
        for i, (a, b) in enumerate(zip(want, got)):
            diffs += compare(a, b, f"{where}[{i}]")
        return diffs
    if isinstance(want, str) and isinstance(got, str) and _printed_close(want, got):
        return []
    return [] if want == got else [f"{where}: {_short(want)} -> {_short(got)}"]


_PRINTED = re.compile(r"-?\d+\.(\d{4,})")


def _printed_close(want: str, got: str) -> bool:
    """Two numbers printed to 4 or more decimals in a table cell (a written TSV's probabilities): equal within
    one unit of the last printed digit (issue 52: fp32 sums on another CPU's kernels move the 1e-7 digit,
    which the rounding to 6 places can carry into the last one)."""
    m, n = _PRINTED.fullmatch(want), _PRINTED.fullmatch(got)
    if not (m and n) or len(m.group(1)) != len(n.group(1)):
        return False
    unit = 10.0 ** -len(m.group(1))
    return abs(float(want) - float(got)) <= unit * 1.01


def compare_ranking(want: list[dict], got: list[dict], where: str) -> list[str]:
    """Passages in rank order; passages whose recorded scores tie within ``TIE`` may come in any order."""
    if len(want) != len(got):
        return [f"{where}: {len(want)} passages -> {len(got)}"]
    diffs, i = [], 0
    while i < len(want):
        j = i + 1
        while j < len(want) and _tie(want[j - 1].get("score"), want[j].get("score")):
            j += 1
        a = sorted(want[i:j], key=lambda c: str(c.get("id")))
        b = sorted(got[i:j], key=lambda c: str(c.get("id")))
        if [c.get("id") for c in a] != [c.get("id") for c in b]:
            if j == len(want) and j - i > 1:  # a tie cut by k: the members may differ
                pass
            else:
                diffs.append(f"{where}[{i}:{j}]: ids {[c.get('id') for c in want[i:j]]} -> "
                             f"{[c.get('id') for c in got[i:j]]}")
                i = j
                continue
        for x, y in zip(a, b):
            diffs += compare({k: v for k, v in x.items() if k != "id"}, {k: v for k, v in y.items() if k != "id"},
                             f"{where}[{x.get('id')}]")
        i = j
    return diffs


def _tie(a, b) -> bool:
    return isinstance(a, (int, float)) and isinstance(b, (int, float)) and abs(float(a) - float(b)) <= TIE


def _short(v) -> str:
    s = json.dumps(v, ensure_ascii=False, sort_keys=True)
    return s if len(s) <= 120 else s[:117] + "..."


def check(name: str, got: dict) -> None:
    """Compare with ``tests/golden/<name>.json`` (or write it, with ``BERDS_UPDATE_GOLDEN=1``)."""
    path = GOLDEN / f"{name}.json"
    if UPDATE:
        GOLDEN.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(got, ensure_ascii=False, indent=1, sort_keys=True) + "\n", encoding="utf-8")
        return
    assert path.exists(), f"no recording {path.name}: run with BERDS_UPDATE_GOLDEN=1 once and commit it"
    want = json.loads(path.read_text(encoding="utf-8"))
    diffs = compare(want, json.loads(json.dumps(got)), name)
    assert not diffs, f"{len(diffs)} difference(s) from {path.name}:\n" + "\n".join(diffs[:40])
