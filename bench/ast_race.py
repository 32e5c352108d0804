"""The AST race behind a page-test flake (``studio_ui.guards.serialize_ast_conversion``): three threads parse
a source file over and over while finalizers switch threads inside garbage collections, as a page parse
does beside the warm-up thread's imports. Each trial runs in a fresh process, without and with the guard,
alternating; it prints how many trials raised ``AST constructor recursion depth mismatch`` and the median
seconds per trial of each.

    python bench/ast_race.py [--trials 6] [--parses 150] [--file studio_ui/sidebar.py]
"""
from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

TRIAL = r"""
import ast, json, sys, threading, time
sys.path.insert(0, {root!r})
if {guard}:
    from studio_ui.guards import serialize_ast_conversion
    assert serialize_ast_conversion()
src = open({file!r}, encoding="utf-8").read()
errors = []

class SwitchOnCollect:
    def __del__(self):
        time.sleep(0)  # a finalizer gives the GIL away, inside whatever the collector interrupted

def worker():
    for _ in range({parses}):
        junk = [SwitchOnCollect() for _ in range(50)]
        for j in junk:
            j.me = j  # cycles: collected by the GC, during the next allocations
        del junk
        try:
            ast.parse(src)
        except SystemError as e:
            errors.append(str(e))
            return

t0 = time.perf_counter()
threads = [threading.Thread(target=worker) for _ in range(3)]
[t.start() for t in threads]
[t.join() for t in threads]
print(json.dumps({{"errors": errors[:1], "seconds": time.perf_counter() - t0}}))
"""


def trial(guard: bool, parses: int, file: str) -> dict:
    code = TRIAL.format(root=str(ROOT), guard=guard, parses=parses, file=file)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trials", type=int, default=6)
    ap.add_argument("--parses", type=int, default=150)
    ap.add_argument("--file", default=str(ROOT / "studio_ui" / "sidebar.py"))
    args = ap.parse_args()
    res = {False: [], True: []}
    for _ in range(args.trials):
        for guard in (False, True):
            res[guard].append(trial(guard, args.parses, args.file))
    out = {"python": sys.version.split()[0], "trials": args.trials, "parses_per_thread": args.parses}
    for guard, name in ((False, "without_guard"), (True, "with_guard")):
        out[name] = {"trials_with_error": sum(bool(r["errors"]) for r in res[guard]),
                     "median_seconds": round(statistics.median(r["seconds"] for r in res[guard]), 2),
                     "error": next((r["errors"][0] for r in res[guard] if r["errors"]), None)}
    out["median_ratio_with_over_without"] = round(out["with_guard"]["median_seconds"]
                                                  / out["without_guard"]["median_seconds"], 2)
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
