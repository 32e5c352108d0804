"""What a page computes for one question, as plain data (no Streamlit): a ranked column, a judged run line,
the best rank of a missing perspective.

A page holds an :class:`Engine` (the corpus, the retriever, the judge and the embedder it resolved from the
sidebar's strings) and names what it ranks with a pipeline (:mod:`berds_core.diversify`):
:func:`column_pipeline` turns the pages' method pickers (the names of
:data:`~berds_core.diversify.methods.METHOD_TABLE`: ``none``, ``mmr``, ``qe``, ``coverage``, ``xquad``, ``pm2``,
``preset``; aliases such as ``rerank`` too) into the pipelines ``berds retrieve``'s flags make of the same
methods. ``bench/playground.py`` and ``scripts/precompute_demo_embeddings.py`` call these functions, so they time
and pre-compute exactly what the pages do.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..diversify import Pipeline, Using, as_pipeline
from ..diversify.methods import LABELS, find_method, stage_keywords
from ..experiment import Searched, decide, judge_band, label_report, policy_name, rankings, run
from ..judges import judge_passages, judge_run
from ..judges.calibration import verdicts
from ..judges.verdicts import judge_groups
from ..records import Hits
from ..retrieval.caching import DEFAULT_DEPTH as DEPTH
from ..runs import DEFAULT_POLICY, gold_matrix as matrix

METHOD_NAMES = LABELS  # the pages' names of their methods (Evaluate's picker and labels): the registry's
# the perspective sources the pages offer (of ``diversify.query_expansion.QE_SOURCES``), in the pages' words
QE_LABELS = {"dataset": "dataset's generated perspectives", "offline": "offline yes/no facets (no LLM)",
             "oracle": "gold perspectives (oracle)"}


def method_label(retriever: str, method: str, pipeline, labels: str) -> str:
    """A configuration's name, printed from what runs: a pipeline that names its own retriever (the preset) is
    its spec, whatever ``retriever`` says; the others name the retriever, the method and the knob their stage
    reads (the perspective source of those that read one, else MMR's λ)."""
    p = as_pipeline(pipeline)
    if p.retriever:
        return f"{METHOD_NAMES[method]} = {p} · {labels}"
    stage = p.stages[-1] if p.stages else None
    extra = (f" ({stage.source})" if hasattr(stage, "source") else
             f" λ={stage.lam:.2f}" if hasattr(stage, "lam") else "")
    return f"{retriever} {METHOD_NAMES[method]}{extra} · {labels}"


@dataclass
class Engine:
    """What a page ranks and judges with: ``corpus``, ``retriever`` (e.g. a ``SharedSearch``), ``judge``
    (a Judge or None) and ``embedder`` (an encoder object; None: the dense retriever's own)."""

    corpus: object
    retriever: object
    judge: object = None
    embedder: object = None


def column_pipeline(method: str, lam: float | None = None, source: str = "dataset") -> Pipeline:
    """The pipeline of a page's method picker (a name or alias of ``METHOD_TABLE``: ``none``, ``mmr``, ``qe``,
    ``rerank``/``coverage``, ``xquad``, ``pm2``, ``rvr``, ``preset``) over the top ``DEPTH`` candidates: the
    entry's stage with ``lam`` (its λ where it takes one; None: the stage's default) and ``source`` (where its
    perspectives come from, where it reads any); the preset is its saved pipeline."""
    m = find_method(method)
    takes = stage_keywords(m)
    return m.pipeline(DEPTH, **{key: v for key, v in (("lam", lam), ("source", source))
                                if key in takes and v is not None})


def rank(engine: Engine, question, pipeline, k: int) -> Hits:
    """The top-k hits (corpus rows and scores) of one column: ``pipeline`` (a Pipeline, spec or preset name),
    run by the one runner (``berds_core.experiment.rankings``)."""
    return rankings([question], pipeline, k, Searched(engine.corpus, engine.retriever),
                    using=Using(judge=engine.judge, embedder=engine.embedder))[0]


def judge_matrix(judge, passages: list, perspectives: list[str], question: str | None = None, groups=None
                 ) -> tuple[np.ndarray, np.ndarray]:
    """Judge probabilities and labels, shaped (passages x perspectives).

    ``passages``: corpus ``Passage`` objects (the judge reads them as it reads run passages:
    text + " " + title for the LLM judges, text for the embedded one) or plain texts (read as is).
    ``question``: passages the judge finds off its topic support nothing (``judges.gate``); ``groups``: the
    perspectives of which a passage supports at most one (None: found from the perspectives).
    """
    return judge_passages(judge, list(passages), list(perspectives), question, groups)


def question_groups(judge, question) -> list:
    """The groups of opposite perspectives ``judge`` decides together for a ``Question`` (its stances read)."""
    return judge_groups(judge, question.perspectives, question.question, getattr(question, "stances", None))


def judge_verdicts(judge, probs: np.ndarray, groups=(), labels=None) -> np.ndarray:
    """``+1`` supports, ``0`` unsure, ``-1`` does not (``judges.calibration.verdicts`` with the judge's band,
    its one-side rule's band for the members of ``groups``); a pair the judge did not label (the other side
    of a passage's opposite perspectives) is never drawn as supporting."""
    probs = np.asarray(probs, dtype=float)
    band = judge_band(judge, list(groups), probs.shape)
    # with a band the threshold inside it decides nothing (below the band: no); per pair, its own band's
    v = verdicts(probs, band, judge.threshold if band is None else band[0]).reshape(probs.shape)
    if labels is not None:
        v = np.where((v == 1) & ~np.asarray(labels, dtype=bool).reshape(probs.shape), 0, v).astype(np.int8)
    return v


def gold_matrix(gold, question, ids: list[str]) -> np.ndarray | None:
    """Gold labels of the passages ``ids`` for ``question`` (None when the dataset has none)."""
    if gold is None:
        return None

    return matrix(gold, question.id, len(question.perspectives), ids)


def counted_labels(judge, probs: np.ndarray, labels: np.ndarray, policy: str, groups=()
                   ) -> tuple[np.ndarray, np.ndarray]:
    """(the labels that count under ``policy``, each pair's verdict as the chips draw it). The verdict is the
    judge's three-way one under either policy (0: inside its unsure band), so a chip says "unsure" whatever
    counts; under ``confident`` an unsure pair never counts, under ``threshold`` it counts by the threshold's
    decision (``berds_core.experiment.decide``). A judge without a band: +1 / -1 by what counts. ``groups``:
    the opposite perspectives the judge decided together (their members read its one-side rule's band)."""
    counted, _ = decide(probs, labels, judge_band(judge, list(groups), np.shape(labels)), policy)
    if getattr(judge, "band", None) is not None and np.size(probs):
        return counted, judge_verdicts(judge, probs, groups, labels)
    return counted, np.where(counted, 1, -1).astype(np.int8).reshape(np.shape(labels))


def column_result(engine: Engine, question, pipeline, k: int, *, gold=None, use_gold: bool = False,
                  label: str | None = None, policy: str = DEFAULT_POLICY) -> dict:
    """Everything one Playground column shows, as plain data (picklable); ``label``: its ``method``
    (default: the pipeline's spec); ``policy``: how the judge's labels count (``berds_core.experiment``)."""
    corpus, judge = engine.corpus, engine.judge
    ranked = rank(engine, question, pipeline, k)
    rows = ranked.rows.tolist()
    texts = [corpus.texts[r] for r in rows]
    ids = [corpus.ids[r] for r in rows]
    m = len(question.perspectives)
    groups = question_groups(judge, question)
    probs, labels = judge_matrix(judge, [corpus[r] for r in rows], question.perspectives, question.question, groups)
    counted, verdict = counted_labels(judge, probs, labels, policy, groups)
    g = gold_matrix(gold, question, ids)
    by_gold = use_gold and g is not None
    # the judge's metrics count what the policy counts; perspectives it is unsure about are said apart
    L = g if by_gold else counted
    covered = L[:k].any(axis=0) if len(L) else np.zeros(m, dtype=bool)
    # a perspective the judge is unsure about: an unsure pair in the top k and no pair it is sure supports it
    # (under ``threshold`` that includes one covered only by unsure pairs the threshold counts)
    sure = (L[:k] & (verdict[:k] == 1)).any(axis=0) if len(L) else covered
    unsure = (np.zeros(m, dtype=bool) if by_gold or not len(L) else ~sure & (verdict[:k] == 0).any(axis=0))
    report = label_report([L], labels="gold" if by_gold else getattr(judge, "name", "judge"),
                          policy=policy_name(by_gold, policy), ids=[question.id], ks=(k,))
    return {
        "method": label if label is not None else str(as_pipeline(pipeline)),
        "passages": [{"rank": i + 1, "row": r, "id": ids[i], "title": corpus.titles[r], "text": texts[i],
                      "score": s, "probs": probs[i].tolist(), "labels": labels[i].tolist(),
                      "verdicts": verdict[i].tolist(), "counted": counted[i].tolist(),
                      "gold": None if g is None else g[i].tolist()} for i, (r, s) in enumerate(ranked)],
        "mrecall": float(report.per_question[f"mrecall@{k}"][0]) if len(L) else 0.0,
        "precision": float(report.per_question[f"precision@{k}"][0]),
        "covered": covered.tolist(),
        "unsure": unsure.tolist(),
        "labels_from": "gold" if by_gold else "judge",
        "policy": policy_name(by_gold, policy),
        "groups": [list(g) for g in groups],
    }


def best_ranks(engine: Engine, question, which: list[int], *, gold=None, use_gold: bool = False,
               depth: int = DEPTH, policy: str = DEFAULT_POLICY) -> dict:
    """For perspectives ``which``: ``{"ranks": {j: the best rank (1-based) in the top ``depth`` of plain
    retrieval at which a passage supports it (the judge's labels under ``policy``), None when none does},
    "searched": how many passages that top held}`` (fewer than ``depth`` in a small corpus, e.g. a demo
    question's pool of 40)."""
    if not which:
        return {"ranks": {}, "searched": 0}
    corpus = engine.corpus
    rows = rankings([question], Pipeline(), depth, Searched(corpus, engine.retriever))[0].rows.tolist()
    if use_gold and gold is not None:
        L = gold_matrix(gold, question, [corpus.ids[r] for r in rows])[:, which]
    else:  # what the policy counts, as the columns count it: every perspective judged, the groups decided together
        groups = question_groups(engine.judge, question)
        probs, labels = judge_matrix(engine.judge, [corpus[r] for r in rows], question.perspectives,
                                     question.question, groups)
        L = decide(probs, labels, judge_band(engine.judge, groups, labels.shape), policy)[0][:, which]
    out = {}
    for col, j in enumerate(which):
        hit = np.nonzero(L[:, col])[0]
        out[j] = int(hit[0]) + 1 if hit.size else None
    return {"ranks": out, "searched": len(rows)}


def run_entry(engine: Engine, question, pipeline, k: int) -> dict:
    """One BERDS run line for a question (``berds_core.experiment.run``): ranked ctxs and the judge's
    ``<name>-preds``."""
    entry = run([question], pipeline, k, Searched(engine.corpus, engine.retriever),
                using=Using(judge=engine.judge, embedder=engine.embedder))[0]
    judge_run([entry], engine.judge, progress=False)  # adds <name>-preds and <name>-probs, as `berds judge` does
    return entry
