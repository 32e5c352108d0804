"""Where a pipeline's candidates come from: the retriever's top n, or the dense and BM25 top n together.

The ``union`` takes two retrievers, both opened by the caller (as PyTerrier's ``SetUnion(left, right)``):
the run's own and the other kind over the same corpus (:func:`union_partner` says which kind; the caller
hands it over as ``Using.other_retriever``). Nothing here builds a retriever or keeps one.
"""
from __future__ import annotations

import numpy as np

from ..records import Hits
from ..retrieval.exact import scores as exact_scores

POOLS = ("retriever", "union")


def is_dense(retriever) -> bool:
    """A dense retriever: it encodes texts and searches vectors (``search_vectors``: the in-memory one, and an
    index folder's, which the scale path and ``index:`` open)."""
    return hasattr(retriever, "search_vectors")


def row_vectors(dense, rows: np.ndarray) -> np.ndarray:
    """The passage vectors of ``rows`` a dense retriever searched: its embeddings in memory, else an index
    folder's vector shards; ValueError for a folder that kept none (its query encoder may not be its passage
    encoder, DPR's is not, so nothing is encoded in their place)."""
    emb = getattr(dense, "embeddings", None)
    if emb is not None:
        return np.asarray(emb)[rows]
    vectors = getattr(getattr(dense, "dense", None), "vectors", None)
    if vectors is not None:
        return vectors.get(rows)
    raise ValueError(f"the union scores its candidates by the passage vectors, and {getattr(dense, 'name', 'this')} "
                     "kept none: build the index with its vectors (berds index), or use its own candidates")


def union_partner(retriever) -> str:
    """The retriever kind a ``union`` needs beside ``retriever``: ``bm25`` beside a dense one, else ``dense``."""
    return "bm25" if is_dense(retriever) else "dense"


def candidate_pool(text: str, corpus, retriever, n: int, pool: str = "retriever", other=None) -> Hits:
    """Candidate rows and their scores (:class:`~berds_core.records.Hits`), best first.

    ``retriever``: the retriever's top ``n``. ``union``: the union of the dense and the BM25 top ``n``
    (``retriever`` is one of them, ``other`` the other kind over the same corpus), all scored by the dense
    cosine with the question, so one scale ranks them.
    """
    if pool not in POOLS:
        raise ValueError(f"pool must be one of {', '.join(POOLS)}, got {pool!r}")
    try:
        n = min(int(n), len(corpus))  # a depth past the corpus asks for every passage, nothing more
    except TypeError:  # a corpus without a length
        pass
    if pool == "retriever":
        return Hits.of(retriever.search([text], n)[0])  # the retriever's own Hits
    if other is None or is_dense(other) == is_dense(retriever):
        raise ValueError(f"the union of candidates needs a {union_partner(retriever)} retriever beside the run's "
                         f"{'dense' if is_dense(retriever) else 'BM25'} one (Using.other_retriever, opened by the "
                         "caller)")
    dense, sparse = (retriever, other) if is_dense(retriever) else (other, retriever)
    qv = dense.encode([text])[0]
    both = np.concatenate([Hits.of(dense.search_vectors(qv[None, :], n)[0]).rows,
                           Hits.of(sparse.search([text], n)[0]).rows])
    rows = both[np.sort(np.unique(both, return_index=True)[1])]  # each row once, where it first appears
    scores = exact_scores(row_vectors(dense, rows), qv)  # the dense search's own figures (retrieval.exact)
    order = np.argsort(-scores, kind="stable")
    return Hits(rows[order], scores[order])
