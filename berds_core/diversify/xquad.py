"""xQuAD (Santos, Macdonald & Ounis, WWW 2010): explicit query-aspect diversification.

    next = argmax_{d in R \\ S}  (1 − λ) P(d | q) + λ Σ_a P(a | q) P(d | a) Π_{d' in S} (1 − P(d' | a))

``R``: the top candidates of the question; ``P(d | q)``: the retriever score
divided by the maximum (MMR's Sim1, ``mmr.normalize_scores``); ``P(a | q)``
uniform over the aspects (or ``weights``); ``P(d | a)``: see
:mod:`berds_core.diversify.aspects`. λ = 0 is the retriever's order.

This objective is the coverage re-ranker's (``coverage.coverage_rerank``,
expected number of newly served aspects) with relevance weight 1 − λ, so the
kernel is that one; what makes it xQuAD is where P(d | a) comes from (the
retriever on one expanded query per aspect) and its λ.

``DEFAULT_LAMBDA`` = 0.8: chosen on development data only (procon.json, 50
questions, gold labels, offline aspects), by MRecall@5 then Precision@5 over
``LAMBDA_GRID``, with BM25, the default retriever of ``berds retrieve`` and the
app; ``bench/diversity_methods.py`` reports the out-of-fold figures (question-grouped
5-fold cross-validation: folds chose 0, 0.8, 0.8, 0.8, 0). With dense MiniLM
every fold chose 0: offline aspects do not help dense retrieval there.
"""
from __future__ import annotations

import numpy as np

from .coverage import coverage_rerank

DEFAULT_LAMBDA = 0.8
LAMBDA_GRID = (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0)


def xquad(cand_scores, aspect_probs, k: int, lam: float = DEFAULT_LAMBDA, weights=None) -> list[int]:
    """Indices (into the candidates) of the ``k`` picks in order; ties go to relevance, then rank."""
    if not 0.0 <= lam <= 1.0:
        raise ValueError(f"lambda must be in [0, 1], got {lam}")
    return coverage_rerank(cand_scores, np.asarray(aspect_probs, dtype=np.float64), k, alpha=1.0 - lam,
                           weights=weights)
