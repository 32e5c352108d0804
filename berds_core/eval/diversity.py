"""TREC diversity measures (α-nDCG, ERR-IA, P-IA, subtopic recall) through ir_measures / pyndeval.

BERDS maps onto the TREC Web track's diversity task directly: the question is
the topic, each perspective is a **subtopic** (its index is the subtopic id),
and the gold or judge labels are **subtopic qrels**: one line per judged
(passage, perspective) pair, relevance 1 when the passage supports the
perspective, else 0. The measures are computed by ``ndeval`` (the TREC
reference implementation, through ``pyndeval``) via ``ir_measures``; nothing
here re-implements them. ``ir_measures`` hands ndeval the qrels ``iteration``
column as the subtopic id (``PyNdEvalProvider._map_qrel_namedtuple``), which is
the second column of a TREC qrels file, so the files written by
:func:`write_trec_qrels` are read the same way by any TREC tool.

What ndeval computes (binary relevance, ``alpha`` = 0.5 by default; checked by
hand in ``tests/test_diversity_metrics.py``):

- ``alpha_ndcg@k``: Σ_{r≤k} Σ_s rel(d_r, s)·(1 − α)^{#earlier docs relevant to s} / log2(r + 1),
  divided by the same sum for the ideal ranking, built greedily from the
  relevant documents **in the qrels** (the judged pool).
- ``err_ia@k``: mean over subtopics of ERR@k with stopping probability 0.5 for a
  relevant document, divided by Σ_{r≤k} 0.5^r / r (ndeval's collection-independent
  normalisation: the ERR of a ranking whose every document is relevant).
- ``p_ia@k``: mean over subtopics of (documents relevant to s in the top k) / k.
- ``strecall@k``: share of subtopics with at least one relevant document in the top k.

**Pooling caveat.** ndeval knows only the subtopics and relevant documents in
the qrels: a perspective that no judged passage supports is not a subtopic at
all (subtopic recall divides by the perspectives the pool covers, unlike
MRecall, which divides by all m), and α-nDCG's ideal ranking is built from the
judged pool. Runs are comparable only on the same qrels: compare systems on a
**shared pool**, the union of the runs' judged passages (:func:`subtopic_qrels`
with several runs; each pair is judged once through the judge cache).

Runs: a TREC run lists each passage once per question, so repeated passage ids
keep their first rank; the score written is ``n − rank`` (strictly decreasing)
because diversified runs keep the retriever's score, which is not in rank order.
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import Iterable, Sequence

import numpy as np

from ..errors import InputError
from ..files.jsonio import atomic_write
from ..runs import gold_matrix, judged_mask, label_matrix
from .measures import FAMILIES, MAX_NDEVAL_CUTOFF, NDEVAL_ALPHA, ndeval_measures

DEFAULT_ALPHA = NDEVAL_ALPHA
MAX_CUTOFF = MAX_NDEVAL_CUTOFF  # ndeval evaluates at most the top 20
NAMES = tuple(f.key for f in FAMILIES if f.ndeval)  # alpha_ndcg, err_ia, p_ia, strecall
LABELS = {f.key: f.label for f in FAMILIES if f.ndeval}


def measures(ks: Iterable[int], alpha: float = DEFAULT_ALPHA) -> dict:
    """``{"alpha_ndcg@5": ir_measures measure, ...}`` for every k (k <= 20), keyed by ``Measure.key``."""
    return {m.key: m.ir_measure() for m in ndeval_measures(ks, alpha)}


def supported_ks(ks: Iterable[int]) -> list[int]:
    return [int(k) for k in ks if 1 <= int(k) <= MAX_CUTOFF]


# --------------------------------------------------------------------------- qrels and runs


def _pool_of(entry: dict, gold, judge) -> dict[str, np.ndarray]:
    """Passage id -> relevance per perspective for the passages this entry's labels judge.

    Judge verdicts are read through the runs API (either layout); KeyError when the
    judge is absent, ValueError for a gold index the question does not have.
    """
    ids = [str(c["id"]) for c in entry["ctxs"]]
    pool: dict[str, np.ndarray] = {}
    if judge is not None:
        for pid, rel, judged in zip(ids, label_matrix(entry, judge=judge), judged_mask(entry, judge)):
            if judged:
                pool[pid] = pool[pid] | rel if pid in pool else rel.copy()
        return pool
    pids = list(dict.fromkeys(ids + list(gold.get(str(entry["id"]), {}))))
    return dict(zip(pids, gold_matrix(gold, entry["id"], len(entry["perspectives"]), pids)))


def subtopic_qrels(runs: Sequence[Sequence[dict]], *, gold=None, judge: str | None = None) -> list:
    """The subtopic qrels (``ir_measures.Qrel`` with ``iteration`` = perspective index) of the judged pool.

    ``runs``: one or more runs (lists of entries) of the same questions. The
    pool of a question is the union over the runs of its judged passages:
    with ``gold``, every gold-labelled passage of the question plus every
    retrieved one (unlabelled = supports nothing); with ``judge``, every
    passage with a stored ``<judge>-preds`` row. A passage judged in several
    runs is relevant to a perspective when any of them says so (as
    ``evaluation.union_matrix`` does). One line per (passage, perspective).
    Raises KeyError (missing judge) or ValueError (gold index out of range).
    """
    from ir_measures import Qrel

    if (gold is None) == (judge is None):
        raise ValueError("give exactly one of gold= or judge=")
    pools: dict[str, dict[str, np.ndarray]] = {}
    for entries in runs:
        for e in entries:
            qid = str(e["id"])
            pool = pools.setdefault(qid, {})
            for pid, rel in _pool_of(e, gold, judge).items():
                if pid in pool and pool[pid].shape == rel.shape:
                    pool[pid] = pool[pid] | rel
                elif pid in pool:
                    raise ValueError(f"question {qid}: runs disagree on the number of perspectives")
                else:
                    pool[pid] = rel
    return [Qrel(qid, pid, int(r), str(j)) for qid, pool in pools.items()
            for pid, rel in pool.items() for j, r in enumerate(rel)]


def ranked_ids(entry: dict) -> list[str]:
    """The entry's passage ids in rank order, each once (first occurrence)."""
    return list(dict.fromkeys(str(c["id"]) for c in entry["ctxs"]))


def scored_docs(entries: Sequence[dict]) -> list:
    """The run as ``ir_measures.ScoredDoc`` rows, score ``n − rank`` (strictly decreasing)."""
    from ir_measures import ScoredDoc

    out = []
    for e in entries:
        ids = ranked_ids(e)
        out.extend(ScoredDoc(str(e["id"]), pid, float(len(ids) - i)) for i, pid in enumerate(ids))
    return out


# --------------------------------------------------------------------------- scores


def diversity_scores(entries: Sequence[dict], qrels, ks: Iterable[int] = (5, 10), *,
                     alpha: float = DEFAULT_ALPHA) -> dict[str, np.ndarray]:
    """Per-question ``alpha_ndcg@k``, ``err_ia@k``, ``p_ia@k``, ``strecall@k`` (entry order).

    Computed by ``ir_measures``' pyndeval provider on :func:`scored_docs` and
    ``qrels``; ks above 20 are skipped (ndeval's limit). A question ndeval
    does not score (no passages retrieved, or nothing judged) scores 0.
    """
    import ir_measures

    chosen = ndeval_measures(supported_ks(ks), alpha)
    names = {m.key: m.ir_measure() for m in chosen}
    by_measure = {ir: key for key, ir in names.items()}
    index = {str(e["id"]): i for i, e in enumerate(entries)}
    out = {name: np.zeros(len(entries)) for name in names}
    if not names or not entries:
        return out
    qrels = list(qrels)
    if not qrels:
        return out
    run = scored_docs(entries)
    # One call per ndeval invocation (alpha-nDCG's alpha, the others at ndeval's default 0.5): ir_measures
    # 0.4.3's pyndeval provider hands its run iterator to the first invocation only, so measures that
    # need two invocations in one call leave the second group unscored.
    groups = [[names[m.key] for m in chosen if m.family.key == "alpha_ndcg"],
              [names[m.key] for m in chosen if m.family.key != "alpha_ndcg"]]
    if alpha == DEFAULT_ALPHA:
        groups = [groups[0] + groups[1]]
    for group in groups:
        for metric in ir_measures.pyndeval.iter_calc(group, qrels, run):
            i = index.get(metric.query_id)
            if i is not None:
                out[by_measure[metric.measure]][i] = float(metric.value)
    return out


def pooled_diversity(runs: Sequence[Sequence[dict]], *, gold=None, judge: str | None = None,
                     ks: Iterable[int] = (5, 10), alpha: float = DEFAULT_ALPHA) -> tuple[list, list[dict]]:
    """Score several runs of the same questions on their shared pool.

    Returns the subtopic qrels of the union of the runs' judged passages and,
    per run, :func:`diversity_scores` on those qrels (so every run is measured
    against the same ideal ranking). One run: its own pool.
    """
    qrels = subtopic_qrels(runs, gold=gold, judge=judge)
    return qrels, [diversity_scores(entries, qrels, ks, alpha=alpha) for entries in runs]


# --------------------------------------------------------------------------- TREC files


def _bad_id(value: str) -> bool:
    return not value or any(ch.isspace() for ch in value)


def check_trec_ids(entries: Sequence[dict], qrels, *, run_path, qrels_source) -> None:
    """InputError when an id cannot go into a whitespace-separated TREC file (checked before writing)."""
    for e in entries:
        if _bad_id(str(e["id"])):
            raise InputError(run_path, None, "id", f"question id {str(e['id'])!r} is empty or holds whitespace, "
                                                    "which TREC files cannot")
        for pid in ranked_ids(e):
            if _bad_id(pid):
                raise InputError(run_path, None, "ctxs.id", f"question {e['id']!r}: passage id {pid!r} is empty "
                                                             "or holds whitespace, which TREC files cannot")
    for q in qrels:
        if _bad_id(q.doc_id):
            raise InputError(qrels_source, None, "passage_id", f"question {q.query_id!r}: passage id {q.doc_id!r} "
                                                                "is empty or holds whitespace, which TREC files cannot")


def write_trec_run(path, entries: Sequence[dict], tag: str) -> int:
    """``qid Q0 docid rank score tag`` lines (rank from 1, score ``n − rank + 1``); returns the line count.

    Ids are not checked here: call :func:`check_trec_ids` first.
    """
    n = 0
    with atomic_write(path) as fh:
        for e in entries:
            ids = ranked_ids(e)
            for r, pid in enumerate(ids, 1):
                fh.write(f"{e['id']} Q0 {pid} {r} {len(ids) - r + 1} {tag}\n")
                n += 1
    return n


def write_trec_qrels(path, qrels) -> int:
    """``qid subtopic docid relevance`` lines (TREC diversity qrels, as ndeval reads them)."""
    n = 0
    with atomic_write(path) as fh:
        for q in qrels:
            fh.write(f"{q.query_id} {q.iteration} {q.doc_id} {q.relevance}\n")
            n += 1
    return n


def run_tag(path) -> str:
    """A TREC run tag from a run file name (letters, digits, ``._-``)."""
    stem = Path(path).name
    for suffix in (".jsonl", ".json"):
        if stem.endswith(suffix):
            stem = stem[: -len(suffix)]
    return re.sub(r"[^A-Za-z0-9._-]+", "_", stem) or "run"
