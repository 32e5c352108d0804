"""Retrievers by name: one registry, one options object, one protocol.

``get_retriever(spec, corpus, model=None, options=None, **fields)`` builds (or loads from the cache) the
retriever a spec names over ``corpus``; what it returns follows :class:`~.base.Retriever` (``name``,
``embedder_name``, ``cache_hit``, ``cache_path``, ``build_seconds``, ``search(queries, k)``). The specs
(``RETRIEVERS``, a :class:`berds_core.specs.Registry`):

- ``bm25``: two engines behind one name, ``bm25s`` (an in-memory sparse matrix, the fastest to build for
  small corpora) and ``tantivy`` (an on-disk index in bounded memory: :mod:`.tantivy_bm25`);
  ``engine="auto"`` picks by corpus size and where the corpus lives (:func:`bm25_engine`);
- ``dense``: sentence-transformers embeddings and FAISS (:mod:`.dense`; on-disk corpora and approximate
  indexes other than HNSW through :mod:`.dense_scale`);
- ``index[:<folder>[|<query encoder>]]``: a prebuilt index folder (a tantivy BM25 index, or a FAISS
  folder in the studio's or Pyserini's layout), opened, never built.

How the index is built or opened travels in one :class:`IndexOptions` (model, index kind, device,
encoding, engine, memory budget, folder, nprobe, cache, progress). A new retriever: a class on
:class:`~.base.SearchBase` (it writes ``_search``) and one ``@RETRIEVERS.register`` here.
"""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from ..corpora.disk import is_disk_corpus
from ..errors import InputError
from ..specs import Registry
from .base import IndexOptions, Retriever
from .bm25 import BM25Retriever
from .dense import DenseRetriever
from .dense_scale import ScaledDenseRetriever
from .index_dir import IndexDirRetriever, is_index_folder
from .tantivy_bm25 import META, TantivyBM25Retriever, is_tantivy_folder

BM25_ENGINES = ("auto", "bm25s", "tantivy")
# auto: bm25s (today's engine) below this many passages, tantivy from here up and for every on-disk corpus.
# bench/scale.py --sections crossover (2026-11-26 10:45, load 14-21, CPU seconds of all threads): at 1k and
# 2k the two cost the same (0.07-0.11 s to build, 0.05-0.13 ms a query), from 5k tantivy takes half the CPU
# to build (0.23 s against 0.51 s; 1.95 s against 4.33 s at 50k) and less a query (docs/scale.md)
TANTIVY_MIN_PASSAGES = 5_000

RETRIEVERS = Registry("retriever")

def get_retriever(spec: str, corpus, model: str | None = None, *, options: IndexOptions | None = None,
                  **fields) -> Retriever:
    """The retriever ``spec`` names (``RETRIEVERS``) over ``corpus``: ``options`` (default
    ``IndexOptions()``) with ``model`` and any of its ``fields`` given as keywords set on top."""
    opts = replace(options or IndexOptions(), **({"model": model} if model is not None else {}), **fields)
    return RETRIEVERS.create(spec, corpus=corpus, options=opts)


def takes_model(spec: str) -> bool:
    """Whether the retriever ``spec`` names reads an embedder model (``dense`` does; BM25 and prebuilt index
    folders, whose folder names their encoder, do not): a face passes its embedder to every retriever and this
    says where it counts."""
    return spec.split(":", 1)[0] == "dense"


def bm25_engine(corpus, engine: str = "auto") -> str:
    """The BM25 engine for ``corpus``: ``tantivy`` for an on-disk corpus or one of at least
    ``TANTIVY_MIN_PASSAGES``, ``bm25s`` below, or the one ``engine`` names."""
    if engine not in BM25_ENGINES:
        raise ValueError(f"BM25 engine must be one of {', '.join(BM25_ENGINES)}, got {engine!r}")
    if engine != "auto":
        return engine
    return "tantivy" if is_disk_corpus(corpus) or len(corpus) >= TANTIVY_MIN_PASSAGES else "bm25s"


@RETRIEVERS.register("bm25", help="BM25: bm25s in memory, tantivy on disk (large or on-disk corpora, or an index "
                                  "folder)")
def _bm25(arg, *, corpus, options: IndexOptions):
    if options.model is not None:
        raise ValueError("bm25 takes no model")
    if options.index_dir is not None:  # built in (or read from) a folder of its own: a tantivy index
        if options.engine == "bm25s":
            raise ValueError("a BM25 index in a folder is a tantivy index (engine tantivy or auto)")

        return TantivyBM25Retriever(corpus, progress=options.progress, folder=options.index_dir)
    if bm25_engine(corpus, options.engine) == "tantivy":
        return TantivyBM25Retriever(corpus, progress=options.progress, cache=options.cache)

    return BM25Retriever(corpus, progress=options.progress, cache=options.cache)


@RETRIEVERS.register("dense", help="sentence-transformers embeddings + FAISS (flat, hnsw, ivfpq or a factory string)")
def _dense(arg, *, corpus, options: IndexOptions):
    o = options
    if is_disk_corpus(corpus) or o.index not in ("flat", "hnsw") or o.index_dir is not None:
        return ScaledDenseRetriever(corpus, o)

    return DenseRetriever(corpus, o.model, progress=o.progress, index=o.index, device=o.device, encoding=o.encoding,
                          cache=o.cache, on_progress=o.on_progress)


@RETRIEVERS.register("index", usage="index[:<folder>[|<query encoder>]]", takes_arg=True,
                     help="a prebuilt index folder: tantivy BM25, or FAISS (the studio's or Pyserini's layout)")
def _index(arg, *, corpus, options: IndexOptions):
    """The folder of the spec (or ``options.index_dir``), opened as it was built; never builds anything."""
    folder, _, encoder = (arg or "").partition("|")
    folder = folder or options.index_dir
    if folder is None:
        raise ValueError("retriever 'index' needs a folder: index:<folder> or IndexOptions(index_dir=...)")
    p = Path(folder)
    if is_tantivy_folder(p):
        return TantivyBM25Retriever(corpus, progress=False, folder=p)
    if is_index_folder(p):
        return IndexDirRetriever(p, corpus, options.model or encoder or None, device=options.device,
                                 encoding=options.encoding, nprobe=options.nprobe)
    raise InputError(p, None, "--index-dir", f"not an index folder (a tantivy BM25 index with {META}, or a FAISS "
                                             "'index' + 'docid' folder)")


# the retrievers built from a corpus (not a prebuilt folder): the CLI's --retriever choices and the pages' pickers
CORPUS_RETRIEVERS = tuple(e.name for e in RETRIEVERS.entries() if not e.takes_arg)


def index_spec(folder, query_encoder: str | None = None) -> str:
    """The retriever spec of a prebuilt index folder: ``index:<folder>[|<query encoder>]``."""
    return f"index:{folder}" + (f"|{query_encoder}" if query_encoder else "")
