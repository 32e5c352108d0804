"""Judge passages and runs: the text a judge reads for a passage, the (passages x perspectives) verdicts of one
question, and a whole run's verdicts stored inside each passage (``<name>-preds`` / ``<name>-probs``, the BERDS
authors' layout).

:func:`question_verdicts` is the one decision every face reads: topicality first (:func:`base.gate`), then the
judge's rule for perspectives that exclude each other (``Judge.decide`` over :func:`groups.exclusive_groups`:
one passage supports at most one of two opposite perspectives)."""
from __future__ import annotations

import numpy as np

from ..runs import passage_text, set_band, set_judgments
from .base import Judge, gate
from .groups import exclusive_groups, record_groups


def question_verdicts(judge: Judge, question: str | None, docs, perspectives, probs, labels, groups=None
                      ) -> tuple[np.ndarray, np.ndarray]:
    """One question's verdicts from the judge's pair probabilities and labels (passages x perspectives): passages
    off the question's topic support nothing, then the judge decides each passage's groups of opposite
    perspectives (``groups``; None: :func:`groups.exclusive_groups` of ``perspectives`` and ``question``)."""
    docs, perspectives = list(docs), list(perspectives)
    probs, labels = gate(judge, question, docs, probs, labels)
    decide = getattr(judge, "decide", None)  # a scorer with the judges' predict only: each pair alone
    if decide is None:
        return probs, labels
    if groups is None:
        groups = exclusive_groups(perspectives, question)
    return decide(question, docs, perspectives, probs, labels, groups)


def judge_passages(judge: Judge, passages, perspectives, question: str | None = None, groups=None,
                   **predict_opts) -> tuple[np.ndarray, np.ndarray]:
    """Probabilities and labels, shaped (passages x perspectives), for run ctxs, corpus passages or texts;
    with ``question``, passages the judge finds off its topic support nothing; of opposite perspectives
    (``groups``, None: found from the perspectives and the question) a passage supports at most one
    (:func:`question_verdicts`)."""
    n, m = len(passages), len(perspectives)
    if n == 0 or m == 0:
        return np.zeros((n, m)), np.zeros((n, m), dtype=bool)
    docs = [passage_text(p, judge) for p in passages]
    probs, labels = judge.predict([(d, s) for d in docs for s in perspectives], **predict_opts)
    return question_verdicts(judge, question, docs, perspectives, np.asarray(probs, dtype=float).reshape(n, m),
                             np.asarray(labels, dtype=bool).reshape(n, m), groups)


def judge_groups(judge: Judge, perspectives, question: str | None = None, stances=None) -> list:
    """The groups ``judge`` decides together (none for a judge without a one-side rule)."""
    if getattr(judge, "group_band", None) is None:
        return []
    return exclusive_groups(list(perspectives), question, stances)


def judge_run(entries: list[dict], judge: Judge, progress: bool = True) -> list[dict]:
    """Store the judge's verdicts inside each passage: ``ctx["<judge.name>-preds"]`` (one bool per
    perspective) and ``ctx["<judge.name>-probs"]``, the BERDS authors' layout; the line records the judge's
    unsure band and the rule its ``-preds`` follow (``runs.set_band``: ``threshold``).

    All pairs of the run go through one cached ``predict`` call, so an
    interrupted run resumes where it stopped. Passages the judge finds off the
    question's topic support nothing, and of two opposite perspectives a passage
    supports at most one (:func:`question_verdicts`; the line records the groups).
    """
    pairs = [(passage_text(c, judge), p) for e in entries for c in e["ctxs"] for p in e["perspectives"]]
    probs, labels = judge.predict(pairs, progress=progress, desc=f"judge {judge.name}")
    i = 0
    for e in entries:
        shape = (len(e["ctxs"]), len(e["perspectives"]))
        n = shape[0] * shape[1]
        docs = [pairs[i + r * shape[1]][0] for r in range(shape[0])] if shape[1] else []
        groups = record_groups(e) if getattr(judge, "group_band", None) is not None else []
        P, L = question_verdicts(judge, e.get("question"), docs, e["perspectives"], probs[i:i + n].reshape(shape),
                                 labels[i:i + n].reshape(shape), groups)
        set_judgments(e, judge.name, L, P)
        # what the confident label policy reads: the bands, and the groups the one-side rule decided
        set_band(e, judge.name, getattr(judge, "band", None), getattr(judge, "group_band", None), groups)
        i += n
    return entries
