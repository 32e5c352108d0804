#!/usr/bin/env python
"""Throughput of the embedded judge on CPU vs naive per-pair encoding, and its quality on human pairs.

    python bench/judge_cpu.py [--data ../shared/data] [--passages 120] [--runs 3] [--json]

Workload: BERDS-like judging of retrieved passages against every perspective
of their question: the passages of ``berds-human/pers_det.dev.tsv`` (about 100
words each), each paired with all perspectives of its question. Measured in
the same run, each on a fresh featurizer (nothing cached in memory, the
prediction cache bypassed), per encoding:

- ``cold``: the judge's scoring path (``_score``) with an EMPTY embedding
  store (a fresh ``BERDS_CACHE`` per run): every unique passage and
  perspective encoded once, passage embeddings reused across perspectives;
- ``cold_256``: ``cold`` with texts truncated at MiniLM's own 256 tokens
  instead of the head's 128 (what v1 of the judge did): the ratio
  cold / cold_256 is the gain of the shorter truncation, measured in the same run;
- ``warm``: the same, with the embedding store filled by the cold run (a
  passage judged before, e.g. re-judging with another threshold or head, or
  the same passages against new perspectives): no transformer pass;
- ``token_path``: the judge's previous scoring path (token-level features
  computed for every text whether the head uses them or not, no store);
- ``naive``: the per-pair approach: encode the passage and the perspective of
  each pair separately (``SentenceTransformer.encode`` per pair) and take the
  cosine -- what judging pair by pair costs without reuse.

Reports the median pairs/s of ``--runs`` runs and the ratio, plus the judge's
agreement with the human labels of the same file (in-sample for the shipped
head: its grouped-CV figures are in the weights' report). Skips cleanly when
the data folder is missing.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
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
    return [(d, s) for d, q in passages for s in persp[q]], rows


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

    import tempfile

    import numpy as np
    import torch

    from berds_core.cli.judge_cmd import agreement
    from berds_core.embeddings.models import load_embedder, resolve_encoding
    from berds_core.judges.embedded import EmbeddedJudge
    from berds_core.judges.features import Featurizer

    pairs, rows = workload(tsv, args.passages)
    model = load_embedder()
    model.encode(["warm up"] * 8)
    tmp = tempfile.TemporaryDirectory(prefix="berds-bench-judge-")
    os.environ["BERDS_CACHE"] = tmp.name
    encs = list(dict.fromkeys(resolve_encoding(e) for e in args.encodings))
    judges = {enc: EmbeddedJudge(encoding=enc) for enc in encs}
    for j in judges.values():
        j.featurizer.model.encode(["warm up"] * 8)
        Featurizer(encoding=j.encoding).model.encode(["warm up"] * 8)  # the 256-token encoder of cold_256
    modes = ("cold", "cold_256", "warm", "token_path")
    rates = {(enc, m): [] for enc in judges for m in modes}
    naive_rates = []

    def fresh(judge, **kw):
        kw.setdefault("max_seq_length", judge.head["max_seq_length"])
        return Featurizer(rel_head=judge.featurizer.rel_head, encoding=judge.encoding,
                          needed=judge.head["features"], **kw)

    def timed(judge, featurizer):
        judge.featurizer = featurizer
        t = time.perf_counter()
        judge._score(pairs)
        return len(pairs) / (time.perf_counter() - t)

    for r in range(args.runs):
        os.environ["BERDS_CACHE"] = os.path.join(tmp.name, f"run{r}")  # empty embedding store
        for enc, judge in judges.items():
            rates[(enc, "cold")].append(timed(judge, fresh(judge)))
            rates[(enc, "cold_256")].append(timed(judge, fresh(judge, max_seq_length=None)))  # own store key
            rates[(enc, "warm")].append(timed(judge, fresh(judge)))  # nothing in memory, store filled
            old = Featurizer(rel_head=judge.featurizer.rel_head, encoding=judge.encoding,
                             max_seq_length=judge.head["max_seq_length"])  # all features
            rates[(enc, "token_path")].append(timed(judge, old))
        t = time.perf_counter()
        for p, s in pairs:
            a = model.encode([p], normalize_embeddings=True, show_progress_bar=False)
            b = model.encode([s], normalize_embeddings=True, show_progress_bar=False)
            float(a[0] @ b[0])
        naive_rates.append(len(pairs) / (time.perf_counter() - t))
        sys.stderr.write(f"run {r + 1}: " + ", ".join(f"{e}/{m} {v[-1]:.1f}" for (e, m), v in rates.items())
                         + f", naive {naive_rates[-1]:.1f} pairs/s\n")
    labels = np.array([r["label"] == "1" for r in rows])
    naive_med = statistics.median(naive_rates)
    result = {
        "pairs": len(pairs), "unique_passages": len({p for p, _ in pairs}),
        "torch_threads": torch.get_num_threads(), "cpu_count": os.cpu_count(),
        "load_avg_1min": round(os.getloadavg()[0], 2),
        "naive_pairs_per_s": [round(x, 1) for x in naive_rates], "naive_median": round(naive_med, 1),
    }
    for enc, judge in judges.items():
        res = {}
        for m in modes:
            med = statistics.median(rates[(enc, m)])
            res[m] = {"pairs_per_s": [round(x, 1) for x in rates[(enc, m)]], "median": round(med, 1),
                      "speedup_vs_naive": round(med / naive_med, 2)}
        res["cold_vs_cold_256"] = round(res["cold"]["median"] / res["cold_256"]["median"], 2)
        judge.featurizer = fresh(judge)
        probs = judge._score([(r["document"], r["perspective"]) for r in rows])
        res["human_pairs_in_sample"] = agreement(labels, probs >= judge.threshold)
        result[f"embedded_{enc}"] = res
    judge = next(iter(judges.values()))
    result.update(threshold=judge.threshold, grouped_cv=judge.head["meta"].get("cv"))
    tmp.cleanup()
    print(json.dumps(result) if args.json else json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
