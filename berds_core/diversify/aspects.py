"""P(d | aspect) for explicit diversification (xQuAD, PM-2): one column per aspect (perspective).

``retrieval_probs``: the retriever's scores of the candidates on the expanded
query of each aspect (question + " " + aspect, as query expansion builds it;
``query_expansion.expansion_queries``), **normalised per aspect**: min-max
over that aspect's top ``depth`` hits, so the aspect's best passage has 1, its
weakest listed passage 0, and a candidate outside its top ``depth`` 0. The
scale of BM25 and of cosine scores drops out, and ``1 − P`` reads as "the
aspect is still unserved after this passage" in xQuAD's novelty product.

``judge_probs``: the probability that a judge says the candidate supports the
aspect (cached per pair, as everywhere; ``diversify._judge_probs``).
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from ..records import Hits
from .query_expansion import expansion_queries

ASPECT_PROBS = {"retriever": "retriever scores on the expanded queries, min-max per aspect",
                "judge": "the judge's probability that the passage supports the aspect"}


def retrieval_probs(question: str, aspects: Sequence[str], retriever, rows: Sequence[int],
                    depth: int) -> np.ndarray:
    """(len(rows) x aspects) matrix of P(d | aspect) from the retriever, min-max normalised per aspect.

    Aspects that are empty after stripping are dropped, as ``expansion_queries`` drops them.
    """
    queries = expansion_queries(question, aspects)
    P = np.zeros((len(rows), len(queries)))
    if not queries or not len(rows):
        return P
    pos = {int(r): i for i, r in enumerate(rows)}
    for j, hits in enumerate(retriever.search(queries, int(depth))):
        hits = Hits.of(hits)
        if not hits:
            continue
        scores = hits.scores
        lo, span = scores.min(), scores.max() - scores.min()
        for r, s in zip(hits.rows.tolist(), scores):
            i = pos.get(r)
            if i is not None:
                P[i, j] = (s - lo) / span if span > 0 else 1.0
    return P
