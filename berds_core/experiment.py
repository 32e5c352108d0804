"""One configuration run and scored, the one call every face makes: ``berds evaluate``, ``berds leaning`` /
``sycophancy``, ``berds judge`` and the Playground, Evaluate and Leaning pages build the inputs, call
:func:`score` (a run's figures) or :func:`side_rows` (leaning and sycophancy per question), and draw what
comes back.

**Label policies.** A judge gives each (passage, perspective) pair a probability and a threshold decision;
a judge with an unsure band (the embedded and argkp judges: ``Judge.band``, the thresholds its development
questions cannot tell apart) also says which decisions are too close to call. A policy names how a pair
counts when a run is scored with a judge's labels:

- ``threshold`` (the default, :data:`DEFAULT_POLICY`): a pair supports when the judge's probability is at or
  above its threshold, the decision ``berds judge`` stores as ``<name>-preds``. It is the rule of the BERDS
  paper (its evaluator's Yes counts, there is no third answer) and the only one the authors' run files can be
  scored by (they store decisions, no probabilities).
- ``confident``: a pair supports only when the judge is sure of it (its probability at or above the top of
  the unsure band); a pair inside the band counts as not supporting and is counted apart (``unsure``). For a
  judge without a band the two policies are the same.

Gold labels have no policy: every gold label counts. Every report, run file and JSON output names the policy.
A judged run line keeps the threshold decisions in ``<name>-preds`` (the authors' layout), the probabilities
in ``<name>-probs``, the band in ``<name>-band`` and the rule its ``-preds`` follow in ``<name>-policy``
(:func:`berds_core.runs.set_band`), so either policy can be scored from the file alone.
"""
from __future__ import annotations

import copy
import dataclasses
from dataclasses import dataclass, field

import numpy as np

from .diversify import diversify
from .eval.evaluation import DEFAULT_KS, scores
from .eval.leaning import bucket, exposure, query_for, rank_leaning, shares_summary, side_shares
from .judges import judge_passages
from .judges.calibration import YES, verdicts
from .judges.verdicts import judge_groups
from .runs import (DEFAULT_POLICY, POLICIES, gold_matrix, label_matrix, pair_band, prob_matrix, set_judgments,
                   stored_band)

GOLD = "gold"  # the policy name of a report scored with gold labels (every label counts)


def check_policy(name: str) -> str:
    """``name`` when it is a label policy, else ValueError naming the policies."""
    if name not in POLICIES:
        raise ValueError(f"unknown label policy {name!r}: choose {' or '.join(POLICIES)}")
    return name


def decide(probs, labels, band, policy: str) -> tuple[np.ndarray, int]:
    """The labels that count under ``policy`` and how many pairs were unsure: ``labels`` are the judge's
    threshold decisions (after its topic gate and one-side rule), ``probs`` its probabilities, ``band`` its
    unsure band (``(lo, hi)``, or per pair arrays: :func:`berds_core.runs.pair_band`)."""
    labels = np.asarray(labels, dtype=bool)
    if check_policy(policy) == "threshold" or band is None or probs is None or not labels.size:
        return labels, 0
    p = np.nan_to_num(np.asarray(probs, dtype=float).reshape(labels.shape), nan=0.0)
    v = verdicts(p, band, np.minimum(band[1], 1.0))
    return labels & (v == YES), int((labels & (v != YES)).sum())


def run_labels(entry: dict, judge: str, policy: str) -> tuple[np.ndarray, int]:
    """A judged run line's labels under ``policy`` (from its stored ``-preds``, ``-probs`` and ``-band``; a line
    without a stored band or probabilities is scored by its ``-preds``) and how many pairs were unsure."""
    L = label_matrix(entry, judge=judge)
    return decide(prob_matrix(entry, judge), L, stored_band(entry, judge), policy)


def labelled_passages(judge, passages, perspectives, question: str | None, policy: str, groups=None
                      ) -> tuple[np.ndarray, np.ndarray, int]:
    """Probabilities and the labels that count under ``policy`` of passages the judge reads now (gated on
    ``question``'s topic, one side of opposite perspectives, as ``berds judge`` does), and how many pairs were
    unsure."""
    perspectives = list(perspectives)
    groups = judge_groups(judge, perspectives, question) if groups is None else groups
    probs, labels = judge_passages(judge, list(passages), perspectives, question, groups)
    L, unsure = decide(probs, labels, judge_band(judge, groups, labels.shape), policy)
    return probs, L, unsure


def judge_band(judge, groups, shape):
    """The unsure band of each pair a judge decides (its one-side rule's band for group members)."""
    return pair_band(getattr(judge, "band", None), getattr(judge, "group_band", None), groups, shape)


def policy_entries(entries: list[dict], judge: str, policy: str) -> tuple[list[dict], int]:
    """The run lines as ``policy`` scores them, and how many pairs were unsure: under ``threshold`` the lines
    themselves; under ``confident``, copies whose ``<judge>-preds`` hold the labels that count (the diversity
    measures and every other reader of ``-preds`` then count what the report counts)."""
    if check_policy(policy) == "threshold":
        return entries, 0
    out, unsure = [], 0
    for e in entries:
        L, u = run_labels(e, judge, policy)
        c = copy.deepcopy(e)
        if u:
            set_judgments(c, judge, L, prob_matrix(e, judge))
        out.append(c)
        unsure += u
    return out, unsure


@dataclass
class Report:
    """A configuration's figures: ``policy`` (``threshold``, ``confident`` or ``gold``), ``labels`` (``gold`` or
    the judge's name), per question its ``ids``, ``subsets``, label ``matrices`` and ``per_question`` scores
    (``mrecall@k``, ``precision@k``, ``precision_at_1``, ...); ``unsure``: pairs the threshold counts that the
    confident policy does not; ``entries``: the run lines as scored (:func:`policy_entries`)."""

    policy: str
    labels: str
    ids: list
    subsets: list
    matrices: list
    per_question: dict = field(default_factory=dict)
    unsure: int = 0
    entries: list = field(default_factory=list, repr=False)

    def mean(self, key: str) -> float | None:
        v = np.asarray(self.per_question[key], dtype=float)
        return float(v.mean()) if v.size else None

    def as_dict(self) -> dict:
        """The report as JSON: the policy, the labels, the means and each question's scores."""
        return {"policy": self.policy, "labels": self.labels, "unsure": self.unsure, "n": len(self.ids),
                "means": {k: self.mean(k) for k in self.per_question},
                "per_question": [{"id": q, **{k: float(v[i]) for k, v in self.per_question.items()}}
                                 for i, q in enumerate(self.ids)]}


def score(entries: list[dict], *, gold=None, judge: str | None = None, policy: str = DEFAULT_POLICY,
          ks=DEFAULT_KS) -> Report:
    """Score a run (its lines): ``gold`` labels, or the stored labels of the judge named ``judge`` under
    ``policy``. Raises what :func:`berds_core.runs.label_matrix` raises (KeyError: a line without the judge's
    labels; ValueError: a gold perspective the question lacks)."""
    check_policy(policy)
    if gold is not None:
        scored, unsure = entries, 0
        mats = [label_matrix(e, gold=gold) for e in scored]
    else:
        scored, unsure = policy_entries(entries, judge, policy)
        mats = [label_matrix(e, judge=judge) for e in scored]
    return Report(policy=policy_name(gold is not None, policy), labels=GOLD if gold is not None else judge,
                  ids=[e["id"] for e in entries], subsets=[e.get("subset") or "all" for e in entries],
                  matrices=mats, per_question=scores(mats, ks) if mats else {}, unsure=unsure, entries=scored)


def policy_name(use_gold: bool, policy: str) -> str:
    """The policy a report names: ``gold`` for gold labels, else the judge's policy."""
    return GOLD if use_gold else check_policy(policy)


@dataclass(frozen=True)
class Labels:
    """Where a face's labels come from: ``gold`` labels, or a ``judge`` (a Judge object) read under ``policy``."""

    gold: object = None
    judge: object = None
    policy: str = DEFAULT_POLICY


def top_labels(question, query: str, corpus, retriever, pipeline, k: int, labels: Labels
               ) -> tuple[list[str], np.ndarray]:
    """(passage ids, labels that count) of the top ``k`` that ``pipeline`` ranks for ``query`` in ``corpus``
    (the question's own pool or the corpus): ``labels.gold``, or ``labels.judge``'s under ``labels.policy``,
    gated on the question's own topic (the query may be one side's perspective)."""
    q = dataclasses.replace(question, question=query)
    rows = diversify(q, corpus, retriever, pipeline, k, judge=labels.judge).rows.tolist()
    ids = [corpus.ids[r] for r in rows]
    if labels.gold is not None:
        return ids, gold_matrix(labels.gold, question.id, len(question.perspectives), ids)
    groups = judge_groups(labels.judge, question.perspectives, question.question, question.stances)
    _, L, _ = labelled_passages(labels.judge, [corpus[r] for r in rows], question.perspectives, question.question,
                                labels.policy, groups)
    return ids, L


def side_rows(questions, sides: dict, form: str, k: int, *, corpus_for, retriever_for, pipeline,
              labels: Labels) -> list[dict]:
    """Per two-perspective question (those in ``sides``: question id -> ``Sides``), for one query ``form``
    (``question``, ``support``, ``oppose``): its leaning ``bucket``, the side shares ``p`` and ``n`` of its top
    ``k``, rank-aware leaning ``rl`` and each side's exposure. ``corpus_for(question)`` and
    ``retriever_for(corpus)`` say where each question is searched (its pool, or one corpus)."""
    out = []
    for q in (q for q in questions if q.id in sides):
        s = sides[q.id]
        corpus = corpus_for(q)
        _, L = top_labels(q, query_for(form, q.question, q.perspectives, s), corpus, retriever_for(corpus),
                          pipeline, k, labels)
        p, n = side_shares(L, s, k)
        out.append({"id": q.id, "question": q.question, "subset": q.subset or "all", "bucket": bucket(L, s, k),
                    "p": p, "n": n, "rl": rank_leaning(L, s, k), "es": exposure(L, s.support, k),
                    "eo": exposure(L, s.oppose, k)})
    return out


def sycophancy_summary(rows: list[dict]) -> dict:
    """p and n (the means over questions of the side shares of :func:`side_rows`) and Δ = (p − n) / p (None
    when p = 0), as ``berds sycophancy`` prints them and the Leaning page draws them."""
    return shares_summary([(r["p"], r["n"]) for r in rows])


__all__ = ["POLICIES", "DEFAULT_POLICY", "GOLD", "Labels", "Report", "check_policy", "decide", "labelled_passages",
           "policy_entries", "policy_name", "run_labels", "score", "side_rows", "sycophancy_summary", "top_labels"]
