"""Retrievers (BM25, dense) behind one interface, and runs made from them.

``get_retriever(kind, corpus, model=None, progress=True, index="flat")``
returns an object with ``name``, ``embedder_name`` (dense only, else None),
``cache_hit``, ``cache_path``, ``build_seconds`` and
``search(queries, k) -> [[(row, score), ...], ...]`` (best first).

BM25 has two engines behind the one ``bm25``: ``bm25s`` (an in-memory sparse
matrix, the fastest to build for small corpora) and ``tantivy`` (an on-disk
index in bounded memory: :mod:`berds_core.retrieval.tantivy_bm25`);
``engine="auto"`` picks by corpus size and where the corpus lives
(:func:`bm25_engine`).
"""
from __future__ import annotations

from typing import Callable, Iterable, Protocol

RETRIEVERS = ("bm25", "dense", "index")
BM25_ENGINES = ("auto", "bm25s", "tantivy")
# auto: bm25s (today's engine) below this many passages, tantivy from here up and for every on-disk corpus.
# bench/scale.py --sections crossover (2026-11-26 10:45, load 14-21, CPU seconds of all threads): at 1k and
# 2k the two cost the same (0.07-0.11 s to build, 0.05-0.13 ms a query), from 5k tantivy takes half the CPU
# to build (0.23 s against 0.51 s; 1.95 s against 4.33 s at 50k) and less a query (docs/scale.md)
TANTIVY_MIN_PASSAGES = 5_000


def bm25_engine(corpus, engine: str = "auto") -> str:
    """The BM25 engine for ``corpus``: ``tantivy`` for an on-disk corpus or one of at least
    ``TANTIVY_MIN_PASSAGES``, ``bm25s`` below, or the one ``engine`` names."""
    if engine not in BM25_ENGINES:
        raise ValueError(f"BM25 engine must be one of {', '.join(BM25_ENGINES)}, got {engine!r}")
    if engine != "auto":
        return engine
    from ..corpora.store import is_disk_corpus

    return "tantivy" if is_disk_corpus(corpus) or len(corpus) >= TANTIVY_MIN_PASSAGES else "bm25s"


class Retriever(Protocol):
    name: str
    embedder_name: str | None

    def search(self, queries: list[str], k: int) -> list[list[tuple[int, float]]]: ...


def get_retriever(kind: str, corpus, model: str | None = None, *, progress: bool = True, index: str = "flat",
                  device: str | None = None, encoding: str | None = None, cache: bool = True,
                  on_progress: Callable[[int, int], None] | None = None, engine: str = "auto",
                  memory_budget: int | None = None, index_dir=None, nprobe: int | None = None) -> Retriever:
    """Build (or load from the cache) a retriever over ``corpus``.

    ``kind``: ``bm25``, ``dense`` or ``index`` (open the prebuilt index folder
    ``index_dir``: :mod:`berds_core.retrieval.index_dir`). For dense, ``model``
    is a sentence-transformers hub id or local path (default all-MiniLM-L6-v2),
    ``index`` ``flat`` (exact), ``hnsw``, ``ivfpq`` or a FAISS factory string,
    sized for ``memory_budget`` bytes (:mod:`berds_core.retrieval.index_plan`),
    ``encoding`` ``auto|fp32|bf16|int8``; an on-disk corpus, or an index other
    than flat/hnsw, goes through :mod:`berds_core.retrieval.dense_scale`
    (vectors in resumable shards, the index folder in ``index_dir`` or the cache).
    ``on_progress(done, total)`` (dense) is called as passages are encoded,
    for a progress bar in the app. ``engine`` (bm25): ``auto``, ``bm25s`` or ``tantivy``.
    """
    if kind == "bm25":
        if model is not None:
            raise ValueError("bm25 takes no model")
        if bm25_engine(corpus, engine) == "tantivy":
            from .tantivy_bm25 import TantivyBM25Retriever

            return TantivyBM25Retriever(corpus, progress=progress, cache=cache)
        from .bm25 import BM25Retriever

        return BM25Retriever(corpus, progress=progress, cache=cache)
    if kind.startswith("index:"):  # the spec form: index:<folder>[|<query encoder>]
        index_dir, _, encoder = kind[len("index:"):].partition("|")
        kind, model = "index", model or encoder or None
    if kind == "index":
        return open_index_dir(index_dir, corpus, model, device=device, encoding=encoding, nprobe=nprobe)
    if kind == "dense":
        from ..corpora.store import is_disk_corpus

        if is_disk_corpus(corpus) or index not in ("flat", "hnsw") or index_dir is not None:
            from .dense_scale import ScaledDenseRetriever

            return ScaledDenseRetriever(corpus, model, index=index, memory_budget=memory_budget, index_dir=index_dir,
                                        device=device, encoding=encoding, progress=progress, on_progress=on_progress,
                                        nprobe=nprobe)
        from .dense import DenseRetriever

        return DenseRetriever(corpus, model, progress=progress, index=index, device=device, encoding=encoding,
                              cache=cache, on_progress=on_progress)
    raise ValueError(f"retriever must be one of {', '.join(RETRIEVERS)}, got {kind!r}")


def index_spec(folder, query_encoder: str | None = None) -> str:
    """The retriever spec of a prebuilt index folder: ``index:<folder>[|<query encoder>]``."""
    return f"index:{folder}" + (f"|{query_encoder}" if query_encoder else "")


def open_index_dir(folder, corpus, model: str | None = None, **kw) -> Retriever:
    """The retriever of a prebuilt index folder: a tantivy BM25 index (``berds index --index-dir``)
    or a dense FAISS folder (the studio's or Pyserini's layout); never builds anything."""
    from pathlib import Path

    from ..errors import InputError
    from .index_dir import IndexDirRetriever, is_index_folder
    from .tantivy_bm25 import META, TantivyBM25Retriever, is_tantivy_folder

    if folder is None:
        raise ValueError("kind 'index' needs index_dir")
    p = Path(folder)
    if is_tantivy_folder(p):
        return TantivyBM25Retriever(corpus, progress=False, folder=p)
    if is_index_folder(p):
        return IndexDirRetriever(p, corpus, model, device=kw.get("device"), encoding=kw.get("encoding"),
                                 nprobe=kw.get("nprobe"))
    raise InputError(p, None, "--index-dir", f"not an index folder (a tantivy BM25 index with {META}, or a FAISS "
                                             "'index' + 'docid' folder)")


def index_corpus_source(folder) -> str | None:
    """The corpus file an index folder was built from, as its ``berds.json`` names it (None: unknown, moved)."""
    import json
    from pathlib import Path

    try:
        info = json.loads((Path(folder) / "berds.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    src = (info.get("corpus") or {}).get("source")
    return src if src and Path(src).exists() else None


def ctxs_for(corpus, hits: Iterable[tuple[int, float]]) -> list[dict]:
    """Run-file passages ``{id, title, text, score}`` for ``(row, score)`` hits (fetched by row)."""
    hits = [(int(r), float(s)) for r, s in hits]
    get_many = getattr(corpus, "get_many", None)  # a disk corpus fetches the rows in one look-up
    passages = get_many([r for r, _ in hits]) if get_many is not None else [corpus[r] for r, _ in hits]
    return [{"id": p.id, "title": p.title, "text": p.text, "score": s} for p, (_, s) in zip(passages, hits)]


def question_entry(question, corpus, hits: Iterable[tuple[int, float]]) -> dict:
    """One run line (BERDS format plus ``id``, ``subset`` and ``stances`` when known) for ranked hits."""
    entry = {"id": question.id, "question": question.question, "perspectives": list(question.perspectives)}
    if question.subset is not None:
        entry["subset"] = question.subset
    if question.stances:
        entry["stances"] = list(question.stances)
    if corpus is not None:  # which corpus the passages come from: name and content hash
        entry["corpus"] = {"name": getattr(corpus, "name", "corpus"), "hash": corpus.hash}
    entry["ctxs"] = ctxs_for(corpus, hits)
    return entry


def retrieve_run(questions, corpus, retriever: Retriever, k: int,
                 query_fn: Callable | None = None) -> list[dict]:
    """One run entry per question (BERDS run format plus ``id``), top-``k`` passages each.

    ``query_fn(question) -> str`` builds the query (default: the question text).
    """
    questions = list(questions)
    queries = [query_fn(q) if query_fn else q.question for q in questions]
    results = retriever.search(queries, k) if questions else []
    return [question_entry(q, corpus, hits) for q, hits in zip(questions, results)]
