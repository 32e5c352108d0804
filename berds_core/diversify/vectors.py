"""Passage and perspective embeddings for MMR's Sim2 and the coverage re-ranker.

They are the dense retriever's own vectors: ``embedder`` None or a model id
names an ``embed_store.TextEncoder`` (default precision, ``MAX_TOKENS``), and
the passage string is ``embed_store.embed_text`` (the text), so with a dense
retriever over the same model the candidates' rows are read from its matrix
and with any other retriever they come from the one on-disk store (encoded
there on first use). An object with an ``encode`` method (a loaded
SentenceTransformer, a test double) is used as is, cached in memory per
(object, corpus).
"""
from __future__ import annotations

import numpy as np

from ..embeddings.text_encoders import TextEncoder, embed_text, text_encoder

_OBJ_STORE: dict[tuple, dict[int, np.ndarray]] = {}
_MAX_CORPORA = 4


def get_text_encoder(embedder=None) -> TextEncoder | None:
    """``None``/model id -> the shared TextEncoder; a TextEncoder as is; an embedder from
    ``embed.load_embedder`` -> the shared TextEncoder of its model; other objects -> None."""
    if embedder is None or isinstance(embedder, str):
        return text_encoder(embedder)
    if hasattr(embedder, "berds_model_id"):
        return text_encoder(embedder.berds_model_id)
    if isinstance(embedder, TextEncoder):
        return embedder
    return None


def encode(embedder, texts: list[str]) -> np.ndarray:
    """Unit-length embeddings of short texts (perspectives, sides) with the same encoder as the passages."""
    texts = list(texts)
    te = get_text_encoder(embedder)
    if te is not None:
        return te.embed(texts)
    if not texts:
        return np.zeros((0, 1), dtype=np.float32)
    return np.asarray(embedder.encode(texts, batch_size=32, normalize_embeddings=True, show_progress_bar=False),
                      dtype=np.float32)


def passage_embeddings(corpus, rows, embedder=None, retriever=None) -> np.ndarray:
    """Unit-length embeddings of ``corpus`` rows: the dense ``retriever``'s rows when it used the same
    encoder, else through the store (or, for an object embedder, an in-memory cache)."""
    rows = [int(r) for r in rows]
    te = get_text_encoder(embedder)
    if te is not None:
        own = getattr(retriever, "text_encoder", None)
        if own is not None and own.key == te.key and getattr(retriever, "corpus", None) is corpus:
            return np.asarray(retriever.embeddings)[rows] if rows else np.zeros((0, te.dim), np.float32)
        if not rows:
            return np.zeros((0, te.dim), np.float32)
        return te.embed([embed_text(corpus[r]) for r in rows])
    ckey = (id(embedder), getattr(corpus, "hash", id(corpus)))
    store = _OBJ_STORE.get(ckey)
    if store is None:
        if len(_OBJ_STORE) >= _MAX_CORPORA:
            _OBJ_STORE.pop(next(iter(_OBJ_STORE)))
        store = _OBJ_STORE[ckey] = {}
    missing = sorted({r for r in rows if r not in store})
    if missing:
        store.update(zip(missing, encode(embedder, [embed_text(corpus[r]) for r in missing])))
    if not rows:
        return np.zeros((0, 1), dtype=np.float32)
    return np.vstack([store[r] for r in rows])
