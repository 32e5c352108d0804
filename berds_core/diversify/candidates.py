"""Where a pipeline's candidates come from: the retriever's top n, or the dense and BM25 top n together.

``companion`` opens the second retriever of the union (the default model, from the index cache), kept per
corpus.
"""
from __future__ import annotations

import numpy as np

POOLS = ("retriever", "union")


def candidate_pool(text: str, corpus, retriever, n: int, pool: str = "retriever") -> tuple[np.ndarray, np.ndarray]:
    """Candidate rows and their scores, best first.

    ``retriever``: the retriever's top ``n``. ``union``: the union of the dense and the BM25 top ``n`` (the
    given retriever is one of them; the other is opened on the same corpus, from the index cache), all
    scored by the dense cosine with the question, so one scale ranks them.
    """
    if pool not in POOLS:
        raise ValueError(f"pool must be one of {', '.join(POOLS)}, got {pool!r}")
    try:
        n = min(int(n), len(corpus))  # a depth past the corpus asks for every passage, nothing more
    except TypeError:  # a corpus without a length
        pass
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
