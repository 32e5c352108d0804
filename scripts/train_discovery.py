#!/usr/bin/env python
"""Train perspective discovery's offline models on PERSPECTRUM train; write berds_core/discovery/weights/.

    python scripts/train_discovery.py --data ../shared/data/perspectrum [--stage all|ce|heads]
        [--epochs 2] [--r 16] [--work DIR] [--json]

Only the **train** split is read (``dataset_split_v1.0.json``); dev is never
touched here (``bench/discovery.py`` reports dev once). Train claims are split
by a hash of their id into **train-A** (80%, fits every model) and **train-B**
(20%, held out: model choice and every threshold). Nothing is fitted on B
except the knobs named below, and those only on B.

Stage ``ce`` (the long one: ~20 min of 2 CPU cores when the machine is quiet):
the cross-encoder of :mod:`berds_core.discovery.crossenc`: LoRA (rank ``--r``)
on the packaged MiniLM + a 2-logit head, trained on train-A pairs:
``(claim, perspective)`` for up to 2 sentences of every gold cluster
(relevance 1, support = the cluster's stance) and 4 non-gold candidates of
the claim's own BM25+dense candidates (the 2 best-fused and 2 random others;
relevance 0, no stance loss). ``--epochs`` over them, AdamW, linear warm-up
and decay. Writes ``weights/discovery_ce_v1.npz``.

Stage ``heads`` (minutes): on train-A, logistic-regression heads over the
frozen MiniLM embeddings the pool index stores (``berds_core.discovery.heads``):
relevance (retrieval features), stance (``[c*p, |c-p|, p]``) and equivalence
(pair features of two perspectives of one claim). On train-B: the
cross-encoder and the heads are compared (relevance AUC and T1 F1, stance
accuracy; ``avg`` = the mean of the two stance probabilities); the relevance
and stance scorers actually used are chosen there; then the knobs
of the offline pipeline are tuned on train-B for T1 F1 (relevance threshold,
the most perspectives returned) and T3 F1 (the clustering threshold).
Writes ``weights/discovery_heads_v1.npz`` with the heads, the knobs and the
whole train-B report. The pipeline's candidates are the fused top
``--depth`` of BM25 and dense (depth 50: train claim-cluster recall 0.75 for
~84 candidates per claim; see ``candidate_recall`` in the report).
"""
from __future__ import annotations

import argparse
import hashlib
import json
import random
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


# --------------------------------------------------------------------------- stage ce

def ce_pairs(index, claims, cands, rng: random.Random, per_cluster: int = 2, top_neg: int = 2, rand_neg: int = 2):
    texts = index.pool.texts
    out = []
    for c, cand in zip(claims, cands):
        g = gold_rows(index, c)
        for j, cl in enumerate(c.gold.clusters):
            rows = [index.pool.index_of(p) for p in cl if p in index.pool._row_of][:per_cluster]
            st = c.gold.stances[j]
            for r in rows:
                out.append((c.text, texts[r], 1.0, 1.0 if st == "support" else 0.0, 1.0 if st else 0.0))
        neg = [int(r) for r in cand.rows if int(r) not in g]
        pick = neg[:top_neg] + rng.sample(neg[top_neg:], min(rand_neg, max(0, len(neg) - top_neg)))
        out += [(c.text, texts[r], 0.0, 0.0, 0.0) for r in pick]
    return out


def train_ce(args, index, a, b) -> dict:
    import torch

    from berds_core.discovery.crossenc import build_model, pooled_logits, save_weights

    torch.manual_seed(args.seed)
    rng = random.Random(args.seed)
    torch.set_num_threads(args.threads)
    cands = candidates(index, a, args.depth)
    pairs = ce_pairs(index, a, cands, rng)
    if args.max_pairs:  # smoke tests only
        pairs = rng.sample(pairs, min(args.max_pairs, len(pairs)))
    log(f"cross-encoder: {len(pairs)} training pairs ({sum(p[2] for p in pairs):.0f} relevant), "
        f"{args.epochs} epochs, LoRA r={args.r}")
    model, head, tok = build_model(args.r, 2 * args.r, 0.1)
    params = [p for p in model.parameters() if p.requires_grad] + list(head.parameters())
    opt = torch.optim.AdamW(params, lr=args.lr, weight_decay=0.01)
    steps = args.epochs * ((len(pairs) + args.batch - 1) // args.batch)
    warm = max(1, int(0.06 * steps))
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / warm) * max(0.0, 1 - s / steps))
    bce = torch.nn.functional.binary_cross_entropy_with_logits
    model.train()
    t0 = time.time()
    step = 0
    for ep in range(args.epochs):
        idx = list(range(len(pairs)))
        rng.shuffle(idx)
        for i in range(0, len(idx), args.batch):
            chunk = [pairs[j] for j in idx[i:i + args.batch]]
            enc = tok([c[0] for c in chunk], [c[1] for c in chunk], truncation=True, max_length=args.max_length,
                      padding=True, return_tensors="pt")
            y = torch.tensor([[c[2], c[3], c[4]] for c in chunk])
            z = pooled_logits(model, head, enc)
            loss = bce(z[:, 0], y[:, 0])
            if y[:, 2].sum() > 0:
                loss = loss + (bce(z[:, 1], y[:, 1], reduction="none") * y[:, 2]).sum() / y[:, 2].sum()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(params, 1.0)
            opt.step()
            sched.step()
            opt.zero_grad()
            step += 1
            if step % 25 == 0:
                el = time.time() - t0
                log(f"  epoch {ep + 1} step {step}/{steps} loss {loss.item():.3f} "
                    f"({el:.0f}s, {step * args.batch / el:.1f} pairs/s)")
    train_s = time.time() - t0
    config = {"version": "v1", "r": args.r, "alpha": 2 * args.r, "max_length": args.max_length, "layers": None,
              "targets": ["query", "key", "value", "dense"]}
    report = {"train_seconds": round(train_s), "training_pairs": len(pairs), "train_a_claims": len(a),
              "epochs": args.epochs, "lr": args.lr, "batch": args.batch, "seed": args.seed, "depth": args.depth}
    out = WEIGHTS / "discovery_ce_v1.npz"
    save_weights(out, model, head, config, report)
    log(f"cross-encoder trained in {train_s:.0f}s -> {out} ({out.stat().st_size / 1e6:.2f} MB)")
    return report


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


def stance_xy(index, claims):
    from berds_core.discovery.heads import stance_features

    E = index.embeddings
    emb = index.encode([c.text for c in claims])
    X, y, g, pairs = [], [], [], []
    for n, (c, ce) in enumerate(zip(claims, emb)):
        for r, (j, st) in gold_rows(index, c).items():
            if st is None:
                continue
            X.append(stance_features(ce, E[[r]])[0])
            y.append(int(st == "support"))
            g.append(n)
            pairs.append((c.text, index.pool.texts[r]))
    return np.array(X), np.array(y), np.array(g), pairs


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


def t1_for(index, claims, cands, rels, sups, heads_equiv, knob_grid, log_every=None):
    """Grid search of the pipeline's T1 knobs on claims with fixed scores; returns (best, table)."""
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
                    for item in per_claim:
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
                                              "support" if s >= knob_grid["stance_threshold"] else "undermine"))
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


def fit_and_tune(args, index, a, b) -> dict:
    from sklearn.model_selection import GroupKFold

    from berds_core.discovery import pipeline as P
    from berds_core.discovery.heads import fit_head

    report: dict = {"train_a_claims": len(a), "train_b_claims": len(b), "depth": args.depth, "top_m": TOP_M}
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
    log("stance head (train-A, C by claim-grouped CV on train-A):")
    Xs, ys, gs, _ = stance_xy(index, a)
    stance_head = fit_head(Xs, ys, grouped_c(Xs, ys, gs))
    log("equivalence head (train-A, C by claim-grouped CV on train-A):")
    Xe, ye, ge = equiv_xy(index, a)
    equiv_head = fit_head(Xe, ye, grouped_c(Xe, ye, ge))

    # ---- train-B: compare, choose, tune
    Xb, yb = rel_xy(index, b, cb)
    rel_heads_b = [rel_head.proba(x) for x in Xb]
    Xsb, ysb, gsb, pairs_b = stance_xy(index, b)
    st_heads_b = stance_head.proba(Xsb)
    Xeb, yeb, _ = equiv_xy(index, b)
    report["train_b"] = {
        "relevance_auc": {"heads": auc(np.concatenate(yb), np.concatenate(rel_heads_b))},
        "stance_accuracy": {"heads": float(np.mean((st_heads_b >= 0.5) == ysb)), "pairs": int(len(ysb))},
        "equivalence_auc": {"heads": auc(yeb, equiv_head.proba(Xeb)), "pairs": int(len(yeb))},
    }
    rel_options = {"heads": rel_heads_b}
    st_options = {"heads": st_heads_b}
    stack_head = None
    have_ce = (WEIGHTS / "discovery_ce_v1.npz").exists() and not args.no_ce
    if have_ce:
        from berds_core.discovery.crossenc import load_scorer

        ce = load_scorer()
        t0 = time.time()
        ce_rel_b, ce_logit_b, top_b = [], [], []
        for c, cd, rh in zip(b, cb, rel_heads_b):
            top = np.argsort(-rh, kind="stable")[:TOP_M]
            r, _ = ce.score([(c.text, index.pool.texts[int(cd.rows[i])]) for i in top])
            full = np.zeros(len(cd))
            full[top] = r
            ce_rel_b.append(full)
            top_b.append(top)
        _, ce_sup = ce.score(pairs_b)
        report["train_b"]["ce_scoring_seconds"] = round(time.time() - t0)
        report["train_b"]["ce_pairs_scored"] = int(sum(len(t) for t in top_b) + len(pairs_b))
        log(f"cross-encoder on train-B: {report['train_b']['ce_pairs_scored']} pairs in "
            f"{report['train_b']['ce_scoring_seconds']}s")
        rel_options["ce"] = ce_rel_b
        st_options["ce"] = ce_sup
        st_options["avg"] = (st_heads_b + ce_sup) / 2.0
        report["train_b"]["stance_accuracy"]["avg"] = float(np.mean((st_options["avg"] >= 0.5) == ysb))
        report["train_b"]["relevance_auc"]["ce"] = auc(np.concatenate(yb), np.concatenate(ce_rel_b))
        report["train_b"]["stance_accuracy"]["ce"] = float(np.mean((ce_sup >= 0.5) == ysb))
        # stacked: [CE logit, retrieval features] on the heads' top M, fitted on train-B by grouped CV
        Xst, yst, gst, where = [], [], [], []
        for n, (x, y, cr, top) in enumerate(zip(Xb, yb, ce_rel_b, top_b)):
            pr = np.clip(cr[top], 1e-7, 1 - 1e-7)
            Xst.append(np.column_stack([np.log(pr / (1 - pr)), x[top]]))
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
    # stance: the better accuracy on train-B; its threshold tuned there
    st_choice = max(st_options, key=lambda k: np.mean((st_options[k] >= 0.5) == ysb))
    sup_b = st_options[st_choice]
    grid = np.round(np.arange(0.3, 0.71, 0.02), 2)
    st_thr = float(max(grid, key=lambda t: (np.mean((sup_b >= t) == ysb), -abs(t - 0.5))))
    report["train_b"]["stance_threshold"] = {"value": st_thr, "accuracy": float(np.mean((sup_b >= st_thr) == ysb))}
    # support probabilities of every candidate, for the list's balance (stance of the chosen scorer)
    E = index.embeddings
    emb_b = index.encode([c.text for c in b])
    knob_grid = {"linkage": ("complete", "average"), "threshold": np.round(np.arange(0.05, 0.96, 0.05), 2),
                 "min_k": (1, 2, 3), "dedupe_threshold": (0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 1.01),
                 "max_k": (3, 4, 5, 6, 8, 10, 12, 15, None), "stance_threshold": st_thr}
    tuned = {}
    for name, rels in rel_options.items():
        sups = []
        for c, cd, e, rel in zip(b, cb, emb_b, rels):
            order = np.argsort(-rel, kind="stable")[:MAX_KEPT]
            sup = np.full(len(cd), 0.5)
            texts = [index.pool.texts[int(cd.rows[i])] for i in order]
            from berds_core.discovery.heads import stance_features

            hs = stance_head.proba(stance_features(e, E[cd.rows[order]]))
            if st_choice == "heads":
                sup[order] = hs
            else:
                cs = ce.score([(c.text, t) for t in texts])[1]
                sup[order] = cs if st_choice == "ce" else (hs + cs) / 2.0
            sups.append(sup)
        (f1, knobs), _ = t1_for(index, b, cb, rels, sups, equiv_head, knob_grid)
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
    knobs.update(depth=args.depth, stance_threshold=st_thr, cluster_threshold=t3_best["threshold"])
    if knobs["linkage"] != t3_best["linkage"]:
        report["train_b"]["note"] = "T1 and T3 preferred different linkages; the T1 one is used for both"
    choice = {"relevance": rel_choice, "stance": st_choice, "equivalence": "heads", "top_m": TOP_M,
              "max_kept": MAX_KEPT}
    report["choice"] = choice
    arrays = {**rel_head.to_arrays("rel"), **stance_head.to_arrays("stance"), **equiv_head.to_arrays("equiv")}
    if stack_head is not None:
        arrays.update(stack_head.to_arrays("stack"))
    arrays["choice"] = np.array(json.dumps(choice))
    arrays["knobs"] = np.array(json.dumps(knobs))
    arrays["report"] = np.array(json.dumps(report))
    from berds_core.files.jsonio import atomic_write

    out = WEIGHTS / "discovery_heads_v1.npz"
    with atomic_write(out, "wb") as fh:
        np.savez_compressed(fh, **arrays)
    log(f"heads -> {out} ({out.stat().st_size / 1e3:.0f} kB); choice {choice}; knobs {knobs}")
    # the shipped pipeline reproduces the tuned figure on train-B
    disc = P.Discoverer(index, "offline", weights=out)
    preds = disc.discover_many([c.text for c in b])
    from berds_core.discovery.evaluate import t1_claim

    check = float(np.mean([t1_claim([p["pid"] for p in pr], c.gold)[2] for c, pr in zip(b, preds)]))
    report["train_b"]["pipeline_t1_f1"] = check
    log(f"pipeline check on train-B: T1 F1 {check:.4f} (tuned {tuned[rel_choice]['t1_f1']:.4f})")
    return report


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", default=str(ROOT.parent / "shared" / "data" / "perspectrum"),
                    help="folder with PERSPECTRUM's train_dev claims, pool and split files")
    ap.add_argument("--stage", choices=("all", "ce", "heads"), default="all")
    ap.add_argument("--depth", type=int, default=50, help="BM25 and dense candidates per claim, fused")
    ap.add_argument("--epochs", type=int, default=2)
    ap.add_argument("--r", type=int, default=16, help="LoRA rank")
    ap.add_argument("--lr", type=float, default=5e-4)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--max-length", type=int, default=48)
    ap.add_argument("--threads", type=int, default=1,
                    help="torch threads (1 is fastest on a shared, oversubscribed CPU)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--no-ce", action="store_true", help="heads stage: ignore the cross-encoder")
    ap.add_argument("--max-pairs", type=int, default=0, help=argparse.SUPPRESS)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    data = Path(args.data)
    if not (data / "perspectrum_with_answers_v1.0.train_dev.json").exists():
        print(json.dumps({"skipped": f"PERSPECTRUM not found under {data}"}))
        return 0
    index, a, b = load(args)
    result = {}
    if args.stage in ("all", "ce"):
        result["cross_encoder"] = train_ce(args, index, a, b)
    if args.stage in ("all", "heads"):
        t0 = time.time()
        result["heads"] = fit_and_tune(args, index, a, b)
        result["heads"]["heads_seconds"] = round(time.time() - t0)
    print(json.dumps(result) if args.json else json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
