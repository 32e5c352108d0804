"""``berds leaning`` and ``berds sycophancy``: the analyses of BERDS section 8."""
from __future__ import annotations

import sys

import numpy as np

from ..errors import InputError
from ._parsing import declare
from ..eval.leaning import (QUERY_FORMS, exposure_leaning, infer_sides, infer_sides_llm, leaning, query_for,
                       sycophancy)
from ..runs import gold_matrix, label_matrix, read_run

SIDE_METHODS = ("auto", "stances", "order", "rule")


def register(sub) -> None:
    p = sub.add_parser("leaning", help="share of questions whose top k covers the supporting side, the opposing side, both or neither")
    p.add_argument("--run", required=True)
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--gold", help="gold labels JSONL")
    src.add_argument("--labels", help="judge whose <name>-preds are stored in the run")
    p.add_argument("--k", type=int, default=5)
    p.add_argument("--sides", choices=SIDE_METHODS, default="auto",
                   help="how to decide the supporting perspective (auto: dataset stances, else the offline rule)")
    p.add_argument("--questions", help="questions file whose stance labels fix the sides (optional)")
    p.add_argument("--sides-llm", metavar="SPEC", help="decide the sides with an LLM judge (hf:... or openai:...)")
    p.set_defaults(func=run_leaning)
    declare(p, inputs=("run", "gold", "questions"), servers=("sides_llm",))

    s = sub.add_parser("sycophancy", help="Δ = (p − n) / p for the question, the supporting and the opposing perspective as queries")
    s.add_argument("--questions", required=True)
    s.add_argument("--corpus", required=True)
    s.add_argument("--retriever", required=True, choices=("bm25", "dense"))
    s.add_argument("--model", help="embedder for dense retrieval (hub id or path)")
    src = s.add_mutually_exclusive_group(required=True)
    src.add_argument("--gold", help="gold labels JSONL")
    src.add_argument("--judge", help="judge spec, e.g. embedded")
    s.add_argument("--k", type=int, default=5)
    s.add_argument("--sides", choices=SIDE_METHODS, default="auto")
    s.add_argument("--sides-llm", metavar="SPEC", help="decide the sides with an LLM judge (hf:... or openai:...)")
    s.set_defaults(func=run_sycophancy)
    declare(s, inputs=("questions", "corpus", "gold"), servers=("judge", "sides_llm"))


def _check_k(k: int) -> None:
    if k < 1:
        raise InputError("--k", None, None, "k must be at least 1")


def side_decider(args):
    """``(question, perspectives, stances) -> Sides``: the offline methods, or an LLM with --sides-llm."""
    if args.sides_llm:
        from ..judges import get_judge

        llm = get_judge(args.sides_llm)
        if not hasattr(llm, "yes_probability"):
            raise InputError("--sides-llm", None, None, f"judge '{args.sides_llm}' cannot answer free prompts; "
                                                         "use an hf: or openai: judge")
        return lambda q, persp, stances: infer_sides_llm(q, persp, llm.yes_probability)
    return lambda q, persp, stances: infer_sides(q, persp, stances, method=args.sides)


def _stances_by_id(path) -> dict:
    from ..datasets import load_questions

    return {q.id: q.stances for q in load_questions(path)} if path else {}


def run_leaning(args) -> dict:
    from ..datasets import load_gold

    _check_k(args.k)
    entries = read_run(args.run)
    gold = load_gold(args.gold) if args.gold else None
    stances = _stances_by_id(args.questions)
    decide = side_decider(args)
    mats, sides = [], []
    for e in entries:
        try:
            mats.append(label_matrix(e, gold=gold, judge=args.labels))
        except KeyError as err:
            raise InputError(args.run, None, f"{args.labels}-preds", str(err).strip("'\"")) from None
        except ValueError as err:
            raise InputError(args.gold, None, "perspective", str(err)) from None
        st = stances.get(e["id"], e.get("stances"))
        try:
            sides.append(decide(e["question"], e["perspectives"], st))
        except ValueError as err:
            raise InputError(args.questions or args.run, None, "stances", f"question {e['id']}: {err}") from None
    out = leaning(mats, sides, args.k)
    out.pop("buckets")
    rank = exposure_leaning(mats, sides, args.k)  # rank-aware: discounted exposure of each side
    rank.pop("per_question")
    out["rank_leaning"] = rank
    return out


def run_sycophancy(args) -> dict:
    from tqdm import tqdm

    from ..corpora.memory import load_corpus
    from ..datasets import load_gold, load_questions
    from ..retrieval import get_retriever

    from ._retrieval import check_models

    _check_k(args.k)
    check_models(args)  # a wrong --model fails before the corpus is read
    questions = [q for q in load_questions(args.questions) if len(q.perspectives) == 2]
    if not questions:
        raise InputError(args.questions, None, "perspectives", "no question has exactly two perspectives")
    corpus = load_corpus(args.corpus)
    gold = load_gold(args.gold) if args.gold else None
    judge = None
    if args.judge:
        from ..judges import JudgeError, get_judge

        try:
            judge = get_judge(args.judge)
        except (ValueError, JudgeError) as e:
            raise InputError("--judge", None, None, str(e).splitlines()[0]) from None
    try:
        retriever = get_retriever(args.retriever, corpus, args.model, progress=not args.quiet)
    except OSError as e:  # an embedder that passed the check but failed to load (a broken folder)
        raise InputError("--model", None, None, str(e).splitlines()[0] if str(e) else type(e).__name__) from None
    decide = side_decider(args)
    sides = []
    for q in questions:
        try:
            sides.append(decide(q.question, q.perspectives, q.stances))
        except ValueError as err:
            raise InputError(args.questions, None, "stances", f"question {q.id}: {err}") from None
    out = {"k": args.k, "retriever": retriever.name, "labels": f"gold:{args.gold}" if gold else judge.name}
    for form in tqdm(QUERY_FORMS, desc="query forms", disable=args.quiet, file=sys.stderr):
        queries = [query_for(form, q.question, q.perspectives, s) for q, s in zip(questions, sides)]
        hits = retriever.search(queries, args.k)
        try:
            mats = [_labels(q, [corpus[i] for i, _ in h], gold, judge) for q, h in zip(questions, hits)]
        except ValueError as err:  # a gold perspective index the question does not have
            raise InputError(args.gold, None, "perspective", str(err)) from None
        out[form] = sycophancy(mats, sides, args.k)
    return out


def _labels(question, passages, gold, judge) -> np.ndarray:
    """Label matrix of retrieved passages: gold labels by passage id, or the judge's predictions."""
    if gold is not None:
        return gold_matrix(gold, question.id, len(question.perspectives), [p.id for p in passages])
    from ..judges import judge_passages

    return judge_passages(judge, passages, question.perspectives)[1]  # read as the judge reads run passages
