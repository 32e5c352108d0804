"""Diversity methods on a gold-labelled debate corpus, and the MMR kernel's speed.

    python bench/diversity_methods.py ../shared/data/debate-sites/procon.json [--demo] [--repeat 200]

Corpus: every argument passage of every claim in the file (load_debate_sites);
each question is scored with the gold labels (perspective 0 = the claim, 1 =
its negation). Rows: BM25 and dense (packaged MiniLM), each plain, with MMR
(lambda 0.5 ... 0.99), with query expansion (offline source; the oracle row
uses the gold perspectives and is an upper bound only), with the coverage
re-ranker, xQuAD and PM-2 (offline aspects; the oracle rows use the gold
perspectives and are upper bounds only; P(d | aspect) from the retriever
on the expanded queries; λ chosen out of fold: question-grouped 5-fold
cross-validation, each fold's λ picked on the other folds' questions by
MRecall@5, then Precision@5), and the ``diverse`` preset. Columns: MRecall@5,
Precision@5, MRecall@10, Precision@10, α-nDCG@5 and StRecall@5 (ndeval via
ir_measures on the gold subtopic qrels), and the preset's paired difference
against plain dense with a bootstrap interval; xQuAD / PM-2 / the coverage
re-ranker / QE against plain dense with Holm-corrected randomisation tests.

Timing: the MMR kernel (100 candidates, k = 10, the real candidates' MiniLM
embeddings) against the textbook Python loop on the same inputs; medians
over ``--repeat`` calls per question. Embedding time is not included (it is
shared by both and cached per passage).

Markdown goes to stdout, JSON to bench/results/. Skips cleanly (exit 0) when
the data file is missing.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

K = 10
LAMBDAS = (0.5, 0.75, 0.9, 0.95, 0.99)


def configs(ret_kind: str):
    """(row name, pipeline spec) of the rows every retriever gets (docs/pipelines.md)."""
    yield "plain", "none"
    for lam in LAMBDAS:
        yield f"MMR λ={lam}", f"mmr(lam={lam})"
    yield "QE (offline)", "qe(source=offline)"
    yield "QE (oracle, upper bound)", "qe(source=oracle)"
    yield "coverage re-ranker (offline)", "coverage(source=offline)"


def run_config(bundle, corpus, retriever, spec, gold):
    """Scores of the pipeline ``spec`` (a spec string or a preset name) over the retriever in use."""
    from berds_core.diversify import as_pipeline, diversify
    from berds_core.eval.diversity import diversity_scores, subtopic_qrels
    from berds_core.eval.evaluation import scores
    from berds_core.runs import label_matrix

    mats, secs, entries = [], [], []
    pipeline = as_pipeline(spec)
    for q in bundle.questions:
        t0 = time.perf_counter()
        hits = diversify(q, corpus, retriever, pipeline, K)
        secs.append(time.perf_counter() - t0)
        entry = {"id": q.id, "perspectives": q.perspectives,
                 "ctxs": [{"id": corpus[r].id} for r, _ in hits]}
        entries.append(entry)
        mats.append(label_matrix(entry, gold=gold))
    s = scores(mats, (5, 10))
    s.update(diversity_scores(entries, subtopic_qrels([entries], gold=gold), (5,)))  # alpha_ndcg@5, strecall@5, ...
    return s, statistics.median(secs)


FOLDS = 5
ASPECT_SOURCES = {"offline": "offline", "oracle": "oracle aspects, upper bound"}


def oof_lambda(per_lam: dict, n: int, folds: int = FOLDS) -> tuple[dict, list[float]]:
    """Out-of-fold scores: questions split into ``folds`` groups (one question = one group); each fold
    is scored at the λ that maximises MRecall@5 (then Precision@5, then the smaller λ) on the other folds."""
    from sklearn.model_selection import GroupKFold

    idx = np.arange(n)
    out = {m: np.zeros(n) for m in next(iter(per_lam.values()))}
    chosen = []
    for train, test in GroupKFold(n_splits=min(folds, n)).split(idx, groups=idx):
        lam = max(per_lam, key=lambda l: (per_lam[l]["mrecall@5"][train].mean(),
                                          per_lam[l]["precision@5"][train].mean(), -l))
        chosen.append(lam)
        for m in out:
            out[m][test] = per_lam[lam][m][test]
    return out, chosen


def explicit_rows(bundle, corpus, kind, retriever, progress, rows, per_q):
    """xQuAD and PM-2 rows with out-of-fold λ (offline aspects, and the gold perspectives as an upper bound;
    retriever P(d | aspect))."""
    from berds_core.diversify.methods import METHOD_TABLE
    from berds_core.diversify.xquad import LAMBDA_GRID
    from berds_core.retrieval.caching import SharedSearch

    # the re-rankers with explicit aspects (xQuAD, PM-2): every registered re-ranker but the coverage one
    explicit = {m.name: m.label.removeprefix("+ ") for m in METHOD_TABLE if m.reranks and m.stage != "coverage"}
    for (method, label), source in ((m, src) for m in explicit.items() for src in ASPECT_SOURCES):
        shared = SharedSearch(retriever)  # the λ grid repeats the same searches: each query searched once
        per_lam, secs = {}, []
        for lam in LAMBDA_GRID:
            per_lam[lam], med = run_config(bundle, corpus, shared, f"{method}(lam={lam},source={source})",
                                           bundle.gold)
            secs.append(med)
        s, chosen = oof_lambda(per_lam, len(bundle.questions))
        full = max(per_lam, key=lambda l: (per_lam[l]["mrecall@5"].mean(), per_lam[l]["precision@5"].mean(), -l))
        name = f"{kind} {label} ({ASPECT_SOURCES[source]}, λ out of fold)"
        per_q[name] = s
        rows.append({"config": name, "retriever": kind, "method": method, "source": source,
                     "lam_per_fold": chosen, "lam_all_questions": full,
                     "median_s_per_question": secs[0],  # the first λ pass: searches not cached yet
                     **{m: float(v.mean()) for m, v in s.items()}})
        progress(rows[-1])


def table_rows(bundle, corpus, retrievers, progress):
    from berds_core.diversify import get_preset

    rows = []
    per_q = {}
    for kind, ret in retrievers.items():
        for label, spec in configs(kind):
            s, med = run_config(bundle, corpus, ret, spec, bundle.gold)
            name = f"{kind} {label}"
            per_q[name] = s
            rows.append({"config": name, "retriever": kind, "pipeline": spec, "median_s_per_question": med,
                         **{m: float(v.mean()) for m, v in s.items()}})
            progress(rows[-1])
        explicit_rows(bundle, corpus, kind, ret, progress, rows, per_q)
    preset = get_preset("diverse")
    s, med = run_config(bundle, corpus, retrievers[preset.retriever], "diverse", bundle.gold)
    per_q["preset diverse"] = s
    rows.append({"config": "preset diverse", "retriever": preset.retriever, "method": "preset",
                 "preset": str(preset), "median_s_per_question": med, **{m: float(v.mean()) for m, v in s.items()}})
    progress(rows[-1])
    return rows, per_q


def markdown(rows, title):
    out = [f"### {title}", "",
           "| configuration | MRecall@5 | Precision@5 | MRecall@10 | Precision@10 | α-nDCG@5 | StRecall@5 | "
           "median s/question |",
           "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lam = f" (λ per fold {', '.join(f'{x:g}' for x in r['lam_per_fold'])})" if "lam_per_fold" in r else ""
        out.append(f"| {r['config']}{lam} | {r['mrecall@5']:.3f} | {r['precision@5']:.3f} | {r['mrecall@10']:.3f} | "
                   f"{r['precision@10']:.3f} | {r['alpha_ndcg@5']:.3f} | {r['strecall@5']:.3f} | "
                   f"{r['median_s_per_question']:.4f} |")
    return "\n".join(out)


def time_mmr(bundle, corpus, retriever, repeat):
    from berds_core.diversify import mmr, mmr_reference
    from berds_core.diversify.vectors import passage_embeddings

    fast, slow, same = [], [], 0
    questions = bundle.questions
    for q in questions:
        hits = retriever.search([q.question], 100)[0]
        rows = [r for r, _ in hits]
        sc = np.array([s for _, s in hits])
        emb = passage_embeddings(corpus, rows)
        t = []
        for _ in range(repeat):
            t0 = time.perf_counter()
            a = mmr(sc, emb, K, 0.75)
            t.append(time.perf_counter() - t0)
        fast.append(statistics.median(t))
        t = []
        for _ in range(max(3, repeat // 20)):
            t0 = time.perf_counter()
            b = mmr_reference(sc, emb, K, 0.75)
            t.append(time.perf_counter() - t0)
        slow.append(statistics.median(t))
        same += a == b
    f, s = statistics.median(fast), statistics.median(slow)
    return {"candidates": 100, "k": K, "lam": 0.75, "questions": len(questions),
            "median_ms_vectorised": f * 1e3, "median_ms_python_loop": s * 1e3, "speedup": s / f,
            "same_order": same}


def paired(per_q, a, b):
    from berds_core.eval.evaluation import paired_comparison

    return {m: paired_comparison(per_q[a][m], per_q[b][m], n_boot=2000, seed=0)
            for m in ("mrecall@5", "precision@5", "mrecall@10", "precision@10")}


def evaluate_bundle(bundle, args, label):
    from berds_core.corpora.memory import corpus_from_passages
    from berds_core.retrieval import CORPUS_RETRIEVERS, get_retriever

    corpus = corpus_from_passages(bundle.passages, bundle.name)
    retrievers = {kind: get_retriever(kind, corpus, progress=not args.quiet) for kind in CORPUS_RETRIEVERS}

    def progress(row):
        if not args.quiet:
            print(f"  {row['config']}: MR@5 {row['mrecall@5']:.3f} P@5 {row['precision@5']:.3f}", file=sys.stderr)

    rows, per_q = table_rows(bundle, corpus, retrievers, progress)
    return {"dataset": label, "questions": len(bundle.questions), "passages": len(corpus), "rows": rows,
            "preset_vs_dense": paired(per_q, "dense plain", "preset diverse"),
            "coverage_vs_dense": paired(per_q, "dense plain", "dense coverage re-ranker (offline)"),
            "significance_vs_dense": significance(per_q)}, corpus, retrievers


SIG_ROWS = ("dense QE (offline)", "dense coverage re-ranker (offline)", "dense xQuAD (offline, λ out of fold)",
            "dense PM-2 (offline, λ out of fold)")
SIG_METRICS = ("mrecall@5", "precision@5", "alpha_ndcg@5")


def significance(per_q):
    """Each diversifier against plain dense: randomisation tests, Holm-corrected per metric across them."""
    from berds_core.eval.significance import compare

    runs = {"dense plain": {m: per_q["dense plain"][m] for m in SIG_METRICS}}
    runs.update({name: {m: per_q[name][m] for m in SIG_METRICS} for name in SIG_ROWS if name in per_q})
    return compare(runs, baseline="dense plain", n_resamples=20000)


def print_significance(sig):
    print(f"\nagainst dense plain (paired randomisation test, {sig['n_resamples']} sign patterns, "
          f"{sig['correction']}-corrected per metric across {len(sig['comparisons'])} comparisons):")
    for c in sig["comparisons"]:
        parts = [f"{m} {r['diff']:+.3f} [{r['ci'][0]:+.3f}, {r['ci'][1]:+.3f}] p={r['p']:.4f}{r['stars']}"
                 for m, r in c["metrics"].items()]
        print(f"  {c['b']}: " + "; ".join(parts))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("procon_json", help="debate-sites JSON (e.g. ../shared/data/debate-sites/procon.json)")
    ap.add_argument("--demo", action="store_true", help="also run the packaged demo bundle (a check against overfitting)")
    ap.add_argument("--repeat", type=int, default=200, help="MMR kernel calls per question for the timing")
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "diversity_methods.json"))
    ap.add_argument("--quiet", action="store_true")
    args = ap.parse_args(argv)
    path = Path(args.procon_json)
    if not path.exists():
        print(f"skip: {path} not found", file=sys.stderr)
        return 0
    from berds_core.datasets import load_debate_sites, load_demo

    results = {"k": K}
    res, corpus, retrievers = evaluate_bundle(load_debate_sites(path), args, path.name)
    results["procon"] = res
    print(markdown(res["rows"], f"{path.name}: {res['questions']} questions, {res['passages']} passages (gold labels)"))
    for name, cmp in (("preset", res["preset_vs_dense"]), ("coverage re-ranker", res["coverage_vs_dense"])):
        print(f"\n{name} - dense plain (paired bootstrap 95% CI, 2000 resamples):")
        for m, c in cmp.items():
            print(f"  {m}: {c['diff']:+.3f} [{c['ci'][0]:+.3f}, {c['ci'][1]:+.3f}]  p={c['p_value']:.3f}")
    print_significance(res["significance_vs_dense"])
    bundle = load_debate_sites(path)
    t = time_mmr(bundle, corpus, retrievers["dense"], args.repeat)
    results["mmr_timing"] = t
    print(f"\nMMR kernel, {t['candidates']} candidates, k={t['k']}, {t['questions']} questions: median "
          f"{t['median_ms_vectorised']:.3f} ms vectorised vs {t['median_ms_python_loop']:.3f} ms Python loop "
          f"({t['speedup']:.0f}x; same order on {t['same_order']}/{t['questions']})")
    if args.demo:
        demo = load_demo()
        if demo.gold:
            dres, _, _ = evaluate_bundle(demo, args, "demo")
            results["demo"] = dres
            print()
            print(markdown(dres["rows"], f"demo: {dres['questions']} questions, {dres['passages']} passages"))
            print_significance(dres["significance_vs_dense"])
    from berds_core.files.jsonio import atomic_write

    with atomic_write(args.out) as fh:
        json.dump(results, fh, indent=1, ensure_ascii=False)
    print(f"\nJSON: {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
