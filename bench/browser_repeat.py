"""A browser test run again and again on a loaded machine: each run's result, time and load average.

Each run is a fresh ``pytest`` process over the test file with pytest-rerunfailures switched off (a run
passes only on its first try). With ``--burners N`` (default 2) N processes that spin the CPU
(``nice -n 5``) run beside every run, as issue 53 asks ("20 of 20 with two CPU-burning processes beside
it"); they are stopped, by their process id, when the runs end. ``--burners auto`` starts two only when the
1-minute load average is under 4 before the first run (other jobs already load the machine otherwise).

    python bench/browser_repeat.py [--runs 20] [--burners 2|0|auto] [--test tests/test_lab_quality_browser.py]
                                   [--json out.json] [--stop-on-fail]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

from machine import cpu_model, load

ROOT = Path(__file__).resolve().parents[1]
BURN = "while True: pass"


def burners_wanted(value: str) -> int:
    """How many CPU burners to start: a count, or ``auto`` (two while the 1-minute load is under 4)."""
    if value == "auto":
        return 2 if os.getloadavg()[0] < 4 else 0
    n = int(value)
    if n < 0:
        raise SystemExit("--burners: a count of at least 0, or auto")
    return n


def run_once(test: str, timeout_s: float) -> dict:
    """One pytest process over ``test``, without re-runs: its exit code, seconds, load before and after."""
    before = os.getloadavg()
    t0 = time.monotonic()
    cmd = [sys.executable, "-m", "pytest", test, "-q", "-x", "--tb=short", "--disable-warnings",
           "-p", "no:rerunfailures", "-p", "no:cacheprovider"]
    try:
        done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=timeout_s)
        rc, out = done.returncode, done.stdout + done.stderr
    except subprocess.TimeoutExpired as e:
        rc, out = 124, f"timed out after {timeout_s:.0f} s\n{(e.stdout or b'')[-4000:]!r}"
    seconds = time.monotonic() - t0
    after = os.getloadavg()
    passed = rc == 0 and " passed" in out and " skipped" not in out
    return {"passed": passed, "rc": rc, "seconds": round(seconds, 1),
            "load_before": [round(x, 2) for x in before], "load_after": [round(x, 2) for x in after],
            "output": "" if passed else out}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--test", default="tests/test_lab_quality_browser.py")
    ap.add_argument("--burners", default="2", help="CPU-burning processes beside the runs: a count or auto")
    ap.add_argument("--timeout", type=float, default=1200, help="seconds one run may take")
    ap.add_argument("--json", help="also write every run's record here")
    ap.add_argument("--stop-on-fail", action="store_true", help="stop at the first failed run")
    args = ap.parse_args(argv)
    if args.runs < 1:
        raise SystemExit("--runs: at least 1")
    n_burn = burners_wanted(args.burners)
    burners = [subprocess.Popen(["nice", "-n", "5", sys.executable, "-c", BURN]) for _ in range(n_burn)]
    started = datetime.now(timezone.utc)
    runs: list[dict] = []
    try:
        for i in range(args.runs):
            r = run_once(args.test, args.timeout)
            runs.append(r)
            print(f"run {i + 1:2d}: {'pass' if r['passed'] else 'FAIL'}  {r['seconds']:7.1f} s  "
                  f"load {r['load_before'][0]:.2f} -> {r['load_after'][0]:.2f}", flush=True)
            if args.json:
                Path(args.json).write_text(json.dumps({"runs": runs}, indent=1))
            if not r["passed"]:
                print(r["output"][-6000:], flush=True)
                if args.stop_on_fail:
                    break
    finally:
        for p in burners:
            p.terminate()
        for p in burners:
            p.wait(timeout=10)
    loads = [x for r in runs for x in (r["load_before"][0], r["load_after"][0])]
    summary = {"test": args.test, "date": started.strftime("%Y-%m-%d %H:%M UTC"), "cpu": cpu_model(),
               "cores": os.cpu_count(), "burners": n_burn, "passed": sum(r["passed"] for r in runs),
               "runs": len(runs), "median_s": statistics.median(r["seconds"] for r in runs),
               "max_s": max(r["seconds"] for r in runs), "load_1min_min": min(loads), "load_1min_max": max(loads),
               "load_at_end": load()}
    print(f"\n{args.test}: passed {summary['passed']} of {summary['runs']} (first try, no re-runs); "
          f"median {summary['median_s']:.1f} s, longest {summary['max_s']:.1f} s; {n_burn} CPU burners beside; "
          f"1-minute load {summary['load_1min_min']:.2f}-{summary['load_1min_max']:.2f}; "
          f"{summary['cpu']}, {summary['cores']} cores; {summary['date']}")
    if args.json:
        Path(args.json).write_text(json.dumps({"summary": summary, "runs": runs}, indent=1))
    return 0 if summary["passed"] == summary["runs"] else 1


if __name__ == "__main__":
    sys.exit(main())
