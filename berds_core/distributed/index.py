"""``berds index --ray``: passages encoded by the actor pool, vectors written as shards, one index per shard.

1. :func:`~.plan.corpus_plan`: the passage texts missing from the embedding store, in the parts one
   process would encode (so the vectors are the same, bit for bit);
2. :func:`~.encode.encode_parts`: the actor pool encodes them; each part is committed to the store;
3. vector shards (``vectors/shard-NNNNN.npy``, ``shard_rows`` corpus rows each) are written from
   the store, one at a time (the driver never holds more than one shard of vectors);

   A corpus in the on-disk store (``corpora.disk.DiskCorpus``: what ``--corpus-storage disk``, or
   ``auto`` from 50 MB of shards, gives; ``--ray`` ingests it with its shards read in parallel, see
   :mod:`.ingest`) never has its texts on the driver: steps 1-3 are, instead,
   :func:`~.plan.store_plan` (row ranges: the one-process vector shards not written yet),
   :func:`~.encode.encode_rows` (actors read their rows from the store folder, the driver writes each
   part as the one-process vector shard, ``<cache>/vectors/...``: the vectors one process stores, bit
   for bit), then the ``shard_rows`` shards of this layout copied from those, one shard at a time
   (memory-mapped). Why actors read the store themselves rather than the driver streaming texts to
   them: the driver then reads nothing but row numbers, the texts cross no network twice, and Ray
   Data's pipeline stays a list of small rows; the price is that the store folder must be at the same
   path on every node (as ``--ray-dir`` must).
4. ``--index hnsw``: one HNSW graph per shard, built by Ray tasks (one CPU each) that read their
   vector shard and write ``hnsw-.../shard-NNNNN.faiss``. ``flat`` needs no file: a shard's vectors
   are its exact index. ``--index IVF<nlist>,<codes>`` (a FAISS factory string, e.g. ``IVF1024,Flat``
   or ``IVF4096,PQ32``): the index is trained once, in a Ray task, on a uniform sample of the vectors
   read from the shards (``trained.faiss``); then each shard is filled into its own copy of the trained,
   empty index by a Ray task (its inverted lists, ids = global corpus rows), so no process holds more
   than one shard of vectors. The shards share the coarse quantizer, so searching each shard's lists
   with the same ``nprobe`` and merging the top-k gives exactly what one index with the shards' lists
   merged gives (a test checks it against FAISS's own merge).

Every step skips what is already done (store entries, shards whose checksum holds), so an
interrupted job resumes where it stopped. A search over the shards is :mod:`.search`.
"""
from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..corpora.disk import is_disk_corpus
from ..embeddings.text_encoders import embed_text, embedding_store
from ..files.cache import cache_dir, slug, text_hash
from ..files.shard_files import SHARD_ROWS, ShardSet, read_json, save_npy, sha256
from ..retrieval import faiss_index, vector_shards
from .encode import encode_parts, encode_rows, encode_stats
from .plan import EncoderSpec, RowPlan, corpus_plan, store_plan


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
    """The index's vector shards. A corpus in the on-disk store: the one-process vectors themselves
    (``retrieval.vector_shards``, the folder ``berds index`` writes) when their shard size is this index's,
    so the vectors are written once and read by both; otherwise this index's own shards under
    ``folder/vectors`` (a corpus in memory: written from the embedding store; another shard size: copied)."""
    if is_disk_corpus(corpus):
        one = vector_shards.VectorShards(vector_shards.vectors_folder(corpus, key), len(corpus), corpus.hash, key,
                                         vector_shards.SHARD_ROWS)
        if one.shard_rows == int(shard_rows):
            return one
    return ShardSet(folder / "vectors", len(corpus), shard_rows, "npy",
                    {"corpus_hash": corpus.hash, "encoder": key})


def copy_vector_shards(vec: ShardSet, source) -> int:
    """Write the missing shards of ``vec`` from complete vector shards of another size (``source``:
    ``retrieval.vector_shards.VectorShards``, memory-mapped): one shard in memory at a time."""
    if vec.complete:
        return 0
    todo = vec.todo()
    for i in todo:
        a, b = vec.bounds(i)
        save_npy(vec, i, source.get(np.arange(a, b)), dim=source.dim)
    vec.finish(dim=source.dim)
    return len(todo)


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


IVF_NPROBE = 32  # lists searched per query in each shard (all lists when the index has fewer)


def is_ivf(kind: str) -> bool:
    """``kind`` is a FAISS factory string of an inverted-file index (``IVF<nlist>,...``)."""
    return bool(re.fullmatch(r"IVF\d+(_[A-Za-z0-9]+)?,[A-Za-z0-9_,.]+", str(kind or "")))


def check_kind(kind: str) -> None:
    """ValueError unless ``kind`` is flat, hnsw or an IVF factory string FAISS parses."""
    if kind in faiss_index.INDEX_KINDS:
        return
    if not is_ivf(kind):
        raise ValueError(f"expected flat, hnsw or a FAISS IVF factory string such as IVF1024,Flat, got {kind!r}")
    import faiss

    try:
        faiss.index_factory(8, kind, faiss.METRIC_INNER_PRODUCT)
    except RuntimeError:
        raise ValueError(f"FAISS cannot build {kind!r} (e.g. IVF1024,Flat or IVF4096,PQ32 with 32 dividing the "
                         f"vector size)") from None


def train_rows(n: int, nlist: int) -> int:
    """Training sample: 64 vectors a list (FAISS asks for 39 to 256), at least 10k, at most all."""
    return int(min(n, max(10_000, 64 * nlist)))


def _sample(specs: list[dict], rows: np.ndarray) -> np.ndarray:
    """Rows ``rows`` (sorted, global) read from the vector shards, memory-mapped: one shard at a time."""
    parts = []
    for s in specs:
        a, b = int(s["start"]), int(s["start"]) + int(s["rows"])
        mine = rows[(rows >= a) & (rows < b)] - a
        if len(mine):
            parts.append(np.asarray(np.load(s["path"], mmap_mode="r")[mine], dtype=np.float32))
    return np.ascontiguousarray(np.concatenate(parts))


def _train_ivf(specs: list[dict], factory: str, dim: int, rows: list[int], path: str) -> str:
    """A Ray task: train ``factory`` on the sampled rows and write the trained, empty index to ``path``."""
    import faiss

    index = faiss.index_factory(int(dim), factory, faiss.METRIC_INNER_PRODUCT)
    for part in (index, faiss.extract_index_ivf(index)):
        if hasattr(part, "do_polysemous_training"):
            part.do_polysemous_training = False  # Hamming pre-filtering is not used; most of PQ's training time
    index.train(_sample(specs, np.asarray(rows, np.int64)))
    faiss_index.save_index(index, Path(path))
    return path


def _fill_ivf(spec: dict, trained: str, folder: str, n: int, shard_rows: int, ident: dict) -> int:
    """A Ray task: shard ``spec``'s vectors added to a copy of the trained index (ids: global rows), written."""
    import faiss

    shards = ShardSet(folder, n, shard_rows, "faiss", ident)
    index = faiss.read_index(trained)
    emb = np.ascontiguousarray(np.load(spec["path"]), dtype=np.float32)
    index.add_with_ids(emb, np.arange(spec["start"], spec["start"] + len(emb), dtype=np.int64))
    tmp = shards.tmp_path(spec["shard"])
    try:
        faiss.write_index(index, str(tmp))
        shards.commit(spec["shard"], tmp, kind=ident["kind"])
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return spec["shard"]


def build_ivf(session, vec: ShardSet, folder: Path, factory: str, seed: int = 0) -> tuple[ShardSet, int]:
    """``factory`` trained once on a sample of ``vec`` (a Ray task), then one shard of lists per vector shard
    (Ray tasks); what is done already (the trained index, shards whose checksum holds) is kept."""
    import faiss
    import ray

    base = folder / f"ivf-{slug(factory)}"
    base.mkdir(parents=True, exist_ok=True)
    trained = base / "trained.faiss"
    specs = vec.specs()
    nlist = int(re.match(r"IVF(\d+)", factory).group(1))
    if nlist > vec.n:
        raise ValueError(f"{factory}: {nlist} lists for {vec.n} vectors (give fewer lists than vectors)")
    fresh = not trained.is_file()
    if fresh:
        rng = np.random.default_rng(seed)
        rows = np.sort(rng.choice(vec.n, size=train_rows(vec.n, nlist), replace=False))
        dim = int(read_json(vec.folder / "complete.json")["dim"])
        task = ray.remote(num_cpus=1, max_retries=3)(_train_ivf)
        ray.get(task.remote(specs, factory, dim, rows.tolist(), str(trained)))
    lists = ShardSet(base / "lists", vec.n, vec.shard_rows, "faiss",
                     {**vec.ident, "kind": factory, "trained_sha256": sha256(trained)})
    todo = [] if lists.complete else lists.todo()
    if todo:
        task = ray.remote(num_cpus=1, max_retries=3)(_fill_ivf)
        ray.get([task.remote(specs[i], str(trained), str(lists.folder), vec.n, vec.shard_rows, lists.ident)
                 for i in todo])
    lists.finish(kind=factory, nlist=int(faiss.extract_index_ivf(faiss.read_index(str(trained))).nlist))
    return lists, len(todo) + int(fresh)


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
    """Encode ``corpus`` on the cluster through the encoder ``te`` (``embeddings.text_encoders.TextEncoder``) and
    write its sharded index; everything already done is kept."""
    check_kind(kind)
    t0 = time.perf_counter()
    spec = EncoderSpec.of(te)
    folder = dense_folder(root, corpus, spec.key)
    vec = _vector_shards(folder, corpus, spec.key, shard_rows)
    if is_disk_corpus(corpus):
        enc, written = _encode_store(session, corpus, spec, vec, on_part)
    else:
        texts = [embed_text(p) for p in corpus]
        enc = encode_parts(session, spec, corpus_plan(spec.key, texts), on_part=on_part)
        written = write_vector_shards(vec, texts, spec.key)
    if kind == "flat":
        graphs, built = None, 0
    else:
        graphs, built = (build_ivf if is_ivf(kind) else build_graphs)(session, vec, folder, kind)
    stats = {"encode": enc, "folder": str(folder), "vectors": str(vec.folder), "shards": vec.n_shards,
             "shard_rows": vec.shard_rows, "shards_written": written, "graphs_built": built,
             "seconds": round(time.perf_counter() - t0, 3)}
    return DenseShards(folder, kind, vec, graphs, stats)


def _encode_store(session, corpus, spec: EncoderSpec, vec: ShardSet, on_part) -> tuple[dict, int]:
    """A corpus in the on-disk store: encoded in the one-process vector shards (the actors read the texts
    from the store); when ``vec`` is not those shards (another shard size), its shards are then copied from
    them. Returns the encoding counts and the vector shards written. Nothing is encoded when ``vec`` is
    complete."""
    if vec.complete:  # this layout is written: the one-process shards are not needed (nor read)
        return encode_stats(RowPlan(texts=len(corpus), stored=len(corpus))), 0
    shared = isinstance(vec, vector_shards.VectorShards)
    parts = vec if shared else vector_shards.VectorShards(
        vector_shards.vectors_folder(corpus, spec.key), len(corpus), corpus.hash, spec.key, vector_shards.SHARD_ROWS)
    plan = store_plan(parts)
    enc = encode_rows(session, spec, corpus, parts, plan, on_part=on_part)
    return enc, (len(plan.parts) if shared else copy_vector_shards(vec, parts))
