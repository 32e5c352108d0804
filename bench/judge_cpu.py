#!/usr/bin/env python
"""Throughput of the embedded judge (the studio's stance model) on CPU, cold and warm, per precision.

    python bench/judge_cpu.py [--data ../shared/data] [--passages 120] [--runs 3] [--encodings auto fp32] [--json]

Workload: BERDS-like judging of retrieved passages against every perspective
of their question: the passages of ``berds-human/pers_det.dev.tsv`` (about 100
words each), each paired with all perspectives of its question. Per encoding
and run, on a fresh judge (nothing in memory, the prediction cache bypassed):

- ``cold``: the judge's scoring path (``_score``) with an EMPTY embedding store
  (a fresh ``BERDS_CACHE`` per run): every pair through the network (with the
  judge's consistency rule, when chosen, twice: the perspective and its
  negation);
- ``warm``: the same pairs again on a new judge with the store filled by the
  cold run (a pair judged before: re-judging with another threshold, another
  page, another process): no network pass.

Reports the median pairs/s of ``--runs`` runs and warm / cold. Quality figures
are not measured here: the judge is trained on these pairs, and its
out-of-fold figures come from ``scripts/train_stance.py`` (in the weights'
report and ``docs/stance.md``). Skips cleanly when the data folder is missing.
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


def workload(tsv: Path, n_passages: int):
    from berds_core.cli.judge_cmd import read_pairs

    rows = read_pairs(tsv)
    persp: dict[str, list[str]] = {}
    docs: dict[str, str] = {}
    for r in rows:
        lst = persp.setdefault(r["question"], [])
        if r["perspective"] not in lst:
            lst.append(r["perspective"])
        docs.setdefault(r["document"], r["question"])
    passages = list(docs.items())[:n_passages]
    return [(d, s) for d, q in passages for s in persp[q]]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", default=str(ROOT.parent / "shared" / "data"))
    ap.add_argument("--passages", type=int, default=120, help="passages in the workload (x their perspectives)")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--encodings", nargs="+", default=["auto", "fp32"], help="embedded judge encodings to time")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    tsv = Path(args.data) / "berds-human" / "pers_det.dev.tsv"
    if not tsv.exists():
        print(json.dumps({"skipped": f"{tsv} not found"}))
        return 0
    import torch

    from berds_core.embeddings.models import resolve_encoding
    from berds_core.judges.embedded import EmbeddedJudge

    pairs = workload(tsv, args.passages)
    tmp = tempfile.TemporaryDirectory(prefix="berds-bench-judge-")
    encs = list(dict.fromkeys(resolve_encoding(e) for e in args.encodings))
    rates = {(enc, m): [] for enc in encs for m in ("cold", "warm")}
    for r in range(args.runs):
        os.environ["BERDS_CACHE"] = os.path.join(tmp.name, f"run{r}")  # an empty embedding store
        for enc in encs:
            for mode in ("cold", "warm"):
                judge = EmbeddedJudge(encoding=enc)
                judge.model._load()  # loading is not part of the rate
                t = time.perf_counter()
                judge._score(pairs)
                rates[(enc, mode)].append(len(pairs) / (time.perf_counter() - t))
        sys.stderr.write(f"run {r + 1}: " + ", ".join(f"{e}/{m} {v[-1]:.1f}" for (e, m), v in rates.items())
                         + " pairs/s\n")
    judge = EmbeddedJudge(encoding=encs[0])
    result = {"pairs": len(pairs), "unique_passages": len({p for p, _ in pairs}), "judge": judge.name,
              "rule": judge.model.rule("judge"), "torch_threads": torch.get_num_threads(),
              "cpu_count": os.cpu_count(), "load_avg_1min": round(os.getloadavg()[0], 2)}
    for enc in encs:
        cold = statistics.median(rates[(enc, "cold")])
        warm = statistics.median(rates[(enc, "warm")])
        result[f"embedded_{enc}"] = {m: {"pairs_per_s": [round(x, 1) for x in rates[(enc, m)]],
                                         "median": round(statistics.median(rates[(enc, m)]), 1)}
                                     for m in ("cold", "warm")}
        result[f"embedded_{enc}"]["warm_vs_cold"] = round(warm / cold, 1)
    tmp.cleanup()
    print(json.dumps(result) if args.json else json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
