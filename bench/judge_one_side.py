#!/usr/bin/env python
"""What the one-side rule costs: the embedded judge v5 (a passage counts for at most one of two opposite
perspectives, the stance model reading the side) against v4 (each pair alone), in one run, on 2 cores.

    python bench/judge_one_side.py [--data ../shared/data] [--runs 3] [--json]

Workload: ``berds judge-eval`` on the BERDS human pairs' development half: every passage of a question against
every perspective of it (the grid the judge decides together), through the full decision path
(``judges.judge_passages``: pair probabilities, topicality gate, the one-side rule). Per run and judge, in
alternating order, on a fresh judge with the prediction cache bypassed:

- ``cold``: an EMPTY embedding store (a fresh ``BERDS_CACHE``): each passage and perspective is embedded once;
  v5 also runs the stance model on the members of the passages that may support a side;
- ``warm``: the same grid again with the store filled by the cold run (passages judged or retrieved before).

Reports pairs/s (medians of ``--runs``) and v5's cost as a ratio of v4's in the same run. Skips cleanly when
the data folder is missing.
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

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from machine import cpu_model, load  # noqa: E402


def grids(tsv: Path) -> list[tuple[str, list[str], list[str]]]:
    from berds_core.cli.judge_cmd import question_grids
    from berds_core.datasets.human_pairs import read_pairs

    return question_grids(read_pairs(tsv), True)


def judge_all(judge, work) -> int:
    from berds_core.judges import judge_passages

    n = 0
    for q, docs, persp in work:
        P, _ = judge_passages(judge, docs, persp, q)
        n += P.size
    return n


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", default=str(ROOT.parent / "shared" / "data"))
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    tsv = Path(args.data) / "berds-human" / "pers_det.dev.tsv"
    if not tsv.exists():
        print(json.dumps({"skipped": f"{tsv} not found"}))
        return 0
    import torch

    from berds_core.judges import base
    from berds_core.judges.embedded import WEIGHTS, EmbeddedJudge

    v4_weights = WEIGHTS.with_name("embedded_v4.npz")
    work = grids(tsv)
    tmp = tempfile.TemporaryDirectory(prefix="berds-bench-one-side-")
    rates: dict[tuple[str, str], list[float]] = {(j, m): [] for j in ("v4", "v5") for m in ("cold", "warm")}
    no_cache = type("NoCache", (), {"get_many": lambda self, ns, keys: {}, "put_many": lambda self, ns, kv: None})()
    base.prediction_cache = lambda: no_cache  # every pair scored: the judges' own work, not the cache's
    for r in range(args.runs):
        for name in (("v4", "v5") if r % 2 == 0 else ("v5", "v4")):
            os.environ["BERDS_CACHE"] = os.path.join(tmp.name, f"run{r}-{name}")  # an empty embedding store
            for mode in ("cold", "warm"):
                judge = EmbeddedJudge(weights=str(v4_weights if name == "v4" else WEIGHTS))
                judge.load()  # loading is not part of the rate
                if name == "v5":
                    judge.stance_model._load()
                    judge.stance_model._mem.clear()  # the process-wide model's memory: only the store stays
                t = time.perf_counter()
                n = judge_all(judge, work)
                rates[(name, mode)].append(n / (time.perf_counter() - t))
        sys.stderr.write(f"run {r + 1}: " + ", ".join(f"{j}/{m} {v[-1]:.1f}" for (j, m), v in rates.items())
                         + " pairs/s\n")
    med = {k: statistics.median(v) for k, v in rates.items()}
    result = {"pairs": sum(len(d) * len(p) for _, d, p in work), "questions": len(work),
              "torch_threads": torch.get_num_threads(), "cpu_count": os.cpu_count(), "cpu": cpu_model(),
              "load_avg_1min": round(os.getloadavg()[0], 2), "load_avg_end": load(),
              "pairs_per_s": {f"{j}_{m}": {"runs": [round(x, 1) for x in rates[(j, m)]], "median": round(med[(j, m)], 1)}
                              for j, m in rates},
              "v5_cost_vs_v4": {m: round(med[("v4", m)] / med[("v5", m)], 2) for m in ("cold", "warm")}}
    tmp.cleanup()
    print(json.dumps(result) if args.json else json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
