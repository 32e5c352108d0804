"""Dense retrieval at scale: vectors in resumable shards, a FAISS index sized for a memory budget.

``get_retriever("dense", corpus, model, index=SPEC, memory_budget=BYTES)`` (:class:`~.base.IndexOptions`)
comes here for an on-disk corpus (any ``SPEC``) and for an approximate index
other than ``hnsw`` over an in-memory one (``ivfpq`` or a factory string):

1. vectors: an on-disk corpus is encoded into checksummed shards
   (:mod:`berds_core.retrieval.vector_shards`: a killed run resumes at the first
   shard not done); an in-memory one reads the shared embedding store, as the
   in-memory dense retriever does;
2. plan: :func:`berds_core.retrieval.index_plan.plan_index` sizes the index
   from the corpus size and the budget;
3. build: :func:`berds_core.retrieval.faiss_build.build_folder` writes an index
   folder (Pyserini's layout plus ``berds.json``) in a temporary folder renamed
   when complete; ``--index-dir DIR`` puts it there, else the cache keeps it
   under the corpus name and hash, the encoder and the factory string;
4. search: :class:`berds_core.retrieval.index_dir.IndexDirRetriever`, the same
   object ``berds retrieve --index-dir`` opens prebuilt folders with.
"""
from __future__ import annotations

import re
import time
from dataclasses import replace
from pathlib import Path

from ..corpora.disk import is_disk_corpus
from ..embeddings.text_encoders import embed_text
from ..errors import InputError
from ..files.build_dir import building
from ..files.cache import cache_dir, slug
from . import vector_shards
from .base import IndexOptions
from .faiss_build import META, build_folder
from .index_dir import IndexDirRetriever, read_meta
from .index_plan import plan_index
from .query_encoders import SentenceQueryEncoder
from .tantivy_bm25 import is_tantivy_folder
from .vector_shards import ArrayVectors, VectorShards, vectors_folder


def _safe(text: str, n: int = 40) -> str:
    return re.sub(r"[^A-Za-z0-9._,-]+", "_", str(text))[:n] or "x"


def passage_vectors(corpus, encoder, *, progress: bool = False, on_progress=None, shard_rows: int | None = None):
    """The unit vectors of every passage (rows = corpus rows): shards on disk for a disk corpus."""
    te = encoder.text_encoder
    if not is_disk_corpus(corpus):
        emb = te.embed([embed_text(p) for p in corpus], progress=progress,
                       desc=f"Encoding passages ({encoder.key})", on_progress=on_progress)
        return ArrayVectors(emb)
    shards = VectorShards(vectors_folder(corpus, te.key), len(corpus), corpus.hash, te.key,
                          shard_rows or vector_shards.SHARD_ROWS)  # read at each call (tests change it)

    def texts_of(a, b):
        return [t for batch in corpus.iter_batches(b - a, a, b) for t in batch.texts]

    return shards.encode(texts_of, stream=te.encode_stream, dim=te.dim, progress=progress, on_progress=on_progress,
                         desc=f"Encoding passages ({te.key})")


def index_folder_for(corpus, encoder_key: str, plan) -> Path:
    factory = plan.factory or "flat"
    where = "-ondisk" if plan.on_disk else ""
    return cache_dir("indexes") / (f"{_safe(corpus.name)}-{corpus.hash[:20]}-dense-{slug(encoder_key)}-"
                                   f"{_safe(factory, 60)}{where}")


class ScaledDenseRetriever:
    """Builds (or opens) the index folder for ``corpus`` and searches it (see the module docstring)."""

    def __init__(self, corpus, options: IndexOptions | None = None, *, vectors=None, **fields):
        """``options``: how the index is built (:class:`~.base.IndexOptions`, or its fields as keywords:
        ``model``, ``index``, ``memory_budget``, ``index_dir``, ``device``, ``encoding``, ``progress``,
        ``on_progress``, ``nprobe``); ``vectors``: the passages' vectors when the caller has them."""
        o = replace(options or IndexOptions(), **fields)
        model, index, memory_budget, index_dir = o.model, o.index, o.memory_budget, o.index_dir
        device, encoding, progress, on_progress, nprobe = o.device, o.encoding, o.progress, o.on_progress, o.nprobe
        t0 = time.perf_counter()
        encoder = SentenceQueryEncoder(model, device, encoding)
        # the plan and the folder are checked before any passage is encoded (hours at 21M passages)
        self.plan = plan_index(index, len(corpus), vectors.dim if vectors is not None else encoder.dim,
                               memory_budget)
        folder = Path(index_dir) if index_dir is not None else index_folder_for(corpus, encoder.key, self.plan)
        if is_tantivy_folder(folder):
            raise InputError(folder, None, "--index-dir", "holds a BM25 (tantivy) index, not a dense one: give "
                                                          "another folder")
        exists = (folder / META).is_file()
        if exists:
            had = (read_meta(folder) or {}).get("plan") or {}
            if had.get("factory") != self.plan.factory:
                raise InputError(folder, None, "--index-dir", f"holds a {had.get('factory') or 'flat'} index, not "
                                                              f"{self.plan.factory or 'flat'}: give another folder, "
                                                              "or remove this one to rebuild it")
        elif folder.exists() and any(folder.iterdir()):
            raise InputError(folder, None, "--index-dir", "exists and is not an index folder; give an empty "
                                                          "or new folder")
        self.vectors = vectors if vectors is not None else passage_vectors(corpus, encoder, progress=progress,
                                                                           on_progress=on_progress)
        n_encoded = self.vectors.n_encoded if hasattr(self.vectors, "n_encoded") else 0
        built = False
        if not exists:
            if folder.exists():
                folder.rmdir()
            with building(folder, "dense index") as tmp:
                build_folder(tmp, self.vectors, self.plan, corpus=corpus, progress=progress,
                             encoder={"model": model, "key": encoder.key, "encoding": encoder.encoding,
                                      "max_seq_length": encoder.text_encoder.max_seq_length, "normalized": True})
            built = True
        vec = self.vectors if getattr(self.vectors, "folder", None) is not None or self.plan.refine or \
            self.plan.factory is None else None
        self.inner = IndexDirRetriever(folder, corpus, model, device=device, encoding=encoding, nprobe=nprobe,
                                       vectors=vec, cache_hit=not built and n_encoded == 0)
        self.inner.build_seconds = time.perf_counter() - t0
        self.n_encoded = n_encoded

    def __getattr__(self, name):  # name, embedder_name, cache_path, cache_hit, search, ... of the opened folder
        if name == "inner":
            raise AttributeError(name)
        return getattr(self.inner, name)
