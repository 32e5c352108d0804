"""The encoder actor pool: parts of texts in, unit vectors out, committed to the driver's embedding store.

Each part of a :class:`~.plan.Plan` is one row of a Ray dataset; a pool of
:class:`EncodeActor` (Ray Data ``map_batches``; one sentence-transformers
model per actor; one actor per GPU when the cluster has GPUs, else one per
CPU) encodes a part as one process does: one part of ``TextEncoder.encode_stream``,
the fast path on a GPU actor (``embeddings.pipeline``: tokenizer threads overlapped
with the model, length-sorted token-budget batches; the next part of the Ray batch
is tokenized while this one is encoded) and the CPU's default path on a CPU actor.
The driver writes each part's vectors to its embedding store as the part
comes back (one ``put_many``, as ``TextEncoder.embed_map`` does per part), so:

- a job interrupted as a whole resumes: the next plan leaves out what was committed;
- a worker killed mid-part changes nothing: Ray restarts the actor and encodes the part again;
- every later command over the same texts (dense retrieval, MMR, the embedded judge) starts warm.

A corpus in the on-disk store (:func:`encode_rows`) is encoded as one process encodes it: a part is a
range of rows of a one-process vector shard (:func:`~.plan.store_plan`), and :class:`StoreEncodeActor`
reads those rows' texts from the store folder itself, so no text passes through the driver or the
object store (a part of 65,536 passages is ~40 MB of text; only the row range is shipped). The driver
writes each part's vectors as that shard of the one-process vector folder
(``retrieval.vector_shards.VectorShards``, the same file a one-process ``berds index`` writes, so either
side resumes or reuses the other's work). The store folder must therefore be at the same path on every
node (on a cluster of several machines: ``BERDS_CACHE`` on a shared filesystem, as ``--ray-dir``); an
actor that finds no store there, or another corpus, fails at its start with a line saying so.
"""
from __future__ import annotations

import os
import time
from contextlib import closing

import numpy as np

from ..corpora.disk import DiskCorpus
from ..embeddings.text_encoders import TextEncoder, embedding_store
from ..errors import InputError
from ..files.cache import text_hash
from .plan import EncoderSpec, Plan, RowPlan


class EncodeActor:
    """Holds one encoder (the driver's model, precision and length); ``__call__`` encodes one part."""

    def __init__(self, model, encoding, max_seq_length, batch_size, gpu: bool = False, path: str = "auto"):
        import ray

        # path: the driver's choice (auto | fast | plain), resolved for this actor's device: auto is the fast
        # path on a GPU actor, the CPU's default on a CPU actor
        self.te = TextEncoder(model, "cuda" if gpu else "cpu", encoding, max_seq_length,
                              batch_size=batch_size, store=False, path=path)
        self.te.encoder  # load the model now: a bad model fails at start, not mid-pipeline
        self.te.pipeline  # and build the fast path (or say why not) before the first part
        self.node = ray.get_runtime_context().get_node_id()

    def texts_of(self, batch: dict, j: int) -> list[str]:
        """The texts of row ``j`` of the batch: shipped with it."""
        return [str(t) for t in batch["texts"][j]]

    def __call__(self, batch: dict) -> dict:
        parts, vecs, dims = [], [], []
        todo = ((int(part), self.texts_of(batch, j)) for j, part in enumerate(batch["part"]))
        with closing(self.te.encode_stream(todo)) as encoded:  # the fast path reads the next part while encoding
            for part, emb in encoded:
                parts.append(part)
                vecs.append(np.ascontiguousarray(emb, np.float32).tobytes())
                dims.append(int(emb.shape[1]))
        n = len(parts)
        return {"part": np.array(parts), "vecs": np.array(vecs, dtype=object), "dim": np.array(dims),
                "node": np.array([self.node] * n, dtype=object), "pid": np.array([os.getpid()] * n)}


class StoreEncodeActor(EncodeActor):
    """An encoder that reads its parts' texts (rows ``start..stop-1``) from the on-disk corpus store."""

    def __init__(self, model, encoding, max_seq_length, batch_size, gpu: bool = False, path: str = "auto",
                 store: str = "", corpus_hash: str = ""):
        super().__init__(model, encoding, max_seq_length, batch_size, gpu, path)
        try:
            self.corpus = DiskCorpus(store)
        except InputError as e:
            raise RuntimeError(f"{e} (on node {self.node}): the corpus store must be at the same path on every "
                               "node (BERDS_CACHE on a shared filesystem)") from None
        if self.corpus.hash != corpus_hash:
            raise RuntimeError(f"{store} holds corpus {self.corpus.hash[:12]} on node {self.node}, not "
                               f"{corpus_hash[:12]}: the corpus store must be the same on every node")

    def texts_of(self, batch: dict, j: int) -> list[str]:
        a, b = int(batch["start"][j]), int(batch["stop"][j])
        return [t for rows in self.corpus.iter_batches(b - a, a, b) for t in rows.texts]  # as one process


def use_gpus(session, spec: EncoderSpec) -> bool:
    """GPU actors when the cluster has GPUs, except for int8 (a CPU-only precision)."""
    return session.gpus > 0 and spec.encoding != "int8"


def _run_pool(session, spec: EncoderSpec, rows: list[dict], cls, extra: dict, commit, on_part, stats: dict) -> dict:
    """Each row through a pool of ``cls`` actors; ``commit(row number, vectors)`` as each comes back."""
    t0 = time.perf_counter()
    gpu = use_gpus(session, spec)
    nodes, pids, done = set(), set(), 0
    for batch in session.map_rows(rows, cls, {**spec.kwargs(), "gpu": gpu, **extra}, gpu=gpu):
        for part, blob, dim, node, pid in zip(batch["part"], batch["vecs"], batch["dim"], batch["node"],
                                              batch["pid"]):
            emb = np.frombuffer(blob, dtype=np.float32).reshape(-1, int(dim))
            commit(int(part), emb)
            nodes.add(str(node))
            pids.add((str(node), int(pid)))
            done += 1
            stats["encoded"] += len(emb)
            if on_part is not None:
                on_part(done, len(rows))
    stats.update(nodes_used=len(nodes), workers=len(pids), seconds=round(time.perf_counter() - t0, 3))
    return stats


def encode_stats(plan) -> dict:
    """The counts of an encoding job before it runs."""
    return {"texts": plan.texts, "already_stored": plan.stored, "parts": len(plan.parts), "encoded": 0,
            "nodes_used": 0, "workers": 0, "seconds": 0.0}


def encode_parts(session, spec: EncoderSpec, plan: Plan, on_part=None) -> dict:
    """Encode ``plan.parts`` on the cluster and commit each to the embedding store under ``spec.key``.

    ``on_part(done, total)`` after each committed part (an exception there stops the job; what was
    committed stays). Returns counts: parts, texts encoded, the nodes (``nodes_used``) and actor processes
    (``workers``) that encoded them.
    """
    stats = encode_stats(plan)
    if not plan.parts:
        return stats
    store = embedding_store()

    def commit(part: int, emb) -> None:
        texts = plan.parts[part]
        store.put_many(spec.key, [(text_hash(t), v) for t, v in zip(texts, emb)])

    rows = [{"part": i, "texts": part} for i, part in enumerate(plan.parts)]
    return _run_pool(session, spec, rows, EncodeActor, {}, commit, on_part, stats)


def encode_rows(session, spec: EncoderSpec, corpus, shards, plan: RowPlan, on_part=None) -> dict:
    """Encode the row ranges of ``plan`` (a corpus in the on-disk store) on the cluster, each part written as
    its shard of ``shards`` (``retrieval.vector_shards.VectorShards``) as it comes back; the shards are
    marked complete at the end. Returns the counts :func:`encode_parts` returns."""
    stats = encode_stats(plan)
    if shards.complete:
        return stats
    shards.remove_torn_writes()
    dims: set[int] = set()

    def commit(part: int, emb) -> None:
        shards.write(part, emb)
        dims.add(int(emb.shape[1]))

    if plan.parts:
        rows = [{"part": i, "start": a, "stop": b} for i, a, b in plan.parts]
        _run_pool(session, spec, rows, StoreEncodeActor, {"store": str(corpus.folder), "corpus_hash": corpus.hash},
                  commit, on_part, stats)
    dim = dims.pop() if dims else shards.shard_dim(0)
    shards.finish(dim)
    return stats
