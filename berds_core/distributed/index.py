"""``berds index --ray``: passages encoded by the actor pool, vectors written as shards, one index per shard.

1. :func:`~.plan.corpus_plan`: the passage texts missing from the embedding store, in the parts one
   process would encode (so the vectors are the same, bit for bit);
2. :func:`~.encode.encode_parts`: the actor pool encodes them; each part is committed to the store;
3. vector shards (``vectors/shard-NNNNN.npy``, ``shard_rows`` corpus rows each) are written from
   the store, one at a time (the driver never holds more than one shard of vectors);
4. ``--index hnsw``: one HNSW graph per shard, built by Ray tasks (one CPU each) that read their
   vector shard and write ``hnsw-.../shard-NNNNN.faiss``. ``flat`` needs no file: a shard's vectors
   are its exact index.

Every step skips what is already done (store entries, shards whose checksum holds), so an
interrupted job resumes where it stopped. A search over the shards is :mod:`.search`.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..cache import cache_dir, slug, text_hash
from ..embed_store import embed_text, embedding_store
from ..retrieval import faiss_index
from .encode import encode_parts
from .plan import EncoderSpec, corpus_plan
from .shards import SHARD_ROWS, ShardSet, save_npy


def default_root() -> Path:
    return cache_dir("indexes") / "ray"


def dense_folder(root, corpus, key: str) -> Path:
    return Path(root or default_root()) / f"{corpus.hash[:20]}-{slug(key)}"


@dataclass
class DenseShards:
    """A sharded dense index: the vector shards and, for HNSW, one graph per shard."""

    folder: Path
    kind: str
    vectors: ShardSet
    graphs: ShardSet | None
    stats: dict = field(default_factory=dict)

    def specs(self) -> list[dict]:
        out = self.vectors.specs()
        if self.graphs is not None:
            for s, g in zip(out, self.graphs.specs()):
                s["index"] = g["path"]
        return out


def _vector_shards(folder: Path, corpus, key: str, shard_rows: int) -> ShardSet:
    return ShardSet(folder / "vectors", len(corpus), shard_rows, "npy",
                    {"corpus_hash": corpus.hash, "encoder": key})


def write_vector_shards(vec: ShardSet, texts: list[str], key: str) -> int:
    """Write the missing vector shards from the embedding store; returns how many were written."""
    if vec.complete:
        return 0
    store = embedding_store()
    todo = vec.todo()
    dim = 0
    for i in todo:
        a, b = vec.bounds(i)
        hashes = [text_hash(t) for t in texts[a:b]]
        got = store.get_many(key, list(dict.fromkeys(hashes)))
        arr = np.stack([got[h] for h in hashes]).astype(np.float32)
        dim = int(arr.shape[1])
        save_npy(vec, i, arr, dim=dim)
    if not dim and vec.n_shards:
        dim = int(np.load(vec.path(0), mmap_mode="r").shape[1])
    vec.finish(dim=dim)
    return len(todo)


def _build_graph(spec: dict, graphs_folder: str, n: int, shard_rows: int, ident: dict) -> int:
    """A Ray task: build shard ``spec``'s HNSW graph from its vectors and write it (atomically)."""
    import faiss

    graphs = ShardSet(graphs_folder, n, shard_rows, "faiss", ident)
    index = faiss_index.build_index(np.load(spec["path"]), "hnsw")
    tmp = graphs.tmp_path(spec["shard"])
    try:
        faiss.write_index(index, str(tmp))
        graphs.commit(spec["shard"], tmp, kind="hnsw")
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return spec["shard"]


def build_graphs(session, vec: ShardSet, folder: Path, kind: str) -> tuple[ShardSet, int]:
    """One HNSW graph per vector shard, built in Ray tasks (skipping the shards already built)."""
    import ray

    graphs = ShardSet(folder / faiss_index.index_file_name(kind).removesuffix(".faiss"), vec.n, vec.shard_rows,
                      "faiss", {**vec.ident, "kind": kind})
    todo = [] if graphs.complete else graphs.todo()
    if todo:
        task = ray.remote(num_cpus=1, max_retries=3)(_build_graph)
        specs = vec.specs()
        ray.get([task.remote(specs[i], str(graphs.folder), vec.n, vec.shard_rows, graphs.ident) for i in todo])
    graphs.finish(kind=kind)
    return graphs, len(todo)


def index_dense(session, corpus, te, *, kind: str = "flat", root=None, shard_rows: int = SHARD_ROWS,
                on_part=None) -> DenseShards:
    """Encode ``corpus`` on the cluster through the encoder ``te`` (``embed_store.TextEncoder``) and
    write its sharded index; everything already done is kept."""
    if kind not in faiss_index.INDEX_KINDS:
        raise ValueError(f"index must be one of {', '.join(faiss_index.INDEX_KINDS)}, got {kind!r}")
    t0 = time.perf_counter()
    spec = EncoderSpec.of(te)
    texts = [embed_text(p) for p in corpus]
    enc = encode_parts(session, spec, corpus_plan(spec.key, texts), on_part=on_part)
    folder = dense_folder(root, corpus, spec.key)
    vec = _vector_shards(folder, corpus, spec.key, shard_rows)
    written = write_vector_shards(vec, texts, spec.key)
    graphs, built = (build_graphs(session, vec, folder, kind) if kind != "flat" else (None, 0))
    stats = {"encode": enc, "folder": str(folder), "shards": vec.n_shards, "shard_rows": vec.shard_rows,
             "shards_written": written, "graphs_built": built, "seconds": round(time.perf_counter() - t0, 3)}
    return DenseShards(folder, kind, vec, graphs, stats)
