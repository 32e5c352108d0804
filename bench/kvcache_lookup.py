#!/usr/bin/env python
"""What one read of the shared SQLite caches costs: two-column keys (a judge's (passage, perspective) hashes)
asked as row values (``(a, b) IN (VALUES ...)``, what ``files.kvcache`` does) against an OR of ``(a=? AND b=?)``
terms (what it did before), in one run, on a fresh cache.

    python bench/kvcache_lookup.py [--rows 50000] [--ask 5000] [--runs 5] [--json]

A ``PredictionCache`` in a temporary folder gets ``--rows`` predictions under one judge's namespace, then
``--ask`` of its keys are read back in the cache's own chunks, each shape ``--runs`` times (alternating);
medians and their ratio. Both shapes must return the same dict.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from machine import cpu_model, load  # noqa: E402


def or_of_ands(cache, namespace, keys) -> dict:
    """The earlier query shape, for the comparison."""
    step = max(1, cache.chunk // 2)
    out = {}
    one = "(" + " AND ".join(f"{c}=?" for c in cache.keys) + ")"
    for i in range(0, len(keys), step):
        chunk = keys[i:i + step]
        sql = (f"SELECT {', '.join(cache.keys)}, {cache.value} FROM {cache.table} WHERE {cache.namespace}=? AND "
               f"({' OR '.join([one] * len(chunk))})")
        for row in cache._conn.execute(sql, [namespace] + [x for k in chunk for x in k]):
            out[(row[0], row[1])] = cache.decode(row[2])
    return out


def main(argv=None) -> int:
    from berds_core.judges.base import PredictionCache

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[1])
    ap.add_argument("--rows", type=int, default=50000)
    ap.add_argument("--ask", type=int, default=5000)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    h = lambda s: hashlib.sha1(s.encode()).hexdigest()  # noqa: E731
    with tempfile.TemporaryDirectory() as tmp:
        cache = PredictionCache(Path(tmp) / "predictions.sqlite")
        keys = [(h(f"passage {i // 10}"), h(f"perspective {i}")) for i in range(args.rows)]
        cache.put_many("judge-a", [(k, i / args.rows) for i, k in enumerate(keys)])
        cache.put_many("judge-b", [(k, 0.5) for k in keys[: args.rows // 2]])  # another judge's rows beside them
        ask = keys[:: max(1, args.rows // args.ask)][: args.ask]
        times = {"row values": [], "or of ands": []}
        for _ in range(args.runs):
            t = time.perf_counter()
            a = cache.get_many("judge-a", ask)
            times["row values"].append(time.perf_counter() - t)
            t = time.perf_counter()
            b = or_of_ands(cache, "judge-a", ask)
            times["or of ands"].append(time.perf_counter() - t)
            assert a == b and len(a) == len(ask)
    med = {k: statistics.median(v) for k, v in times.items()}
    out = {"cpu": cpu_model(), "load": load(), "rows": args.rows, "asked": len(ask), "runs": args.runs,
           "median_s": {k: round(v, 4) for k, v in med.items()},
           "or_of_ands_over_row_values": round(med["or of ands"] / med["row values"], 1)}
    print(json.dumps(out, indent=None if args.json else 1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
