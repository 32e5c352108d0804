"""The encoder actor pool: parts of texts in, unit vectors out, committed to the driver's embedding store.

Each part of a :class:`~.plan.Plan` is one row of a Ray dataset; a pool of
:class:`EncodeActor` (Ray Data ``map_batches``; one sentence-transformers
model per actor; one actor per GPU when the cluster has GPUs, else one per
CPU) encodes a part in one ``encode_normalized`` call, as one process does.
The driver writes each part's vectors to its embedding store as the part
comes back (one ``put_many``, as ``TextEncoder.embed_map`` does per part), so:

- a job interrupted as a whole resumes: the next plan leaves out what was committed;
- a worker killed mid-part changes nothing: Ray restarts the actor and encodes the part again;
- every later command over the same texts (dense retrieval, MMR, the embedded judge) starts warm.
"""
from __future__ import annotations

import os
import time

import numpy as np

from ..cache import text_hash
from ..embeddings.store import embedding_store
from .plan import EncoderSpec, Plan


class EncodeActor:
    """Holds one encoder (the driver's model, precision and length); ``__call__`` encodes one part."""

    def __init__(self, model, encoding, max_seq_length, batch_size, gpu: bool = False):
        import ray

        from ..embeddings.store import TextEncoder

        self.te = TextEncoder(model, "cuda" if gpu else "cpu", encoding, max_seq_length,
                              batch_size=batch_size, store=False)
        self.te.encoder  # load the model now: a bad model fails at start, not mid-pipeline
        self.node = ray.get_runtime_context().get_node_id()

    def __call__(self, batch: dict) -> dict:
        parts, vecs, dims = [], [], []
        for part, texts in zip(batch["part"], batch["texts"]):
            emb = self.te.encode_uncached([str(t) for t in texts])
            parts.append(int(part))
            vecs.append(np.ascontiguousarray(emb, np.float32).tobytes())
            dims.append(int(emb.shape[1]))
        n = len(parts)
        return {"part": np.array(parts), "vecs": np.array(vecs, dtype=object), "dim": np.array(dims),
                "node": np.array([self.node] * n, dtype=object), "pid": np.array([os.getpid()] * n)}


def use_gpus(session, spec: EncoderSpec) -> bool:
    """GPU actors when the cluster has GPUs, except for int8 (a CPU-only precision)."""
    return session.gpus > 0 and spec.encoding != "int8"


def encode_parts(session, spec: EncoderSpec, plan: Plan, on_part=None) -> dict:
    """Encode ``plan.parts`` on the cluster and commit each to the embedding store under ``spec.key``.

    ``on_part(done, total)`` after each committed part (an exception there stops the job; what was
    committed stays). Returns counts: parts, texts encoded, the nodes (``nodes_used``) and actor processes
    (``workers``) that encoded them.
    """
    stats = {"texts": plan.texts, "already_stored": plan.stored, "parts": len(plan.parts), "encoded": 0,
             "nodes_used": 0, "workers": 0, "seconds": 0.0}
    if not plan.parts:
        return stats
    t0 = time.perf_counter()
    gpu = use_gpus(session, spec)
    rows = [{"part": i, "texts": part} for i, part in enumerate(plan.parts)]
    store = embedding_store()
    nodes, pids, done = set(), set(), 0
    for batch in session.map_rows(rows, EncodeActor, {**spec.kwargs(), "gpu": gpu}, gpu=gpu):
        for part, blob, dim, node, pid in zip(batch["part"], batch["vecs"], batch["dim"], batch["node"],
                                              batch["pid"]):
            texts = plan.parts[int(part)]
            emb = np.frombuffer(blob, dtype=np.float32).reshape(len(texts), int(dim))
            store.put_many(spec.key, [(text_hash(t), v) for t, v in zip(texts, emb)])
            nodes.add(str(node))
            pids.add((str(node), int(pid)))
            done += 1
            stats["encoded"] += len(texts)
            if on_part is not None:
                on_part(done, len(rows))
    stats.update(nodes_used=len(nodes), workers=len(pids), seconds=round(time.perf_counter() - t0, 3))
    return stats
