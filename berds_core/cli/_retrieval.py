"""The steps ``berds index``, ``berds retrieve`` and ``berds retrieve --corpus-per-question`` share: the
corpus and retriever options, opening them (one-line errors naming the flag), building a run (plain or
through the diversification pipeline the flags ask for) and the warning when k is beyond the corpus.
"""
from __future__ import annotations

import re
import sys

from ..errors import InputError


def add_retriever_args(p, *, corpus_required: bool = True) -> None:
    p.add_argument("--corpus", required=corpus_required,
                   help="passages: .jsonl/.json/.tsv/.csv or a folder of .txt/.html")
    p.add_argument("--retriever", choices=("bm25", "dense"), default="bm25")
    p.add_argument("--model", default=None,
                   help="dense only: sentence-transformers hub id or local path (default all-MiniLM-L6-v2)")
    p.add_argument("--index", choices=("flat", "hnsw"), default="flat",
                   help="dense only: exact inner product (flat) or approximate HNSW")
    p.add_argument("--encoding", choices=("auto", "fp32", "bf16", "int8"), default="auto",
                   help="dense only: encoder precision (auto: bf16 on CPUs with native bf16, else int8; "
                        "fp32 on GPU)")
    p.add_argument("--device", default=None, help="dense only: cpu, cuda, cuda:1, mps (default: best available)")
    p.add_argument("--passage-words", type=int, default=100,
                   help="split texts into passages of this many words (0: keep texts whole)")


def check_retriever_args(args) -> None:
    if args.retriever == "bm25":
        if args.model is not None:
            raise InputError("--model", None, None, "bm25 takes no model (use --retriever dense)")
        if args.index != "flat":
            raise InputError("--index", None, None, "bm25 has no index kind (use --retriever dense)")
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


def retriever_info(retriever) -> dict:
    return {
        "retriever": retriever.name,
        "model": getattr(retriever, "embedder_name", None),
        "index": getattr(retriever, "index_kind", None),
        "encoding": getattr(retriever, "encoding", None),
        "cache_path": str(retriever.cache_path) if retriever.cache_path else None,
        "cache_hit": bool(retriever.cache_hit),
        "build_seconds": round(retriever.build_seconds, 3),
    }


def build_run(args, questions, corpus, retriever) -> list[dict]:
    """The run entries for ``questions``; extend here for options that change retrieval."""
    from ._diversify_options import diversified_run, diversify_config
    from ..retrieval import retrieve_run

    cfg = diversify_config(args)
    if cfg is not None:
        return diversified_run(questions, corpus, retriever, cfg, args.k, progress=not args.quiet)
    return retrieve_run(questions, corpus, retriever, args.k)


def warn_k(k: int, corpus_size: int, what: str = "the corpus") -> None:
    """One stderr line when k asks for more passages than there are (every question then gets them all)."""
    if k > corpus_size:
        sys.stderr.write(f"berds retrieve: warning: --k {k} is more than the {corpus_size} passages of {what}: "
                         f"a question's ranking holds {corpus_size} passages at most\n")
