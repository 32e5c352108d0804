#!/usr/bin/env python
"""Throughput of the embedded judge on CPU, cold and warm, per precision, against the stance-model judge it replaced.

    python bench/judge_cpu.py [--data ../shared/data] [--passages 120] [--runs 3] [--encodings auto fp32] [--json]

Workload: BERDS-like judging of retrieved passages against every perspective
of their question: the passages of ``berds-human/pers_det.dev.tsv`` (about 100
words each), each paired with all perspectives of its question. Per encoding
and run, on a fresh judge (the prediction cache bypassed):

- ``cold``: the judge's scoring path (``_score``) with an EMPTY embedding store
  (a fresh ``BERDS_CACHE`` per run): the embedded judge (v4, a cosine head)
  encodes each passage and each perspective once;
- ``warm``: the same pairs again on a new judge with the store filled by the
  cold run (a passage judged or retrieved before): no model pass;
- ``argkp_cold``: the ArgKP cross-encoder judge (``argkp``; issue 47): one network pass per (perspective,
  passage) pair at its 128-token cut, length-sorted batches, plus what its head reads beside it (the
  cosine, when it does), empty store; timed only when its weights are there;
- ``stance_cold``: the alternative, the judge main shipped before issue 37 (the
  stance model, a cross-encoder: one network pass per (perspective, passage)
  pair, with its judge rule), in the same run on the same pairs, empty store.

Reports the median pairs/s of ``--runs`` runs and the ratios. Quality figures
are not measured here (``scripts/train_judge.py``, ``docs/judge.md``). Skips
cleanly when the data folder is missing.
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
    from berds_core.judges.cross_encoder import CE_WEIGHTS, HEAD_WEIGHTS, CrossEncoderJudge

    argkp = CE_WEIGHTS.exists() and HEAD_WEIGHTS.exists()
    modes = ("cold", "warm", "stance_cold") + (("argkp_cold",) if argkp else ())
    rates = {(enc, m): [] for enc in encs for m in modes}
    for r in range(args.runs):
        for enc in encs:
            os.environ["BERDS_CACHE"] = os.path.join(tmp.name, f"run{r}-{enc}")  # an empty embedding store
            for mode in ("cold", "warm"):
                judge = EmbeddedJudge(encoding=enc)
                judge.load()  # loading is not part of the rate
                t = time.perf_counter()
                judge._score(pairs)
                rates[(enc, mode)].append(len(pairs) / (time.perf_counter() - t))
            if argkp:
                os.environ["BERDS_CACHE"] = os.path.join(tmp.name, f"run{r}-{enc}-argkp")
                ce = CrossEncoderJudge(encoding=enc)
                ce.load()
                t = time.perf_counter()
                ce._score(pairs)
                rates[(enc, "argkp_cold")].append(len(pairs) / (time.perf_counter() - t))
            os.environ["BERDS_CACHE"] = os.path.join(tmp.name, f"run{r}-{enc}-stance")
            from berds_core.stance import StanceModel

            model = StanceModel(encoding=enc)
            model._load()
            t = time.perf_counter()
            model.supports([(s_, d) for d, s_ in pairs])
            rates[(enc, "stance_cold")].append(len(pairs) / (time.perf_counter() - t))
        sys.stderr.write(f"run {r + 1}: " + ", ".join(f"{e}/{m} {v[-1]:.1f}" for (e, m), v in rates.items())
                         + " pairs/s\n")
    judge = EmbeddedJudge(encoding=encs[0])
    result = {"pairs": len(pairs), "unique_passages": len({p for p, _ in pairs}), "judge": judge.name,
              "torch_threads": torch.get_num_threads(), "cpu_count": os.cpu_count(), "cpu": cpu_model(),
              "load_avg_1min": round(os.getloadavg()[0], 2), "load_avg_end": load()}
    for enc in encs:
        med = {m: statistics.median(rates[(enc, m)]) for m in modes}
        result[f"embedded_{enc}"] = {m: {"pairs_per_s": [round(x, 1) for x in rates[(enc, m)]],
                                         "median": round(med[m], 1)} for m in modes}
        result[f"embedded_{enc}"]["warm_vs_cold"] = round(med["warm"] / med["cold"], 1)
        result[f"embedded_{enc}"]["cold_vs_stance_cold"] = round(med["cold"] / med["stance_cold"], 1)
        if argkp:
            result[f"embedded_{enc}"]["argkp_cold_vs_cold"] = round(med["argkp_cold"] / med["cold"], 3)
    tmp.cleanup()
    print(json.dumps(result) if args.json else json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
