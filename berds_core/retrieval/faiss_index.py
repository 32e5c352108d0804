"""FAISS inner-product indexes over normalised embeddings: exact (flat) or HNSW.

Flat indexes move to the GPU when FAISS sees one (``faiss-gpu`` installed and a
CUDA device present); HNSW stays on the CPU (FAISS has no GPU HNSW).
"""
from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from . import exact

INDEX_KINDS = ("flat", "hnsw")
HNSW_M = 32
HNSW_EF_CONSTRUCTION = 80
HNSW_EF_SEARCH = 128


def _faiss():
    import faiss

    return faiss


def gpu_count() -> int:
    faiss = _faiss()
    try:
        return int(faiss.get_num_gpus()) if hasattr(faiss, "get_num_gpus") else 0
    except Exception:  # noqa: BLE001 - a CPU build may raise instead of returning 0
        return 0


def index_file_name(kind: str) -> str:
    return "flat.faiss" if kind == "flat" else f"hnsw-M{HNSW_M}-ef{HNSW_EF_CONSTRUCTION}.faiss"


def build_index(emb: np.ndarray, kind: str = "flat"):
    """A CPU FAISS index (inner product) holding ``emb`` (rows = corpus rows)."""
    faiss = _faiss()
    if kind not in INDEX_KINDS:
        raise ValueError(f"index must be one of {', '.join(INDEX_KINDS)}, got {kind!r}")
    emb = np.ascontiguousarray(emb, dtype=np.float32)
    d = emb.shape[1]
    if kind == "flat":
        index = faiss.IndexFlatIP(d)
    else:
        index = faiss.IndexHNSWFlat(d, HNSW_M, faiss.METRIC_INNER_PRODUCT)
        index.hnsw.efConstruction = HNSW_EF_CONSTRUCTION
    if len(emb):
        index.add(emb)
    return index


def save_index(index, path: Path) -> None:
    """Write atomically (temporary file + rename)."""
    faiss = _faiss()
    path = Path(path)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    faiss.write_index(index, str(tmp))
    os.replace(tmp, path)


def load_index(path: Path):
    return _faiss().read_index(str(path))


def to_device(index, kind: str, device: str | None):
    """Move a flat index to all GPUs when FAISS has GPU support and the device allows it."""
    if kind != "flat" or (device or "").startswith(("cpu", "mps")) or gpu_count() == 0:
        return index
    faiss = _faiss()
    return faiss.index_cpu_to_all_gpus(index)


SMALL_BATCH = 20  # FAISS scans a CPU flat index with one thread per query below this batch size


def search(index, kind: str, queries: np.ndarray, k: int, emb: np.ndarray | None = None, *, xmax: float | None = None,
           numpy_ok: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """Top-``k`` (scores, rows) per query; rows of -1 mean "no more results".

    A flat index given its vectors as ``emb`` ranks on exact scores (:mod:`.exact`: the same float32 on every
    CPU, equal scores by row, whatever the batch or the shard): for a few queries (and ``numpy_ok``, a CPU
    index) the candidates come from one BLAS matrix product (all cores) instead of FAISS's
    one-thread-per-query scan, for more from FAISS. ``xmax``: the largest norm of a row of ``emb``, when
    known. Without ``emb`` (HNSW, a prebuilt index), FAISS's own float32 scores.
    """
    queries = np.ascontiguousarray(queries, dtype=np.float32)
    if kind == "hnsw":
        index.hnsw.efSearch = max(HNSW_EF_SEARCH, 4 * k)  # recall@k ~0.9 at k=100, ~1.0 at k=10
    elif emb is not None and 0 < k <= len(emb) and len(queries):
        if numpy_ok and len(queries) < SMALL_BATCH:
            best = exact.top_k_exact(queries, emb, k, xmax=xmax)
            return np.stack([s for _, s in best]), np.stack([r for r, _ in best])
        return exact.settle(lambda kk: index.search(queries, kk), queries, emb, k, xmax=xmax)
    return index.search(queries, k)
