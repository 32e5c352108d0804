"""``berds index`` (build or load a cached index) and ``berds retrieve`` (write a run).

The steps it shares with ``--corpus-per-question`` (``_per_question.py``) live in ``_retrieval.py``:
``add_retriever_args`` declares the corpus/retriever options, ``open_retriever(args, corpus)`` builds
the retriever, ``build_run(args, questions, corpus, retriever, div)`` returns the run entries (through the
diversification pipeline that ``_diversify_options.py`` makes of the flags).
"""
from __future__ import annotations

import time

from ..errors import InputError
from ._parsing import declare
from ._ray import add_ray_args
from ._retrieval import (add_retriever_args, build_run, check_models, check_retriever_args, corpus_from_args,
                         corpus_info, open_retriever, retriever_info, warn_k)


def register(sub) -> None:
    p = sub.add_parser("index", help="build (or load from the cache) a BM25 or dense index of a corpus")
    add_retriever_args(p)
    add_ray_args(p, shards=True)  # --ray, --ray-dir, --shard-rows (issue 27)
    p.set_defaults(func=run_index)
    declare(p, inputs=("corpus",))

    p = sub.add_parser("retrieve", help="retrieve the top-k passages for every question and write a run")
    p.add_argument("--questions", required=True, help="questions file (jsonl, csv, qe, debate-sites, ...)")
    p.add_argument("--format", default=None, help="questions format (default: guessed from the file)")
    add_retriever_args(p, corpus_required=False)
    add_ray_args(p, shards=True)
    p.add_argument("--corpus-per-question", metavar="DIR", default=None,
                   help="instead of --corpus: one corpus per question, DIR/<question>/passages.jsonl "
                        "(e.g. made by 'berds corpus web'); each question retrieves within its own")
    p.add_argument("--skip-empty", action="store_true", dest="skip_empty",
                   help="with --corpus-per-question: a question whose corpus is empty gets an empty ranking "
                        "(default: exit 2 naming it)")
    p.add_argument("--k", type=int, default=100, help="passages per question")
    p.add_argument("--out", required=True, help="run file to write (BERDS JSON Lines)")
    from ._diversify_options import add_diversify_args  # --mmr, --qe, --rerank, --preset (issue 4)

    add_diversify_args(p)
    p.set_defaults(func=run_retrieve)
    declare(p, inputs=("questions", "corpus", "corpus_per_question", "pool"), outputs=("out",),
            servers=("qe_llm", "rerank_judge"))


def run_index(args) -> dict:
    check_retriever_args(args)
    check_models(args)
    from . import _ray

    if _ray.requested(args):
        return _ray.run_index(args)
    t0 = time.perf_counter()
    corpus = corpus_from_args(args)
    retriever = open_retriever(args, corpus)
    return {"corpus": str(args.corpus), **corpus_info(corpus), **retriever_info(retriever),
            "seconds": round(time.perf_counter() - t0, 3)}


def run_retrieve(args) -> dict:
    from ..datasets import load_questions
    from ._diversify_options import diversify_config, diversify_json
    from ..runs import write_run
    from ..runs import run_depth

    if args.skip_empty and args.corpus_per_question is None:
        raise InputError("--skip-empty", None, None, "is for --corpus-per-question (a question's own corpus that "
                         "is empty); it does nothing with --corpus")
    div = diversify_config(args)  # bad diversification options fail before any work; a preset picks its retriever
    check_retriever_args(args)
    check_models(args)
    from . import _ray

    if _ray.requested(args):
        return _ray.run_retrieve(args, div)
    if args.corpus is not None and args.corpus_per_question is not None or \
            args.corpus is None and args.corpus_per_question is None and args.index_dir is None:
        raise InputError("--corpus", None, None, "give either --corpus or --corpus-per-question")
    if args.corpus_per_question is not None and args.index_dir is not None:
        raise InputError("--index-dir", None, None, "searches one corpus; it does not go with --corpus-per-question")
    t0 = time.perf_counter()
    questions = load_questions(args.questions, args.format)
    if not questions:
        raise InputError(args.questions, None, None, "no questions found")
    if args.corpus_per_question:
        from ._per_question import retrieve_per_question

        return retrieve_per_question(args, questions, div, t0)
    corpus = corpus_from_args(args)
    retriever = open_retriever(args, corpus)
    t1 = time.perf_counter()
    entries = build_run(args, questions, corpus, retriever, div)
    search_s = time.perf_counter() - t1
    write_run(args.out, entries)
    depth = run_depth(entries)
    warn_k(args.k, len(corpus))
    return {"out": str(args.out), "questions": len(entries), "k": args.k, **corpus_info(corpus),
            "corpus_size": len(corpus), "run_depth": depth, **retriever_info(retriever),
            "diversify": diversify_json(div),
            "search_seconds": round(search_s, 3),
            "seconds": round(time.perf_counter() - t0, 3)}
