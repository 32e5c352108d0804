"""Dense retrieval: sentence-transformers embeddings + FAISS inner product.

Passage embeddings come from the one embedding store (``berds_core.embeddings.text_encoders``:
keyed by model, precision, max tokens and text hash) that MMR, the coverage
re-ranker and the embedded judge read too: a passage is encoded once, by
whichever of them meets it first, and a second command starts warm. Encoding
commits each finished chunk to the store, so an interrupted build resumes.
Embeddings are L2-normalised (inner product = cosine). The FAISS index is
rebuilt from the vectors (flat: a copy) or loaded from
``cache_dir("indexes")`` (HNSW, whose build is the slow part), in a folder
keyed by corpus hash and store key.
"""
from __future__ import annotations

import time

import numpy as np

from ..files.cache import cache_dir, slug
from ..embeddings.models import model_key
from ..embeddings.text_encoders import TextEncoder, embed_text, encode_normalized, text_encoder
from ..records import Hits
from . import exact, faiss_index
from .base import SearchBase, dense_name

__all__ = ["DenseRetriever", "encode_normalized"]


class DenseRetriever(SearchBase):
    """Dense retrieval over a corpus; ``search(queries, k)`` -> one ``Hits`` per query."""

    def __init__(self, corpus, model: str | None = None, *, progress: bool = True, index: str = "flat",
                 device: str | None = None, encoding: str | None = None, batch_size: int = 64,
                 cache: bool = True, max_seq_length: int | None = None, on_progress=None):
        if index not in faiss_index.INDEX_KINDS:
            raise ValueError(f"index must be one of {', '.join(faiss_index.INDEX_KINDS)}, got {index!r}")
        self.corpus = corpus
        self.model = model
        if cache:
            self.text_encoder = text_encoder(model, device, encoding, max_seq_length)
        else:
            self.text_encoder = TextEncoder(model, device, encoding, max_seq_length, batch_size=batch_size,
                                            store=False)
        self.device = self.text_encoder.device
        self.encoding = self.text_encoder.encoding
        self.max_seq_length = self.text_encoder.max_seq_length
        self.index_kind = index
        self.progress = progress
        self.on_progress = on_progress  # (done, total) as passages are encoded
        self.batch_size = batch_size
        self.embedder_name = model_key(model)
        self.name = (dense_name(self.embedder_name) + ("" if index == "flat" else f"+{index}")
                     + ("" if self.encoding == "fp32" else f"+{self.encoding}"))
        self.cache_hit = False
        self.n_encoded = 0
        key = f"{corpus.hash[:20]}-dense-{slug(self.text_encoder.key)}"
        self.cache_path = cache_dir("indexes") / key if cache else None
        t0 = time.perf_counter()
        self.embeddings = self._embeddings()
        self._cpu_index = self._index()
        self._index_obj = faiss_index.to_device(self._cpu_index, index, self.device)
        self._xmax = exact.max_norm(self.embeddings) if index == "flat" else None  # for exact scores
        self.build_seconds = time.perf_counter() - t0

    # ------------------------------------------------------------ encoding
    @property
    def encoder(self):
        return self.text_encoder.encoder

    def encode(self, texts: list[str], progress: bool = False) -> np.ndarray:
        """Unit-length embeddings of ``texts`` (queries), through the store."""
        return self.text_encoder.embed(list(texts))

    def _embeddings(self) -> np.ndarray:
        before = self.text_encoder.n_encoded
        emb = self.text_encoder.embed([embed_text(p) for p in self.corpus], progress=self.progress,
                                      desc=f"Encoding passages ({self.embedder_name}, {self.encoding})",
                                      on_progress=self.on_progress)
        self.n_encoded = self.text_encoder.n_encoded - before
        self.cache_hit = self.n_encoded == 0 and len(self.corpus) > 0
        return np.ascontiguousarray(emb, dtype=np.float32)

    # ------------------------------------------------------------ index
    def _index(self):
        if self.index_kind == "flat":  # a flat index is a copy of the vectors: rebuilding is a memcpy
            return faiss_index.build_index(self.embeddings, "flat")
        name = faiss_index.index_file_name(self.index_kind)
        path = self.cache_path / name if self.cache_path is not None else None
        if path is not None and path.is_file():
            try:
                index = faiss_index.load_index(path)
                if index.ntotal == len(self.corpus):
                    return index
            except RuntimeError:
                pass
        index = faiss_index.build_index(self.embeddings, self.index_kind)
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
            faiss_index.save_index(index, path)
        return index

    # ------------------------------------------------------------ search
    def _search(self, queries: list[str], k: int) -> list[Hits]:
        return self.search_vectors(self.encode(queries), k)

    def search_vectors(self, q: np.ndarray, k: int) -> list[Hits]:
        flat = self.index_kind == "flat"
        scores, rows = faiss_index.search(self._index_obj, self.index_kind, q, min(int(k), len(self.corpus)),
                                          emb=self.embeddings if flat else None, xmax=self._xmax if flat else None,
                                          numpy_ok=self._index_obj is self._cpu_index)
        return [Hits(rr[rr >= 0], ss[rr >= 0]) for rr, ss in zip(rows, scores)]
