"""The AST race behind a page-test flake (``studio_ui.guards.serialize_ast_conversion``): three threads parse
a source file over and over while finalizers switch threads inside garbage collections, as a page parse
does beside the warm-up thread's imports. Each trial runs in a fresh process, without and with the guard,
alternating; it prints how many trials raised ``AST constructor recursion depth mismatch`` and the median
seconds per trial of each (a trial without the guard stops at its first error, so its time is shorter).

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

def race(source: str, parses: int, threads: int = 3) -> list[str]:
    """``threads`` threads parse ``source`` ``parses`` times each while garbage collections switch threads;
    the ``SystemError`` messages raised (each thread stops at its first)."""
    import ast
    import threading
    import time

    errors: list[str] = []

    class SwitchOnCollect:
        def __del__(self):
            time.sleep(0)  # a finalizer gives the GIL away, inside whatever the collector interrupted

    def worker():
        for _ in range(parses):
            junk = [SwitchOnCollect() for _ in range(50)]
            for j in junk:
                j.me = j  # cycles: collected by the GC, during the next allocations
            del junk
            try:
                ast.parse(source)
            except SystemError as e:
                errors.append(str(e))
                return

    pool = [threading.Thread(target=worker) for _ in range(threads)]
    for t in pool:
        t.start()
    for t in pool:
        t.join()
    return errors


TRIAL = r"""
import json, sys, time
sys.path[:0] = [{root!r}, {bench!r}]
if {guard}:
    from studio_ui.guards import serialize_ast_conversion
    assert serialize_ast_conversion()
from ast_race import race
t0 = time.perf_counter()
errors = race(open({file!r}, encoding="utf-8").read(), {parses})
print(json.dumps({{"errors": errors[:1], "seconds": time.perf_counter() - t0}}))
"""


def trial(guard: bool, parses: int, file: str) -> dict:
    code = TRIAL.format(root=str(ROOT), bench=str(ROOT / "bench"), guard=guard, parses=parses, file=file)
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
