"""What placing a gold check costs the server, against a run that places none, as the store's reference labels grow.

    python bench/check_placement.py [--reference 552,20000] [--n 200] [--annotators 2] [--check-rate 0.2]
        [--dir DIR] [--repeats 1]

``--reference`` sizes below what the round itself holds (its task pairs and pool carry reference labels) give
the round alone: the demo's about 570. One *run* is what a keypress in the keyboard widget costs the server (``studio_ui/annotator_widget.py``): a
:class:`~berds_core.lab.access.Lab` made for the request (``per_request=True``, as ``lab_for_page`` makes it),
the decision stored (``Lab.label``: the label's transaction, the gold-check floor), the round's gate
(``round_states``), the next six pairs (``next_pairs(6)``: check slots within reach filled), the five sent to
the page read (``pair_views``) and the progress. Each run is timed with ``time.perf_counter``; a run that
filled a check slot (the store's ``check_slots`` grew) is a *placing* run, the others *plain* runs.

The round: the built-in demo's pairs, ``--n`` of them stratified by subset, each annotator a queue of its own
(one task set per annotator), gold checks at ``--check-rate``. The store then gets more reference labels on
pairs of another dataset (never in the round) until it holds ``--reference`` of them: what a lab that imported
a large labelled set has, and what made placement slow (it read every known answer). The database is a file on
disk (``--dir``, default the system's temporary folder) with the lab's settings (WAL, ``synchronous=FULL``).

Prints one JSON object: per reference size, the median (and p90) of placing and plain runs in ms, their ratio
(placing / plain; measured in the same run, same process), and the counts, per repeat and pooled over the
``--repeats`` (the sizes alternate within each repeat). Timings depend on the machine, its disk (a commit waits
for fsync) and its load: quote them with ``lscpu`` and the load average.
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

from berds_core.lab.access import Actor, Lab  # noqa: E402
from berds_core.lab.controls import RoundControls  # noqa: E402
from berds_core.lab.records import Pair  # noqa: E402
from berds_core.lab.store import Store  # noqa: E402
from berds_core.lab.tasks import build_demo_task_set  # noqa: E402


def _fill_reference(store: Store, total: int) -> int:
    """Reference labels on pairs outside the round until the store holds ``total`` of them."""
    have = len(store.reference_labels())
    extra = max(0, total - have)
    pairs = [Pair(f"other:{i}", f"Another question {i // 40}?", f"Another passage {i} " + "text " * 40,
                  f"Another perspective {i % 5}", subset="other") for i in range(extra)]
    with store.batch():
        store.add_pairs(pairs)
        store.set_reference_labels({p.pair_id: i % 2 for i, p in enumerate(pairs)}, source="bench filler")
    return len(store.reference_labels())


def _placed(store: Store) -> int:
    return sum(n for _, state, n in store.checks.slot_state_counts() if state == "placed")


def _stats(timings: dict) -> dict:
    med = statistics.median

    def p90(xs):
        return sorted(xs)[int(0.9 * (len(xs) - 1))] if xs else None

    out = {"runs": {k: len(v) for k, v in timings.items()},
           "median_ms": {k: round(med(v), 3) if v else None for k, v in timings.items()},
           "p90_ms": {k: round(p90(v), 3) if v else None for k, v in timings.items()}}
    if timings["placing"] and timings["plain"]:
        out["ratio"] = round(med(timings["placing"]) / med(timings["plain"]), 3)
    return out


def one_size(reference: int, args) -> dict:
    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        store = Store(Path(tmp) / "lab.db")
        names = [f"ann{i}" for i in range(args.annotators)]
        for i, name in enumerate(names):
            build_demo_task_set(store, [name], name=f"set{i}", n=args.n, seed=args.seed + i,
                                controls=RoundControls(check_rate=args.check_rate, seed=args.seed + i))
        got = _fill_reference(store, reference)
        timings = {"placing": [], "plain": []}
        first = {n: True for n in names}
        busy = list(names)
        while busy:
            for name in list(busy):
                nxt = Lab(store, Actor(name, "annotator"), per_request=True).next_pairs(6)
                if first[name]:  # the first page load places the first slots: not a keypress
                    first[name] = False
                if not nxt:
                    busy.remove(name)
                    continue
                before = _placed(store)
                t0 = time.perf_counter()
                lab = Lab(store, Actor(name, "annotator"), per_request=True)
                lab.label(nxt[0], 1, time_ms=2000)
                lab.round_states()
                shown = lab.next_pairs(6)
                lab.pair_views(shown[:5])
                lab.progress()
                ms = (time.perf_counter() - t0) * 1000
                timings["placing" if _placed(store) > before else "plain"].append(ms)
        store.close()
    return {"reference_labels": got, "timings": timings, **_stats(timings)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reference", default="552,20000", help="comma-separated totals of reference labels")
    ap.add_argument("--n", type=int, default=200, help="pairs in each annotator's queue")
    ap.add_argument("--annotators", type=int, default=2, help="annotators, each with a queue of their own")
    ap.add_argument("--check-rate", type=float, default=0.2)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--repeats", type=int, default=1, help="rounds per size (their runs pooled)")
    ap.add_argument("--dir", default=None, help="where the database file goes (default: the temporary folder)")
    args = ap.parse_args()
    sizes = [int(x) for x in args.reference.split(",") if x.strip()]
    results = []
    for r in range(args.repeats):  # the sizes in turn within each repeat: a burst of load falls on both
        for size in sizes:
            res = one_size(size, argparse.Namespace(**{**vars(args), "seed": args.seed + 100 * r}))
            res["repeat"], res["asked"] = r, size
            results.append(res)
            print(f"{size} reference labels, repeat {r}: ratio {res.get('ratio')}, medians {res['median_ms']}",
                  file=sys.stderr)
    pooled = {}
    for size in sizes:
        mine = [x for x in results if x["asked"] == size]
        timings = {k: [t for x in mine for t in x["timings"][k]] for k in ("placing", "plain")}
        pooled[size] = {**_stats(timings), "ratios_by_repeat": [x.get("ratio") for x in mine]}
        print(f"{size} reference labels, {len(mine)} repeats pooled: {pooled[size]}", file=sys.stderr)
    for x in results:
        x.pop("timings")
    print(json.dumps({"pooled": pooled, "results": results, "n": args.n, "annotators": args.annotators,
                      "check_rate": args.check_rate, "dir": args.dir or tempfile.gettempdir(),
                      "load_average": os.getloadavg()}, indent=1))


if __name__ == "__main__":
    main()
