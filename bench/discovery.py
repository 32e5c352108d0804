"""Perspective discovery on PERSPECTRUM dev (T1 / T2 / T3), and the ``pool`` QE source on procon.

    python bench/discovery.py --data ../shared/data/perspectrum [--llm SPEC] \\
        [--procon ../shared/data/debate-sites/procon.json] [--limit N] [--out bench/results/discovery.json]

**PERSPECTRUM dev** (139 claims; the heads and knobs never read dev: they
were fitted on train-A / train-B by ``scripts/train_discovery.py``). The stance
model (``berds_core.stance``) is trained on every development source, dev
claims included, so here each claim is read by the stance model of its
cross-validation fold (``--stance-cv``), which never saw it: every stance
figure is out of fold. Rows, all over the same claims and pool in this run:

- ``always support``: the T2 baseline (every gold pair labelled support);
- ``BM25 top-K`` / ``dense top-K``: the pool's top K sentences for the claim
  (K tuned on train-B), stance always support, no clustering;
- ``offline, relevance heads``: relevance and equivalence from the heads over
  frozen MiniLM embeddings, stance from the stance model (knobs tuned on
  train-B for this variant);
- ``offline (shipped)``: the pipeline as shipped, when its relevance scorer is
  not the heads' (the scorer that won on train-B);
- ``llm`` (with ``--llm``): yes/no answers of that generator.

Columns: T1 precision / recall / F1 (macro over claims), T2 accuracy and F1
per class, T3 pairwise precision / recall / F1 (micro), overall = T1 F1 x T2
accuracy, and speed: the median seconds per claim of ``discover`` (the claim's
list only; the gold pairs' labelling is not timed) and claims/s, with the ratio
to BM25 top-K measured in the same run.

**procon QE** (``--procon``): MRecall@5 / Precision@5 of query expansion with
the ``offline`` yes/no source against the ``pool`` source, BM25 and dense, gold
labels. procon.json's debates are PERSPECTRUM's procon claims and 664 of its
960 argument titles are verbatim pool sentences, so the pool would hand the
question its own gold titles. The **leak filter** removes from the pool, for
every question: sentences equal (normalised) to any procon.json argument
title, sentences whose MiniLM cosine to any title is >= 0.85, every pool
sentence whose PERSPECTRUM ``source`` is procon, and every sentence of the
train/dev clusters of PERSPECTRUM claims matching a procon claim (same
normalised text or cosine >= 0.9). The unfiltered pool is reported too, as the
size of the leak, never as a result.

Markdown to stdout, JSON to ``--out``. Skips cleanly (exit 0) without the data.
"""
from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def log(msg: str) -> None:
    sys.stderr.write(f"[{time.strftime('%H:%M:%S')}] {msg}\n")
    sys.stderr.flush()


# --------------------------------------------------------------------------- PERSPECTRUM dev

def singleton_labels(claim, stance: str = "support") -> list[dict]:
    return [{"pid": pid, "stance": stance, "cluster": n}
            for n, pid in enumerate(p for cl in claim.gold.clusters for p in cl)]


def timed_lists(fn, claims):
    """(lists, per-claim seconds) of ``fn(claim) -> perspectives``."""
    out, secs = [], []
    for c in claims:
        t0 = time.perf_counter()
        out.append(fn(c))
        secs.append(time.perf_counter() - t0)
    return out, secs


def retrieval_row(index, claims, retriever, K):
    ids, texts = index.pool.ids, index.pool.texts

    def fn(c):
        return [{"pid": ids[r], "text": texts[r], "stance": "support", "cluster": n}
                for n, (r, _) in enumerate(retriever.search([c.text], K)[0])]

    lists, secs = timed_lists(fn, claims)
    preds = {c.id: {"perspectives": l, "on_gold": singleton_labels(c)} for c, l in zip(claims, lists)}
    return preds, secs


def discoverer_row(make, claims, model_for):
    """Predictions and per-claim seconds of ``make(stance_model)``'s Discoverer, each claim read with the
    stance model of its cross-validation fold (one Discoverer per fold)."""
    discs: dict = {}
    lists, secs, preds = [], [], {}
    for c in claims:
        m = model_for(c)
        if id(m) not in discs:
            discs[id(m)] = make(m)
        disc = discs[id(m)]
        t0 = time.perf_counter()
        found = disc.discover(c.text)
        secs.append(time.perf_counter() - t0)
        preds[c.id] = {"perspectives": found,
                       "on_gold": disc.label(c.text, [p for cl in c.gold.clusters for p in cl])}
    return preds, secs


def oof_stance_models(args):
    """Claim id (PERSPECTRUM ``cId`` or a bundle question id) -> the stance model of its cross-validation fold
    (``scripts/train_stance.py``), embedding store off so the speed columns include the stance model's work."""
    sys.path.insert(0, str(ROOT / "scripts"))
    import train_stance

    fold_of, models = train_stance.fold_stance_models(Path(args.stance_cv))
    for m in models.values():
        m.store = False

    def model_for(c):
        key = c if isinstance(c, str) else f"perspectrum-{c.id}"
        return models[fold_of[key]]

    return model_for


def perspectrum_table(args):
    from dataclasses import replace

    from berds_core.discovery import Discoverer, Knobs, open_pool
    from berds_core.discovery.claims import load_claims
    from berds_core.discovery.evaluate import evaluate_predictions
    from berds_core.discovery.pipeline import OfflineModels

    data = Path(args.data)
    claims = load_claims(data / "perspectrum_with_answers_v1.0.train_dev.json", split="dev")
    if args.limit:
        claims = claims[:args.limit]
    gold = {c.id: c.gold for c in claims}
    index = open_pool(data / "perspective_pool_v1.0.json", progress=not args.quiet)
    model_for = oof_stance_models(args)
    shipped = OfflineModels(stance_model=model_for(claims[0]))
    rep = shipped.report
    log(f"dev: {len(claims)} claims, pool {len(index)} sentences; shipped choice {shipped.choice}")
    rows = []

    def add(name, preds, secs, note=""):
        res = evaluate_predictions(preds, gold)
        res.update(name=name, note=note)
        if secs is not None:
            res["median_s_per_claim"] = statistics.median(secs)
            res["claims_per_s"] = len(secs) / sum(secs) if sum(secs) else None
        rows.append(res)
        t1, t2 = res["t1"], res["t2"]
        log(f"{name}: T1 F1 {t1['f1']:.3f}  T2 acc {t2['accuracy']:.3f}  T3 F1 {res['t3']['f1']:.3f}  "
            f"overall {res['overall']:.3f}")

    # the T2 baseline: nothing discovered, every gold pair 'support', no clusters
    add("always support", {c.id: {"perspectives": [], "on_gold": singleton_labels(c)} for c in claims}, None,
        "T2 baseline; returns no perspectives")
    for name, ret in (("bm25", index.bm25), ("dense", index.dense)):
        K = rep["baselines"][name]["k"]
        preds, secs = retrieval_row(index, claims, ret, K)
        add(f"{'BM25' if name == 'bm25' else 'dense'} top-{K}", preds, secs,
            "K tuned on train-B; stance always support; no clustering")
    heads_knobs = Knobs(**{**shipped.knobs.__dict__, **rep["train_b"]["t1_tuned"]["heads"]["knobs"]})
    variants = [("offline, relevance heads",
                 lambda m: Discoverer(index, "offline", choice={"relevance": "heads"},
                                      knobs=replace(heads_knobs, stance_threshold=m.threshold("discovery")),
                                      stance_model=m),
                 "relevance: logistic head over retrieval features; stance: the stance model; knobs tuned on train-B")]
    if shipped.choice["relevance"] != "heads":
        variants.append(("offline (shipped)", lambda m: Discoverer(index, "offline", stance_model=m),
                         f"relevance {shipped.choice['relevance']}, stance: the stance model; knobs tuned on train-B"))
    for name, make, note in variants:
        log(f"running {name}")
        preds, secs = discoverer_row(make, claims, model_for)
        add(name, preds, secs, note + " (stance model of each claim's fold: out of fold)")
    if args.llm:
        disc = Discoverer(index, "llm", llm=args.llm)
        preds, secs = discoverer_row(lambda m: disc, claims, lambda c: None)
        add(f"llm {args.llm}", preds, secs, "yes/no first-token probabilities; decisions at 0.5")
    base = next(r for r in rows if r["name"].startswith("BM25"))
    for r in rows:
        if r.get("claims_per_s") and base.get("claims_per_s"):
            r["speed_vs_bm25"] = r["median_s_per_claim"] / base["median_s_per_claim"]
    return {"claims": len(claims), "pool": len(index), "choice": shipped.choice,
            "knobs": shipped.knobs.__dict__, "train_b_report": rep.get("train_b"), "rows": rows}


def fmt(x, nd=3):
    return "–" if x is None else f"{x:.{nd}f}"


def perspectrum_markdown(res) -> str:
    out = [f"### PERSPECTRUM dev: {res['claims']} claims, pool of {res['pool']} sentences", "",
           "| method | T1 P | T1 R | T1 F1 | T2 acc | T2 F1 support | T2 F1 undermine | T3 P | T3 R | T3 F1 | "
           "overall | median s/claim | claims/s |",
           "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in res["rows"]:
        t1, t2, t3 = r["t1"], r["t2"], r["t3"]
        no_t1 = r["name"] == "always support"
        out.append(f"| {r['name']} | {fmt(None if no_t1 else t1['precision'])} | {fmt(None if no_t1 else t1['recall'])} | "
                   f"{fmt(None if no_t1 else t1['f1'])} | {fmt(t2['accuracy'])} | {fmt(t2['support']['f1'])} | "
                   f"{fmt(t2['undermine']['f1'])} | {fmt(t3['precision'])} | {fmt(t3['recall'])} | {fmt(t3['f1'])} | "
                   f"{fmt(None if no_t1 else r['overall'])} | {fmt(r.get('median_s_per_claim'), 4)} | "
                   f"{fmt(r.get('claims_per_s'), 2)} |")
    return "\n".join(out)


# --------------------------------------------------------------------------- procon QE

def _norm(s: str) -> str:
    return re.sub(r"\W+", " ", s.lower()).strip()


def leak_filter(index, procon_doc, perspectrum_dir: Path, cos_title: float = 0.85, cos_claim: float = 0.9):
    """Pool rows to hide from every procon question, and why (counts)."""
    pool = index.pool
    titles = [a.get("perspective_title", "") for q in procon_doc for key in ("perspectives_for", "perspectives_against")
              for a in q.get(key, [])]
    titles = [t for t in titles if t.strip()]
    norm_titles = {_norm(t) for t in titles}
    E = np.asarray(index.embeddings)
    exact = {r for r, t in enumerate(pool.texts) if _norm(t) in norm_titles}
    T = index.encode(titles)
    near = set(np.flatnonzero((E @ T.T).max(axis=1) >= cos_title).tolist())
    src = set()
    pool_json = perspectrum_dir / "perspective_pool_v1.0.json"
    if pool_json.exists():
        for p in json.loads(pool_json.read_text()):
            if p.get("source") == "procon" and str(p["pId"]) in pool._row_of:
                src.add(pool.index_of(str(p["pId"])))
    claims_file = perspectrum_dir / "perspectrum_with_answers_v1.0.train_dev.json"
    clusters = set()
    matched_claims = 0
    if claims_file.exists():
        pc = json.loads(claims_file.read_text())
        procon_claims = [q["claim_title"] for q in procon_doc]
        P = index.encode(procon_claims)
        C = index.encode([c["text"] for c in pc])
        sims = C @ P.T
        pnorm = {_norm(x) for x in procon_claims}
        for c, s in zip(pc, sims):
            if _norm(c["text"]) in pnorm or s.max() >= cos_claim:
                matched_claims += 1
                for cl in c["perspectives"]:
                    for pid in cl["pids"]:
                        if str(pid) in pool._row_of:
                            clusters.add(pool.index_of(str(pid)))
    rows = exact | near | src | clusters
    return rows, {"titles": len(titles), "exact_title": len(exact), "near_title_cos>=%.2f" % cos_title: len(near),
                  "source_procon": len(src), "matched_perspectrum_claims": matched_claims,
                  "their_cluster_sentences": len(clusters), "excluded_total": len(rows), "pool": len(pool)}


def procon_qe(args):
    from berds_core.corpora.memory import corpus_from_passages
    from berds_core.datasets import load_debate_sites
    from berds_core.discovery import Discoverer, claim_of, open_pool
    from berds_core.diversify import Using, diversify
    from berds_core.eval.evaluation import paired_comparison, scores
    from berds_core.retrieval import get_retriever
    from berds_core.runs import label_matrix

    path = Path(args.procon)
    bundle = load_debate_sites(path)
    corpus = corpus_from_passages(bundle.passages, bundle.name)
    data = Path(args.data)
    index = open_pool(data / "perspective_pool_v1.0.json", progress=not args.quiet)
    excluded, counts = leak_filter(index, json.loads(path.read_text()), data)
    log(f"procon leak filter: {counts}")
    model_for = oof_stance_models(args)  # each procon question with the stance model that never saw it
    discs: dict = {}
    filtered, leaky = [], []
    t0 = time.perf_counter()
    for q in bundle.questions:
        m = model_for(q.id)
        disc = discs.setdefault(id(m), Discoverer(index, "offline", stance_model=m))
        filtered.append([p["text"] for p in disc.discover(claim_of(q.question), exclude=excluded)])
    disc_s = time.perf_counter() - t0
    for q in bundle.questions:
        disc = discs[id(model_for(q.id))]
        leaky.append([p["text"] for p in disc.discover(claim_of(q.question))])
    claims = bundle.questions
    from berds_core.diversify.facets import offline_perspectives
    from berds_core.retrieval import CORPUS_RETRIEVERS

    res = {"questions": len(bundle.questions), "passages": len(corpus), "leak_filter": counts,
           "discovery_seconds_per_question": disc_s / len(claims), "rows": [], "paired": {},
           "pool_perspectives_per_question": float(np.mean([len(x) for x in filtered])),
           "examples": [{"question": q.question, "pool": f[:4]} for q, f in zip(bundle.questions[:3], filtered)]}
    for kind in CORPUS_RETRIEVERS:
        ret = get_retriever(kind, corpus, progress=not args.quiet)
        offline = [offline_perspectives(q.question, corpus=corpus, retriever=ret) for q in bundle.questions]
        configs = [("plain", None), ("QE offline (yes/no + facets)", offline),
                   ("QE pool (leak-filtered)", filtered), ("QE pool (unfiltered: leaks gold titles)", leaky)]
        per_q = {}
        for name, persp in configs:
            mats = []
            for n, q in enumerate(bundle.questions):
                if persp is None:
                    hits = diversify(q, corpus, ret, "none", 10)
                else:
                    hits = diversify(q, corpus, ret, "qe", 10, using=Using(perspectives=persp[n]))
                entry = {"id": q.id, "perspectives": q.perspectives, "ctxs": [{"id": corpus[r].id} for r, _ in hits]}
                mats.append(label_matrix(entry, gold=bundle.gold))
            s = scores(mats, (5, 10))
            per_q[name] = s
            res["rows"].append({"retriever": kind, "config": name, **{m: float(v.mean()) for m, v in s.items()}})
            log(f"procon {kind} {name}: MR@5 {s['mrecall@5'].mean():.3f} P@5 {s['precision@5'].mean():.3f}")
        res["paired"][kind] = {m: paired_comparison(per_q["QE offline (yes/no + facets)"][m],
                                                    per_q["QE pool (leak-filtered)"][m], n_boot=2000, seed=0)
                               for m in ("mrecall@5", "precision@5")}
    return res


def procon_markdown(res) -> str:
    out = [f"### procon.json: {res['questions']} questions, {res['passages']} passages (gold labels)", "",
           f"Leak filter: {res['leak_filter']}", "",
           "| retriever | configuration | MRecall@5 | Precision@5 | MRecall@10 | Precision@10 |",
           "|---|---|---|---|---|---|"]
    for r in res["rows"]:
        out.append(f"| {r['retriever']} | {r['config']} | {r['mrecall@5']:.3f} | {r['precision@5']:.3f} | "
                   f"{r['mrecall@10']:.3f} | {r['precision@10']:.3f} |")
    for kind, cmp in res["paired"].items():
        for m, c in cmp.items():
            out.append(f"\n{kind}: pool (filtered) - offline, {m}: {c['diff']:+.3f} "
                       f"[{c['ci'][0]:+.3f}, {c['ci'][1]:+.3f}] p={c['p_value']:.3f} "
                       f"(wins {c['wins']}, losses {c['losses']})")
    return "\n".join(out)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", default=str(ROOT.parent / "shared" / "data" / "perspectrum"),
                    help="PERSPECTRUM folder (train_dev claims, pool, split)")
    ap.add_argument("--llm", default=None, help="also run the LLM method with this generator spec")
    ap.add_argument("--procon", default=None, help="debate-sites procon.json: also compare the QE sources")
    ap.add_argument("--no-dev", action="store_true", help="skip the PERSPECTRUM dev table")
    ap.add_argument("--limit", type=int, default=0, help="only the first N dev claims (a quick check)")
    ap.add_argument("--stance-cv", default=str(ROOT / "bench" / "results" / "stance_cv"),
                    help="the stance model's cross-validation folder (scripts/train_stance.py --work): each claim is "
                         "read by the stance model of its fold")
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "discovery.json"))
    ap.add_argument("--quiet", action="store_true")
    args = ap.parse_args(argv)
    data = Path(args.data)
    if not (data / "perspectrum_with_answers_v1.0.train_dev.json").exists():
        print(f"skip: PERSPECTRUM not found under {data}", file=sys.stderr)
        return 0
    results = {}
    if not args.no_dev:
        results["perspectrum_dev"] = perspectrum_table(args)
        print(perspectrum_markdown(results["perspectrum_dev"]))
    if args.procon:
        if Path(args.procon).exists():
            results["procon_qe"] = procon_qe(args)
            print()
            print(procon_markdown(results["procon_qe"]))
        else:
            print(f"skip procon: {args.procon} not found", file=sys.stderr)
    from berds_core.files.jsonio import atomic_write

    with atomic_write(args.out) as fh:
        json.dump(results, fh, indent=1, ensure_ascii=False, default=float)
    print(f"\nJSON: {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
