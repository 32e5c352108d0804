"""Judge passages and runs: the text a judge reads for a passage, the (passages x perspectives) verdicts of one
question, and a whole run's verdicts stored inside each passage (``<name>-preds`` / ``<name>-probs``, the BERDS
authors' layout)."""
from __future__ import annotations

import numpy as np

from ..runs import set_judgments
from .base import Judge, gate
from .prompts import document_text


def passage_text(ctx, judge: Judge | None = None) -> str:
    """The text a judge reads for a passage: a run ``ctx`` dict, a corpus ``Passage``, or a string (as is).

    LLM judges read what the BERDS evaluator reads, ``text + " " + title`` when
    the passage has a title (spec section 3.5); the embedded judge reads
    ``title. text``, what the stance model reads in every use (:meth:`Judge.document`).
    A corpus ``Passage`` always has a title (possibly empty), like a run passage.
    """
    if isinstance(ctx, str):
        return ctx
    if not isinstance(ctx, dict):
        ctx = {"text": getattr(ctx, "text", ""), "title": getattr(ctx, "title", "") or ""}
    if judge is not None and hasattr(judge, "document"):
        return judge.document(ctx)

    return document_text(ctx)


def judge_passages(judge: Judge, passages, perspectives, question: str | None = None, **predict_opts
                   ) -> tuple[np.ndarray, np.ndarray]:
    """Probabilities and labels, shaped (passages x perspectives), for run ctxs, corpus passages or texts;
    with ``question``, passages the judge finds off its topic support nothing (:func:`base.gate`)."""
    n, m = len(passages), len(perspectives)
    if n == 0 or m == 0:
        return np.zeros((n, m)), np.zeros((n, m), dtype=bool)
    docs = [passage_text(p, judge) for p in passages]
    probs, labels = judge.predict([(d, s) for d in docs for s in perspectives], **predict_opts)
    return gate(judge, question, docs, np.asarray(probs, dtype=float).reshape(n, m),
                np.asarray(labels, dtype=bool).reshape(n, m))


def judge_run(entries: list[dict], judge: Judge, progress: bool = True) -> list[dict]:
    """Store the judge's verdicts inside each passage: ``ctx["<judge.name>-preds"]`` (one bool per
    perspective) and ``ctx["<judge.name>-probs"]``, the BERDS authors' layout.

    All pairs of the run go through one cached ``predict`` call, so an
    interrupted run resumes where it stopped. Passages the judge finds off the
    question's topic support nothing (:func:`base.gate`).
    """
    pairs = [(passage_text(c, judge), p) for e in entries for c in e["ctxs"] for p in e["perspectives"]]
    probs, labels = judge.predict(pairs, progress=progress, desc=f"judge {judge.name}")
    i = 0
    for e in entries:
        shape = (len(e["ctxs"]), len(e["perspectives"]))
        n = shape[0] * shape[1]
        docs = [pairs[i + r * shape[1]][0] for r in range(shape[0])] if shape[1] else []
        P, L = gate(judge, e.get("question"), docs, probs[i:i + n].reshape(shape), labels[i:i + n].reshape(shape))
        set_judgments(e, judge.name, L, P)
        i += n
    return entries
