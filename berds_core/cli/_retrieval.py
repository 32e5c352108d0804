"""The steps ``berds index``, ``berds retrieve`` and ``berds retrieve --corpus-per-question`` share: the
corpus and retriever options, opening them (one-line errors naming the flag), building a run (plain or
through the diversification pipeline the flags ask for) and the warning when k is beyond the corpus.
"""
from __future__ import annotations

import os
import re
import sys
import time

from ..corpora.disk import STORAGES
from ..errors import InputError
from ..retrieval import BM25_ENGINES, CORPUS_RETRIEVERS, retriever_traits, takes_model


def add_retriever_args(p, *, corpus_required: bool = True) -> None:
    p.add_argument("--corpus", required=corpus_required,
                   help="passages: .jsonl/.json/.tsv/.csv/.parquet (text formats also .gz), a folder of such shards, "
                        "or a folder of .txt/.html")
    p.add_argument("--corpus-storage", choices=STORAGES, default="auto",
                   help="memory, disk (an on-disk store in the cache, read passage by passage: for corpora larger "
                        "than memory) or auto (disk from 50 MB of corpus files up; default)")
    p.add_argument("--retriever", choices=CORPUS_RETRIEVERS, default=None,
                   help="bm25 (default) or dense; with --index-dir on 'berds retrieve', what the folder holds")
    p.add_argument("--bm25-engine", choices=BM25_ENGINES, default="auto",
                   help="bm25 only: bm25s (in memory), tantivy (on disk, bounded memory) or auto (tantivy for "
                        "on-disk corpora; default)")
    p.add_argument("--model", default=None,
                   help="dense only: sentence-transformers hub id or local path (default all-MiniLM-L6-v2); for a "
                        "prebuilt --index-dir without berds.json, its query encoder (dpr:<model> for DPR)")
    p.add_argument("--index", default=None, metavar="KIND",
                   help="dense only: flat (exact; default), hnsw, ivfpq (sized from the corpus and --memory-budget) "
                        "or a FAISS index factory string (e.g. IVF65536,PQ64); with --ray: flat, hnsw or an IVF factory string "
                        "(trained on a sample, filled shard by shard)")
    p.add_argument("--memory-budget", default=None, metavar="SIZE",
                   help="dense only: memory the index may take (e.g. 4G; default half this machine's memory); "
                        "IVF inverted lists go to disk beyond it")
    p.add_argument("--nprobe", type=int, default=None,
                   help="dense IVF indexes only: inverted lists searched per query (default from the index plan)")
    p.add_argument("--index-dir", default=None, metavar="DIR",
                   help="'berds index': build the index in DIR instead of the cache; 'berds retrieve': search the "
                        "index in DIR (built by 'berds index', or a prebuilt FAISS index + docid folder such as "
                        "Pyserini's)")
    p.add_argument("--encoding", choices=("auto", "fp32", "fp16", "bf16", "int8"), default="auto",
                   help="dense only: encoder precision (auto: $BERDS_ENCODING, else fp32, the reference on every "
                        "machine; bf16 and int8 are CPU speed modes and fp16 a GPU one, named in the run)")
    p.add_argument("--device", default=None, help="dense only: cpu, cuda, cuda:1, mps (default: best available)")
    p.add_argument("--passage-words", type=int, default=100,
                   help="split texts into passages of this many words (0: keep texts whole)")


def _ray_asked(args) -> bool:
    """--ray or BERDS_RAY_ADDRESS was given (without resolving or importing Ray)."""
    return getattr(args, "ray", None) is not None or bool(os.environ.get("BERDS_RAY_ADDRESS"))


def check_retriever_args(args) -> None:
    index_given = args.index is not None
    if args.index is None:
        args.index = "flat"
    if _opens_folder(args):
        _check_folder_options(args, index_given)
    elif getattr(args, "index_dir", None) is not None:
        _check_build_folder(args.index_dir)
    if args.retriever is None:
        args.retriever = "bm25"
    takes = retriever_traits(args.retriever)  # what the retriever reads: the flags it does not read are refused
    if "model" not in takes and args.model is not None:
        raise InputError("--model", None, None, f"{args.retriever} takes no model (use --retriever dense)")
    if "index_kind" not in takes and args.index != "flat":
        raise InputError("--index", None, None, f"{args.retriever} has no index kind (use --retriever dense)")
    if "index_kind" not in takes and args.memory_budget is not None:
        raise InputError("--memory-budget", None, None, "is for dense indexes (BM25 builds in bounded memory)")
    if "model" not in takes and args.encoding != "auto":
        raise InputError("--encoding", None, None, f"is a dense encoder's precision; {args.retriever} has no "
                                                   "encoder (use --retriever dense)")
    if "engine" not in takes and args.bm25_engine != "auto":
        raise InputError("--bm25-engine", None, None, "is for --retriever bm25")
    if "index_kind" in takes and _ray_asked(args):
        from ..distributed.index import check_kind

        try:
            check_kind(args.index)
        except ValueError as e:
            raise InputError("--index", None, None, f"with --ray: {e}") from None
        for flag, dest in (("--memory-budget", "memory_budget"), ("--index-dir", "index_dir"), ("--nprobe", "nprobe")):
            if getattr(args, dest, None) is not None:
                raise InputError(flag, None, None, "is a one-process option; --ray indexes live in --ray-dir")
    if args.passage_words < 0:
        raise InputError("--passage-words", None, None, "must be 0 or more")
    if getattr(args, "k", 1) < 1:
        raise InputError("--k", None, None, "k must be at least 1")
    if args.nprobe is not None and args.nprobe < 1:
        raise InputError("--nprobe", None, None, "must be at least 1")
    if args.nprobe is not None and ("index_kind" not in takes or args.index in ("flat", "hnsw")) \
            and not _opens_folder(args):
        raise InputError("--nprobe", None, None, f"is for IVF indexes (--index ivfpq or an IVF factory string), "
                                                 f"not {args.index if 'index_kind' in takes else args.retriever}")
    if args.device is not None and not re.fullmatch(r"cpu|mps|cuda(:\d+)?", args.device):
        raise InputError("--device", None, None, f"expected cpu, cuda, cuda:N or mps, got {args.device!r}")
    args.memory_budget_bytes = None
    if args.memory_budget is not None:
        from ..retrieval.index_plan import parse_memory

        args.memory_budget_bytes = parse_memory(args.memory_budget)


def _check_build_folder(folder) -> None:
    """``berds index --index-dir DIR``: DIR is a folder the index can be written to (or an index already
    built there, which is only read), checked before the corpus is read or a model loaded."""
    from pathlib import Path

    from ..files.outputs import check_output_dir
    from ..retrieval.index_dir import is_index_folder
    from ..retrieval.tantivy_bm25 import is_tantivy_folder

    p = Path(folder)
    if p.is_dir() and (is_index_folder(p) or is_tantivy_folder(p)):
        return
    check_output_dir(p, "--index-dir")


def _opens_folder(args) -> bool:
    """``berds retrieve --index-dir``: the folder is read, not built."""
    return args.index_dir is not None and getattr(getattr(args, "func", None), "__name__", "") == "run_retrieve"


def _check_folder_options(args, index_given: bool) -> None:
    """``berds retrieve --index-dir``: the folder is searched as it was built, so options that would build
    something else (another retriever, index kind or memory budget) are refused, never silently ignored."""
    from pathlib import Path

    kind, held = _folder_kind(args.index_dir)
    folder = Path(args.index_dir)
    if args.retriever is not None and args.retriever != kind:
        raise InputError(folder, None, "--index-dir", f"holds {held} index, not a {args.retriever} one")
    args.retriever = kind
    if args.memory_budget is not None:
        raise InputError("--memory-budget", None, None, "sizes an index when 'berds index' builds it; 'berds "
                                                        "retrieve --index-dir' searches the folder as it was built")
    if "index_kind" not in retriever_traits(kind) or not index_given:
        return
    from ..retrieval.index_dir import read_meta

    meta = read_meta(folder)
    if meta is None:
        raise InputError("--index", None, None, f"{folder} is a prebuilt FAISS folder: its index file decides the "
                                                "index kind; leave --index out")
    plan = meta.get("plan") or {}
    held = {str(plan.get("spec") or "flat"), str(plan.get("factory") or "flat")}
    if args.index not in held:
        raise InputError(folder, None, "--index", f"holds a {plan.get('factory') or 'flat'} index "
                                                  f"(--index {plan.get('spec') or 'flat'}), not {args.index}: leave "
                                                  "--index out, or build that index with 'berds index --index-dir'")


def _folder_kind(folder) -> tuple[str, str]:
    """What a prebuilt index folder holds: its retriever, bm25 (tantivy) or dense (FAISS), and in words."""
    from pathlib import Path

    from ..retrieval.index_dir import is_index_folder
    from ..retrieval.tantivy_bm25 import is_tantivy_folder

    p = Path(folder)
    if not p.is_dir():
        raise InputError(p, None, "--index-dir", "not found (build it with 'berds index --index-dir')")
    if is_tantivy_folder(p):
        return "bm25", "a BM25 (tantivy)"
    if is_index_folder(p):
        return "dense", "a dense (FAISS)"
    raise InputError(p, None, "--index-dir", "not an index folder (no berds.json, or no FAISS 'index' + 'docid')")


def corpus_from_args(args, reader=None):
    """The corpus of ``--corpus`` (memory or the on-disk store, by ``--corpus-storage``); ``reader``: where
    an ingest into the store reads its shards (``corpora.disk.ingest``; ``--ray``: Ray tasks)."""
    from ..corpora import open_corpus

    path = args.corpus
    if path is None and _opens_folder(args):
        from ..retrieval.index_dir import index_corpus_source

        path = index_corpus_source(args.index_dir)
    if path is None:
        raise InputError("--corpus", None, None, "give the corpus the index was built from")
    try:
        if "engine" in retriever_traits(args.retriever) and args.bm25_engine != "bm25s" and args.index_dir is None:
            # a corpus streamed into the on-disk store is BM25-indexed in the same pass (tantivy's threads
            # index while Python parses); nothing happens when the store exists or the corpus stays in memory
            from ..retrieval.tantivy_bm25 import IngestIndexer

            t0 = time.perf_counter()
            with IngestIndexer() as feed:
                corpus = open_corpus(path, passage_words=args.passage_words or None, storage=args.corpus_storage,
                                  progress=not args.quiet, on_batch=feed, reader=reader)
                feed.finish(corpus)
            args.streamed_index = (feed.published, time.perf_counter() - t0)
            return corpus
        return open_corpus(path, passage_words=args.passage_words or None, storage=args.corpus_storage,
                        progress=not args.quiet, reader=reader)
    except ValueError as e:
        if isinstance(e, InputError):
            raise
        raise InputError("--corpus-storage", None, None, str(e)) from None


def check_index_plan(args, n: int) -> None:
    """A dense index the corpus (``n`` passages) and ``--memory-budget`` cannot hold, or a factory string
    FAISS rejects: the same one line the build would give, said before the model loads (seconds), when
    the model's folder declares its embedding size."""
    if "index_kind" not in retriever_traits(args.retriever) or _opens_folder(args) or args.index == "flat":
        return
    from ..embeddings.models import declared_dim
    from ..retrieval.index_plan import plan_index

    dim = declared_dim(args.model)
    if dim:
        plan_index(args.index, n, dim, args.memory_budget_bytes)


def open_retriever(args, corpus):
    check_index_plan(args, len(corpus))
    retriever = _open_retriever(args, corpus)
    built, seconds = getattr(args, "streamed_index", (None, 0.0))
    if built is not None and retriever.cache_path == built:  # built while the corpus streamed in, not found
        retriever.cache_hit, retriever.build_seconds = False, seconds
    return retriever


def index_options(args):
    """The flags' :class:`berds_core.retrieval.IndexOptions` (checked by :func:`check_retriever_args`)."""
    from ..retrieval import IndexOptions

    return IndexOptions(model=args.model, index=args.index, device=args.device,
                        encoding=None if args.encoding == "auto" else args.encoding, engine=args.bm25_engine,
                        memory_budget=args.memory_budget_bytes, index_dir=args.index_dir, nprobe=args.nprobe,
                        progress=not args.quiet)


def _open_retriever(args, corpus):
    from ..retrieval import get_retriever

    takes = retriever_traits(args.retriever)
    kind = "index" if _opens_folder(args) and "index_kind" in takes else args.retriever  # a FAISS folder: opened
    if "engine" in takes and args.index_dir is not None:
        _check_bm25_folder(args)
    try:
        return get_retriever(kind, corpus, options=index_options(args))
    except InputError:  # e.g. a read-only cache: it names itself
        raise
    except OSError as e:  # an unknown hub id, a missing model folder, no network; or the index folder
        where = _index_path_error(args, e)
        if where is not None:
            raise where from None
        raise InputError("--model", None, None, load_error(args.model, e)) from None
    except ValueError as e:  # e.g. int8 asked for on a GPU
        raise InputError("--encoding", None, None, str(e)) from None


def _check_bm25_folder(args) -> None:
    """``--retriever bm25 --index-dir DIR``: a tantivy index is built there (``berds index``) or read from it
    (``berds retrieve``); a dense folder, ``--bm25-engine bm25s`` or an unfinished index is one line."""
    from pathlib import Path

    from ..retrieval.index_dir import is_index_folder
    from ..retrieval.tantivy_bm25 import META, is_tantivy_folder

    if is_index_folder(args.index_dir) and not is_tantivy_folder(args.index_dir):
        raise InputError(args.index_dir, None, "--index-dir", "holds a dense (FAISS) index, not a bm25 one: "
                                                              "give another folder")
    if args.bm25_engine == "bm25s":
        raise InputError("--bm25-engine", None, None, "an --index-dir BM25 index is a tantivy index")
    if _opens_folder(args) and not (Path(args.index_dir) / META).is_file():
        raise InputError(args.index_dir, None, "--index-dir", "not a complete BM25 index")


def _index_path_error(args, e: OSError) -> InputError | None:
    """An OSError about the index's own files (a BM25 index has no model to blame; a dense one's files
    are under --index-dir or the cache): one line naming the folder, never a temporary file's name."""
    from pathlib import Path

    folder = getattr(args, "index_dir", None)
    name = getattr(e, "filename", None)
    inside = False
    if folder is not None and name:
        try:
            inside = Path(os.path.abspath(name)).is_relative_to(Path(os.path.abspath(folder)))
        except (TypeError, ValueError):
            inside = False
    if takes_model(args.retriever) and not inside:
        return None
    why = e.strerror or type(e).__name__
    if folder is not None:
        return InputError(folder, None, "--index-dir", f"cannot write the index there ({why})")
    return InputError("--corpus", None, None, f"cannot write the index into the cache ({why}; see BERDS_CACHE)")


def load_error(model, e: Exception) -> str:
    line = str(e).splitlines()[0] if str(e) else type(e).__name__
    return line if line.startswith("cannot load") else f"cannot load embedder {model or 'default'!r}: {line}"


def check_models(args) -> None:
    """Embedders named on the command line can be loaded (local files, the cache, or a reachable hub):
    checked before the corpus is read, so a wrong name fails in a second, in one line."""
    from ..embeddings.models import locate_embedder, resolve_model

    for flag, name in (("--model", getattr(args, "model", None) if takes_model(args.retriever) else None),
                       ("--mmr-embedder", getattr(args, "mmr_embedder", None))):
        if name and not str(name).startswith("dpr:"):  # a DPR query tower: loaded (and its error told) by
            try:                                           # retrieval.query_encoders, not a sentence embedder
                locate_embedder(resolve_model(name))
            except OSError as e:
                raise InputError(flag, None, None, load_error(name, e)) from None


def retriever_info(retriever) -> dict:
    plan = getattr(retriever, "plan", None)
    return {
        "retriever": retriever.name,
        "engine": getattr(retriever, "engine", None),
        "model": getattr(retriever, "embedder_name", None),
        "index": getattr(retriever, "index_kind", None),
        "index_plan": plan.to_json() if hasattr(plan, "to_json") else (plan or None) if isinstance(plan, dict) else None,
        "encoding": getattr(retriever, "encoding", None),
        "cache_path": str(retriever.cache_path) if retriever.cache_path else None,
        "cache_hit": bool(retriever.cache_hit),
        "build_seconds": round(retriever.build_seconds, 3),
    }


def corpus_info(corpus) -> dict:
    from ..corpora.disk import is_disk_corpus

    return {"corpus_name": corpus.name, "passages": len(corpus), "duplicates_dropped": corpus.duplicates_dropped,
            "hash": corpus.hash, "corpus_storage": "disk" if is_disk_corpus(corpus) else "memory",
            "corpus_store": str(corpus.folder) if is_disk_corpus(corpus) else None}


def build_run(args, questions, corpus, retriever, div) -> list[dict]:
    """The run entries for ``questions``: ``div``, the checked diversification (a ``Diversification`` made by
    ``diversify_config``; None: plain retrieval); extend here for options that change retrieval."""
    from ._diversify_options import diversified_run

    return diversified_run(questions, corpus, retriever, div, args.k, progress=not args.quiet)


def warn_k(k: int, corpus_size: int, what: str = "the corpus") -> None:
    """One stderr line when k asks for more passages than there are (every question then gets them all)."""
    if k > corpus_size:
        sys.stderr.write(f"berds retrieve: warning: --k {k} is more than the {corpus_size} passages of {what}: "
                         f"a question's ranking holds {corpus_size} passages at most\n")
