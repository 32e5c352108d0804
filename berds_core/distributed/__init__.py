"""Beyond one machine: encoding, indexing, retrieval and judging on a Ray cluster.

``berds index|retrieve|judge|judge-eval|corpus ingest --ray ADDRESS`` (or ``BERDS_RAY_ADDRESS``)
runs the heavy steps of those verbs on Ray; without the switch nothing
changes and Ray is never imported (this package imports Ray only inside
:func:`runtime.ray_session`). ``ADDRESS`` (:func:`resolve_address`):

- ``local``: start a Ray instance on this machine for the job, stop it after;
- ``auto``: the running cluster Ray finds (``RAY_ADDRESS``, or the one ``ray start`` left on this node);
- ``ray://host:port``: a cluster through Ray Client;
- ``host:port``: a cluster's GCS address (what ``ray start --head`` prints).

The driver (the machine running ``berds``) keeps what it keeps in one
process: the corpus (in memory, or its on-disk store), the embedding store,
the prediction cache and the output files. A corpus bound for the on-disk
store is read shard by shard by Ray tasks (:mod:`.ingest`) and stored by the
driver with the one-process code; the texts of a corpus in the store never
come to the driver for a dense index (the encoder actors read their rows from
the store folder). Workers compute; their results come back through Ray's object
store and the driver commits them as they arrive, so a job interrupted as a
whole resumes from what was committed, and a worker killed in the middle of a
job changes nothing (Ray restarts the actor and runs its batch again).

Modules, one concern each:

- :mod:`.runtime`: the address, connecting / starting and stopping Ray, the cluster's CPUs and GPUs;
- :mod:`.ingest`: a corpus's shards read in parallel by Ray tasks, taken in order by ``corpora.disk.ingest``;
- :mod:`.plan`: which texts to encode, in exactly the parts one process would encode them
  (the parts make the vectors, and so the embedded judge's probabilities, equal bit for bit);
- :mod:`.encode`: the encoder actor pool (Ray Data ``map_batches``, one model per actor, a GPU each
  when the cluster has GPUs), committing each part to the driver's embedding store;
- :mod:`.shards`: passage vectors and per-shard indexes on disk (the layout below);
- :mod:`.index`: ``berds index --ray``: encode, write vector shards, build per-shard indexes in tasks;
- :mod:`.search`: ``berds retrieve --ray``: shard searchers (one actor per shard group), exact merge;
- :mod:`.judge`: ``berds judge|judge-eval --ray``: pairs not in the prediction cache as a Ray
  dataset, an actor pool holding one judge each; ``vllm:`` through ``ray.data.llm``.

On-disk layout of a sharded index (``--ray-dir``, default under ``$BERDS_CACHE/indexes``;
on a cluster, a folder every node reads at the same path)::

    <ray-dir>/<corpus hash[:20]>-<encoder key>/
        vectors/shard-00000.npy    float32 [rows, dim], unit length, corpus rows start..stop-1
        vectors/shard-00000.json   {start, stop, dim, sha256, corpus_hash, encoder}; written after the
                                   .npy, so a shard without its .json is not done
        vectors/complete.json      {format: berds-vector-shards/1, n, dim, shard_rows, corpus_hash, encoder}
        hnsw-M32-ef80/shard-00000.faiss (+ .json, complete.json)   --index hnsw: one HNSW per shard
        bm25/shard-00000.npz       BM25 score matrix rows start..stop-1 (global IDF and lengths)

Every file is written to a temporary name and renamed into place.
"""
from __future__ import annotations

import os
import re

from ..errors import InputError

ENV = "BERDS_RAY_ADDRESS"
ADDRESS_HELP = ("run the heavy steps on Ray: local (start Ray on this machine for the job), auto (the running "
                "cluster), ray://host:port (Ray Client) or host:port (a cluster's GCS address); default: "
                f"${ENV}; without it nothing changes and Ray is not imported")
_HOSTPORT = re.compile(r"[A-Za-z0-9_.\-\[\]:]+:\d{1,5}")


def resolve_address(value: str | None = None, flag: str = "--ray") -> str | None:
    """The Ray address from ``--ray`` or ``$BERDS_RAY_ADDRESS`` (None: no Ray); bad forms are an InputError."""
    if value is None:
        value = os.environ.get(ENV) or None
        flag = ENV if value is not None else flag
    if value is None:
        return None
    text = str(value).strip()
    if text in ("local", "auto"):
        return text
    if text.startswith("ray://") and _HOSTPORT.fullmatch(text[len("ray://"):]):
        return text
    if "://" not in text and _HOSTPORT.fullmatch(text):
        return text
    raise InputError(flag, None, None, f"expected local, auto, ray://host:port or host:port, got {value!r}")
