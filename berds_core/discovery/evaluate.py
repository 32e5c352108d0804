"""PERSPECTRUM's evaluation of perspective discovery (Chen et al., NAACL 2019, section 5).

Gold, per claim: clusters of equivalent perspective ids, each with a stance.

- **T1, perspective discovery** (per claim, macro-averaged over claims): the
  system returns a list of perspectives (``pid``; entries sharing a
  ``cluster`` are one predicted perspective, represented by the first). A
  returned perspective is correct when its pid belongs to a gold cluster of
  the claim that no earlier returned perspective already matched (a gold
  cluster counts once). ``P = correct / returned``, ``R = matched gold
  clusters / gold clusters``, ``F1 = 2PR / (P + R)`` per claim (P = 0 when
  nothing is returned), then the mean of P, R and F1 over claims.
- **T2, stance** on the gold claim-perspective pairs (every pid of every gold
  cluster, with its cluster's stance; the system labels each): accuracy and
  F1 of each class (``support`` / ``undermine``), over all pairs.
- **T3, equivalence** on each claim's gold perspectives: the pairs of
  distinct pids of one claim, "same cluster" predicted vs gold. Precision and
  recall pooled over all claims' pairs (micro) and F1; the macro-averaged
  figures are reported too (a claim with no predicted pair has precision 1
  when it has no gold pair either, else 0; recall likewise with the roles
  swapped).
- **overall** = T1 F1 x T2 accuracy (the paper's estimate of the whole task).

Predictions are the ``berds discover`` output lines: ``{"id", "perspectives":
[{pid, stance, cluster}], "on_gold": [{pid, stance, cluster}]}`` where
``on_gold`` holds the system's stance and cluster for each gold perspective of
the claim (T2 and T3 are defined on gold inputs; a system that did not label
them scores T2 and T3 as missing).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from itertools import combinations

import numpy as np

STANCES = ("support", "undermine")
_GOLD_STANCE = {"SUPPORT": "support", "UNDERMINE": "undermine", "support": "support", "undermine": "undermine",
                "oppose": "undermine"}


@dataclass
class GoldClaim:
    """One claim's gold clusters: ``clusters[j]`` is a list of pids, ``stances[j]`` its side."""

    id: str
    text: str
    clusters: list[list[str]]
    stances: list[str | None]
    split: str | None = None
    cluster_of: dict[str, int] = field(default_factory=dict)

    def __post_init__(self):
        if not self.cluster_of:
            for j, cl in enumerate(self.clusters):
                for pid in cl:
                    self.cluster_of.setdefault(str(pid), j)


def gold_stance(label) -> str | None:
    return _GOLD_STANCE.get(str(label)) if label is not None else None


# --------------------------------------------------------------------------- T1

def t1_claim(returned: list[str], gold: GoldClaim) -> tuple[float, float, float]:
    """(precision, recall, F1) of one claim's returned pids (representatives, in order)."""
    matched: set[int] = set()
    correct = 0
    for pid in returned:
        j = gold.cluster_of.get(str(pid))
        if j is not None and j not in matched:
            matched.add(j)
            correct += 1
    p = correct / len(returned) if returned else 0.0
    r = len(matched) / len(gold.clusters) if gold.clusters else 0.0
    f = 2 * p * r / (p + r) if p + r > 0 else 0.0
    return p, r, f


def representatives(perspectives: list[dict]) -> list[str]:
    """The first pid of each predicted cluster, in order (entries without a cluster are their own)."""
    seen, out = set(), []
    for n, p in enumerate(perspectives):
        c = p.get("cluster")
        key = ("c", c) if c is not None else ("n", n)
        if key in seen:
            continue
        seen.add(key)
        out.append(str(p["pid"]))
    return out


# --------------------------------------------------------------------------- T2

def t2_scores(gold_labels: list[str], predicted: list[str | None]) -> dict:
    """Accuracy and per-class precision/recall/F1 of stance labels (a missing prediction is wrong)."""
    y = np.array(gold_labels, dtype=object)
    p = np.array([x if x in STANCES else "none" for x in predicted], dtype=object)
    out = {"pairs": int(len(y)), "accuracy": float((y == p).mean()) if len(y) else float("nan")}
    for cls in STANCES:
        tp = int(((p == cls) & (y == cls)).sum())
        fp = int(((p == cls) & (y != cls)).sum())
        fn = int(((p != cls) & (y == cls)).sum())
        prec = tp / (tp + fp) if tp + fp else 0.0
        rec = tp / (tp + fn) if tp + fn else 0.0
        out[cls] = {"precision": prec, "recall": rec, "f1": 2 * prec * rec / (prec + rec) if prec + rec else 0.0,
                    "support": tp + fn}
    out["macro_f1"] = float(np.mean([out[c]["f1"] for c in STANCES]))
    return out


# --------------------------------------------------------------------------- T3

def same_cluster_pairs(cluster_of: dict[str, object], pids: list[str]) -> set[tuple[str, str]]:
    """Pairs (a, b), a < b, of ``pids`` with the same cluster label."""
    out = set()
    for a, b in combinations(sorted(set(pids)), 2):
        ca, cb = cluster_of.get(a), cluster_of.get(b)
        if ca is not None and ca == cb:
            out.add((a, b))
    return out


def t3_scores(per_claim: list[tuple[set, set, int]]) -> dict:
    """``per_claim``: (gold same-cluster pairs, predicted same-cluster pairs, number of pairs) per claim."""
    tp = sum(len(g & p) for g, p, _ in per_claim)
    npred = sum(len(p) for _, p, _ in per_claim)
    ngold = sum(len(g) for g, _, _ in per_claim)
    prec = tp / npred if npred else 0.0
    rec = tp / ngold if ngold else 0.0
    mp, mr = [], []
    for g, p, _ in per_claim:
        mp.append(len(g & p) / len(p) if p else (1.0 if not g else 0.0))
        mr.append(len(g & p) / len(g) if g else (1.0 if not p else 0.0))
    mp_, mr_ = float(np.mean(mp)) if mp else 0.0, float(np.mean(mr)) if mr else 0.0
    return {"precision": prec, "recall": rec, "f1": 2 * prec * rec / (prec + rec) if prec + rec else 0.0,
            "gold_pairs": ngold, "predicted_pairs": npred, "pairs": sum(n for _, _, n in per_claim),
            "macro": {"precision": mp_, "recall": mr_,
                      "f1": 2 * mp_ * mr_ / (mp_ + mr_) if mp_ + mr_ else 0.0}}


# --------------------------------------------------------------------------- all

def evaluate_predictions(preds: dict[str, dict], gold: dict[str, GoldClaim]) -> dict:
    """T1 / T2 / T3 / overall for predictions keyed by claim id (each a ``berds discover`` line).

    Every predicted claim must be in ``gold`` (the caller checks); claims of
    ``gold`` without a prediction are not scored (``claims`` says how many were).
    """
    t1 = []
    y2, p2 = [], []
    t3 = []
    labelled = 0
    for cid, pred in preds.items():
        g = gold[cid]
        t1.append(t1_claim(representatives(pred.get("perspectives") or []), g))
        on_gold = {str(x["pid"]): x for x in (pred.get("on_gold") or [])}
        if on_gold:
            labelled += 1
        pids = [str(pid) for cl in g.clusters for pid in cl]
        for j, cl in enumerate(g.clusters):
            st = gold_stance(g.stances[j])
            if st is None:
                continue
            for pid in cl:
                y2.append(st)
                p2.append(on_gold.get(str(pid), {}).get("stance"))
        pred_cluster = {pid: on_gold[pid].get("cluster") for pid in pids if pid in on_gold}
        # a gold pid the system did not label is its own cluster (no predicted pair)
        n = len(set(pids))
        t3.append((same_cluster_pairs(g.cluster_of, pids), same_cluster_pairs(pred_cluster, pids), n * (n - 1) // 2))
    t1a = np.array(t1) if t1 else np.zeros((0, 3))
    res = {"claims": len(t1),
           "t1": {"precision": float(t1a[:, 0].mean()) if len(t1a) else 0.0,
                  "recall": float(t1a[:, 1].mean()) if len(t1a) else 0.0,
                  "f1": float(t1a[:, 2].mean()) if len(t1a) else 0.0,
                  "returned_per_claim": float(np.mean([len(representatives(p.get("perspectives") or []))
                                                       for p in preds.values()])) if preds else 0.0}}
    if labelled:
        res["t2"] = t2_scores(y2, p2)
        res["t3"] = t3_scores(t3)
        res["overall"] = res["t1"]["f1"] * res["t2"]["accuracy"]
    else:
        res["t2"] = res["t3"] = res["overall"] = None
    res["labelled_claims"] = labelled
    return res
