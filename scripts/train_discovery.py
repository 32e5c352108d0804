#!/usr/bin/env python
"""Fit perspective discovery's offline heads and knobs on PERSPECTRUM train; write berds_core/discovery/weights/.

    python scripts/train_discovery.py --data ../shared/data/perspectrum [--stance-cv bench/results/stance_cv] [--json]

Only the **train** split is read (``dataset_split_v1.0.json``); dev is never
touched here (``bench/discovery.py`` reports dev). Train claims are split by a
hash of their id into **train-A** (80%, fits the heads) and **train-B** (20%,
held out: the choice of relevance scorer and every knob).

Stance (T2, and the side of each discovered cluster) is the studio's stance
model (``berds_core.stance``, trained by ``scripts/train_stance.py``), whose
decision rule was chosen by that script's cross-validation. Here every
train-B claim is read by the stance model of its cross-validation fold, which
never saw it (``--stance-cv``: the folder of a finished ``train_stance.py
--stage cv``), so nothing chosen here rests on in-sample stance outputs.

On train-A: logistic-regression heads over the frozen MiniLM embeddings the
pool index stores (``berds_core.discovery.heads``): relevance (retrieval
features) and equivalence (pair features of two perspectives of one claim).
On train-B: relevance scorers compared: ``heads``, ``stance`` (the stance
model's P(on topic) of the heads' top 30 candidates) and ``stack`` (a
logistic regression over that logit and the retrieval features, fitted on
train-B by claim-grouped CV); each tuned for T1 F1 (relevance threshold,
``min_k``, ``max_k``, ``dedupe_threshold``, ``linkage``) and the best kept;
the clustering threshold tuned for T3 F1; the baselines' K for T1 F1. Writes
``weights/discovery_heads_v2.npz`` with the heads, the choice, the knobs and
the whole train-B report. The pipeline's candidates are the fused top
``--depth`` of BM25 and dense (depth 50: train claim-cluster recall 0.75 for
~84 candidates per claim; see ``candidate_recall`` in the report).
"""
from __future__ import annotations

import argparse
import hashlib
import json
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

WEIGHTS = ROOT / "berds_core" / "discovery" / "weights"


def log(msg: str) -> None:
    sys.stderr.write(f"[{time.strftime('%H:%M:%S')}] {msg}\n")
    sys.stderr.flush()


def is_b(cid: str) -> bool:
    """Claim-grouped held-out part of train: 1 in 5 claims by a hash of the id."""
    return int(hashlib.sha1(f"discovery-{cid}".encode()).hexdigest()[:8], 16) % 5 == 0


def load(args):
    from berds_core.discovery.claims import load_claims
    from berds_core.discovery.pool import open_pool

    data = Path(args.data)
    claims = load_claims(data / "perspectrum_with_answers_v1.0.train_dev.json", split="train")
    index = open_pool(data / "perspective_pool_v1.0.json", progress=True)
    a = [c for c in claims if not is_b(c.id)]
    b = [c for c in claims if is_b(c.id)]
    log(f"train claims: {len(a)} train-A, {len(b)} train-B; pool {len(index)} sentences")
    return index, a, b


def candidates(index, claims, depth: int):
    return index.candidates([c.text for c in claims], depth)


def gold_rows(index, claim):
    """{pool row: (cluster index, stance)} of a claim's gold pids present in the pool."""
    pool = index.pool
    out = {}
    for j, cl in enumerate(claim.gold.clusters):
        for pid in cl:
            try:
                out[pool.index_of(pid)] = (j, claim.gold.stances[j])
            except KeyError:
                continue
    return out


# --------------------------------------------------------------------------- stage heads

C_GRID = (0.0001, 0.0003, 0.001, 0.003, 0.01, 0.1, 1.0)
TOP_M = 30  # candidates the cross-encoder re-scores (the heads' most relevant)


def grouped_c(X, y, groups, folds: int = 3):
    """The logistic-regression C with the best out-of-fold log-loss, claim-grouped folds (train-A only)."""
    from sklearn.metrics import log_loss
    from sklearn.model_selection import GroupKFold

    from berds_core.discovery.heads import fit_head

    best = None
    for C in C_GRID:
        oof = np.zeros(len(y))
        for tr, te in GroupKFold(folds).split(X, y, groups):
            oof[te] = fit_head(X[tr], y[tr], C).proba(X[te])
        loss = log_loss(y, np.clip(oof, 1e-6, 1 - 1e-6))
        log(f"    C={C}: out-of-fold log-loss {loss:.4f}")
        if best is None or loss < best[0]:
            best = (loss, C)
    return best[1]


def rel_xy(index, claims, cands):
    from berds_core.discovery.heads import relevance_features

    E = index.embeddings
    X = [relevance_features(cd, E) for cd in cands]
    y = [np.array([int(r) in gold_rows(index, c) for r in cd.rows], dtype=int) for c, cd in zip(claims, cands)]
    return X, y


def stance_pairs(index, claims):
    """(claim, gold sentence) pairs of known stance: (claim index, claim text, sentence, support?)."""
    out = []
    for n, c in enumerate(claims):
        for r, (j, st) in gold_rows(index, c).items():
            if st is not None:
                out.append((n, c.text, index.pool.texts[r], int(st == "support")))
    return out


def equiv_xy(index, claims):
    from itertools import combinations

    from berds_core.discovery.heads import pair_features

    E, T = index.embeddings, index.pool.texts
    ia, ib, y, g = [], [], [], []
    for n, c in enumerate(claims):
        gr = gold_rows(index, c)
        for r1, r2 in combinations(sorted(gr), 2):
            ia.append(r1)
            ib.append(r2)
            y.append(int(gr[r1][0] == gr[r2][0]))
            g.append(n)
    X = pair_features(E[ia], E[ib], [T[r] for r in ia], [T[r] for r in ib])
    return X, np.array(y), np.array(g)


def auc(y, p) -> float:
    from sklearn.metrics import roc_auc_score

    return float(roc_auc_score(y, p)) if 0 < np.sum(y) < len(y) else float("nan")


def t1_for(index, claims, cands, rels, sups, heads_equiv, knob_grid, stance_thresholds):
    """Grid search of the pipeline's T1 knobs on claims with fixed scores (``stance_thresholds``: the
    stance model's threshold per claim); returns (best, table)."""
    from scipy.cluster.hierarchy import fcluster, linkage
    from scipy.spatial.distance import squareform

    from berds_core.discovery.evaluate import t1_claim
    from berds_core.discovery.heads import equivalence_matrix
    from berds_core.discovery.pipeline import Cluster, balanced_order

    E, T, ids = index.embeddings, index.pool.texts, index.pool.ids
    golds = [c.gold for c in claims]
    # per claim: the candidates ranked by relevance, capped, with their P(same) matrix
    prep = []
    for cd, rel, sup in zip(cands, rels, sups):
        order = np.argsort(-rel, kind="stable")[:MAX_KEPT]
        rows = cd.rows[order]
        same = equivalence_matrix(heads_equiv, np.asarray(E[rows]), [T[r] for r in rows])
        prep.append((rows, rel[order], sup[order], same))
    results = []
    for link in knob_grid["linkage"]:
        for thr in knob_grid["threshold"]:
            for min_k in knob_grid["min_k"]:
                per_claim = []
                for rows, rel, sup, same in prep:
                    n = max(int(np.sum(rel >= thr)), min(min_k, len(rel)))
                    if n == 0:
                        per_claim.append(None)
                        continue
                    if n == 1:
                        per_claim.append((rows[:1], rel[:1], sup[:1], None))
                        continue
                    D = 1.0 - np.clip(same[:n, :n], 0, 1)
                    np.fill_diagonal(D, 0.0)
                    per_claim.append((rows[:n], rel[:n], sup[:n], linkage(squareform(D, checks=False), method=link)))
                for dd in knob_grid["dedupe_threshold"]:
                    lists = []
                    for item, st_thr in zip(per_claim, stance_thresholds):
                        if item is None:
                            lists.append([])
                            continue
                        rows, rel, sup, Z = item
                        labels = np.zeros(1, int) if Z is None else fcluster(Z, t=1.0 - dd + 1e-12, criterion="distance")
                        cl = []
                        for lab in dict.fromkeys(labels.tolist()):
                            idx = [i for i in range(len(rows)) if labels[i] == lab]
                            s = float(np.mean(sup[idx]))
                            cl.append(Cluster(idx[0], idx, float(rel[idx[0]]), s,
                                              "support" if s >= st_thr else "undermine"))
                        lists.append((rows, balanced_order(cl, None)))
                    for max_k in knob_grid["max_k"]:
                        f = []
                        for g, item in zip(golds, lists):
                            if not item:
                                f.append(0.0)
                                continue
                            rows, ordered = item
                            ordered = ordered if max_k is None else ordered[:max_k]
                            f.append(t1_claim([ids[rows[c.rep]] for c in ordered], g)[2])
                        results.append((float(np.mean(f)), {"linkage": link, "threshold": float(thr), "min_k": min_k,
                                                            "dedupe_threshold": float(dd), "max_k": max_k}))
    results.sort(key=lambda r: -r[0])
    return results[0], results


MAX_KEPT = 40


def t3_tune(index, claims, heads_equiv):
    from berds_core.discovery.evaluate import same_cluster_pairs, t3_scores
    from berds_core.discovery.heads import cluster_labels, equivalence_matrix

    E, T, ids = index.embeddings, index.pool.texts, index.pool.ids
    mats = []
    for c in claims:
        rows = sorted(gold_rows(index, c))
        pids = [ids[r] for r in rows]
        mats.append((c.gold, pids, equivalence_matrix(heads_equiv, np.asarray(E[rows]), [T[r] for r in rows])))
    best = None
    table = []
    for link in ("complete", "average"):
        for thr in np.round(np.arange(0.2, 0.85, 0.05), 2):
            per = []
            for g, pids, P in mats:
                lab = cluster_labels(P, float(thr), link)
                pred = {p: int(l) for p, l in zip(pids, lab)}
                n = len(pids)
                per.append((same_cluster_pairs(g.cluster_of, pids), same_cluster_pairs(pred, pids), n * (n - 1) // 2))
            s = t3_scores(per)
            table.append({"linkage": link, "threshold": float(thr), "f1": s["f1"], "precision": s["precision"],
                          "recall": s["recall"]})
            if best is None or s["f1"] > best["f1"]:
                best = table[-1]
    return best, table


def baseline_k(index, claims, cands_b):
    """BM25-only and dense-only: the top K pool sentences, K tuned on train-B for T1 F1."""
    from berds_core.discovery.evaluate import t1_claim

    ids = index.pool.ids
    out = {}
    texts = [c.text for c in claims]
    for name, ret in (("bm25", index.bm25), ("dense", index.dense)):
        lists = ret.search(texts, 30)
        scores = {K: float(np.mean([t1_claim([ids[r] for r, _ in l[:K]], c.gold)[2] for c, l in zip(claims, lists)]))
                  for K in range(1, 31)}
        K = max(scores, key=lambda k: (scores[k], -k))
        out[name] = {"k": K, "t1_f1_train_b": round(scores[K], 4)}
    return out


def oof_stance(args):
    """(claim -> the stance model of its cross-validation fold (never trained on it), with its fold's rules;
    claim -> whether its fold has a model: ``train_stance.py --folds`` may have trained some folds only)."""
    sys.path.insert(0, str(ROOT / "scripts"))
    import train_stance

    fold_of, models = train_stance.fold_stance_models(Path(args.stance_cv))

    def model_for(claim):
        return models[fold_of[f"perspectrum-{claim.id}"]]

    def has_model(claim):
        return fold_of.get(f"perspectrum-{claim.id}") in models

    return model_for, has_model


def fit_and_tune(args, index, a, b) -> dict:
    from sklearn.model_selection import GroupKFold

    from berds_core.discovery import pipeline as P
    from berds_core.discovery.heads import fit_head

    model_for, has_model = oof_stance(args)
    scored = [c for c in b if has_model(c)]
    report: dict = {"train_a_claims": len(a), "train_b_claims": len(scored), "depth": args.depth, "top_m": TOP_M}
    if len(scored) < len(b):  # no out-of-fold stance model for the others: left out of every choice
        report["train_b_left_out"] = {"claims": len(b) - len(scored), "why": "their stance cross-validation "
                                      "fold has no model (train_stance.py --folds)"}
        log(f"train-B: {len(scored)} of {len(b)} claims have an out-of-fold stance model; the others are left out")
        b = scored
    ca = candidates(index, a, args.depth)
    cb = candidates(index, b, args.depth)
    for name, cl, cd in (("train_a", a, ca), ("train_b", b, cb)):
        rec = []
        for c, x in zip(cl, cd):
            rows = set(map(int, x.rows))
            hit = {j for r, (j, _) in gold_rows(index, c).items() if r in rows}
            rec.append(len(hit) / len(c.gold.clusters))
        report.setdefault("candidate_recall", {})[name] = {"cluster_recall": round(float(np.mean(rec)), 4),
                                                          "candidates_per_claim": round(float(np.mean([len(x) for x in cd])), 1)}
    log(f"candidates: {report['candidate_recall']}")

    # ---- heads, fitted on train-A
    Xa, ya = rel_xy(index, a, ca)
    rel_head = fit_head(np.vstack(Xa), np.concatenate(ya), 1.0)
    Xe, ye, ge = equiv_xy(index, a)
    if args.equiv_c is None:
        log("equivalence head (train-A, C by claim-grouped CV on train-A):")
        equiv_c = grouped_c(Xe, ye, ge)
    else:  # the C an earlier run's grouped CV chose (the head reads no stance model, so that choice stands)
        equiv_c = args.equiv_c
        log(f"equivalence head (train-A): C={equiv_c} as given (--equiv-c)")
    report["equivalence_c"] = {"C": equiv_c, "chosen": "here, claim-grouped CV on train-A" if args.equiv_c is None
                               else "given (--equiv-c): an earlier run's claim-grouped CV on train-A"}
    equiv_head = fit_head(Xe, ye, equiv_c)

    # ---- train-B: the stance model out of fold (each claim read by the fold model that never saw it)
    Xb, yb = rel_xy(index, b, cb)
    rel_heads_b = [rel_head.proba(x) for x in Xb]
    Xeb, yeb, _ = equiv_xy(index, b)
    t0 = time.time()
    on_b, top_b = [], []
    for c, cd, rh in zip(b, cb, rel_heads_b):
        top = np.argsort(-rh, kind="stable")[:TOP_M]
        full = np.zeros(len(cd))
        full[top] = model_for(c).on_topic(c.text, [index.pool.texts[int(cd.rows[i])] for i in top])
        on_b.append(full)
        top_b.append(top)
    sp = stance_pairs(index, b)
    sup_gold = np.array([s[3] for s in sp])
    sup_b = np.concatenate([model_for(b[n]).claim_stance(b[n].text, [s[2] for s in sp if s[0] == n])
                            for n in sorted({s[0] for s in sp})]) if sp else np.zeros(0)
    order = [i for n in sorted({s[0] for s in sp}) for i, s in enumerate(sp) if s[0] == n]
    sup_gold = sup_gold[order]
    thr = [model_for(b[n]).threshold("discovery") for n in sorted({s[0] for s in sp}) for s in sp if s[0] == n]
    report["train_b"] = {
        "relevance_auc": {"heads": auc(np.concatenate(yb), np.concatenate(rel_heads_b)),
                          "stance model (out of fold)": auc(np.concatenate(yb), np.concatenate(on_b))},
        "stance_accuracy": {"stance model (out of fold)": float(np.mean((sup_b >= np.array(thr)) == sup_gold)),
                            "pairs": int(len(sup_gold))},
        "equivalence_auc": {"heads": auc(yeb, equiv_head.proba(Xeb)), "pairs": int(len(yeb))},
        "stance_scoring_seconds": round(time.time() - t0),
    }
    rel_options = {"heads": rel_heads_b, "stance": on_b}
    # stacked: [logit P(on topic), retrieval features] on the heads' top M, fitted on train-B by grouped CV
    Xst, yst, gst, where = [], [], [], []
    for n, (x, y, on, top) in enumerate(zip(Xb, yb, on_b, top_b)):
        Xst.append(P.stack_features(on[top], x[top]))
        yst.append(y[top])
        gst.append(np.full(len(top), n))
        where.append(top)
    Xst, yst, gst = np.vstack(Xst), np.concatenate(yst), np.concatenate(gst)
    oof = np.zeros(len(yst))
    for tr, te in GroupKFold(5).split(Xst, yst, gst):
        oof[te] = fit_head(Xst[tr], yst[tr], 1.0).proba(Xst[te])
    stack_b, off = [], 0
    for cd, top in zip(cb, where):
        full = np.zeros(len(cd))
        full[top] = oof[off:off + len(top)]
        off += len(top)
        stack_b.append(full)
    rel_options["stack"] = stack_b
    report["train_b"]["relevance_auc"]["stack (out-of-fold)"] = auc(np.concatenate(yb), np.concatenate(stack_b))
    stack_head = fit_head(Xst, yst, 1.0)
    log(f"train-B: {report['train_b']}")
    # support probabilities of every kept candidate, for the list's balance (the stance model, out of fold)
    knob_grid = {"linkage": ("complete", "average"), "threshold": np.round(np.arange(0.05, 0.96, 0.05), 2),
                 "min_k": (1, 2, 3), "dedupe_threshold": (0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 1.01),
                 "max_k": (3, 4, 5, 6, 8, 10, 12, 15, None)}
    tuned = {}
    for name, rels in rel_options.items():
        sups, sthr = [], []
        for c, cd, rel in zip(b, cb, rels):
            order = np.argsort(-rel, kind="stable")[:MAX_KEPT]
            sup = np.full(len(cd), 0.5)
            m = model_for(c)
            sup[order] = m.claim_stance(c.text, [index.pool.texts[int(cd.rows[i])] for i in order])
            sups.append(sup)
            sthr.append(m.threshold("discovery"))
        (f1, knobs), _ = t1_for(index, b, cb, rels, sups, equiv_head, knob_grid, stance_thresholds=sthr)
        tuned[name] = {"t1_f1": f1, "knobs": knobs}
        log(f"relevance '{name}': tuned T1 F1 on train-B {f1:.4f} with {knobs}")
    rel_choice = max(tuned, key=lambda k: tuned[k]["t1_f1"])
    report["train_b"]["t1_tuned"] = tuned
    t3_best, t3_table = t3_tune(index, b, equiv_head)
    report["train_b"]["t3_tuned"] = t3_best
    log(f"T3 on train-B: {t3_best}")
    report["baselines"] = baseline_k(index, b, cb)
    log(f"baselines tuned on train-B: {report['baselines']}")
    knobs = dict(tuned[rel_choice]["knobs"])
    knobs.update(depth=args.depth, cluster_threshold=t3_best["threshold"])
    if knobs["linkage"] != t3_best["linkage"]:
        report["train_b"]["note"] = "T1 and T3 preferred different linkages; the T1 one is used for both"
    choice = {"relevance": rel_choice, "stance": "stance model", "equivalence": "heads", "top_m": TOP_M,
              "max_kept": MAX_KEPT}
    report["choice"] = choice
    arrays = {**rel_head.to_arrays("rel"), **equiv_head.to_arrays("equiv"), **stack_head.to_arrays("stack")}
    arrays["choice"] = np.array(json.dumps(choice))
    arrays["knobs"] = np.array(json.dumps(knobs))
    arrays["report"] = np.array(json.dumps(report))
    from berds_core.files.jsonio import atomic_write

    out = WEIGHTS / "discovery_heads_v2.npz"
    with atomic_write(out, "wb") as fh:
        np.savez_compressed(fh, **arrays)
    log(f"heads -> {out} ({out.stat().st_size / 1e3:.0f} kB); choice {choice}; knobs {knobs}")
    # the pipeline reproduces the tuned figure on train-B (each claim with its fold's stance model)
    from berds_core.discovery.evaluate import t1_claim

    f1s = []
    for c in b:
        disc = P.Discoverer(index, "offline", weights=out, stance_model=model_for(c))
        f1s.append(t1_claim([p["pid"] for p in disc.discover(c.text)], c.gold)[2])
    report["train_b"]["pipeline_t1_f1"] = float(np.mean(f1s))
    log(f"pipeline check on train-B: T1 F1 {report['train_b']['pipeline_t1_f1']:.4f} "
        f"(tuned {tuned[rel_choice]['t1_f1']:.4f})")
    return report


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", default=str(ROOT.parent / "shared" / "data" / "perspectrum"),
                    help="folder with PERSPECTRUM's train_dev claims, pool and split files")
    ap.add_argument("--depth", type=int, default=50, help="BM25 and dense candidates per claim, fused")
    ap.add_argument("--stance-cv", default=str(ROOT / "bench" / "results" / "stance_cv"),
                    help="folder of a finished `scripts/train_stance.py --stage cv` (its fold models and folds)")
    ap.add_argument("--equiv-c", type=float, default=None,
                    help="the equivalence head's C (default: chosen here by claim-grouped CV on train-A; the head "
                         "does not read the stance model, so an earlier run's choice can be given to save the grid)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    data = Path(args.data)
    if not (data / "perspectrum_with_answers_v1.0.train_dev.json").exists():
        print(json.dumps({"skipped": f"PERSPECTRUM not found under {data}"}))
        return 0
    index, a, b = load(args)
    t0 = time.time()
    result = {"heads": fit_and_tune(args, index, a, b)}
    result["heads"]["heads_seconds"] = round(time.time() - t0)
    print(json.dumps(result) if args.json else json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
