"""The judge as a second opinion: what the reviewer looks at first, and where the judge fails.

Annotators see a judge's answer only after deciding a pair (enforced by
:class:`~berds_core.lab.access.Lab`); here the judge works for the reviewer:

- :func:`review_queue`: the disagreements (two humans, or a human and the
  judge) ordered by ``|p_judge − m|``, ``m`` the competence-weighted share of
  "supports" among the pair's human labels (weights: each annotator's
  estimated competence, :mod:`berds_core.lab.reliability`; a spammer's label
  weighs about nothing). Pairs where reliable annotators agree and the judge
  is confident of the opposite come first; pairs without a judge probability
  follow, the most split first.
- :func:`judge_failures`: the judge against the best label each pair has
  (adjudicated, else a reference label, else the annotator model's label when
  its posterior is at least ``min_posterior``), broken down per question, per
  perspective length (words) and per passage source, worst first, each error
  rate with its 95% Wilson interval.
"""
from __future__ import annotations

from collections import defaultdict

from .agreement import disagreements
from .checks import wilson_interval
from .reliability import DEFAULT_METHOD, estimate, model_labels, weighted_share

LENGTH_BINS = ((1, 8), (9, 15), (16, 25), (26, None))


def _prob(pred) -> float | None:
    if pred is None:
        return None
    prob, lab = pred
    return float(prob) if prob is not None else float(lab)


def review_queue(store, judge: str | None = None, *, method: str = DEFAULT_METHOD, seed: int = 0) -> list[dict]:
    """:func:`berds_core.lab.agreement.disagreements` with ``judge_prob``, ``weighted_majority`` and
    ``priority`` (``|judge_prob − weighted_majority|``), most urgent first."""
    est = estimate(model_labels(store), method, seed=seed)
    preds = store.judge_preds(judge) if judge else {}
    rows = []
    for r in disagreements(store, judge):
        jp = _prob(preds.get(r["pair_id"]))
        m = weighted_share(r["labels"], est.competence)
        rows.append({**r, "judge_prob": jp, "weighted_majority": m,
                     "priority": None if jp is None or m is None else abs(jp - m),
                     "split": None if m is None else min(m, 1 - m)})
    rows.sort(key=lambda r: (r["priority"] is None, -(r["priority"] or 0.0), -(r["split"] or 0.0), r["pair_id"]))
    return rows


def length_bin(text: str) -> str:
    n = len(str(text).split())
    for lo, hi in LENGTH_BINS:
        if hi is None or n <= hi:
            return f"{lo}+ words" if hi is None else f"{lo}-{hi} words"
    return "?"


def best_labels(store, *, method: str = DEFAULT_METHOD, min_posterior: float = 0.8, seed: int = 0) -> dict[str, tuple[int, str]]:
    """``{pair: (0/1, source)}``: adjudicated, else reference, else the model's confident label."""
    est = estimate(model_labels(store), method, seed=seed)
    out = {p: (lab, "model") for p, lab in est.labels.items()
           if max(est.posterior[p], 1 - est.posterior[p]) >= min_posterior}
    out.update({p: (lab, "reference") for p, lab in store.reference_labels().items()})
    out.update({p: (lab, "adjudicated") for p, lab in store.gold().items()})
    return out


def _group(items: list[tuple[int, int, float | None]]) -> dict:
    n = len(items)
    err = sum(p != t for p, t, _ in items)
    probs = [x for _, _, x in items if x is not None]
    return {"n": n, "errors": err, "error_rate": err / n if n else None, "ci95": wilson_interval(err, n),
            "false_positives": sum(p == 1 and t == 0 for p, t, _ in items),
            "false_negatives": sum(p == 0 and t == 1 for p, t, _ in items),
            "mean_prob": sum(probs) / len(probs) if probs else None}


def judge_failures(store, judge: str, *, method: str = DEFAULT_METHOD, min_posterior: float = 0.8, seed: int = 0) -> dict:
    """Where ``judge`` is wrong: overall and ``per_question`` / ``per_perspective_length`` / ``per_source``."""
    preds = store.judge_preds(judge)
    truth = best_labels(store, method=method, min_posterior=min_posterior, seed=seed)
    pairs = {p.pair_id: p for p in store.pairs(sorted(set(preds) & set(truth)))}
    groups = {"per_question": defaultdict(list), "per_perspective_length": defaultdict(list),
              "per_source": defaultdict(list)}
    texts, allrows, sources = {}, [], defaultdict(int)
    for pid, p in pairs.items():
        t, src = truth[pid]
        item = (int(preds[pid][1]), int(t), preds[pid][0])
        allrows.append(item)
        sources[src] += 1
        groups["per_question"][p.question_key].append(item)
        texts[p.question_key] = p.question
        groups["per_perspective_length"][length_bin(p.perspective)].append(item)
        groups["per_source"][p.source or p.retriever or "(none)"].append(item)
    out = {"judge": judge, "truth_sources": dict(sources), "min_posterior": min_posterior, "overall": _group(allrows)}
    for name, g in groups.items():
        blocks = {k: _group(v) for k, v in g.items()}
        if name == "per_question":
            for k, b in blocks.items():
                b["text"] = texts[k]
        out[name] = dict(sorted(blocks.items(), key=lambda kv: (-(kv[1]["error_rate"] or 0.0), -kv[1]["n"], kv[0])))
    return out
