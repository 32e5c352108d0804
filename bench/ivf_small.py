"""``--index ivfpq`` on small corpora: what the probed lists and the exactly re-scored depth cost in MRecall.

    python bench/ivf_small.py --data ../shared/data [--repeats 3] [--out bench/results]

The development corpora of shared/data that carry gold labels: PERSPECTRUM's perspective sentences (the
train and dev claims: about 8,000 passages, the size the issue measured on) and ProCon's arguments (1,430).
Each is encoded once by the default embedder (the one embedding store), then searched by

  * ``flat``: exact inner product (the reference);
  * ``ivfpq`` as planned before issue 38: ``nprobe = max(min(nlist, 16), nlist / 16)``, re-scoring the top
    ``4 k`` exactly (``old``);
  * each of the two changes alone and both (``new``, what ``plan_index`` now plans): ``nprobe`` raised to
    scan at least 32,768 codes (every list of a corpus that size), and at least 256 candidates re-scored.

Reported per corpus and configuration, for k = 5 and 10: MRecall@k and Precision@k with the gold labels
(their difference to flat, per question, as the mean and the number of questions that changed), the
share of flat's top k found (recall of the exact neighbours) and the median search latency per query
(median of ``--repeats`` passes over all questions, in the same run). None of the two knobs is fitted on
this data: both are cost floors (codes scanned, vectors re-scored); this script only measures them.
Writes ``bench/results/ivf_small-<time>.json`` and prints a table. Exits 0 with a message when the data
folder is missing.
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

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def corpora(data: Path):
    from berds_core.corpora.memory import corpus_from_passages
    from berds_core.datasets import load_debate_sites
    from berds_core.datasets.perspectrum import load_perspectrum_bundle

    out = []
    p = data / "perspectrum" / "perspectrum_with_answers_v1.0.train_dev.json"
    if p.is_file():
        b = load_perspectrum_bundle(p)
        out.append(("perspectrum", corpus_from_passages(b.passages, "perspectrum"), b.questions, b.gold))
    p = data / "debate-sites" / "procon.json"
    if p.is_file():
        b = load_debate_sites(p)
        out.append(("procon", corpus_from_passages(b.passages, "procon"), b.questions, b.gold))
    return out


CONFIGS = ("old", "nprobe only", "rescore only", "new")


def configure(dense, plan, config: str) -> None:
    """Set the search knobs of an opened ivfpq ``DenseIndex`` to one configuration."""
    import faiss

    from berds_core.retrieval.index_plan import rescore_min

    ivf = faiss.extract_index_ivf(dense.index)
    nlist = int(ivf.nlist)
    old_nprobe = max(min(nlist, 16), nlist // 16)
    nprobe = plan["nprobe"] if config in ("nprobe only", "new") else old_nprobe
    faiss.ParameterSpace().set_index_parameter(dense.index, "nprobe", int(nprobe))
    dense.nprobe = int(nprobe)
    dense.plan = {**dense.plan, "rescore": rescore_min(dense.ntotal) if config in ("rescore only", "new") else 0}


def timed_search(retriever, texts, k, repeats):
    """(hits per question, median seconds per query over ``repeats`` passes)."""
    per_query = []
    hits = None
    for _ in range(repeats):
        t = time.perf_counter()
        hits = [retriever.search([q], k)[0] for q in texts]
        per_query.append((time.perf_counter() - t) / len(texts))
    return hits, statistics.median(per_query)


def measure(corpus, questions, gold, hits, k):
    from berds_core.eval.evaluation import scores
    from berds_core.runs import question_entry
    from berds_core.runs import label_matrix

    mats = [label_matrix(question_entry(q, corpus, h[:k]), gold=gold) for q, h in zip(questions, hits)]
    s = scores(mats, [k])
    return {"mrecall": np.asarray(s[f"mrecall@{k}"], float), "precision": np.asarray(s[f"precision@{k}"], float)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", default=str(ROOT.parent / "shared" / "data"))
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--out", default=str(ROOT / "bench" / "results"))
    args = ap.parse_args()
    data = Path(args.data)
    if not data.is_dir():
        log(f"no data folder at {data}: nothing to measure")
        return 0
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from berds_core.retrieval import get_retriever

    results = {"configs": list(CONFIGS), "corpora": {}}
    work = Path(tempfile.mkdtemp(prefix="ivf-small-"))
    for name, corpus, questions, gold in corpora(data):
        questions = [q for q in questions if gold.get(q.id)]
        texts = [q.question for q in questions]
        log(f"[{name}] {len(corpus):,} passages, {len(questions)} questions with gold; encoding (flat) ...")
        flat = get_retriever("dense", corpus, progress=False, index="flat")
        ivf = get_retriever("dense", corpus, progress=False, index="ivfpq", index_dir=work / name)
        dense = ivf.inner.dense
        plan = dict(dense.plan)
        row = {"passages": len(corpus), "questions": len(questions), "factory": plan.get("factory"),
               "nlist": int(__import__("faiss").extract_index_ivf(dense.index).nlist), "plan_nprobe": plan["nprobe"],
               "plan_rescore": plan.get("rescore"), "encoding": getattr(flat, "encoding", None), "k": {}}
        for k in (5, 10):
            ref_hits, ref_s = timed_search(flat, texts, k, args.repeats)
            ref = measure(corpus, questions, gold, ref_hits, k)
            at = {"flat": {"mrecall": float(ref["mrecall"].mean()), "precision": float(ref["precision"].mean()),
                           "ms_per_query": 1000 * ref_s}}
            for config in CONFIGS:
                configure(dense, plan, config)
                hits, sec = timed_search(ivf, texts, k, args.repeats)
                got = measure(corpus, questions, gold, hits, k)
                found = [len({r for r, _ in h} & {r for r, _ in f}) / max(1, len(f)) for h, f in zip(hits, ref_hits)]
                d_mr, d_p = got["mrecall"] - ref["mrecall"], got["precision"] - ref["precision"]
                at[config] = {"mrecall": float(got["mrecall"].mean()), "precision": float(got["precision"].mean()),
                              "mrecall_minus_flat": float(d_mr.mean()), "precision_minus_flat": float(d_p.mean()),
                              "questions_mrecall_changed": int((d_mr != 0).sum()),
                              "questions_precision_changed": int((d_p != 0).sum()),
                              "exact_topk_found": float(np.mean(found)), "nprobe": dense.nprobe,
                              "rescored": max(k * dense.refine_factor, dense.rescore),
                              "ms_per_query": 1000 * sec, "ms_ratio_to_flat": sec / ref_s if ref_s else None}
                log(f"[{name}] k={k} {config:12s} MRecall {at[config]['mrecall']:.4f} "
                    f"({at[config]['mrecall_minus_flat']:+.4f}; {at[config]['questions_mrecall_changed']} q changed) "
                    f"exact top-k found {at[config]['exact_topk_found']:.4f}  {at[config]['ms_per_query']:.2f} ms/q "
                    f"(flat {at['flat']['ms_per_query']:.2f})")
            row["k"][str(k)] = at
        results["corpora"][name] = row
    if not results["corpora"]:
        log(f"no development corpus under {data}: nothing to measure")
        return 0
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"ivf_small-{time.strftime('%Y%m%d-%H%M%S')}.json"
    path.write_text(json.dumps(results, indent=1))
    print("| corpus | k | config | nprobe/nlist | re-scored | MRecall (- flat) | q changed | P (- flat) | "
          "exact top-k found | ms/query (x flat) |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for name, row in results["corpora"].items():
        for k, at in row["k"].items():
            for config in CONFIGS:
                c = at[config]
                print(f"| {name} ({row['passages']:,}) | {k} | {config} | {c['nprobe']}/{row['nlist']} | {c['rescored']} | "
                      f"{c['mrecall']:.4f} ({c['mrecall_minus_flat']:+.4f}) | {c['questions_mrecall_changed']} | "
                      f"{c['precision']:.4f} ({c['precision_minus_flat']:+.4f}) | {c['exact_topk_found']:.4f} | "
                      f"{c['ms_per_query']:.2f} ({c['ms_ratio_to_flat']:.2f}x) |")
    log(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
