"""Lab sign-in: does the answer's timing tell whether a name exists? Known vs unknown name, same run.

    python bench/login_timing.py [--tries 30] [--legacy]

Creates a lab database in a temporary folder with one user (argon2id with the
production settings: m 65536, t 3, p 4) and times ``Accounts(store).login`` with a
wrong password for the existing name and for an unknown one, interleaved, a new
``Accounts`` per attempt as the pages make them (and no name delay: each try
uses a fresh name pair after the first three, so only the hashing is timed).
``--legacy`` also times the previous behaviour (a dummy hash made per
``Accounts`` for an unknown name) in the same run, for the ratio. Prints one JSON
object: medians (ms), the unknown/known ratio, the CPU and the load average.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from machine import cpu_model  # noqa: E402

from berds_core.lab.accounts import Accounts, LoginError  # noqa: E402
from berds_core.lab.store import Store  # noqa: E402


def _legacy_unknown(acc: Accounts, name: str, password: str) -> None:
    """What an unknown name cost before: a dummy hash made per Accounts, then the same login."""
    acc.hasher.hash(os.urandom(16).hex())
    try:
        acc.login(name, password)
    except LoginError:
        pass


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tries", type=int, default=30)
    ap.add_argument("--legacy", action="store_true")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        store = Store(Path(tmp) / "lab.db")
        names = [f"user{i}" for i in range(args.tries)]
        setup = Accounts(store)
        for n in names:  # one known name per try: no name ever reaches its delay
            setup.add(n, "annotator", "a long enough password for the bench")
        with_no_wait = dict(sleep=lambda s: None)
        try:
            Accounts(store, **with_no_wait).login("warm-up", "x")
        except LoginError:
            pass
        times = {"known": [], "unknown": [], "legacy_unknown": []}
        for i in range(args.tries):
            order = ["known", "unknown"] + (["legacy_unknown"] if args.legacy else [])
            if i % 2:
                order.reverse()
            for kind in order:
                acc = Accounts(store, **with_no_wait)
                t0 = time.perf_counter()
                if kind == "legacy_unknown":
                    _legacy_unknown(acc, f"nobody-else{i}", "not the password")
                else:
                    try:
                        acc.login(names[i] if kind == "known" else f"nobody{i}", "not the password")
                    except LoginError:
                        pass
                times[kind].append((time.perf_counter() - t0) * 1000)
                print(f"{i + 1}/{args.tries} {kind}", file=sys.stderr)
        store.close()
    med = {k: statistics.median(v) for k, v in times.items() if v}
    out = {"tries": args.tries, "median_ms": {k: round(v, 1) for k, v in med.items()},
           "unknown_over_known": round(med["unknown"] / med["known"], 3), "cpu": cpu_model(),
           "load_average": [round(x, 2) for x in os.getloadavg()]}
    if "legacy_unknown" in med:
        out["legacy_unknown_over_known"] = round(med["legacy_unknown"] / med["known"], 3)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
