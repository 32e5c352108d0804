"""``berds retrieve --ray``: each shard searched by the actor that holds it, per-question top-k merged exactly.

Shards are spread over ``min(shards, CPUs)`` searcher actors; each loads its
shards once (from the shard folder, which every node reads) and answers a
batch of questions with each shard's top-k, in global rows. The driver merges
with :func:`berds_core.retrieval.topk.merge_topk` (score descending, row
ascending): for exact search this is the ranking of one index over all rows.

- dense ``flat``: a shard's vectors in a FAISS ``IndexFlatIP`` searched with
  ``faiss_index.search``, the very call one process makes (candidates from
  NumPy for a few questions, from FAISS for many), ranked on exact scores
  (:mod:`berds_core.retrieval.exact`): the same floats whatever the shard, the
  batch, the actor's thread count or the CPU;
- dense ``hnsw``: one HNSW graph per shard (approximate, like one HNSW graph);
- dense ``IVF<nlist>,...``: each shard's inverted lists (one trained quantizer for all, ids = global
  rows), ``nprobe`` lists searched in each: the merged top-k is what one index holding every shard's
  lists returns (approximate as that index is);
- BM25: a shard holds its rows of the BM25 score matrix, built once over the
  whole corpus (global IDF and average length), and scores a query with
  bm25s' own kernel; a passage's score is the same sum in the same order as
  in the whole matrix, and :func:`~berds_core.retrieval.topk.top_k` ranks it.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from ..files.shard_files import ShardSet
from ..records import Hits
from ..retrieval import exact, faiss_index
from ..retrieval.bm25 import INDEX_VERSION
from ..retrieval.topk import merge_topk, top_k
from .index import IVF_NPROBE, is_ivf


class _Searcher:
    def node(self) -> str:
        import ray

        return ray.get_runtime_context().get_node_id()


class DenseSearcher(_Searcher):
    """A Ray actor holding some dense shards: ``search(queries, k)`` -> per shard, (rows, scores) per query."""

    def __init__(self, shards: list[dict], kind: str):
        self.kind, self.shards = kind, []
        for s in shards:
            if is_ivf(kind):  # the shard's inverted lists; its ids are global rows already
                import faiss

                index = faiss_index.load_index(Path(s["index"]))
                ivf = faiss.extract_index_ivf(index)
                ivf.nprobe = min(IVF_NPROBE, ivf.nlist)
                self.shards.append((0, int(s["rows"]), None, index))
                continue
            emb = np.ascontiguousarray(np.load(s["path"]), dtype=np.float32)
            index = (faiss_index.load_index(Path(s["index"])) if kind != "flat"
                     else faiss_index.build_index(emb, "flat"))
            self.shards.append((int(s["start"]), len(emb), emb, index))
        self.xmax = [exact.max_norm(emb) if emb is not None and kind == "flat" else None
                     for _, _, emb, _ in self.shards]

    def search(self, queries: np.ndarray, k: int) -> list[list[tuple[np.ndarray, np.ndarray]]]:
        out = []
        for (start, n, emb, index), xmax in zip(self.shards, self.xmax):
            kk = min(int(k), n)
            scores, rows = faiss_index.search(index, "flat" if emb is None else self.kind, queries, kk,
                                              emb=emb if self.kind == "flat" else None, xmax=xmax)
            out.append([(r[r >= 0].astype(np.int64) + start, s[r >= 0]) for r, s in zip(rows, scores)])
        return out


class BM25Searcher(_Searcher):
    """A Ray actor holding some shards of the BM25 score matrix (CSC, docs x vocabulary)."""

    def __init__(self, shards: list[dict], dtype: str, int_dtype: str):
        import scipy.sparse as sp

        self.dtype, self.int_dtype = np.dtype(dtype), np.dtype(int_dtype)
        self.shards = []
        for s in shards:
            m = sp.load_npz(s["path"]).tocsc()
            self.shards.append((int(s["start"]), m.data, m.indices.astype(self.int_dtype, copy=False), m.indptr,
                                m.shape[0]))

    def search(self, query_ids: list[list[int]], k: int) -> list[list[tuple[np.ndarray, np.ndarray]]]:
        import bm25s

        out = []
        for start, data, indices, indptr, n in self.shards:
            per = []
            for ids in query_ids:
                scores = bm25s.BM25._compute_relevance_from_scores(data, indptr, indices, n,
                                                                   np.asarray(ids, dtype=self.int_dtype), self.dtype)
                per.append(top_k(scores, k, offset=start))
            out.append(per)
        return out


def _searchers(session, cls, shard_specs: list[dict], *args):
    import ray

    n = session.pool_size(len(shard_specs), gpu=False)
    groups = [shard_specs[i::n] for i in range(n)]  # round robin: neighbouring shards on different actors
    actor = ray.remote(num_cpus=1, max_restarts=-1, max_task_retries=-1)(cls)
    return [actor.remote(g, *args) for g in groups if g]


def _gather(session, cls, shard_specs, init_args, queries, k: int, batch: int):
    """(top-k ``Hits`` per query, {"searchers", "nodes_used"})."""
    import ray

    actors = _searchers(session, cls, shard_specs, *init_args)
    try:
        info = {"searchers": len(actors), "nodes_used": len(set(ray.get([a.node.remote() for a in actors])))}
        hits = []
        for a in range(0, len(queries), batch):
            part = queries[a:a + batch]
            ref = ray.put(part)
            per_actor = ray.get([act.search.remote(ref, k) for act in actors])
            shard_lists = [s for actor_out in per_actor for s in actor_out]
            for j in range(len(part)):
                hits.append(Hits(*merge_topk([sl[j] for sl in shard_lists], k)))
        return hits, info
    finally:
        for act in actors:
            ray.kill(act)


def search_dense(session, index, queries: np.ndarray, k: int, batch: int = 1024):
    """Top-``k`` ``Hits`` per query vector over a :class:`~.index.DenseShards`, and where."""
    return _gather(session, DenseSearcher, index.specs(), (index.kind,), np.ascontiguousarray(queries, np.float32),
                   k, batch)


def bm25_shards(retriever, folder, shard_rows: int) -> ShardSet:
    """Write the BM25 score matrix of ``retriever`` (``BM25Retriever``) as row shards (skipping done ones)."""
    import scipy.sparse as sp

    model = retriever.model
    n = int(model.scores["num_docs"])
    shards = ShardSet(folder, n, shard_rows, "npz", {"corpus_hash": retriever.corpus.hash, "index": INDEX_VERSION})
    if shards.complete:
        return shards
    todo = shards.todo()
    if todo:
        full = sp.csc_matrix((model.scores["data"], model.scores["indices"], model.scores["indptr"]),
                             shape=(n, len(model.scores["indptr"]) - 1))
        csr = full.tocsr()  # row slices are cheap in CSR; each shard goes back to CSC for scoring
        for i in todo:
            a, b = shards.bounds(i)
            tmp = shards.tmp_path(i)
            try:
                with open(tmp, "wb") as fh:
                    sp.save_npz(fh, csr[a:b].tocsc(), compressed=False)
                shards.commit(i, tmp)
            except BaseException:
                tmp.unlink(missing_ok=True)
                raise
    shards.finish()
    return shards


def search_bm25(session, retriever, shards: ShardSet, queries: list[str], k: int, batch: int = 1024):
    """Top-``k`` ``Hits`` per query text over the BM25 row shards, and where."""
    model = retriever.model
    ids = retriever.query_ids(queries)
    return _gather(session, BM25Searcher, shards.specs(), (str(np.dtype(model.dtype)), str(np.dtype(model.int_dtype))),
                   ids, k, batch)
