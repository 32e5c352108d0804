"""``berds retrieve --corpus-per-question DIR``: each question retrieves within its own corpus.

The BERDS paper's web setting: a corpus per question (its search results' pages).
``DIR/<question>/passages.jsonl`` is found by the question id in the folder's
``manifest.json`` (as ``berds corpus web`` writes it) or by the folder's name. A
question whose corpus is empty (every page failed, or its search did) is an
error before any retrieval, unless ``--skip-empty``: then it gets an empty
ranking, is listed in ``empty_questions`` and named in one warning line. A
question with no folder is an error.
"""
from __future__ import annotations

import argparse
import sys
import time

from ..errors import InputError


def retrieve_per_question(args, questions, div, t0: float) -> dict:
    from tqdm import tqdm

    from ..corpora.memory import load_corpus
    from ..files.jsonio import read_text
    from ..retrieval import takes_model
    from ..runs import question_entry, run_depth, write_run
    from ..web.snapshot import PASSAGES, dir_name, question_folders
    from ._diversify_options import diversify_json
    from ._retrieval import build_run, open_retriever, warn_k

    root = args.corpus_per_question
    folders = question_folders(root)
    missing = [q.id for q in questions if q.id not in folders]
    if missing:
        more = f" ({len(missing) - 1} more questions have none)" if len(missing) > 1 else ""
        raise InputError(root, None, None, f"no corpus for question {missing[0]!r}: expected "
                                           f"{dir_name(missing[0])}/{PASSAGES}{more}")
    empty = [q.id for q in questions if not read_text(folders[q.id] / PASSAGES).strip()]
    if empty:
        what = (f"{len(empty)} of {len(questions)} questions have an empty corpus (first: {empty[0]!r}, "
                f"{dir_name(empty[0])}/{PASSAGES}: every page failed, or its search did)")
        if not getattr(args, "skip_empty", False):
            raise InputError(root, None, None, what + "; rebuild them ('berds corpus web' resumes), or pass "
                                                      "--skip-empty to rank nothing for them")
        sys.stderr.write(f"warning: {what}; their rankings are empty (--skip-empty)\n")
    empty_ids = set(empty)
    inner = argparse.Namespace(**{**vars(args), "quiet": True})  # one bar over questions, not one per index
    entries, passages, search_s, sizes = [], 0, 0.0, []
    for q in tqdm(questions, desc="questions", unit="q", file=sys.stderr, disable=args.quiet):
        if q.id not in empty_ids:
            corpus = load_corpus(folders[q.id] / PASSAGES, passage_words=args.passage_words or None, name=q.id)
            retriever = open_retriever(inner, corpus)
            t1 = time.perf_counter()
            entries.extend(build_run(inner, [q], corpus, retriever, div))
            search_s += time.perf_counter() - t1
            passages += len(corpus)
            sizes.append(len(corpus))
        else:  # --skip-empty: an empty ranking
            entries.append(question_entry(q, None, []))
    write_run(args.out, entries)
    if sizes and args.k > min(sizes):
        warn_k(args.k, min(sizes), f"the smallest question corpus ({sum(n < args.k for n in sizes)} of "
                                   f"{len(sizes)} corpora are smaller than k)")
    return {"out": str(args.out), "questions": len(entries), "k": args.k, "corpus_per_question": str(root),
            "passages": passages, "corpus_size": {"min": min(sizes, default=0), "max": max(sizes, default=0)},
            "run_depth": run_depth(entries), "empty_questions": empty, "retriever": args.retriever,
            "model": args.model if takes_model(args.retriever) else None,
            "diversify": diversify_json(div),
            "search_seconds": round(search_s, 3), "seconds": round(time.perf_counter() - t0, 3)}
