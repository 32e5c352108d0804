"""Opening a dense index folder, the studio's or a prebuilt one (``berds retrieve --index-dir DIR``).

A folder in Pyserini's dense layout -- ``index`` (a FAISS index) and
``docid`` (one passage id per line, line i = FAISS row i) -- opens over a
corpus holding the same ids, without re-encoding anything. The studio's own
folders (:mod:`berds_core.retrieval.faiss_build`) add ``berds.json``: the
query encoder they were built with, the index plan (``nprobe``, exact
re-ranking), the corpus they index (name, hash, passages) and where the
vectors are.

- The FAISS file is opened memory-mapped (``IO_FLAG_MMAP_IFC``; on-disk
  inverted lists from ``index.ivfdata`` beside it): opening costs
  milliseconds whatever the size, and the first query reads only the pages it
  touches.
- A folder whose ``berds.json`` names another corpus (another content hash)
  is refused; a prebuilt folder's ``docid`` lines are looked up in the corpus
  once (the rows are cached under ``cache_dir("indexes")/docid-rows``), and
  an id the corpus lacks is refused with its line.
- Without ``berds.json`` the query encoder must be given (``--model``; for
  Pyserini's DPR indexes ``dpr:facebook/dpr-question_encoder-multiset-base``),
  and its dimension must match the index's.
"""
from __future__ import annotations

import hashlib
import json
import time
from pathlib import Path

import numpy as np

from ..embeddings.models import model_key
from ..errors import InputError
from ..files.cache import cache_dir
from ..records import Hits
from . import faiss_index
from .base import SearchBase, dense_name
from .exact import scores as exact_scores, top_k_exact
from .faiss_build import DOCID_FILE, FORMAT, INDEX_FILE, IVFDATA_FILE, META, folder_bytes
from .index_plan import HNSW_EF_SEARCH, default_nprobe
from .query_encoders import query_encoder
from .topk import merge_topk, top_k
from .vector_shards import VectorShards


def read_meta(folder: Path) -> dict | None:
    path = Path(folder) / META
    if not path.is_file():
        return None
    try:
        meta = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise InputError(path, None, None, f"unreadable index description ({e})") from None
    if meta.get("format") != FORMAT:
        raise InputError(path, None, "format", f"expected {FORMAT}, got {meta.get('format')!r}")
    return meta


def index_corpus_source(folder) -> str | None:
    """The corpus file an index folder was built from, as its ``berds.json`` names it (None: unknown, moved)."""
    try:
        info = json.loads((Path(folder) / META).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    src = (info.get("corpus") or {}).get("source")
    return src if src and Path(src).exists() else None


def is_index_folder(folder) -> bool:
    p = Path(folder)
    return p.is_dir() and (p / DOCID_FILE).is_file() and ((p / INDEX_FILE).is_file() or (p / META).is_file())


def exact_search(vectors, q: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Exact top-``k`` inner products of queries ``q`` over every vector, shard by shard: exact scores (the same
    float32 whatever the chunk or the CPU, :mod:`.exact`), score descending, equal scores by row (``topk``'s one
    total order, so the chunking never decides which tie is kept)."""
    nq = len(q)
    parts: list[list] = [[] for _ in range(nq)]
    for start, arr in vectors.chunks():
        for i, best in enumerate(top_k_exact(q, np.asarray(arr), k, offset=start)):
            parts[i] = [merge_topk(parts[i] + [best], k)]
    best_s = np.full((nq, k), -np.inf, dtype=np.float32)
    best_r = np.zeros((nq, k), dtype=np.int64)
    width = k
    for i, p in enumerate(parts):
        rows, scores = p[0] if p else (np.zeros(0, np.int64), np.zeros(0, np.float32))
        width = min(width, len(rows))
        best_r[i, :len(rows)], best_s[i, :len(rows)] = rows, scores
    return best_s[:, :width], best_r[:, :width]


def refine(vectors, q: np.ndarray, cand: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Re-score candidate rows exactly from the vectors (:func:`.exact.scores`); top ``k`` per query (rows -1
    are skipped), equal scores by row."""
    scores = np.full((len(q), k), -np.inf, dtype=np.float32)
    rows = np.full((len(q), k), -1, dtype=np.int64)
    for i in range(len(q)):
        c = np.unique(cand[i][cand[i] >= 0])  # ascending rows: top_k's ties then fall on the lowest row
        if not len(c):
            continue
        s = exact_scores(vectors.get(c), q[i])
        top, _ = top_k(s, k)
        scores[i, :len(top)], rows[i, :len(top)] = s[top], c[top]
    return scores, rows


class DenseIndex:
    """A FAISS index folder opened for search over ``corpus`` rows."""

    def __init__(self, folder, corpus, *, vectors=None, nprobe: int | None = None, device: str | None = None):
        import faiss

        self.folder = Path(folder)
        if not self.folder.is_dir():
            raise InputError(self.folder, None, "--index-dir", "not a folder")
        self.meta = read_meta(self.folder)
        self.corpus = corpus
        t0 = time.perf_counter()
        if self.meta is not None:
            made = self.meta.get("corpus") or {}
            if made.get("hash") != corpus.hash:
                raise InputError(self.folder, None, "--index-dir",
                                 f"this index was built from corpus {made.get('name')!r} (hash "
                                 f"{str(made.get('hash'))[:12]}, {made.get('passages')} passages), not from "
                                 f"{corpus.name!r} (hash {corpus.hash[:12]}, {len(corpus)} passages): "
                                 "give the corpus it was built from, or build the index again")
        self.plan = (self.meta or {}).get("plan") or {}
        self.vectors = vectors if vectors is not None else self._vectors()
        path = self.folder / INDEX_FILE
        self.index = None
        if path.is_file():
            # memory-mapped: codes stay in the page cache; on-disk lists are mapped by OnDiskInvertedLists
            flags = faiss.IO_FLAG_MMAP_IFC | faiss.IO_FLAG_READ_ONLY
            if (self.folder / IVFDATA_FILE).is_file():
                flags = faiss.IO_FLAG_ONDISK_SAME_DIR | faiss.IO_FLAG_READ_ONLY
            try:
                self.index = faiss.read_index(str(path), flags)
            except RuntimeError as e:
                raise InputError(path, None, None, f"not a readable FAISS index ({str(e).strip().splitlines()[-1]})"
                                 ) from None
            self.dim = int(self.index.d)
            self.ntotal = int(self.index.ntotal)
        elif self.plan.get("factory") is None and self.meta is not None:
            if self.vectors is None:
                raise InputError(self.folder, None, None, "a flat index reads the passage vectors, which are gone "
                                                          f"({self.meta.get('vectors')}): build the index again")
            self.dim, self.ntotal = int(self.vectors.dim), int(self.vectors.n)
        else:
            raise InputError(self.folder, None, "--index-dir", f"no FAISS index file '{INDEX_FILE}' in the folder")
        self.rows = self._rows()
        self._set_params(nprobe)
        self.index_gpu = self._to_gpu(device)
        self.open_seconds = time.perf_counter() - t0

    # ------------------------------------------------------------ opening
    def _vectors(self):
        where = (self.meta or {}).get("vectors")
        if not where or not Path(where).is_dir():
            return None
        shards = VectorShards(where, len(self.corpus), self.corpus.hash,
                              (self.meta.get("encoder") or {}).get("key", ""))
        return shards if shards.complete else None

    def _rows(self) -> np.ndarray | None:
        """FAISS row -> corpus row (None: the same numbers)."""
        docid = self.folder / DOCID_FILE
        if self.meta is not None:
            if self.ntotal != len(self.corpus):
                raise InputError(self.folder, None, "--index-dir", f"the index holds {self.ntotal:,} vectors, the "
                                                                   f"corpus {len(self.corpus):,} passages")
            return None
        if not docid.is_file():
            raise InputError(self.folder, None, "--index-dir", f"no '{DOCID_FILE}' file (one passage id per line)")
        st = docid.stat()
        key = hashlib.sha1(json.dumps([str(docid.resolve()), st.st_size, st.st_mtime_ns, self.corpus.hash]
                                      ).encode()).hexdigest()[:24]
        cached = cache_dir("indexes") / "docid-rows" / f"{key}.npy"
        if cached.is_file():
            rows = np.load(cached, mmap_mode="r")
            if len(rows) == self.ntotal:
                return rows
        rows = np.empty(self.ntotal, dtype=np.int64)
        n = 0
        with open(docid, encoding="utf-8") as fh:
            batch: list[str] = []
            for line in fh:
                batch.append(line.rstrip("\r\n"))
                if len(batch) == 10_000:
                    n = self._map_batch(batch, rows, n, docid)
                    batch = []
            n = self._map_batch(batch, rows, n, docid)
        if n != self.ntotal:
            raise InputError(docid, None, None, f"{n:,} ids for an index of {self.ntotal:,} vectors")
        cached.parent.mkdir(parents=True, exist_ok=True)
        tmp = cached.with_name(f".{cached.name}.tmp.npy")
        np.save(tmp, rows)
        tmp.replace(cached)
        return rows

    def _map_batch(self, ids: list[str], rows: np.ndarray, n: int, docid: Path) -> int:
        if not ids:
            return n
        if n + len(ids) > len(rows):
            raise InputError(docid, len(rows) + 1, None, f"more ids than the index's {len(rows):,} vectors")
        found = self.corpus.rows_of(ids) if hasattr(self.corpus, "rows_of") else [self._row_of(i) for i in ids]
        for j, r in enumerate(found):
            if r is None:
                raise InputError(docid, n + j + 1, None, f"passage id {ids[j]!r} is not in the corpus "
                                                         f"{self.corpus.name!r}: give the corpus this index was built from")
        rows[n:n + len(ids)] = found
        return n + len(ids)

    def _row_of(self, pid: str):
        try:
            return self.corpus.index_of(pid)
        except KeyError:
            return None

    def _set_params(self, nprobe: int | None) -> None:
        import faiss

        if self.index is None:
            return
        ps = faiss.ParameterSpace()
        ivf = None
        try:
            ivf = faiss.extract_index_ivf(self.index)
        except RuntimeError:
            pass
        if ivf is not None:
            self.nprobe = int(nprobe or self.plan.get("nprobe") or default_nprobe(int(ivf.nlist), self.ntotal))
            ps.set_index_parameter(self.index, "nprobe", self.nprobe)
        else:
            self.nprobe = None
        self.hnsw = "HNSW" in type(self.index).__name__ or hasattr(self.index, "hnsw")
        self.ef_search = int(self.plan.get("ef_search") or HNSW_EF_SEARCH) if self.hnsw else None

    def _to_gpu(self, device: str | None):
        """A GPU copy of an in-memory index when FAISS sees a GPU (not for on-disk lists or HNSW)."""
        if self.index is None or self.hnsw or (self.folder / IVFDATA_FILE).is_file() or \
                (device or "").startswith(("cpu", "mps")) or faiss_index.gpu_count() == 0:
            return None
        import faiss

        try:
            gpu = faiss.index_cpu_to_all_gpus(self.index)
        except RuntimeError:  # an index type the GPU build does not support: search on the CPU
            return None
        if self.nprobe:
            faiss.GpuParameterSpace().set_index_parameter(gpu, "nprobe", self.nprobe)
        return gpu

    # ------------------------------------------------------------ search
    @property
    def refine_factor(self) -> int:
        return int(self.plan.get("refine") or 0) if self.vectors is not None else 0

    @property
    def rescore(self) -> int:
        """The fewest candidates re-scored exactly (the plan's ``rescore``; 0 for folders built before it)."""
        return int(self.plan.get("rescore") or 0)

    def search(self, q: np.ndarray, k: int) -> list[Hits]:
        q = np.ascontiguousarray(q, dtype=np.float32)
        k = min(int(k), self.ntotal)
        if k < 1 or not len(q):
            return [Hits.empty() for _ in range(len(q))]
        if self.index is None:
            scores, rows = exact_search(self.vectors, q, k)
        else:
            kk = min(self.ntotal, max(k * self.refine_factor, self.rescore)) if self.refine_factor else k
            index = self.index_gpu if self.index_gpu is not None else self.index
            if self.hnsw:
                self.index.hnsw.efSearch = max(self.ef_search, 2 * kk)
            scores, rows = index.search(q, kk)
            if self.refine_factor:
                scores, rows = refine(self.vectors, q, rows, k)
        out = []
        for rr, ss in zip(rows, scores):
            rr, ss = rr[rr >= 0], ss[rr >= 0]
            out.append(Hits(rr if self.rows is None else np.asarray(self.rows)[rr], ss))
        return out

    def nbytes(self) -> int:
        return folder_bytes(self.folder)


class IndexDirRetriever(SearchBase):
    """Dense retrieval over an index folder; ``search(queries, k)`` -> one ``Hits`` per query."""

    def __init__(self, folder, corpus, model: str | None = None, *, device: str | None = None,
                 encoding: str | None = None, nprobe: int | None = None, vectors=None, progress: bool = False,
                 cache_hit: bool = True, build_seconds: float | None = None):
        t0 = time.perf_counter()
        self.corpus = corpus
        self.dense = DenseIndex(folder, corpus, vectors=vectors, nprobe=nprobe, device=device)
        meta = self.dense.meta
        built = (meta or {}).get("encoder") or {}
        if meta is None and not model:
            raise InputError("--model", None, None, f"{folder} has no {META}: name its query encoder with --model "
                                                    "(for Pyserini's DPR indexes: "
                                                    "dpr:facebook/dpr-question_encoder-multiset-base)")
        spec = model if model else built.get("model")
        if meta is not None and model:
            if model_key(model) != model_key(built.get("model")):  # model None: the default embedder
                raise InputError("--model", None, None, f"{folder} was built with "
                                                        f"{model_key(built.get('model'))!r}, not {model!r}")
        try:
            self.encoder = query_encoder(spec, device, encoding or built.get("encoding"))
        except OSError as e:
            raise InputError("--model", None, None, f"cannot load query encoder {spec!r}: "
                                                    f"{str(e).splitlines()[0] if str(e) else type(e).__name__}"
                             ) from None
        if self.encoder.dim != self.dense.dim:
            raise InputError("--model", None, None, f"the query encoder gives {self.encoder.dim}-d vectors, the "
                                                    f"index holds {self.dense.dim}-d ones")
        self.model = spec
        self.embedder_name = spec if str(spec or "").startswith("dpr:") else model_key(spec)
        self.encoding = self.encoder.encoding
        self.device = self.encoder.device
        plan = self.plan = self.dense.plan
        self.index_kind = plan.get("spec") or ("prebuilt:" + type(self.dense.index).__name__)
        self.name = (f"{dense_name(self.embedder_name)}+{self.index_kind}"
                     + ("" if self.encoding == "fp32" else f"+{self.encoding}"))  # as the in-memory dense names
        self.cache_path = self.dense.folder
        self.cache_hit = cache_hit
        self.n_encoded = 0
        self.build_seconds = build_seconds if build_seconds is not None else time.perf_counter() - t0

    def encode(self, texts, progress: bool = False) -> np.ndarray:
        return self.encoder.embed(list(texts))

    def _search(self, queries: list[str], k: int) -> list[Hits]:
        return self.search_vectors(self.encode(queries), k)

    def search_vectors(self, q: np.ndarray, k: int) -> list[Hits]:
        return self.dense.search(q, min(int(k), len(self.corpus)))
