"""Diversifying retrieval: MMR, query expansion, a perspective-coverage re-ranker, xQuAD and PM-2.

The one entry point pages and CLI verbs use::

    diversify(question, corpus, retriever, method, k, lam=None, qe_source="dataset",
              judge=None, embedder=None, candidates=100) -> [(corpus_row, score), ...]

``method`` is one of ``METHODS``: ``none`` (the retriever's top k), ``mmr``,
``qe`` (query expansion with round-robin merge, perspectives from
``qe_source`` in ``QE_SOURCES``), ``coverage`` (greedy expected perspective
coverage over the top ``candidates``), ``xquad`` and ``pm2`` (explicit
diversification over the top ``candidates`` with the perspectives of
``qe_source`` as aspects) and ``preset`` (the ``diverse`` preset).
The kernels (``mmr``, ``round_robin_merge``, ``coverage_rerank``, ``xquad``,
``pm2``) are pure functions over arrays.
"""
from __future__ import annotations

import numpy as np

from .aspects import ASPECT_PROBS, retrieval_probs
from .coverage import coverage_rerank, similarity_probs, stance_probs
from .mmr import mmr, mmr_reference, normalize_scores
from .pm2 import DEFAULT_LAMBDA as PM2_LAMBDA, pm2
from .presets import PRESETS, get_preset
from .query_expansion import (QE_SOURCES, expand_and_merge, expansion_queries, perspectives_for,
                              round_robin_merge)
from .xquad import DEFAULT_LAMBDA as XQUAD_LAMBDA, xquad

METHODS = {
    "none": "No diversification (retriever order)",
    "mmr": "MMR (maximal marginal relevance)",
    "qe": "Query expansion (round-robin over perspectives)",
    "coverage": "Perspective-coverage re-ranker",
    "xquad": "xQuAD (explicit aspects: one expanded query per perspective)",
    "pm2": "PM-2 (proportional seats for the perspectives)",
    "preset": "Preset: diverse (best found)",
}
MMR_LAMBDA = 0.75

# Names other callers use for the same methods.
ALIASES = {"rerank": "coverage", "diverse": "preset"}

__all__ = ["METHODS", "QE_SOURCES", "PRESETS", "ASPECT_PROBS", "diversify", "diversified_search", "mmr",
           "mmr_reference", "round_robin_merge", "coverage_rerank", "similarity_probs", "stance_probs",
           "perspectives_for", "expansion_queries", "expand_and_merge", "get_preset",
           "normalize_scores", "xquad", "pm2", "retrieval_probs", "default_lambda"]


def default_lambda(method: str) -> float | None:
    """λ when none is given: MMR 0.75 (BERDS); xQuAD / PM-2 their tuned defaults; None otherwise."""
    return {"mmr": MMR_LAMBDA, "xquad": XQUAD_LAMBDA, "pm2": PM2_LAMBDA}.get(method)


def diversify(question, corpus, retriever, method: str, k: int, *, lam: float | None = None,
              qe_source: str = "dataset", judge=None, embedder=None, candidates: int = 100,
              alpha: float = 0.5, llm: str | None = None, perspectives: list[str] | None = None,
              coverage_probs: str = "auto", temperature: float | None = None,
              candidates_from: str = "retriever", mix: float = 1.0, stance_model=None,
              aspect_probs: str = "retriever", pool=None, keep: int = 0) -> list[tuple[int, float]]:
    """Ranked ``(corpus_row, score)`` pairs for one ``Question``.

    ``lam``: MMR's relevance weight (default 0.75), or xQuAD's / PM-2's λ
    (default: :func:`default_lambda`). ``aspect_probs`` (xquad, pm2): where
    P(passage | aspect) comes from, ``retriever`` (scores on the expanded
    queries, min-max per aspect; :mod:`.aspects`) or ``judge`` (needs ``judge``).

    ``judge``: a Judge (or spec string for ``berds_core.judges.get_judge``) whose
    probabilities the coverage re-ranker uses; None uses embedding similarity.
    ``embedder``: model id/path (or a loaded SentenceTransformer) for MMR's Sim2 and
    the coverage similarities (default: the dense retriever's own encoder and vectors).
    ``llm``: spec for ``qe_source="llm"``. ``perspectives``: explicit perspectives
    (overrides ``qe_source``) for ``qe`` and ``coverage``.
    ``coverage_probs`` (coverage only): where P(candidate supports perspective)
    comes from: ``judge``; ``model`` (the trained stance cross-encoder,
    ``stance.StanceModel``: P(yes side), P(no side) of the question, no perspectives
    needed); ``stance`` (the first two perspectives as a contrasting pair, cosine
    rule, see ``coverage.stance_probs``); ``similarity`` (softmax of embedding
    similarity over all perspectives); ``auto`` (default): judge when given, else
    stance for the offline source or exactly two perspectives, else similarity.
    ``temperature``: of stance / similarity.
    ``candidates_from`` (mmr, coverage): the candidates: ``retriever`` (its top ``candidates``) or
    ``union`` (the dense and BM25 top ``candidates`` together, scored by dense cosine;
    see ``candidate_pool``). ``mix`` (coverage with ``model``): relevance is
    ``mix * retriever score / max + (1 - mix) * P(on the question)``.
    ``keep`` (coverage): the first ``keep`` candidates stay on top in the retriever's order (what they
    cover counts as covered); the re-ranker fills the ranks below them.
    ``stance_model``: a ``StanceModel`` (default: the shipped one).
    ``pool``: the perspective pool (file path or ``discovery.PoolIndex``) of ``qe_source="pool"``.
    """
    if k < 1:
        raise ValueError("k must be at least 1")
    method = ALIASES.get(method, method)
    if method == "preset":
        cfg = get_preset("diverse")
        return diversify(question, corpus, retriever, cfg["method"], k, lam=cfg.get("lam", lam),
                         qe_source=cfg.get("qe_source", qe_source), judge=judge, embedder=embedder,
                         candidates=cfg.get("candidates", candidates), alpha=cfg.get("alpha", alpha),
                         llm=llm, perspectives=perspectives,
                         coverage_probs=cfg.get("coverage_probs", coverage_probs),
                         temperature=cfg.get("temperature", temperature),
                         candidates_from=cfg.get("candidates_from", candidates_from),
                         mix=cfg.get("mix", mix), stance_model=stance_model, aspect_probs=aspect_probs,
                         pool=pool, keep=cfg.get("keep", keep))
    text = question.question
    if method == "none":
        return [(int(r), float(s)) for r, s in retriever.search([text], k)[0]]
    if method == "qe":
        persp = perspectives if perspectives is not None else perspectives_for(
            question, qe_source, corpus=corpus, retriever=retriever, llm=llm, pool=pool)
        return expand_and_merge(text, persp, retriever, k)
    if method not in ("mmr", "coverage", "xquad", "pm2"):
        raise ValueError(f"unknown method {method!r}; choose from {', '.join(METHODS)}")
    if coverage_probs not in COVERAGE_PROBS:
        raise ValueError(f"coverage_probs must be one of {', '.join(COVERAGE_PROBS)}, got {coverage_probs!r}")
    if method in ("xquad", "pm2") and aspect_probs not in ASPECT_PROBS:
        raise ValueError(f"aspect_probs must be one of {', '.join(ASPECT_PROBS)}, got {aspect_probs!r}")
    from .vectors import encode, passage_embeddings

    depth = max(candidates, k)
    tail = None  # the retriever's ranks below the candidates, when k asks for more
    if candidates_from == "retriever":  # one search serves the candidates and the ranks below them
        rows, scores = candidate_pool(text, corpus, retriever, depth, "retriever")
        tail = list(zip(rows[candidates:].tolist(), scores[candidates:].tolist()))
        rows, scores = rows[:candidates], scores[:candidates]
    else:
        rows, scores = candidate_pool(text, corpus, retriever, candidates, candidates_from)
    if len(rows) == 0:
        return []

    def done(order) -> list[tuple[int, float]]:
        # the re-ranked candidates, then (k > candidates) the retriever's own order below them
        return _fill([(int(rows[i]), float(scores[i])) for i in order], text, retriever, k, tail)

    lam = default_lambda(method) if lam is None else lam
    if method == "mmr":
        order = mmr(scores, passage_embeddings(corpus, rows, embedder, retriever), k, lam)
        return done(order)
    if method in ("xquad", "pm2"):
        aspects = perspectives if perspectives is not None else perspectives_for(
            question, qe_source, corpus=corpus, retriever=retriever, llm=llm, pool=pool)
        aspects = [a for a in aspects if a and a.strip()]
        if not aspects:
            order = list(range(min(k, len(rows))))
        else:
            if aspect_probs == "judge":
                if judge is None:
                    raise ValueError("aspect_probs='judge' needs a judge")
                P = _judge_probs(judge, corpus, rows, aspects)
            else:
                P = retrieval_probs(text, aspects, retriever, rows, depth)
            order = (xquad if method == "xquad" else pm2)(scores, P, k, lam)
        return done(order)
    if coverage_probs == "model":
        P = stance_matrix(text, corpus, rows, stance_model)
        order = coverage_rerank(blend_relevance(scores, P, mix), P[:, :2], k, alpha, keep=keep)
        return done(order)
    if perspectives is None and qe_source == "offline" and coverage_probs in ("auto", "stance"):
        from .facets import yes_no_sides

        persp = [p for p in yes_no_sides(text) if p]  # the stance pair; facets are not needed
    else:
        persp = perspectives if perspectives is not None else perspectives_for(
            question, qe_source, corpus=corpus, retriever=retriever, llm=llm, pool=pool)
    mode = coverage_probs
    if mode == "auto":
        mode = "judge" if judge is not None else (
            "stance" if (perspectives is None and qe_source == "offline") or len(persp) == 2 else "similarity")
    if not persp:
        order = list(range(min(k, len(rows))))
    elif mode == "judge":
        if judge is None:
            raise ValueError("coverage_probs='judge' needs a judge")
        probs = _judge_probs(judge, corpus, rows, persp)
        order = coverage_rerank(scores, probs, k, alpha, keep=keep)
    elif mode == "stance" and len(persp) >= 2:
        # the first two perspectives as a contrasting pair (offline: the yes- and no-side)
        pe = encode(embedder, persp[:2])
        probs = stance_probs(passage_embeddings(corpus, rows, embedder, retriever), pe[0], pe[1], temperature or 0.01)
        order = coverage_rerank(scores, probs, k, alpha, keep=keep)
    else:  # similarity (or stance with a single perspective)
        probs = similarity_probs(passage_embeddings(corpus, rows, embedder, retriever), encode(embedder, persp),
                                 temperature or 0.05)
        order = coverage_rerank(scores, probs, k, alpha, keep=keep)
    return done(order)


def _fill(hits: list[tuple[int, float]], text: str, retriever, k: int, tail=None) -> list[tuple[int, float]]:
    """``hits`` (the re-ranked candidates) cut at ``k`` or, when fewer, followed by the retriever's next
    passages in its order (with its scores): ``--k 100`` over 10 candidates re-ranks the top 10 only.
    ``tail``: those next passages when already retrieved (else one search for them)."""
    if len(hits) >= k:
        return hits[:k]
    seen = {r for r, _ in hits}
    if tail is None:
        tail = retriever.search([text], k + len(hits))[0]
    more = [(int(r), float(sc)) for r, sc in tail if int(r) not in seen]
    return hits + more[:k - len(hits)]


COVERAGE_PROBS = ("auto", "judge", "model", "stance", "similarity")
POOLS = ("retriever", "union")


def candidate_pool(text: str, corpus, retriever, n: int, pool: str = "retriever") -> tuple[np.ndarray, np.ndarray]:
    """Candidate rows and their scores, best first.

    ``retriever``: the retriever's top ``n``. ``union``: the union of the dense and
    the BM25 top ``n`` (the given retriever is one of them; the other is opened on
    the same corpus, from the index cache), all scored by the dense cosine with the
    question, so one scale ranks them.
    """
    if pool not in POOLS:
        raise ValueError(f"pool must be one of {', '.join(POOLS)}, got {pool!r}")
    if pool == "retriever":
        hits = retriever.search([text], n)[0]
        return np.array([int(r) for r, _ in hits], dtype=int), np.array([float(s) for _, s in hits])
    dense = retriever if hasattr(retriever, "text_encoder") else companion(corpus, "dense")
    sparse = companion(corpus, "bm25") if dense is retriever else retriever
    qv = dense.encode([text])[0]
    hits = dense.search_vectors(qv[None, :], n)[0]
    rows = list(dict.fromkeys([int(r) for r, _ in hits] + [int(r) for r, _ in sparse.search([text], n)[0]]))
    rows = np.array(rows, dtype=int)
    scores = np.asarray(dense.embeddings)[rows] @ qv if len(rows) else np.zeros(0)
    order = np.argsort(-scores, kind="stable")
    return rows[order], scores[order].astype(np.float64)


_COMPANIONS: dict[tuple, object] = {}


def companion(corpus, kind: str):
    """A second retriever of ``kind`` (bm25 | dense, default model) over the same corpus, kept per corpus."""
    key = (kind, getattr(corpus, "hash", id(corpus)))
    if key not in _COMPANIONS:
        from ..retrieval import get_retriever

        if len(_COMPANIONS) >= 4:
            _COMPANIONS.pop(next(iter(_COMPANIONS)))
        _COMPANIONS[key] = get_retriever(kind, corpus, progress=False)
    return _COMPANIONS[key]


def stance_matrix(question_text: str, corpus, rows, stance_model=None) -> np.ndarray:
    """``(len(rows), 3)`` stance probabilities ``[yes, no, off]`` of corpus rows for a question."""
    from .stance import get_stance_model, stance_text

    model = stance_model if stance_model is not None else get_stance_model()
    return model.probs(question_text, [stance_text(corpus[int(r)]) for r in rows])


def blend_relevance(scores, P, mix: float) -> np.ndarray:
    """``mix * score / max + (1 - mix) * P(on the question)`` (``P``: stance probabilities [yes, no, off])."""
    if not 0.0 <= mix <= 1.0:
        raise ValueError(f"mix must be in [0, 1], got {mix}")
    rel = normalize_scores(scores)
    if mix >= 1.0:
        return rel
    on = np.clip(np.asarray(P)[:, 0] + np.asarray(P)[:, 1], 0.0, 1.0)
    return mix * rel + (1.0 - mix) * on


def _judge_probs(judge, corpus, rows, persp) -> np.ndarray:
    if isinstance(judge, str):
        from ..judges import get_judge

        judge = get_judge(judge)
    from ..judges import judge_passages

    # the passage as the judge reads run passages (one cache entry per pair across runs and pages)
    probs, _ = judge_passages(judge, [corpus[int(r)] for r in rows], persp)
    return np.asarray(probs, dtype=np.float64)


def diversified_search(question, corpus, retriever, method: str, **opts) -> list[tuple[int, float]]:
    """Alias of :func:`diversify` with ``k`` as a keyword (default 10), per the contract."""
    k = opts.pop("k", 10)
    return diversify(question, corpus, retriever, method, k, **opts)
