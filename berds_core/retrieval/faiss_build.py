"""Building a dense index folder from vectors on disk, within a memory budget.

The folder has Pyserini's dense layout, so ``berds retrieve --index-dir`` opens
ours and theirs alike::

    DIR/index          the FAISS index (absent for ``flat``: the vectors are the index)
    DIR/docid          one passage id per line, line i = FAISS row i
    DIR/index.ivfdata  the inverted lists, when they are kept on disk
    DIR/berds.json     what the folder holds: format, plan, encoder, corpus {name, hash, passages},
                       the vectors' folder (for exact re-ranking); written last

Training reads a uniform sample of ``plan.train_rows`` vectors; adding streams
the vectors shard by shard. With ``plan.on_disk`` each chunk of vectors is
added to its own copy of the trained, empty index and written out, and the
chunks' lists are merged into ``index.ivfdata`` (FAISS's ``merge_ondisk``), so
memory holds one chunk and the centroids, never the whole index. With a GPU
(``faiss-gpu`` and a CUDA device) the k-means of training runs on it.
"""
from __future__ import annotations

import json
import os
import sys
import time
from contextlib import contextmanager
from pathlib import Path

import numpy as np

from ..corpora.disk import corpus_label
from . import faiss_index

FORMAT = "berds-dense-index/1"
INDEX_FILE = "index"
DOCID_FILE = "docid"
IVFDATA_FILE = "index.ivfdata"
META = "berds.json"
ADD_CHUNK = 65_536


def gpu_count() -> int:
    return faiss_index.gpu_count()  # read at each call (tests stand in for the GPUs)


def _train(index, vectors, plan, seed: int = 0, progress: bool = False) -> None:
    import faiss

    rows = plan.train_rows or min(vectors.n, 65_536)
    rng = np.random.default_rng(seed)
    sample = np.sort(rng.choice(vectors.n, size=rows, replace=False)) if rows < vectors.n else np.arange(vectors.n)
    x = vectors.get(sample, release=True)  # a shard's pages go once its sampled rows are copied
    ivf = None
    try:
        ivf = faiss.extract_index_ivf(index)
    except RuntimeError:
        pass
    for part in (index, ivf, _downcast(index)):
        if part is not None and hasattr(part, "do_polysemous_training"):
            # polysemous codes serve Hamming pre-filtering, which the studio does not use; training them
            # is most of an IVF-PQ's training time (measured 38 s of 38 s for IVF64,PQ8 on 8k vectors)
            part.do_polysemous_training = False
    if ivf is not None and gpu_count() > 0:  # k-means on the GPU: the slow part of training
        ivf.clustering_index = faiss.index_cpu_to_all_gpus(faiss.IndexFlatL2(ivf.d))
    if progress:
        sys.stderr.write(f"Training {plan.factory} on {len(x):,} vectors\n")
    index.train(x)


def _downcast(index):
    import faiss

    try:
        return faiss.downcast_index(index)
    except (RuntimeError, AttributeError):
        return None


def write_docids(path: Path, corpus) -> None:
    """The ``docid`` file: the corpus ids in row order, streamed."""
    with open(path, "w", encoding="utf-8") as fh:
        batches = getattr(corpus, "iter_batches", None)
        if batches is not None:
            for b in batches(50_000):
                fh.write("".join(f"{i}\n" for i in b.ids))
        else:
            fh.write("".join(f"{i}\n" for i in corpus.ids))


def build_folder(folder: Path, vectors, plan, *, corpus, encoder: dict, progress: bool = False) -> dict:
    """Fill ``folder`` (empty; a temporary one under ``build_dir.building``) with the index; returns berds.json."""
    import faiss

    folder = Path(folder)
    t0 = time.perf_counter()
    write_docids(folder / DOCID_FILE, corpus)
    if plan.factory is not None:
        index = faiss.index_factory(vectors.dim, plan.factory, faiss.METRIC_INNER_PRODUCT)
        if not index.is_trained:
            _train(index, vectors, plan, progress=progress)
        from tqdm.auto import tqdm

        bar = tqdm(total=vectors.n, desc=f"Adding to {plan.factory}", unit="vector", disable=not progress)
        if plan.on_disk:
            from faiss.contrib.ondisk import merge_ondisk

            blocks_dir = folder / "blocks"
            blocks_dir.mkdir()
            trained = faiss.serialize_index(index)
            names = []
            for start, chunk in _chunks(vectors):
                block = faiss.deserialize_index(trained)
                block.add_with_ids(np.ascontiguousarray(chunk, dtype=np.float32),
                                   np.arange(start, start + len(chunk), dtype=np.int64))
                name = blocks_dir / f"block-{len(names):05d}.index"
                faiss.write_index(block, str(name))
                names.append(str(name))
                del block
                bar.update(len(chunk))
            with stdout_to_stderr():  # FAISS prints "resizing ..." on the C stdout; --json keeps stdout clean
                merge_ondisk(index, names, str(folder / IVFDATA_FILE))
            faiss.write_index(index, str(folder / INDEX_FILE))
            for name in names:
                Path(name).unlink()
            blocks_dir.rmdir()
        else:
            for _, chunk in _chunks(vectors):
                index.add(np.ascontiguousarray(chunk, dtype=np.float32))
                bar.update(len(chunk))
            faiss.write_index(index, str(folder / INDEX_FILE))
        bar.close()
    meta = {"format": FORMAT, "plan": plan.to_json(), "encoder": encoder,
            "corpus": corpus_label(corpus),
            "vectors": str(vectors.folder) if getattr(vectors, "folder", None) else None,
            "seconds": round(time.perf_counter() - t0, 3), "created": time.strftime("%Y-%m-%dT%H:%M:%S")}
    (folder / META).write_text(json.dumps(meta, indent=1), encoding="utf-8")
    return meta


@contextmanager
def stdout_to_stderr():
    """Send what C++ code writes to file descriptor 1 to stderr for the block."""
    sys.stdout.flush()
    saved = os.dup(1)
    try:
        os.dup2(2, 1)
        yield
    finally:
        sys.stdout.flush()
        os.dup2(saved, 1)
        os.close(saved)


def _chunks(vectors):
    for start, arr in vectors.chunks(release=True):  # a pass over every vector holds one shard
        for a in range(0, len(arr), ADD_CHUNK):
            yield start + a, arr[a:a + ADD_CHUNK]


def folder_bytes(folder: Path) -> int:
    return sum(p.stat().st_size for p in Path(folder).rglob("*") if p.is_file())
