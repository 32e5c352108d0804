"""Diversifying retrieval: MMR, query expansion, a perspective-coverage re-ranker, xQuAD and PM-2, as stages.

The one entry point pages and CLI verbs use::

    diversify(question, corpus, retriever, pipeline, k, judge=None, embedder=None, using=None) -> Hits

``pipeline``: a :class:`Pipeline`, a spec string (``"bm25%30>>mmr(lam=0.5)"``,
``"dense%10>>coverage(probs=model,alpha=0.1,keep=2)"``; docs/pipelines.md) or a preset name
(``diverse``). The stages (:mod:`.stages`: ``none``, ``mmr``, ``qe``, ``union``, ``coverage``,
``xquad``, ``pm2``) live in the ``STAGES`` registry; the kernels (``mmr``, ``round_robin_merge``,
``coverage_rerank``, ``xquad``, ``pm2``) are pure functions over arrays. The ranking is one
:class:`berds_core.records.Hits` (corpus rows and scores) from the retriever to the run line.
"""
from __future__ import annotations

import warnings
from dataclasses import replace

from ..discovery import open_pool
from ..judges import get_judge
from ..records import Hits
from .aspects import ASPECT_PROBS, retrieval_probs
from .candidates import candidate_pool
from .coverage import coverage_rerank, similarity_probs, stance_probs
from .methods import METHODS, default_lambda, find_method, stage_keywords
from .mmr import mmr, mmr_reference, normalize_scores
from .pipeline import DEFAULT_DEPTH, Pipeline
from .pm2 import pm2
from .presets import PRESETS, as_pipeline, get_preset
from .query_expansion import QE_SOURCES, expand_and_merge, expansion_queries, perspectives_for, round_robin_merge
from .spec import SpecError
from .stages import COVERAGE_PROBS, Query, STAGES, Using, blend_relevance, stance_matrix
from .vectors import get_text_encoder
from .xquad import xquad

__all__ = ["METHODS", "QE_SOURCES", "PRESETS", "ASPECT_PROBS", "STAGES", "Pipeline", "Using", "SpecError",
           "diversify", "mmr", "mmr_reference", "round_robin_merge", "coverage_rerank", "similarity_probs",
           "stance_probs", "perspectives_for", "expansion_queries", "expand_and_merge", "get_preset", "as_pipeline",
           "normalize_scores", "xquad", "pm2", "retrieval_probs", "default_lambda",
           "candidate_pool", "blend_relevance", "stance_matrix"]

# the old keyword arguments of diversify() that name what the stages use (now a Using)
_USING_KEYS = ("llm", "pool", "stance_model", "perspectives")
# the old option keywords of diversify() -> the stage keyword each one set (the deprecated spelling only)
_OLD_KEYS = {"lam": "lam", "qe_source": "source", "alpha": "alpha", "coverage_probs": "probs", "keep": "keep",
             "mix": "mix", "temperature": "temperature", "aspect_probs": "probs"}
# the keyword spelling of diversify(): deprecated when pipelines came (issue 26), removed in the next minor version
DEPRECATED_SINCE = "berds-studio 0.1.0 (2026-11-26)"
REMOVED_IN = "0.2.0"


def diversify(question, corpus, retriever, pipeline, k: int, *, judge=None, embedder=None, using: Using | None = None,
              **old) -> Hits:
    """The ranked hits (:class:`~berds_core.records.Hits`: corpus rows and scores) for one ``Question``:
    ``pipeline`` run over ``retriever``.

    ``pipeline``: a :class:`Pipeline`, a spec string or a preset name; an old method name (``none``,
    ``mmr``, ``qe``, ``coverage``/``rerank``, ``xquad``, ``pm2``, ``preset``) still works, with its old
    keyword arguments (``lam``, ``qe_source``, ``candidates``, ``alpha``, ``coverage_probs``, ...) and a
    DeprecationWarning. ``judge`` (a Judge) and ``embedder`` (an encoder object; None: the dense
    retriever's own) are objects resolved at the edge; ``using``: the rest of what the stages use
    (:class:`Using`: llm, pool, stance model, explicit perspectives).
    """
    if k < 1:
        raise ValueError("k must be at least 1")
    if old:
        pipeline, using, judge, embedder = _old_call(pipeline, old, using, judge, embedder)
    using = using or Using()
    if judge is not None or embedder is not None:
        using = replace(using, judge=judge if judge is not None else using.judge,
                        embedder=embedder if embedder is not None else using.embedder)
    p = as_pipeline(pipeline)
    return p.run(Query(question, corpus, retriever, int(k), max(p.depth, int(k)), using))


def _old_call(method, old: dict, using, judge, embedder):
    """The old spelling ``diversify(q, c, r, "mmr", k, lam=0.5, candidates=30, judge="embedded", ...)``:
    its pipeline and what it used, with one DeprecationWarning."""
    method = str(method).strip()
    if old:
        warnings.warn(f"diversify(..., {method!r}, {', '.join(f'{key}=' for key in old)}...) is deprecated since "
                      f"{DEPRECATED_SINCE} and goes in berds-studio {REMOVED_IN}: pass a pipeline (e.g. "
                      f"{str(_old_pipeline(method, old))!r}) and a Using (docs/pipelines.md)",
                      DeprecationWarning, stacklevel=3)
    if isinstance(judge, str):
        judge = get_judge(judge)
    if isinstance(embedder, str):
        embedder = get_text_encoder(embedder)
    base = using or Using()
    extra = {key: old.pop(key) for key in _USING_KEYS if key in old}
    if isinstance(extra.get("pool"), str):
        extra["pool"] = open_pool(extra["pool"], progress=False)
    using = replace(base, llm=extra.get("llm", base.llm), pool=extra.get("pool", base.pool),
                    stance_model=extra.get("stance_model", base.stance_model),
                    perspectives=extra.get("perspectives", base.perspectives))
    if old.get("coverage_probs", "auto") not in COVERAGE_PROBS:
        raise ValueError(f"coverage_probs must be one of {', '.join(COVERAGE_PROBS)}, got {old['coverage_probs']!r}")
    return _old_pipeline(method, old), using, judge, embedder


def _old_pipeline(method: str, old: dict) -> Pipeline:
    """The pipeline of an old method name (or alias) and its old option keywords (``lam``, ``qe_source``,
    ``candidates``, ``candidates_from``, ``alpha``, ``coverage_probs``, ``aspect_probs``, ``keep``, ``mix``,
    ``temperature``): None values and keywords its stage does not take are left out, as the old spelling did."""
    m = find_method(method)
    opts = {key: v for key, v in old.items() if v is not None}
    takes, kind = stage_keywords(m), m.stage
    params = {_OLD_KEYS[key]: v for key, v in opts.items() if _OLD_KEYS.get(key) in takes
              and not (key == "coverage_probs" and kind != "coverage")
              and not (key == "aspect_probs" and kind == "coverage")}
    pool = opts.get("candidates_from", "retriever")
    if pool == "union" and not (m.reranks or m.name == "mmr"):  # a union only ahead of MMR and the re-rankers
        pool = "retriever"
    return m.pipeline(int(opts.get("candidates", DEFAULT_DEPTH)), pool, **params)
