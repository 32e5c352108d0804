"""Passage embeddings for MMR and the coverage re-ranker, computed once per row.

Kept in memory per (embedder, corpus content hash), so re-ranking many
questions over the same corpus embeds each passage at most once.
"""
from __future__ import annotations

import numpy as np

from ..embed import load_embedder, model_key
from .facets import passage_text

_STORE: dict[tuple, dict[int, np.ndarray]] = {}
_MAX_CORPORA = 4


def get_embedder(embedder=None):
    """``None``/str -> ``load_embedder(name)``; an object with ``encode`` is used as is."""
    if embedder is None or isinstance(embedder, str):
        return load_embedder(embedder), model_key(embedder)
    return embedder, f"obj-{id(embedder)}"


def encode(embedder, texts: list[str]) -> np.ndarray:
    model, _ = get_embedder(embedder)
    if not texts:
        return np.zeros((0, 1), dtype=np.float32)
    return np.asarray(model.encode(list(texts), batch_size=32, normalize_embeddings=True,
                                   show_progress_bar=False), dtype=np.float32)


def passage_embeddings(corpus, rows, embedder=None) -> np.ndarray:
    """Normalised embeddings of ``corpus`` rows (title + text), cached in memory."""
    model, key = get_embedder(embedder)
    ckey = (key, getattr(corpus, "hash", id(corpus)))
    store = _STORE.get(ckey)
    if store is None:
        if len(_STORE) >= _MAX_CORPORA:
            _STORE.pop(next(iter(_STORE)))
        store = _STORE[ckey] = {}
    rows = [int(r) for r in rows]
    missing = sorted({r for r in rows if r not in store})
    if missing:
        vecs = encode(model, [passage_text(corpus, r) for r in missing])
        store.update(zip(missing, vecs))
    if not rows:
        return np.zeros((0, 1), dtype=np.float32)
    return np.vstack([store[r] for r in rows])
