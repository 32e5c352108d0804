"""The one-off warm-up that makes every later question fast.

A question in the Playground judges the passages of four rankings, re-ranks
the top 100 with the judge and runs MMR over the top 100: the cost of a *new*
question is encoding those passages. They belong to one corpus, so
:func:`warm_passages` encodes every passage once, up front, with progress:

- the judge's passage embeddings, for a judge that embeds texts one by one
  (one with an ``encoder``: the ``embedded`` judge, whose vectors are dense
  retrieval's and MMR's; they persist in the embedding store, so the next
  process starts warm). A judge that reads pairs (an LLM) only loads its model
  here (``load()``);
- MMR's passage embeddings (``diversify.vectors.passage_embeddings``).

``texts`` adds other texts a per-text judge will read: the dataset's perspectives
(and generated perspectives). A judge with a ``load()`` (``hf:``, ``embedded``) loads its model here. Corpora larger than
``max_passages`` are not pre-encoded (that is what the dense index is for;
questions then encode their own candidates as before). A model is loaded only
when some text is not in the embedding store yet.

For the built-in demo the embeddings ship with the package
(``berds_core/demo/embeddings.npz``: every text the Playground's columns read
for the demo questions, in the two CPU precisions, bf16 and int8, written by
``scripts/precompute_demo_embeddings.py``); :func:`seed_shipped` puts them into
the store, so a fresh server answers its first demo question without loading
or running the encoder.
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from ..datasets.demo import demo_dir
from ..diversify.vectors import passage_embeddings
from ..embeddings.text_encoders import embedding_store, text_encoder
from ..judges.base import prediction_cache
from ..stance import get_stance_model

WARM_MAX_PASSAGES = 20_000
BATCH = 128
SHIPPED = "embeddings.npz"  # in berds_core/demo: the demo's precomputed embeddings


def shipped_path():
    return demo_dir() / SHIPPED


def seed_shipped(corpus, path=None, judge=None) -> int:
    """Put the shipped embeddings of the demo into the caches when ``corpus`` is the demo's and the shipped
    file has the precision this process encodes in (``embed.resolve_encoding``: fp32, the reference, on
    every CPU; a speed mode finds nothing shipped and computes its own): the sentence embeddings
    of the default encoder, the stance model's pair encodings (the preset's (question, candidate) pairs, and
    the (perspective, passage) pairs the embedded judge's one-side rule reads) and, for the ``embedded``
    ``judge``, its probabilities of the pairs the Playground judges. Returns how
    many entries were added (0: not the demo, another precision or model, or already there)."""
    path = path or shipped_path()
    try:
        z = np.load(path, allow_pickle=False)
    except (OSError, ValueError):
        return 0
    if str(z["corpus_hash"]) != getattr(corpus, "hash", None):
        return 0
    te = text_encoder(None)
    if te.key != str(z["key_template"]).replace("{encoding}", te.encoding) or te.encoding not in z.files:
        return 0
    enc = te.encoding
    hashes = [str(h) for h in z["hashes"]]
    store = embedding_store()
    have = store.get_many(te.key, hashes)
    vecs = z[enc]
    todo = [(h, _unit(v)) for h, v in zip(hashes, vecs) if h not in have]
    store.put_many(te.key, todo)
    added = len(todo)
    if f"stance_key_{enc}" in z.files:
        shipped = str(z[f"stance_key_{enc}"])  # <model>|<precision>|msl<the preset's tokens>
        skey = get_stance_model().key_for(int(shipped.rsplit("msl", 1)[1]))
        if skey == shipped:  # the same model version and precision
            sh = [str(h) for h in z[f"stance_hashes_{enc}" if f"stance_hashes_{enc}" in z.files else "stance_hashes"]]
            have = store.get_many(skey, sh)
            todo = [(h, v.astype(np.float32)) for h, v in zip(sh, z[f"stance_{enc}"]) if h not in have]
            store.put_many(skey, todo)
            added += len(todo)
    if f"sides_key_{enc}" in z.files:  # the stance reads of the judge's one-side rule (opposite perspectives)
        shipped = str(z[f"sides_key_{enc}"])
        if get_stance_model().key_for(None) == shipped:
            sh = [str(h) for h in z[f"sides_hashes_{enc}"]]
            have = store.get_many(shipped, sh)
            todo = [(h, v.astype(np.float32)) for h, v in zip(sh, z[f"sides_{enc}"]) if h not in have]
            store.put_many(shipped, todo)
            added += len(todo)
    if judge is not None and f"judge_ns_{enc}" in z.files and judge.cache_key == str(z[f"judge_ns_{enc}"]):
        keys = [(str(a), str(b)) for a, b in z["judge_keys"]]
        cache = prediction_cache()
        have = cache.get_many(judge.cache_key, keys)
        todo = [(k, float(p)) for k, p in zip(keys, z[f"judge_{enc}"]) if k not in have]
        cache.put_many(judge.cache_key, todo)
        added += len(todo)
    return added


def _unit(v: np.ndarray) -> np.ndarray:
    """A shipped vector as the store keeps it: float32 as shipped (the encoder's own bits), a coarser copy
    re-normalised in float32."""
    if v.dtype == np.float32:
        return v
    v = v.astype(np.float32)
    return v / max(float(np.linalg.norm(v)), 1e-12)


def warm_passages(corpus, judge=None, embedder=None, report: Callable | None = None, *, texts=(),
                  max_passages: int = WARM_MAX_PASSAGES) -> dict:
    """Encode every passage of ``corpus`` (and ``texts``) for ``judge``, every passage for MMR's ``embedder``.

    ``report(stage, done, total)`` is called as batches finish. Returns counts
    (``judge_texts``, ``mmr_passages``; 0 when skipped).
    """
    report = report or (lambda *a, **k: None)
    out = {"judge_texts": 0, "mmr_passages": 0, "skipped": None}
    load = getattr(judge, "load", None)
    if callable(load) and getattr(judge, "encoder", None) is None:  # an encoder loads at its first new text
        report("loading the judge model")
        load()
    n = len(corpus)
    if n > max_passages:
        out["skipped"] = f"{n:,} passages (more than {max_passages:,}): encoded per question instead"
        return out

    encoder = getattr(judge, "encoder", None)  # a judge that embeds texts one by one (``embedded``)
    if encoder is not None and hasattr(encoder, "embed"):
        todo = list(dict.fromkeys(list(corpus.texts) + list(texts)[:max_passages]))
        for a in range(0, len(todo), BATCH):  # the encoder loads at the first text not in the store
            report("encoding passages for the judge", a, len(todo))
            encoder.embed(todo[a:a + BATCH])
        out["judge_texts"] = len(todo)
    if embedder is not None:
        for a in range(0, n, BATCH):
            report("encoding passages for MMR", a, n)
            passage_embeddings(corpus, range(a, min(a + BATCH, n)), embedder)
        out["mmr_passages"] = n
    return out
