"""Which perspectives an answer covers, next to what its passages covered.

The perspective-detection judge reads the answer as a document. An answer is
usually longer than the passages judges were built for (BERDS passages are
~100 words; the embedded judge reads 128 tokens), so it is cut into windows
of ``words`` words (``corpus.split_words``) and the answer supports a
perspective when any window does. With the answer's 1 x m label row, the
answer-level MRecall is BERDS's MRecall@k on it (``metrics.mrecall_at_k``):
with m perspectives it scores 1 when the answer covers min(m, k) of them --
the same bar as the retrieved top k.

:func:`evaluate_answers` puts, per configuration (an answers file), retrieval
MRecall@k of the passages the answer was written from, the answer's
MRecall and perspective coverage, P.D. and D.A. in one row, with bootstrap
intervals over questions.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from ..corpora.memory import split_words
from ..eval.evaluation import bootstrap_ci
from ..eval.measures import mrecall_at_k
from ..judges import judge_passages
from ..runs import judges_in, label_matrix
from .dispute_awareness import dispute_awareness
from .perspective_diversity import perspective_diversity

ANSWER_WORDS = 100


def answer_matrix(judge, answer: str, perspectives: Sequence[str], *, words: int = ANSWER_WORDS) -> np.ndarray:
    """(1, m) bool: the answer supports perspective j (any of its ``words``-word windows does)."""
    windows = split_words(str(answer), words) or [""]
    pairs = [(w, p) for w in windows for p in perspectives]
    _, labels = judge.predict(pairs)
    return np.asarray(labels, dtype=bool).reshape(len(windows), len(perspectives)).any(axis=0, keepdims=True)


def retrieval_matrix(entry: dict, k: int, *, gold=None, judge=None) -> np.ndarray:
    """(k', m) bool labels of the entry's top-k passages: gold labels, or the judge.

    A judge's stored predictions are read through ``runs.label_matrix`` when
    the entry carries them; otherwise the judge scores the passages (cached).
    """
    top = dict(entry, ctxs=list(entry.get("ctxs") or [])[:k])
    if gold is not None:
        return label_matrix(top, gold=gold)
    if judge.name in judges_in(entry):
        return label_matrix(entry, judge=judge.name)[:k]

    return judge_passages(judge, top["ctxs"], entry["perspectives"], entry.get("question"))[1]  # as judge_run


def retrieval_scores(entry: dict, k: int, *, gold=None, judge=None) -> dict:
    """``{"retrieval_mrecall", "retrieval_covered"}`` of the entry's top k ({} without passages or labels)."""
    if entry.get("ctxs") is None or (gold is None and judge is None):
        return {}
    L = retrieval_matrix(entry, k, gold=gold, judge=judge)
    m = len(entry["perspectives"])
    return {"retrieval_mrecall": mrecall_at_k(L, k) if len(L) else 0.0,
            "retrieval_covered": L[:k].any(axis=0).tolist() if len(L) else [False] * m}


def _mean_ci(values, n_boot: int, seed: int) -> dict:
    v = np.asarray([x for x in values if x is not None and np.isfinite(x)], dtype=float)
    if v.size == 0:
        return {"mean": None, "lo": None, "hi": None, "n": 0}
    lo, hi = bootstrap_ci(v, n_boot=n_boot, seed=seed)
    return {"mean": float(v.mean()), "lo": lo, "hi": hi, "n": int(v.size)}


@dataclass(frozen=True)
class AnswerScoring:
    """What scores answers: the perspective judge or ``gold`` labels (MRecall of the passages and of the
    answer), the P.D. model (``pd_mode``, inputs cut at ``max_length`` tokens) and the D.A. model; the
    bootstrap of the summary intervals (``n_boot``, ``seed``). A part left None is not computed."""

    judge: object = None
    gold: dict | None = None
    pd_generator: object = None
    da_generator: object = None
    pd_mode: str = "defined"
    max_length: int | None = None
    n_boot: int = 1000
    seed: int = 0


def evaluate_answers(rows: Sequence[dict], scoring: AnswerScoring, *, k: int | None = None) -> dict:
    """One configuration's table row and per-question values.

    ``rows``: answers rows with ``question``, ``perspectives``, ``generation``
    and optionally ``references`` (P.D.'s texts; default the perspectives) and
    ``ctxs`` (the passages the answer was written from; retrieval MRecall@k
    needs them and gold labels or a judge). ``k`` defaults to each row's own.
    Parts whose component is not given (judge, P.D. model, D.A. model) are None.
    """
    judge, gold, pd_generator, da_generator = scoring.judge, scoring.gold, scoring.pd_generator, scoring.da_generator
    pd_mode, max_length, n_boot, seed = scoring.pd_mode, scoring.max_length, scoring.n_boot, scoring.seed
    rows = list(rows)
    per_q = [{"id": r["id"], "question": r["question"]} for r in rows]
    for r, out in zip(rows, per_q):
        kk = int(k or r.get("k") or len(r.get("ctxs") or []) or 5)
        out["k"] = kk
        out.update(retrieval_scores(r, kk, gold=gold, judge=judge))
        if judge is not None:
            A = answer_matrix(judge, r["generation"], r["perspectives"])
            out["answer_mrecall"] = mrecall_at_k(A, kk)
            out["answer_covered"] = A[0].tolist()
            out["answer_coverage"] = float(A[0].mean())
    if pd_generator is not None:
        pd = perspective_diversity(pd_generator, [r["generation"] for r in rows],
                                   [r.get("references") or r["perspectives"] for r in rows],
                                   mode=pd_mode, max_length=max_length)
        for out, p in zip(per_q, pd):
            out.update(pd_sum=p["pd_sum"], pd_mean=p["pd_mean"], pd_ppl=p["ppl"], pd_cut=p["cut"],
                       pd_unscored=p["unscored"])
    if da_generator is not None:
        probs, labels = dispute_awareness(da_generator, [r["question"] for r in rows], [r["generation"] for r in rows])
        for out, p, lab in zip(per_q, probs, labels):
            out.update(da_prob=float(p), da=int(lab))
    summary = {"n": len(rows)}
    for key in ("retrieval_mrecall", "answer_mrecall", "answer_coverage", "pd_sum", "pd_mean", "da"):
        vals = [q.get(key) for q in per_q]
        summary[key] = None if all(v is None for v in vals) else _mean_ci(vals, n_boot, seed)
    if pd_generator is not None:
        summary["pd_mode"] = pd_mode
        summary["pd_partial_answers_cut"] = int(sum(q["pd_cut"] for q in per_q))
        summary["pd_partial_answers_unscored"] = int(sum(q["pd_unscored"] for q in per_q))
    return {"summary": summary, "per_question": per_q}


def table_row(label: str, summary: dict) -> dict:
    """A flat row (means only) for tables and CSV: one configuration."""
    row = {"configuration": label, "questions": summary["n"]}
    for key in ("retrieval_mrecall", "answer_mrecall", "answer_coverage", "pd_sum", "pd_mean", "da"):
        cell = summary.get(key)
        row[key] = None if cell is None or cell["mean"] is None or (isinstance(cell["mean"], float)
                                                                    and math.isnan(cell["mean"])) else cell["mean"]
    return row
