"""Perspective pools: any file of sentences, indexed once (BM25 + dense) and cached.

``load_pool(path) -> Corpus`` reads

- PERSPECTRUM's ``perspective_pool_v1.0.json`` (``[{pId, text, source?}]``) and
  any JSON array or JSONL of ``{pId|id, text}`` objects;
- TSV / CSV with a header naming ``text`` (and optionally ``id``);
- ``.txt``: one sentence per line (ids are line numbers).

The name ``demo`` is the built-in demo pool (:func:`pool_path`).

Sentences are never split (a pool entry is one perspective); an exact repeat
of an earlier sentence is dropped, as corpora do. Rows are the positions the
retrievers return; ``Corpus.ids`` are the pool's ids (``pId`` as a string).

``PoolIndex(pool)`` holds the pool's BM25 index (bm25s) and its dense index
(the packaged MiniLM + FAISS); both persist under ``cache_dir("indexes")``
keyed by the pool's content hash, so a second process starts warm, and the
dense index's embeddings (one per sentence) are what the discovery heads read.
``open_pool(path)`` keeps one ``PoolIndex`` per file (path, size, mtime) per process.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..corpora.memory import Corpus, CorpusBuilder, load_corpus
from ..datasets.checks import load_json_document
from ..datasets.demo import demo_pool_path
from ..datasets.sides import yes_no_sides
from ..errors import InputError
from ..files.jsonio import iter_jsonl, read_text
from ..retrieval import get_retriever
from .fusion import rrf_fuse

POOL_SUFFIXES = (".json", ".jsonl", ".ndjson", ".tsv", ".csv", ".txt")


def _id_of(obj: dict, path, where) -> str | None:
    for key in ("pId", "id", "pid"):
        val = obj.get(key)
        if val is None or val == "":
            continue
        if isinstance(val, bool) or not isinstance(val, (str, int)):
            raise InputError(path, where, key, f"expected a string or integer id, got {type(val).__name__}")
        return str(val).strip()
    return None


def _text_of(obj: dict, path, where) -> str:
    text = obj.get("text")
    if text is None:
        raise InputError(path, where, "text", "missing")
    if not isinstance(text, str):
        raise InputError(path, where, "text", f"expected a string, got {type(text).__name__}")
    if not text.strip():
        raise InputError(path, where, "text", "must not be empty")
    return text


DEMO_POOL = "demo"  # the pool name of the built-in demo pool (``berds discover --pool demo``)


def pool_path(path) -> Path:
    """The file a pool argument names: ``demo`` is the built-in demo pool (perspectives for the demo
    questions and a few more claims, ``berds_core/demo/perspective_pool.jsonl``) unless a file of that
    name exists; anything else is a path."""
    if str(path).strip() == DEMO_POOL and not Path(DEMO_POOL).is_file():
        return demo_pool_path()
    return Path(path)


def load_pool(path, name: str | None = None) -> Corpus:
    """The sentences of a pool file as a :class:`~berds_core.corpora.memory.Corpus` (ids = the pool's ids)."""
    p = pool_path(path)
    if p.is_dir():
        raise InputError(p, None, None, "a perspective pool is a file (.json, .jsonl, .tsv, .csv or .txt), not a folder")
    if not p.exists():
        raise InputError(p, None, None, "file not found")
    suffix = p.suffix.lower()
    if suffix not in POOL_SUFFIXES:
        raise InputError(p, None, None, f"unknown pool format '{suffix or p.name}' "
                                        "(expected .json, .jsonl, .tsv, .csv or .txt)")
    if suffix in (".tsv", ".csv"):
        return load_corpus(p, passage_words=None, name=name or p.stem)
    builder = CorpusBuilder(None)
    stem = p.stem
    if suffix == ".txt":
        for no, line in enumerate(read_text(p).splitlines(), 1):
            if line.strip():
                builder.add(line, "", None, str(no), (p, no))
        return builder.corpus(p, name or stem)
    for where, obj in _records(p):
        builder.add(_text_of(obj, p, where), "", _id_of(obj, p, where), f"{stem}-{where}".replace(" ", "-"),
                    (p, where))
    return builder.corpus(p, name or stem)


def _row_id(obj: dict, path, where) -> str:
    return _id_of(obj, path, where) or f"{Path(path).stem}-{where}".replace(" ", "-")


def _records(p: Path) -> list[tuple[object, dict]]:
    """``(where, object)`` of a JSON array or JSONL pool."""
    if p.suffix.lower() == ".json":
        doc = load_json_document(p)
        if not isinstance(doc, list):
            raise InputError(p, None, None, "expected a JSON array of {pId, text} objects")
        records = []
        for i, obj in enumerate(doc):
            if not isinstance(obj, dict):
                raise InputError(p, f"entry {i}", None, "expected a JSON object")
            records.append((f"entry {i}", obj))
        return records
    return list(iter_jsonl(p))


STANCES = {"support": "support", "for": "support", "undermine": "undermine", "oppose": "undermine",
           "against": "undermine"}


def claim_key(claim: str) -> str:
    """A claim compared as written: the claim form of a question, lower case, single spaces, no end stop."""
    yes, _ = yes_no_sides(claim)
    return " ".join((yes or claim).lower().split()).rstrip(" .!?")


def written_stances(path) -> dict[str, tuple[str, str]]:
    """Pool id -> (claim key of its ``topic``, its ``stance``) for JSON / JSONL pool entries that carry both:
    the stance a sentence was written with, for the claim it was written for (the built-in demo pool)."""
    p = pool_path(path)
    if p.suffix.lower() not in (".json", ".jsonl", ".ndjson"):
        return {}
    out = {}
    for where, obj in _records(p):
        stance, topic = obj.get("stance"), obj.get("topic")
        if stance is None:
            continue
        if not isinstance(stance, str) or stance.strip().lower() not in STANCES:
            raise InputError(p, where, "stance", f"expected one of {', '.join(STANCES)}, got {stance!r}")
        if not isinstance(topic, str) or not topic.strip():
            raise InputError(p, where, "topic", "a stance needs the claim or question it is for")
        out[_row_id(obj, p, where)] = (claim_key(topic), STANCES[stance.strip().lower()])
    return out


class PoolIndex:
    """A pool with its BM25 and dense retrievers; ``candidates`` fuses them (RRF)."""

    def __init__(self, pool: Corpus, *, model: str | None = None, progress: bool = False,
                 device: str | None = None, encoding: str | None = None):
        self.pool = pool
        self.written: dict[int, tuple[str, str]] = {}  # row -> (claim key, stance) as written (set_written)
        self.bm25 = get_retriever("bm25", pool, progress=progress)
        self.dense = get_retriever("dense", pool, model, progress=progress, device=device, encoding=encoding)

    def __len__(self) -> int:
        return len(self.pool)

    def set_written(self, by_id: dict[str, tuple[str, str]]) -> "PoolIndex":
        """The stances the pool's entries were written with (:func:`written_stances`), by row."""
        self.written = {self.pool.index_of(i): v for i, v in by_id.items() if i in self.pool._row_of}
        return self

    def written_for(self, claim: str, rows) -> list[str | None]:
        """Per row, the stance written for ``claim`` (None: written for another claim, or none written)."""
        if not self.written:
            return [None] * len(rows)
        key = claim_key(claim)
        return [(lambda w: w[1] if w and w[0] == key else None)(self.written.get(int(r))) for r in rows]

    @property
    def embeddings(self) -> np.ndarray:
        """Unit-length embeddings of every pool sentence (rows), from the dense index's store."""
        return self.dense.embeddings

    def encode(self, texts: list[str]) -> np.ndarray:
        """Unit-length embeddings of texts (claims) with the pool's encoder."""
        return self.dense.encode(list(texts))

    def candidates(self, claims: list[str], depth: int = 50, *, k_rrf: int = 60,
                   exclude=None) -> list["ClaimCandidates"]:
        """Per claim, the union of the top ``depth`` pool rows of BM25 and of dense, ordered by RRF.

        ``exclude``: pool rows never to return (e.g. a leak filter in an
        evaluation); each retriever is then searched deeper by their number.
        Claims are encoded once (their embeddings ride along for the heads).
        """
        claims = list(claims)
        if not claims:
            return []
        extra = len(exclude) if exclude else 0
        deep = min(len(self.pool), depth + extra)
        q = self.encode(claims)
        lists_b = self.bm25.search(claims, deep)
        lists_d = self.dense.search_vectors(q, deep)
        out = []
        for n, (lb, ld) in enumerate(zip(lists_b, lists_d)):
            if exclude:
                lb = [h for h in lb if h[0] not in exclude]
                ld = [h for h in ld if h[0] not in exclude]
            lb, ld = lb[:depth], ld[:depth]
            fused = rrf_fuse([[r for r, _ in lb], [r for r, _ in ld]], k=k_rrf)
            rank_b = {r: i + 1 for i, (r, _) in enumerate(lb)}
            rank_d = {r: i + 1 for i, (r, _) in enumerate(ld)}
            score_b = dict(lb)
            rows = np.array([r for r, _ in fused], dtype=np.int64)
            out.append(ClaimCandidates(
                claim=claims[n], claim_emb=q[n], rows=rows, rrf=np.array([s for _, s in fused]),
                bm25_rank=np.array([rank_b.get(r, depth + 1) for r in rows], dtype=np.float64),
                dense_rank=np.array([rank_d.get(r, depth + 1) for r in rows], dtype=np.float64),
                bm25_score=np.array([score_b.get(r, 0.0) for r in rows], dtype=np.float64)))
        return out


@dataclass
class ClaimCandidates:
    """One claim's candidate pool rows (fused order) with what each retriever said about them."""

    claim: str
    claim_emb: np.ndarray
    rows: np.ndarray
    rrf: np.ndarray
    bm25_rank: np.ndarray  # 1-based; depth + 1 when BM25 did not return the row
    dense_rank: np.ndarray
    bm25_score: np.ndarray  # 0 when BM25 did not return the row

    def __len__(self) -> int:
        return len(self.rows)


def _file_key(path) -> tuple:
    p = Path(path).resolve()
    st = p.stat()
    return (str(p), st.st_size, st.st_mtime_ns)


@functools.lru_cache(maxsize=4)
def _open(key: tuple, model: str | None, progress: bool) -> PoolIndex:
    return PoolIndex(load_pool(key[0]), model=model, progress=progress).set_written(written_stances(key[0]))


def open_pool(path, *, model: str | None = None, progress: bool = False) -> PoolIndex:
    """The :class:`PoolIndex` of a pool file, loaded and indexed once per process (cached on disk too)."""
    p = pool_path(path)
    if not p.exists():
        raise InputError(p, None, None, "file not found")
    return _open(_file_key(p), model, progress)
