"""Perspective discovery (PERSPECTRUM, Chen et al. NAACL 2019): perspectives for any claim, from a pool.

    from berds_core.discovery import discover
    discover("Vaccination must be made compulsory", "perspective_pool_v1.0.json")
    # -> [{"pid", "text", "stance": "support"|"undermine", "cluster", "score", "support_prob", "members"}, ...]

Modules: ``pool`` (any file of sentences, BM25 + dense indexes cached on
disk), ``fusion`` (reciprocal rank fusion), ``heads`` (small heads over the
stored MiniLM embeddings; clustering), ``pipeline`` (candidates ->
relevance -> stance -> clusters -> a side-balanced list; offline or LLM),
``claims`` (claims files, PERSPECTRUM gold), ``evaluate`` (PERSPECTRUM's
T1 / T2 / T3). Stance (T2) is the studio's stance model
(``berds_core.stance``). The heads and knobs are fitted by
``scripts/train_discovery.py``; they ship in ``weights/``.
"""
from __future__ import annotations

from .pipeline import ON_TOPIC, Discoverer, Knobs, claim_of, discover
from .pool import ClaimCandidates, PoolIndex, load_pool, open_pool

__all__ = ["Discoverer", "Knobs", "discover", "PoolIndex", "ClaimCandidates", "load_pool", "open_pool",
           "claim_of", "pool_perspectives", "ON_TOPIC"]


def pool_perspectives(question: str, pool, *, method: str = "offline", llm: str | None = None,
                      max_k: int | None = -1) -> list[dict]:
    """Discovered perspectives for a question (its claim form) from ``pool`` (path or ``PoolIndex``)."""
    return discover(claim_of(question), pool, method=method, llm=llm, max_k=max_k)
