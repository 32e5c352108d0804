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
- ``static``: ``dense`` with a static (model2vec) model distilled from the encoder
  (:mod:`berds_core.embeddings.static`; ``options.model`` names one, else the default distillation);
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
from ..embeddings.static import static_model
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
    return "model" in retriever_traits(spec)


def retriever_traits(spec: str) -> frozenset[str]:
    """What the retriever ``spec`` names takes or is (its ``RETRIEVERS`` entry's traits), which a face asks
    instead of comparing names: ``model`` (it reads an embedder model: --model, --encoding, the pages'
    embedder), ``index_kind`` (it builds a FAISS index of a kind: --index, --memory-budget, --nprobe),
    ``engine`` (a BM25 engine: --bm25-engine; a tantivy index may be built as the corpus streams in),
    ``lexical`` (it scores shared words: a score of 0 means no word in common) and ``distilled`` (it reads a model
    made here first, ``berds models distill``: tables of what ships ready leave it out); none for an unknown spec."""
    name = str(spec or "").split(":", 1)[0]
    return RETRIEVERS.traits(name) if name in RETRIEVERS.names() else frozenset()


def encoder_model(spec: str, model: str | None = None) -> str | None:
    """The model the retriever ``spec`` encodes with, where a face encodes for it (``--ray``'s encoder pool):
    ``model`` for ``dense``; for a retriever that reads a distilled model (``static``), that model's folder."""
    return static_model(model) if "distilled" in retriever_traits(spec) else model


def bm25_engine(corpus, engine: str = "auto") -> str:
    """The BM25 engine for ``corpus``: ``tantivy`` for an on-disk corpus or one of at least
    ``TANTIVY_MIN_PASSAGES``, ``bm25s`` below, or the one ``engine`` names."""
    if engine not in BM25_ENGINES:
        raise ValueError(f"BM25 engine must be one of {', '.join(BM25_ENGINES)}, got {engine!r}")
    if engine != "auto":
        return engine
    return "tantivy" if is_disk_corpus(corpus) or len(corpus) >= TANTIVY_MIN_PASSAGES else "bm25s"


@RETRIEVERS.register("bm25", help="BM25: bm25s in memory, tantivy on disk (large or on-disk corpora, or an index "
                                  "folder)", traits=("engine", "lexical"))
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


@RETRIEVERS.register("dense", help="sentence-transformers embeddings + FAISS (flat, hnsw, ivfpq or a factory string)",
                     traits=("model", "index_kind"))
def _dense(arg, *, corpus, options: IndexOptions):
    o = options
    if is_disk_corpus(corpus) or o.index not in ("flat", "hnsw") or o.index_dir is not None:
        return ScaledDenseRetriever(corpus, o)

    return DenseRetriever(corpus, o.model, progress=o.progress, index=o.index, device=o.device, encoding=o.encoding,
                          cache=o.cache, on_progress=o.on_progress)


@RETRIEVERS.register("static", help="a static (model2vec) model distilled from the encoder (berds models distill) + "
                                    "FAISS: a first stage for large corpora, re-read by the encoder (static%N>>reread)",
                     traits=("index_kind", "distilled"))
def _static(arg, *, corpus, options: IndexOptions):
    return _dense(None, corpus=corpus, options=replace(options, model=static_model(options.model)))


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
# those that work out of the box (no `berds models distill` first): the demo's tables and precomputed vectors
READY_RETRIEVERS = tuple(n for n in CORPUS_RETRIEVERS if "distilled" not in RETRIEVERS.traits(n))


def index_spec(folder, query_encoder: str | None = None) -> str:
    """The retriever spec of a prebuilt index folder: ``index:<folder>[|<query encoder>]``."""
    return f"index:{folder}" + (f"|{query_encoder}" if query_encoder else "")


def index_folder(spec: str) -> str | None:
    """The folder a prebuilt index's spec names (``index:<folder>[|<query encoder>]``, :func:`index_spec`'s
    inverse); None for any other spec."""
    return spec[len("index:"):].partition("|")[0] if spec.startswith("index:") else None
