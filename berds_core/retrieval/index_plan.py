"""Which FAISS index, sized from the corpus size and a memory budget (``--index``, ``--memory-budget``).

``--index`` takes ``flat``, ``hnsw``, ``ivfpq`` or any FAISS factory string
(``IVF65536,PQ64``, ``OPQ64,IVF16384_HNSW32,PQ64``). :func:`plan_index` turns
it into an :class:`IndexPlan`, following FAISS's own guidelines
(https://github.com/facebookresearch/faiss/wiki/Guidelines-to-choose-an-index,
as autofaiss does):

- ``flat``: exact inner product over the vectors themselves, read memory-mapped
  from their shards (no copy, no training); memory is whatever the page cache
  holds, so no budget applies.
- ``hnsw``: ``HNSW32,Flat``: fast and accurate, but the whole graph and the
  vectors live in memory (about ``n * (4 d + 280)`` bytes); refused when that is
  over the budget.
- ``ivfpq``: ``IVF<nlist>,PQ<m>x4fs``, ``nlist`` the power of two nearest
  ``sqrt(n)`` (at least 39 training points per list); ``m`` 4-bit codes (FAISS's
  SIMD "fast-scan" PQ), ``m`` the largest divisor of ``d`` up to ``min(d / 2,
  256)`` (384-d: 192 codes, 96 bytes a vector). Below 1,000 vectors:
  ``IVF<nlist>,Flat``. ``nprobe`` = ``max(min(nlist, 16), nlist / 16)`` lists
  searched, raised so that a query scans at least ``SCAN_MIN`` (32,768) codes:
  every list of a smaller corpus. The top ``refine x k`` candidates (at least
  ``RESCORE_MIN`` = 256 up to 1M vectors) are re-scored exactly from the
  vectors on disk, so the approximate codes only have to find the neighbours,
  not order them; on small corpora ``ivfpq`` then ranks as ``flat`` does
  (``bench/ivf_small.py``). Measured at 100k, 384-d (bench/scale.py): 4-bit fast-scan codes
  trained 2.3x faster than 8-bit PQ96 (same 96 bytes), searched 8x faster, with
  the same recall@100 after re-ranking; recall@100 against exact search at 1M:
  ``docs/scale.md``. When codes and ids (``n * (m + 8)``
  bytes) exceed the budget, the inverted lists go to disk
  (``OnDiskInvertedLists``, memory-mapped) and only the centroids stay in memory;
  fast-scan codes cannot live there, so ``ivfpq`` then uses 8-bit codes of the
  same size (``PQ<m/2>``).
- a factory string is checked by ``faiss.index_factory``; IVF ones get the
  same ``nprobe`` rule and on-disk lists when over budget.
"""
from __future__ import annotations

import math
import os
import re
from dataclasses import asdict, dataclass

from ..errors import InputError

INDEX_KINDS = ("flat", "hnsw", "ivfpq")
HNSW_M = 32
HNSW_EF_SEARCH = 128
REFINE = 4
_UNITS = {"": 1, "b": 1, "k": 1 << 10, "kb": 1 << 10, "kib": 1 << 10, "m": 1 << 20, "mb": 1 << 20, "mib": 1 << 20,
          "g": 1 << 30, "gb": 1 << 30, "gib": 1 << 30, "t": 1 << 40, "tb": 1 << 40, "tib": 1 << 40}


def parse_memory(text, field: str = "--memory-budget") -> int:
    """Bytes of ``"4G"``, ``"512MB"``, ``"1.5GiB"``, ``"800000000"`` (binary units)."""
    m = re.fullmatch(r"\s*([0-9]+(?:\.[0-9]+)?)\s*([A-Za-z]*)\s*", str(text))
    if not m or m.group(2).lower() not in _UNITS:
        raise InputError(field, None, None, f"expected a size such as 4G, 512M or 1.5GiB, got {text!r}")
    val = int(float(m.group(1)) * _UNITS[m.group(2).lower()])
    if val <= 0:
        raise InputError(field, None, None, "must be more than 0")
    return val


def default_budget() -> int:
    """Half of this machine's memory."""
    try:
        return int(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // 2)
    except (ValueError, OSError, AttributeError):  # pragma: no cover - not POSIX
        return 4 << 30


def human(n: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return str(n)  # pragma: no cover


@dataclass
class IndexPlan:
    """What to build: ``factory`` None means exact search over the vectors (``flat``)."""

    spec: str
    factory: str | None
    n: int
    dim: int
    budget: int
    nlist: int | None = None
    nprobe: int | None = None
    ef_search: int | None = None
    on_disk: bool = False
    train_rows: int = 0
    est_bytes: int = 0
    refine: int = 0
    rescore: int = 0  # with refine: at least this many candidates re-scored exactly (small corpora)

    def to_json(self) -> dict:
        return asdict(self)

    @property
    def kind(self) -> str:
        return self.spec if self.spec in INDEX_KINDS else "factory"


def ivf_nlist(n: int) -> int:
    """Power of two nearest sqrt(n), with at least 39 points per list."""
    if n < 78:
        return 1
    nlist = 2 ** round(math.log2(math.sqrt(n)))
    while nlist > 1 and n < 39 * nlist:
        nlist //= 2
    return max(1, nlist)


SCAN_MIN = 32_768  # codes a query scans at least (all of them in a smaller corpus)
RESCORE_MIN = 256  # candidates re-scored exactly at least, for corpora up to RESCORE_UP_TO vectors
RESCORE_UP_TO = 1 << 20


def default_nprobe(nlist: int, n: int | None = None) -> int:
    """Lists a query searches: ``max(min(nlist, 16), nlist / 16)``, and with ``n`` (the vectors) enough
    lists to scan about ``SCAN_MIN`` codes: every list of a corpus up to that size, so a small corpus
    loses nothing to the coarse quantizer (4-bit fast-scan codes cost about a nanosecond each)."""
    base = max(min(nlist, 16), nlist // 16)
    if n is None or n <= 0:
        return base
    return min(nlist, max(base, math.ceil(nlist * SCAN_MIN / n)))


def rescore_min(n: int) -> int:
    """The fewest candidates re-scored exactly from the vectors (besides ``refine x k``): ``RESCORE_MIN`` up to
    ``RESCORE_UP_TO`` vectors, where the exact re-scoring is a few microseconds a candidate; none above."""
    return min(n, RESCORE_MIN) if n <= RESCORE_UP_TO else 0


PQ_MIN_VECTORS = 1_000  # below this, ivfpq keeps full vectors in its lists (IVF<nlist>,Flat)


def pq_m(dim: int) -> int:
    """4-bit PQ codes per vector: the largest divisor of ``dim`` up to min(dim / 2, 256) (even, for fast-scan)."""
    cap = max(2, min(dim // 2, 256))
    return max(m for m in range(2, cap + 1, 2) if dim % m == 0) if dim % 2 == 0 else 1


def train_rows(n: int, nlist: int) -> int:
    return min(n, max(64 * nlist, 65_536))


def _ivf_plan(plan: IndexPlan, code_bytes: int) -> IndexPlan:
    nlist = plan.nlist
    centroids = nlist * plan.dim * 4
    lists = plan.n * (code_bytes + 8)
    plan.nprobe = default_nprobe(nlist, plan.n)
    plan.train_rows = train_rows(plan.n, nlist)
    plan.est_bytes = centroids + lists
    if centroids + 256 * plan.dim * 4 > plan.budget:
        raise InputError("--memory-budget", None, None, f"{human(plan.budget)} cannot hold the {nlist:,} IVF centroids "
                                                        f"({human(centroids)}); give more memory or fewer lists")
    plan.on_disk = plan.est_bytes > plan.budget
    plan.refine = REFINE if code_bytes < plan.dim * 4 else 0
    plan.rescore = rescore_min(plan.n) if plan.refine else 0
    return plan


def plan_index(spec: str, n: int, dim: int, budget: int | None = None) -> IndexPlan:
    """The index for ``n`` vectors of ``dim`` dimensions within ``budget`` bytes (default half the memory)."""
    budget = int(budget or default_budget())
    spec = str(spec).strip()
    if not spec:
        raise InputError("--index", None, None, "is empty")
    plan = IndexPlan(spec, None, int(n), int(dim), budget)
    if spec == "flat":
        plan.est_bytes = n * dim * 4
        return plan
    if spec == "hnsw":
        plan.factory = f"HNSW{HNSW_M},Flat"
        plan.ef_search = HNSW_EF_SEARCH
        plan.est_bytes = n * (dim * 4 + HNSW_M * 2 * 4 + 24)
        if plan.est_bytes > budget:
            raise InputError("--index", None, None, f"hnsw over {n:,} vectors needs about {human(plan.est_bytes)} of "
                                                    f"memory, more than the budget ({human(budget)}); use --index "
                                                    "ivfpq or a larger --memory-budget")
        return plan
    if spec == "ivfpq":
        nlist = ivf_nlist(n)
        plan.nlist = nlist
        m = pq_m(dim)
        if n < PQ_MIN_VECTORS or m < 2:
            plan.factory = f"IVF{nlist},Flat"
            return _ivf_plan(plan, dim * 4)
        plan.factory = f"IVF{nlist},PQ{m}x4fs"
        plan = _ivf_plan(plan, (m + 1) // 2)
        if plan.on_disk and m % 2 == 0:  # fast-scan lists are packed in blocks that cannot live on disk:
            plan.factory = f"IVF{nlist},PQ{m // 2}"  # 8-bit codes of the same size
        return plan
    return _factory_plan(plan)


def _factory_plan(plan: IndexPlan) -> IndexPlan:
    import faiss

    try:
        index = faiss.index_factory(plan.dim, plan.spec, faiss.METRIC_INNER_PRODUCT)
    except RuntimeError as e:
        msg = str(e).strip().splitlines()
        raise InputError("--index", None, None, f"{plan.spec!r} is not flat, hnsw, ivfpq or a FAISS index factory "
                                                f"string ({msg[-1] if msg else 'rejected'})") from None
    plan.factory = plan.spec
    ivf = _extract_ivf(index)
    try:
        code_bytes = int(index.sa_code_size())
    except RuntimeError:  # no standalone codec (HNSW, ...): count full vectors
        code_bytes = plan.dim * 4
    if ivf is not None:
        plan.nlist = int(ivf.nlist)
        if plan.nlist * 39 > plan.n:
            raise InputError("--index", None, None, f"{plan.spec!r} has {plan.nlist:,} lists: it needs at least "
                                                    f"{39 * plan.nlist:,} vectors to train, the corpus has {plan.n:,}")
        return _ivf_plan(plan, int(ivf.code_size))
    if "HNSW" in plan.spec.upper():
        plan.ef_search = HNSW_EF_SEARCH
    plan.est_bytes = plan.n * max(code_bytes, 1)
    plan.train_rows = min(plan.n, 65_536) if not index.is_trained else 0
    plan.refine = REFINE if code_bytes < plan.dim * 4 else 0
    plan.rescore = rescore_min(plan.n) if plan.refine else 0
    if plan.est_bytes > plan.budget:
        raise InputError("--index", None, None, f"{plan.spec!r} over {plan.n:,} vectors needs about "
                                                f"{human(plan.est_bytes)} of memory, more than the budget "
                                                f"({human(plan.budget)}); only IVF indexes can keep their lists on disk")
    return plan


def _extract_ivf(index):
    import faiss

    try:
        return faiss.extract_index_ivf(index)
    except RuntimeError:
        return None
