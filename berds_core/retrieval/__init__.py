"""Retrievers (BM25, dense) behind one interface, and runs made from them.

``get_retriever(kind, corpus, model=None, progress=True, index="flat")``
returns an object with ``name``, ``embedder_name`` (dense only, else None),
``cache_hit``, ``cache_path``, ``build_seconds`` and
``search(queries, k) -> [[(row, score), ...], ...]`` (best first).
"""
from __future__ import annotations

from typing import Callable, Iterable, Protocol

RETRIEVERS = ("bm25", "dense")


class Retriever(Protocol):
    name: str
    embedder_name: str | None

    def search(self, queries: list[str], k: int) -> list[list[tuple[int, float]]]: ...


def get_retriever(kind: str, corpus, model: str | None = None, *, progress: bool = True, index: str = "flat",
                  device: str | None = None, encoding: str | None = None, cache: bool = True,
                  on_progress: Callable[[int, int], None] | None = None) -> Retriever:
    """Build (or load from the cache) a retriever over ``corpus``.

    ``kind``: ``bm25`` or ``dense``. For dense, ``model`` is a
    sentence-transformers hub id or local path (default all-MiniLM-L6-v2),
    ``index`` ``flat`` (exact) or ``hnsw``, ``encoding`` ``auto|fp32|int8``.
    ``on_progress(done, total)`` (dense) is called as passages are encoded,
    for a progress bar in the app.
    """
    if kind == "bm25":
        if model is not None:
            raise ValueError("bm25 takes no model")
        from .bm25 import BM25Retriever

        return BM25Retriever(corpus, progress=progress, cache=cache)
    if kind == "dense":
        from .dense import DenseRetriever

        return DenseRetriever(corpus, model, progress=progress, index=index, device=device, encoding=encoding,
                              cache=cache, on_progress=on_progress)
    raise ValueError(f"retriever must be one of {', '.join(RETRIEVERS)}, got {kind!r}")


def ctxs_for(corpus, hits: Iterable[tuple[int, float]]) -> list[dict]:
    """Run-file passages ``{id, title, text, score}`` for ``(row, score)`` hits."""
    out = []
    for row, score in hits:
        p = corpus[row]
        out.append({"id": p.id, "title": p.title, "text": p.text, "score": float(score)})
    return out


def question_entry(question, corpus, hits: Iterable[tuple[int, float]]) -> dict:
    """One run line (BERDS format plus ``id``, ``subset`` and ``stances`` when known) for ranked hits."""
    entry = {"id": question.id, "question": question.question, "perspectives": list(question.perspectives)}
    if question.subset is not None:
        entry["subset"] = question.subset
    if question.stances:
        entry["stances"] = list(question.stances)
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
