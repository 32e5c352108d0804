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
from dataclasses import dataclass

import numpy as np

from .diversify import Using, as_pipeline, diversify
from .diversify.candidates import union_partner
from .eval.evaluation import DEFAULT_KS, scores
from .eval.report import Report
from .eval.leaning import bucket, exposure, query_for, rank_leaning, shares_summary, side_shares
from .judges import judge_passages
from .judges.calibration import YES, verdicts
from .judges.verdicts import judge_groups
from .records import Hits
from .retrieval import get_retriever
from .retrieval.caching import SharedSearch
from .runs import (DEFAULT_POLICY, POLICIES, gold_matrix, label_matrix, pair_band, prob_matrix, question_entry,
                   set_judgments, stored_band)

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
    return label_report(mats, labels=GOLD if gold is not None else judge, policy=policy_name(gold is not None, policy),
                        ids=[e["id"] for e in entries], subsets=[e.get("subset") or "all" for e in entries], ks=ks,
                        unsure=unsure, entries=scored)


def label_report(matrices: list, *, labels: str, policy: str, ids: list, subsets: list | None = None,
                 ks=DEFAULT_KS, unsure: int = 0, entries: list | None = None) -> Report:
    """The Report of label matrices that already count what ``policy`` counts (``score`` reads them from run
    lines; the Playground's column from the pairs it judged and shows): the one place a face's MRecall and
    Precision are computed."""
    return Report(policy=policy, labels=labels, ids=list(ids), subsets=list(subsets or ["all"] * len(ids)),
                  matrices=matrices, per_question=scores(matrices, ks) if matrices else {}, unsure=unsure,
                  entries=entries if entries is not None else [])


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
    hits = rankings([q], pipeline, k, Searched(corpus, retriever), using=Using(judge=labels.judge))[0]
    return labels_of(question, corpus, hits, labels)


def labels_of(question, corpus, hits: Hits, labels: Labels) -> tuple[list[str], np.ndarray]:
    """(passage ids, labels that count) of ranked ``hits`` in ``corpus``: ``labels.gold``, or ``labels.judge``'s
    under ``labels.policy``, gated on the question's own topic."""
    rows = Hits.of(hits).rows.tolist()
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
    ``retriever_for(corpus)`` say where each question is searched (its pool, or one corpus); the questions of one
    corpus are ranked together (:func:`rankings`: plain retrieval searches them in one call)."""
    qs = [q for q in questions if q.id in sides]
    corpora = [corpus_for(q) for q in qs]
    searched = {id(c): Searched(c, retriever_for(c)) for c in corpora}
    asked = [dataclasses.replace(q, question=query_for(form, q.question, q.perspectives, sides[q.id])) for q in qs]
    where = dict(zip((id(a) for a in asked), (searched[id(c)] for c in corpora)))
    hits = rankings(asked, pipeline, k, lambda a: where[id(a)], using=Using(judge=labels.judge))
    out = []
    for q, corpus, h in zip(qs, corpora, hits):
        s = sides[q.id]
        _, L = labels_of(q, corpus, h, labels)
        p, n = side_shares(L, s, k)
        out.append({"id": q.id, "question": q.question, "subset": q.subset or "all", "bucket": bucket(L, s, k),
                    "p": p, "n": n, "rl": rank_leaning(L, s, k), "es": exposure(L, s.support, k),
                    "eo": exposure(L, s.oppose, k)})
    return out


def sycophancy_summary(rows: list[dict]) -> dict:
    """p and n (the means over questions of the side shares of :func:`side_rows`) and Δ = (p − n) / p (None
    when p = 0), as ``berds sycophancy`` prints them and the Leaning page draws them."""
    return shares_summary([(r["p"], r["n"]) for r in rows])


@dataclass(frozen=True)
class Searched:
    """Where a question is searched: a ``corpus`` and a ``retriever`` over it (anything with ``search(queries,
    k)``: a :class:`berds_core.retrieval.base.Retriever`, a ``SharedSearch``, a Ray cluster's search)."""

    corpus: object
    retriever: object


SHARED_QUERIES = 20_000  # hit lists kept for one search per question; a bigger run searches again past it


def rankings(questions, pipeline, k: int, where, *, using=None, progress: bool = False, desc: str | None = None
             ) -> list[Hits]:
    """The ranked hits (:class:`~berds_core.records.Hits`: corpus rows and scores) of each question, in order:
    ``pipeline`` (a :class:`~berds_core.diversify.Pipeline`, a spec or a preset name; plain retrieval is the
    ``none`` pipeline) over where it is searched: ``where``, a :class:`Searched` all questions share, or
    ``where(question) -> Searched`` (its own pool; None: nothing to search, an empty ranking). Consecutive
    questions on one corpus are one group: the plain pipeline searches them in one call; a pipeline that
    re-ranks keeps one search per question (``SharedSearch``) that serves its prefetch (the stages' batches)
    and its loop. ``using``: what the stages use (:class:`~berds_core.diversify.Using`, objects resolved at
    the edge); a ``union`` gets its second retriever here when ``using`` has none."""
    return [h for _, h in _ranked(questions, pipeline, k, where, using, progress, desc)]


def run(questions, pipeline, k: int, where, *, using=None, progress: bool = False, desc: str | None = None
        ) -> list[dict]:
    """One BERDS run line per question (:func:`berds_core.runs.question_entry`) of :func:`rankings`: the one
    runner of every face (``berds retrieve`` with or without diversification, its ``--corpus-per-question``
    and ``--ray`` paths, the Playground's columns, Evaluate, Answers, Leaning). The judge and the label policy
    come after, in :func:`score`."""
    questions = list(questions)
    return [question_entry(q, c, h) for q, (c, h) in
            zip(questions, _ranked(questions, pipeline, k, where, using, progress, desc))]


def _ranked(questions, pipeline, k, where, using, progress, desc) -> list[tuple]:
    """(corpus, hits) of each question, in order."""
    from tqdm import tqdm

    p, using, questions = as_pipeline(pipeline), using or Using(), list(questions)
    out = []
    with tqdm(total=len(questions), desc=desc or str(p), disable=not progress, file=None) as bar:
        for searched, qs in _groups(questions, where):
            corpus = None if searched is None else searched.corpus
            out += [(corpus, h) for h in _rank_group(qs, searched, p, int(k), using, progress, bar)]
    return out


def _groups(questions, where):
    """(Searched or None, consecutive questions searched in the same corpus by the same retriever)."""
    group, cur = [], None
    for q in questions:
        s = where if isinstance(where, Searched) else where(q)
        same = (s is None and cur is None) or (s is not None and cur is not None and s.corpus is cur.corpus
                                               and s.retriever is cur.retriever)
        if group and same:
            group.append(q)
            continue
        if group:
            yield cur, group
        group, cur = [q], s
    if group:
        yield cur, group


def _rank_group(qs, searched, p, k: int, using, progress: bool, bar) -> list[Hits]:
    if searched is None:
        bar.update(len(qs))
        return [Hits.empty() for _ in qs]
    corpus, retriever = searched.corpus, searched.retriever
    if not any(s.reorders or s.makes_candidates for s in p.stages):  # plain retrieval: one search for the group
        hits = [Hits.of(h) for h in retriever.search([q.question for q in qs], k)]
        bar.update(len(qs))
        return hits
    if not isinstance(retriever, SharedSearch):  # one search per question serves the prefetch and the loop
        retriever = SharedSearch(retriever, depth=max(p.depth, k), max_queries=min(max(len(qs), 1), SHARED_QUERIES))
    if p.pool == "union" and using.other_retriever is None:
        using = dataclasses.replace(using, other_retriever=union_retriever(corpus, retriever, progress))
    p.prefetch(qs, corpus, retriever, using, progress, k=k)
    out = []
    for q in qs:
        out.append(diversify(q, corpus, retriever, p, k, using=using))
        bar.update(1)
    return out


def union_retriever(corpus, retriever, progress: bool = False):
    """The retriever a ``union`` of candidates needs beside ``retriever`` (the other kind, the default model,
    over the same corpus; from the index cache when it was built before)."""
    return get_retriever(union_partner(retriever), corpus, progress=progress)


__all__ = ["POLICIES", "DEFAULT_POLICY", "GOLD", "Labels", "Report", "check_policy", "decide", "labelled_passages",
           "label_report", "labels_of", "policy_entries", "policy_name", "rankings", "run", "run_labels", "score",
           "Searched", "side_rows", "sycophancy_summary", "top_labels", "union_retriever"]
