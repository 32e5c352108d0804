"""A static first stage on development data: ``static``, ``static%N>>reread`` and ``union`` against MiniLM dense
and BM25, the candidate count N chosen out of fold (issue 67).

    python bench/static_first_stage.py --data ../shared/data          # needs `berds models distill` first

Corpora and folds are bench/diversity.py's (``procon``, ``perspectrum``, ``demo``; question-grouped folds,
``devsets.grouped_folds``, seed 0). Rows:

- ``bm25``, ``dense`` (all-MiniLM-L6-v2, the reference), ``static`` (the distilled model alone);
- ``static%N>>reread`` for each N of ``--grid``: the static top N re-ranked by MiniLM's exact cosine (what the
  ``reread`` stage computes; checked against the engine's pipeline on ``--check`` questions per corpus);
- ``static%N>>union>>reread``: the static and the BM25 top N together, re-read;
- the same two with N chosen per fold: on the other folds, the smallest N whose macro MRecall@5 and
  Precision@5 are within ``--tolerance`` of dense's (else the best MRecall@5), applied to the held-out fold.

Per row: MRecall@5, Precision@5 (pooled over questions and macro over corpora) and the first stage's recall
of MiniLM's own top 5 in its top N. Markdown to stdout, JSON to bench/results/static_first_stage.json.
"""
from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from diversity import assign_folds, build_contexts, log, macro, per_question  # noqa: E402

GRID = (10, 20, 30, 50, 100, 200)


def reread(qc, rows: np.ndarray) -> np.ndarray:
    """The candidates ``rows`` (first-stage order) by MiniLM's exact cosine, ties in that order."""
    from berds_core.retrieval.exact import scores

    s = scores(np.asarray(qc.corpus.dense.embeddings)[rows], qc.qv)
    return rows[np.argsort(-s, kind="stable")]


def union(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.array(list(dict.fromkeys(a.tolist() + b.tolist())), dtype=np.int64)


def check_against_engine(qcs, statics, n_per_corpus: int, depth: int) -> int:
    """The bench's re-read equals the engine's ``static%depth>>reread`` on the first questions of each corpus."""
    from berds_core.diversify import Pipeline
    from berds_core.experiment import Searched, rankings

    checked = 0
    for name, static in statics.items():
        mine = [qc for qc in qcs if qc.corpus.name == name][:n_per_corpus]
        got = rankings([qc.question for qc in mine], Pipeline.parse(f"static%{depth}>>reread"), 5,
                       Searched(mine[0].corpus.corpus, static))
        for qc, hits in zip(mine, got):
            want = reread(qc, qc.static_rows[:depth])[:5]
            assert list(hits.rows) == want.tolist(), (qc.question.id, list(hits.rows), want.tolist())
            checked += 1
    return checked


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default=str(ROOT.parent / "shared" / "data"))
    ap.add_argument("--corpora", default="procon,perspectrum,demo")
    ap.add_argument("--folds", type=int, default=5)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--grid", default=",".join(map(str, GRID)))
    ap.add_argument("--tolerance", type=float, default=0.01, help="how far below dense a chosen N may be (macro)")
    ap.add_argument("--check", type=int, default=10, help="questions per corpus checked against the engine")
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "static_first_stage.json"))
    args = ap.parse_args(argv)
    data = Path(args.data)
    if not data.exists():
        print(f"skip: {data} not found", file=sys.stderr)
        return 0
    from berds_core.datasets.devsets import dev_bundles
    from berds_core.embeddings.static import default_static_model
    from berds_core.embeddings.static_folder import static_meta
    from berds_core.retrieval import get_retriever

    grid = sorted(int(x) for x in args.grid.split(","))
    bundles, missing = dev_bundles(data, args.corpora.split(","))
    qcs = build_contexts(bundles, progress=False)
    fold_info = assign_folds(qcs, args.folds, args.seed)
    statics, timing = {}, {}
    for name in bundles:
        mine = [qc for qc in qcs if qc.corpus.name == name]
        corpus = mine[0].corpus.corpus
        t0 = time.perf_counter()
        static = statics[name] = get_retriever("static", corpus, progress=False)
        t1 = time.perf_counter()
        hits = static.search([qc.question.question for qc in mine], max(grid))
        t2 = time.perf_counter()
        for qc, h in zip(mine, hits):
            qc.static_rows = np.asarray(h.rows, dtype=np.int64)
        timing[name] = {"passages": len(corpus), "questions": len(mine), "static_encode_index_s": round(t1 - t0, 3),
                        "static_search_s": round(t2 - t1, 3)}
        log(f"{name}: static index {t1 - t0:.1f}s for {len(corpus)} passages")
    checked = check_against_engine(qcs, statics, args.check, grid[len(grid) // 2])

    rows: dict[str, list] = {"BM25": [], "MiniLM dense": [], "static alone": []}
    for n in grid:
        rows[f"static%{n}>>reread"] = []
        rows[f"static%{n}>>union>>reread"] = []
    recall = {n: [] for n in grid}
    for qc in qcs:
        rows["BM25"].append(per_question(qc, qc.bm25_rows[:10]))
        rows["MiniLM dense"].append(per_question(qc, qc.dense_rows[:10]))
        rows["static alone"].append(per_question(qc, qc.static_rows[:10]))
        top5 = set(qc.dense_rows[:5].tolist())
        for n in grid:
            cand = qc.static_rows[:n]
            rows[f"static%{n}>>reread"].append(per_question(qc, reread(qc, cand)[:10]))
            rows[f"static%{n}>>union>>reread"].append(per_question(qc, reread(qc, union(cand, qc.bm25_rows[:n]))[:10]))
            recall[n].append(len(top5 & set(cand.tolist())) / max(1, len(top5)))
    scores = {k: np.array(v) for k, v in rows.items()}
    corpora = np.array([qc.corpus.name for qc in qcs])
    folds = np.array([qc.fold for qc in qcs])
    everyone = np.arange(len(qcs))

    chosen = {}
    for kind in ("reread", "union>>reread"):
        names = [f"static%{n}>>{kind}" for n in grid]
        oof = np.zeros_like(scores["MiniLM dense"])
        picks = []
        for f in sorted(set(folds)):
            train, test = np.flatnonzero(folds != f), np.flatnonzero(folds == f)
            ref = macro(scores["MiniLM dense"], corpora, train)
            means = [macro(scores[nm], corpora, train) for nm in names]
            ok = [i for i, m in enumerate(means) if m[0] >= ref[0] - args.tolerance and m[1] >= ref[1] - args.tolerance]
            i = ok[0] if ok else int(np.argmax([m[0] for m in means]))
            picks.append(grid[i])
            oof[test] = scores[names[i]][test]
        label = f"static%N>>{kind}, N out of fold"
        scores[label] = oof
        chosen[label] = {"per_fold": picks, "on_all": None}
        ref = macro(scores["MiniLM dense"], corpora, everyone)
        means = [macro(scores[nm], corpora, everyone) for nm in names]
        ok = [i for i, m in enumerate(means) if m[0] >= ref[0] - args.tolerance and m[1] >= ref[1] - args.tolerance]
        chosen[label]["on_all"] = grid[ok[0]] if ok else grid[int(np.argmax([m[0] for m in means]))]

    table = {}
    for name, s in scores.items():
        table[name] = {"pooled": dict(zip(("mrecall@5", "precision@5", "mrecall@10", "precision@10"),
                                          np.round(s.mean(axis=0), 4).tolist())),
                       "macro": dict(zip(("mrecall@5", "precision@5", "mrecall@10", "precision@10"),
                                         np.round(macro(s, corpora, everyone), 4).tolist())),
                       "per_corpus": {c: np.round(s[corpora == c].mean(axis=0)[:2], 4).tolist()
                                      for c in sorted(set(corpora))}}
    res = {"protocol": "question-grouped CV (bench/diversity.py's folds); N chosen on the other folds",
           "folds": fold_info, "grid": grid, "tolerance": args.tolerance, "static_model": static_meta(
               default_static_model()), "cpu": platform.processor() or platform.machine(), "checked_against_engine":
           checked, "table": table, "chosen": chosen,
           "first_stage_recall_of_dense_top5": {n: round(float(np.mean(v)), 4) for n, v in recall.items()},
           "timing": timing, "missing": missing}
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(res, indent=2) + "\n")
    print(f"| row | MRecall@5 | Precision@5 | macro MRecall@5 | macro Precision@5 | "
          + " | ".join(f"{c} MR@5 / P@5" for c in sorted(set(corpora))) + " |")
    print("|---|---|---|---|---|" + "---|" * len(set(corpora)))
    for name, t in table.items():
        per = " | ".join(f"{a:.3f} / {b:.3f}" for a, b in t["per_corpus"].values())
        print(f"| {name} | {t['pooled']['mrecall@5']:.3f} | {t['pooled']['precision@5']:.3f} | "
              f"{t['macro']['mrecall@5']:.3f} | {t['macro']['precision@5']:.3f} | {per} |")
    print("\nfirst stage's recall of MiniLM's top 5 in its top N: "
          + ", ".join(f"N={n}: {v:.3f}" for n, v in res["first_stage_recall_of_dense_top5"].items()))
    print(f"N chosen per fold: {json.dumps(chosen)}; checked against the engine: {checked} questions")
    return 0


if __name__ == "__main__":
    sys.exit(main())
