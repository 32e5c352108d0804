"""Dense retrieval: sentence-transformers embeddings + FAISS inner product.

Embeddings are L2-normalised (inner product = cosine). Passage embeddings
and the FAISS index persist under ``cache_dir("indexes")`` in a folder keyed
by corpus hash, model key and encoding mode; encoding writes finished chunks
as it goes, so an interrupted build resumes instead of starting over.
"""
from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path

import numpy as np

from ..cache import cache_dir, slug
from ..embed import load_encoder, model_key, pick_device, resolve_encoding
from . import faiss_index

CHUNK = 2048  # passages per saved encoding chunk


def _save_npy(path: Path, arr: np.ndarray) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with open(tmp, "wb") as fh:
        np.save(fh, arr)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)


def encode_normalized(encoder, texts: list[str], batch_size: int = 64) -> np.ndarray:
    """float32 unit-length embeddings from any precision of encoder.

    sentence-transformers sorts texts by length before batching, so batches
    hold passages of similar length (little padding); batches of 64 measured
    faster than 32 on CPU for every precision (bench/retrieval.py).
    """
    emb = encoder.encode(list(texts), batch_size=batch_size, normalize_embeddings=False,
                         convert_to_tensor=True, show_progress_bar=False)
    emb = emb.float().cpu().numpy()
    norms = np.linalg.norm(emb, axis=1, keepdims=True)
    return emb / np.maximum(norms, 1e-12)  # normalised in float32 (bf16 norms are off by ~1e-3)


class DenseRetriever:
    """Dense retrieval over a corpus; ``search(queries, k)`` -> ``[[(row, score), ...], ...]``."""

    def __init__(self, corpus, model: str | None = None, *, progress: bool = True, index: str = "flat",
                 device: str | None = None, encoding: str | None = None, batch_size: int = 64,
                 cache: bool = True, on_progress=None):
        if index not in faiss_index.INDEX_KINDS:
            raise ValueError(f"index must be one of {', '.join(faiss_index.INDEX_KINDS)}, got {index!r}")
        self.corpus = corpus
        self.model = model
        self.device = pick_device(device)
        self.encoding = resolve_encoding(encoding, self.device)
        self.index_kind = index
        self.progress = progress
        self.on_progress = on_progress  # (done, total) as passages are encoded
        self.batch_size = batch_size
        self.embedder_name = model_key(model)
        self.name = (f"dense:{self.embedder_name}" + ("" if index == "flat" else f"+{index}")
                     + ("" if self.encoding == "fp32" else f"+{self.encoding}"))
        self.cache_hit = False
        self.n_encoded = 0
        self._encoder = None
        key = f"{corpus.hash[:20]}-dense-{slug(self.embedder_name)}-{self.encoding}"
        self.cache_path = cache_dir("indexes") / key if cache else None
        t0 = time.perf_counter()
        self.embeddings = self._embeddings()
        self._cpu_index = self._index()
        self._index_obj = faiss_index.to_device(self._cpu_index, index, self.device)
        self.build_seconds = time.perf_counter() - t0

    # ------------------------------------------------------------ encoding
    @property
    def encoder(self):
        if self._encoder is None:
            self._encoder = load_encoder(self.model, self.device, self.encoding)
        return self._encoder

    def encode(self, texts: list[str], progress: bool = False) -> np.ndarray:
        return encode_normalized(self.encoder, texts, self.batch_size)

    def _embeddings(self) -> np.ndarray:
        path = self.cache_path
        if path is not None:
            final = path / "embeddings.npy"
            if final.is_file() and self._meta_ok():
                emb = np.load(final, mmap_mode="r")
                if emb.shape[0] == len(self.corpus):
                    self.cache_hit = True
                    return emb
            path.mkdir(parents=True, exist_ok=True)
            self._write_meta()
        return self._encode_corpus()

    def _meta_ok(self) -> bool:
        try:
            meta = json.loads((self.cache_path / "meta.json").read_text())
        except (OSError, ValueError):
            return False
        return meta.get("corpus_hash") == self.corpus.hash and meta.get("passages") == len(self.corpus)

    def _write_meta(self) -> None:
        meta = {"corpus_hash": self.corpus.hash, "passages": len(self.corpus), "model": self.embedder_name,
                "encoding": self.encoding, "normalized": True}
        tmp = self.cache_path / f".meta.{os.getpid()}.tmp"
        tmp.write_text(json.dumps(meta))
        os.replace(tmp, self.cache_path / "meta.json")

    def _encode_corpus(self) -> np.ndarray:
        from tqdm.auto import tqdm

        texts = self.corpus.texts
        n = len(texts)
        self.encoder  # load the model before any progress bar: a bad model id fails at once
        parts_dir = self.cache_path / "parts" if self.cache_path is not None else None
        if parts_dir is not None:
            parts_dir.mkdir(exist_ok=True)
        chunks = []
        with tqdm(total=n, desc=f"Encoding passages ({self.embedder_name}, {self.encoding})", unit="passage",
                  disable=not self.progress) as bar:
            for start in range(0, n, CHUNK):
                stop = min(start + CHUNK, n)
                part = parts_dir / f"{start:09d}-{stop:09d}.npy" if parts_dir is not None else None
                emb = None
                if part is not None and part.is_file():
                    try:
                        emb = np.load(part)
                    except (OSError, ValueError):
                        emb = None
                if emb is None or emb.shape[0] != stop - start:
                    emb = self._encode_reporting(texts, start, stop, n)
                    self.n_encoded += stop - start
                    if part is not None:
                        _save_npy(part, emb)
                chunks.append(emb)
                bar.update(stop - start)
                if self.on_progress is not None:
                    self.on_progress(stop, n)
        emb = np.concatenate(chunks) if chunks else np.zeros((0, self._dim()), np.float32)
        if self.cache_path is not None:
            _save_npy(self.cache_path / "embeddings.npy", emb)
            shutil.rmtree(parts_dir, ignore_errors=True)
        return emb

    def _encode_reporting(self, texts, start: int, stop: int, n: int) -> np.ndarray:
        """Encode ``texts[start:stop]``; with ``on_progress``, in steps of a few batches so a bar can move."""
        if self.on_progress is None:
            return self.encode(texts[start:stop])
        step = self.batch_size * 4
        parts = []
        for a in range(start, stop, step):
            parts.append(self.encode(texts[a:min(a + step, stop)]))
            self.on_progress(min(a + step, stop), n)
        return np.concatenate(parts)

    def _dim(self) -> int:
        return int(self.encoder.get_sentence_embedding_dimension())

    # ------------------------------------------------------------ index
    def _index(self):
        name = faiss_index.index_file_name(self.index_kind)
        path = self.cache_path / name if self.cache_path is not None else None
        if path is not None and path.is_file() and self.cache_hit:
            try:
                index = faiss_index.load_index(path)
                if index.ntotal == len(self.corpus):
                    return index
            except RuntimeError:
                pass
        index = faiss_index.build_index(np.asarray(self.embeddings), self.index_kind)
        if path is not None:
            faiss_index.save_index(index, path)
        return index

    # ------------------------------------------------------------ search
    def search(self, queries: list[str], k: int) -> list[list[tuple[int, float]]]:
        if not queries:
            return []
        k = min(int(k), len(self.corpus))
        if k < 1:
            return [[] for _ in queries]
        q = self.encode(list(queries))
        return self.search_vectors(q, k)

    def search_vectors(self, q: np.ndarray, k: int) -> list[list[tuple[int, float]]]:
        on_cpu = self._index_obj is self._cpu_index
        scores, rows = faiss_index.search(self._index_obj, self.index_kind, q, min(int(k), len(self.corpus)),
                                          emb=self.embeddings if on_cpu and self.index_kind == "flat" else None)
        return [[(int(r), float(s)) for r, s in zip(rr, ss) if r >= 0] for rr, ss in zip(rows, scores)]
