"""``berds index`` (build or load a cached index) and ``berds retrieve`` (write a run).

Structure for extension: ``add_retriever_args`` declares the corpus/retriever
options, ``open_retriever(args, corpus)`` builds the retriever, and
``build_run(args, questions, corpus, retriever)`` returns the run entries; an
option that changes how runs are made (diversification, query expansion, ...)
adds its arguments in ``register`` and its logic in ``build_run``.
"""
from __future__ import annotations

import os
import re
import sys
import time

from ..errors import InputError
from ..files.outputs import declare


def add_retriever_args(p, *, corpus_required: bool = True) -> None:
    p.add_argument("--corpus", required=corpus_required,
                   help="passages: .jsonl/.json/.tsv/.csv or a folder of .txt/.html")
    p.add_argument("--retriever", choices=("bm25", "dense"), default="bm25")
    p.add_argument("--model", default=None,
                   help="dense only: sentence-transformers hub id or local path (default all-MiniLM-L6-v2)")
    p.add_argument("--index", default="flat", metavar="KIND",
                   help="dense only: exact inner product (flat), approximate HNSW, or with --ray a FAISS IVF "
                        "factory string (e.g. IVF1024,Flat: trained on a sample, filled shard by shard)")
    p.add_argument("--encoding", choices=("auto", "fp32", "bf16", "int8"), default="auto",
                   help="dense only: encoder precision (auto: bf16 on CPUs with native bf16, else int8; "
                        "fp32 on GPU)")
    p.add_argument("--device", default=None, help="dense only: cpu, cuda, cuda:1, mps (default: best available)")
    p.add_argument("--passage-words", type=int, default=100,
                   help="split texts into passages of this many words (0: keep texts whole)")
    from ._ray import add_ray_args  # --ray, --ray-dir, --shard-rows (issue 27)

    add_ray_args(p, shards=True)


def register(sub) -> None:
    p = sub.add_parser("index", help="build (or load from the cache) a BM25 or dense index of a corpus")
    add_retriever_args(p)
    p.set_defaults(func=run_index)
    declare(p, inputs=("corpus",))

    p = sub.add_parser("retrieve", help="retrieve the top-k passages for every question and write a run")
    p.add_argument("--questions", required=True, help="questions file (jsonl, csv, qe, debate-sites, ...)")
    p.add_argument("--format", default=None, help="questions format (default: guessed from the file)")
    add_retriever_args(p, corpus_required=False)
    p.add_argument("--corpus-per-question", metavar="DIR", default=None,
                   help="instead of --corpus: one corpus per question, DIR/<question>/passages.jsonl "
                        "(e.g. made by 'berds corpus web'); each question retrieves within its own")
    p.add_argument("--k", type=int, default=100, help="passages per question")
    p.add_argument("--out", required=True, help="run file to write (BERDS JSON Lines)")
    from ._diversify_options import add_diversify_args  # --mmr, --qe, --rerank, --preset (issue 4)

    add_diversify_args(p)
    p.set_defaults(func=run_retrieve)
    declare(p, inputs=("questions", "corpus", "corpus_per_question", "pool"), outputs=("out",),
            servers=("qe_llm", "rerank_judge"))


def _check(args) -> None:
    if args.retriever == "bm25":
        if args.model is not None:
            raise InputError("--model", None, None, "bm25 takes no model (use --retriever dense)")
        if args.index != "flat":
            raise InputError("--index", None, None, "bm25 has no index kind (use --retriever dense)")
    elif args.index not in ("flat", "hnsw"):
        from ..distributed.index import check_kind, is_ivf

        try:
            check_kind(args.index)
        except ValueError as e:
            raise InputError("--index", None, None, str(e)) from None
        if is_ivf(args.index) and getattr(args, "ray", None) is None and not os.environ.get("BERDS_RAY_ADDRESS"):
            raise InputError("--index", None, None, f"{args.index}: IVF indexes are built with --ray ADDRESS "
                                                    "(trained on a sample, filled shard by shard)")
    if args.passage_words < 0:
        raise InputError("--passage-words", None, None, "must be 0 or more")
    if getattr(args, "k", 1) < 1:
        raise InputError("--k", None, None, "k must be at least 1")
    if args.device is not None and not re.fullmatch(r"cpu|mps|cuda(:\d+)?", args.device):
        raise InputError("--device", None, None, f"expected cpu, cuda, cuda:N or mps, got {args.device!r}")


def open_corpus(args):
    from ..corpus import load_corpus

    return load_corpus(args.corpus, passage_words=args.passage_words or None)


def open_retriever(args, corpus):
    from ..retrieval import get_retriever

    try:
        return get_retriever(args.retriever, corpus, args.model, progress=not args.quiet, index=args.index,
                             device=args.device, encoding=None if args.encoding == "auto" else args.encoding)
    except InputError:  # e.g. a read-only cache: it names itself
        raise
    except OSError as e:  # an unknown hub id, a missing model folder, no network
        raise InputError("--model", None, None, _load_error(args.model, e)) from None
    except ValueError as e:  # e.g. int8 asked for on a GPU
        raise InputError("--encoding", None, None, str(e)) from None


def _load_error(model, e: Exception) -> str:
    line = str(e).splitlines()[0] if str(e) else type(e).__name__
    return line if line.startswith("cannot load") else f"cannot load embedder {model or 'default'!r}: {line}"


def check_models(args) -> None:
    """Embedders named on the command line can be loaded (local files, the cache, or a reachable hub):
    checked before the corpus is read, so a wrong name fails in a second, in one line."""
    from ..embeddings.models import locate_embedder, resolve_model

    for flag, name in (("--model", getattr(args, "model", None) if args.retriever == "dense" else None),
                       ("--mmr-embedder", getattr(args, "mmr_embedder", None))):
        if name:
            try:
                locate_embedder(resolve_model(name))
            except OSError as e:
                raise InputError(flag, None, None, _load_error(name, e)) from None


def _retriever_info(retriever) -> dict:
    return {
        "retriever": retriever.name,
        "model": getattr(retriever, "embedder_name", None),
        "index": getattr(retriever, "index_kind", None),
        "encoding": getattr(retriever, "encoding", None),
        "cache_path": str(retriever.cache_path) if retriever.cache_path else None,
        "cache_hit": bool(retriever.cache_hit),
        "build_seconds": round(retriever.build_seconds, 3),
    }


def run_index(args) -> dict:
    _check(args)
    check_models(args)
    from . import _ray

    if _ray.address(args):
        return _ray.run_index(args)
    t0 = time.perf_counter()
    corpus = open_corpus(args)
    retriever = open_retriever(args, corpus)
    return {"corpus": str(args.corpus), "passages": len(corpus), "duplicates_dropped": corpus.duplicates_dropped,
            "hash": corpus.hash, **_retriever_info(retriever), "seconds": round(time.perf_counter() - t0, 3)}


def build_run(args, questions, corpus, retriever) -> list[dict]:
    """The run entries for ``questions``; extend here for options that change retrieval."""
    from ._diversify_options import diversified_run, diversify_config
    from ..retrieval import retrieve_run

    cfg = diversify_config(args)
    if cfg is not None:
        return diversified_run(args, questions, corpus, retriever, cfg, progress=not args.quiet)
    return retrieve_run(questions, corpus, retriever, args.k)


def warn_k(k: int, corpus_size: int, what: str = "the corpus") -> None:
    """One stderr line when k asks for more passages than there are (every question then gets them all)."""
    if k > corpus_size:
        sys.stderr.write(f"berds retrieve: warning: --k {k} is more than the {corpus_size} passages of {what}: "
                         f"a question's ranking holds {corpus_size} passages at most\n")


def run_retrieve(args) -> dict:
    from ..datasets import load_questions
    from ._diversify_options import apply_preset, diversify_config
    from ..runs import write_run
    from .evaluate_cmd import run_depth

    apply_preset(args)
    div = diversify_config(args)  # bad diversification options fail before any work
    _check(args)
    check_models(args)
    from . import _ray

    if _ray.address(args):
        return _ray.run_retrieve(args, div)
    if (args.corpus is None) == (args.corpus_per_question is None):
        raise InputError("--corpus", None, None, "give either --corpus or --corpus-per-question")
    t0 = time.perf_counter()
    questions = load_questions(args.questions, args.format)
    if not questions:
        raise InputError(args.questions, None, None, "no questions found")
    if args.corpus_per_question:
        from ._per_question import retrieve_per_question

        return retrieve_per_question(args, questions, div, t0)
    corpus = open_corpus(args)
    retriever = open_retriever(args, corpus)
    t1 = time.perf_counter()
    entries = build_run(args, questions, corpus, retriever)
    search_s = time.perf_counter() - t1
    write_run(args.out, entries)
    depth = run_depth(entries)
    warn_k(args.k, len(corpus))
    return {"out": str(args.out), "questions": len(entries), "k": args.k, "passages": len(corpus),
            "corpus_size": len(corpus), "run_depth": depth, "hash": corpus.hash, **_retriever_info(retriever),
            "diversify": {k: v for k, v in (div or {"method": "none"}).items() if v is not None},
            "search_seconds": round(search_s, 3),
            "seconds": round(time.perf_counter() - t0, 3)}
