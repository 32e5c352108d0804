"""Judge passages and runs: the text a judge reads for a passage, the (passages x perspectives) verdicts of one
question, and a whole run's verdicts stored inside each passage (``<name>-preds`` / ``<name>-probs``, the BERDS
authors' layout)."""
from __future__ import annotations

import numpy as np

from ..runs import passage_text, set_band, set_judgments
from .base import Judge, gate


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
    perspective) and ``ctx["<judge.name>-probs"]``, the BERDS authors' layout; the line records the judge's
    unsure band and the rule its ``-preds`` follow (``runs.set_band``: ``threshold``).

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
        set_band(e, judge.name, getattr(judge, "band", None))  # what the confident label policy reads
        i += n
    return entries
