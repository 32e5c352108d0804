"""The one-off warm-up that makes every later question fast.

A question in the Playground judges the passages of four rankings, re-ranks
the top 100 with the judge and runs MMR over the top 100: the cost of a *new*
question is encoding those passages. They belong to one corpus, so
:func:`warm_passages` encodes every passage once, up front, with progress:

- the judge's passage embeddings, for a judge that embeds texts one by one
  (one with a ``featurizer`` exposing ``sentence_embeddings``; they persist in
  the embedding store, so the next process starts warm). The embedded judge
  reads (perspective, passage) *pairs* (the stance model, a cross-encoder):
  nothing can be encoded before the perspectives are known, so it only loads
  its network here (``load()``) and encodes each question's pairs once, in
  the store;
- MMR's passage embeddings (``diversify.embeddings.passage_embeddings``).

``texts`` adds other texts a per-text judge will read: the dataset's perspectives
(and generated perspectives). A judge with a ``load()`` (``hf:``, ``embedded``) loads its model here. Corpora larger than
``max_passages`` are not pre-encoded (that is what the dense index is for;
questions then encode their own candidates as before).
"""
from __future__ import annotations

from typing import Callable

WARM_MAX_PASSAGES = 20_000
BATCH = 128


def warm_passages(corpus, judge=None, embedder=None, report: Callable | None = None, *, texts=(),
                  max_passages: int = WARM_MAX_PASSAGES) -> dict:
    """Encode every passage of ``corpus`` (and ``texts``) for ``judge``, every passage for MMR's ``embedder``.

    ``report(stage, done, total)`` is called as batches finish. Returns counts
    (``judge_texts``, ``mmr_passages``; 0 when skipped).
    """
    report = report or (lambda *a, **k: None)
    out = {"judge_texts": 0, "mmr_passages": 0, "skipped": None}
    load = getattr(judge, "load", None)
    if callable(load):
        report("loading the judge model")
        load()
    n = len(corpus)
    if n > max_passages:
        out["skipped"] = f"{n:,} passages (more than {max_passages:,}): encoded per question instead"
        return out
    from .diversify.facets import passage_text

    feat = getattr(judge, "featurizer", None)
    if feat is not None and hasattr(feat, "sentence_embeddings"):
        todo = list(dict.fromkeys(list(corpus.texts) + [passage_text(corpus, r) for r in range(n)]
                                  + list(texts)[:max_passages]))
        report("loading the judge's encoder")
        feat.model  # noqa: B018 -- load the encoder before the bar starts
        for a in range(0, len(todo), BATCH):
            report("encoding passages for the judge", a, len(todo))
            feat.sentence_embeddings(todo[a:a + BATCH])
        out["judge_texts"] = len(todo)
    if embedder is not None:
        from .diversify.embeddings import passage_embeddings

        for a in range(0, n, BATCH):
            report("encoding passages for MMR", a, n)
            passage_embeddings(corpus, range(a, min(a + BATCH, n)), embedder)
        out["mmr_passages"] = n
    return out
