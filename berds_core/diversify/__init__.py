"""Diversifying retrieval: MMR, query expansion, a perspective-coverage re-ranker, xQuAD and PM-2, as stages.

The one entry point pages and CLI verbs use::

    diversify(question, corpus, retriever, pipeline, k, judge=None, embedder=None, using=None) -> Hits

``pipeline``: a :class:`Pipeline`, a spec string (``"bm25%30>>mmr(lam=0.5)"``,
``"dense%10>>coverage(probs=model,alpha=0.1,keep=2)"``; docs/pipelines.md) or a preset name
(``diverse``). The stages (:mod:`.stages`: ``none``, ``mmr``, ``qe``, ``union``, ``coverage``,
``xquad``, ``pm2``, ``rvr``) live in the ``STAGES`` registry; the kernels (``mmr``, ``round_robin_merge``,
``coverage_rerank``, ``xquad``, ``pm2``) are pure functions over arrays. The ranking is one
:class:`berds_core.records.Hits` (corpus rows and scores) from the retriever to the run line.
"""
from __future__ import annotations

from dataclasses import replace

from ..records import Hits
from .aspects import ASPECT_PROBS, retrieval_probs
from .candidates import candidate_pool
from .coverage import coverage_rerank, similarity_probs, stance_probs
from .methods import METHODS, default_lambda
from .mmr import mmr, mmr_reference, normalize_scores
from .pipeline import Pipeline
from .pm2 import pm2
from .presets import PRESETS, as_pipeline, get_preset
from .query_expansion import QE_SOURCES, expand_and_merge, expansion_queries, perspectives_for, round_robin_merge
from .spec import SpecError
from .stages import Query, STAGES, Using, blend_relevance, stance_matrix
from .xquad import xquad

__all__ = ["METHODS", "QE_SOURCES", "PRESETS", "ASPECT_PROBS", "STAGES", "Pipeline", "Using", "SpecError",
           "diversify", "mmr", "mmr_reference", "round_robin_merge", "coverage_rerank", "similarity_probs",
           "stance_probs", "perspectives_for", "expansion_queries", "expand_and_merge", "get_preset", "as_pipeline",
           "normalize_scores", "xquad", "pm2", "retrieval_probs", "default_lambda",
           "candidate_pool", "blend_relevance", "stance_matrix"]


def diversify(question, corpus, retriever, pipeline, k: int, *, judge=None, embedder=None,
              using: Using | None = None) -> Hits:
    """The ranked hits (:class:`~berds_core.records.Hits`: corpus rows and scores) for one ``Question``:
    ``pipeline`` run over ``retriever``.

    ``pipeline``: a :class:`Pipeline`, a spec string or a preset name. ``judge`` (a Judge) and ``embedder``
    (an encoder object; None: the dense retriever's own) are objects resolved at the edge; ``using``: the
    rest of what the stages use (:class:`Using`: llm, pool, stance model, side reader, explicit perspectives;
    a model a stage needs and none was given for: the shipped one, loaded once).
    """
    if k < 1:
        raise ValueError("k must be at least 1")
    using = using or Using()
    if judge is not None or embedder is not None:
        using = replace(using, judge=judge if judge is not None else using.judge,
                        embedder=embedder if embedder is not None else using.embedder)
    p = as_pipeline(pipeline)
    return p.run(Query(question, corpus, retriever, int(k), max(p.depth, int(k)), using))
