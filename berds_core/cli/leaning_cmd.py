"""``berds leaning`` and ``berds sycophancy``: the analyses of BERDS section 8."""
from __future__ import annotations

import sys

from ..errors import InputError
from ._parsing import add_policy_arg, declare
from ..eval.leaning import QUERY_FORMS, exposure_leaning, infer_sides, infer_sides_llm, leaning
from ..retrieval import CORPUS_RETRIEVERS
from ..runs import read_run

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
    add_policy_arg(p)
    p.set_defaults(func=run_leaning)
    declare(p, inputs=("run", "gold", "questions"), servers=("sides_llm",))

    s = sub.add_parser("sycophancy", help="Δ = (p − n) / p for the question, the supporting and the opposing perspective as queries")
    s.add_argument("--questions", required=True)
    s.add_argument("--corpus", required=True)
    s.add_argument("--retriever", required=True, choices=CORPUS_RETRIEVERS)
    s.add_argument("--model", help="embedder for dense retrieval (hub id or path)")
    src = s.add_mutually_exclusive_group(required=True)
    src.add_argument("--gold", help="gold labels JSONL")
    src.add_argument("--judge", help="judge spec, e.g. embedded")
    s.add_argument("--k", type=int, default=5)
    s.add_argument("--sides", choices=SIDE_METHODS, default="auto")
    s.add_argument("--sides-llm", metavar="SPEC", help="decide the sides with an LLM judge (hf:... or openai:...)")
    add_policy_arg(s)
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
    from ..experiment import policy_name, score

    _check_k(args.k)
    entries = read_run(args.run)
    gold = load_gold(args.gold) if args.gold else None
    stances = _stances_by_id(args.questions)
    decide = side_decider(args)
    mats, sides = [], []
    for e in entries:
        try:
            mats.append(score([e], gold=gold, judge=args.labels, policy=args.policy).matrices[0])
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
    out["policy"] = policy_name(gold is not None, args.policy)
    rank = exposure_leaning(mats, sides, args.k)  # rank-aware: discounted exposure of each side
    rank.pop("per_question")
    out["rank_leaning"] = rank
    return out


def run_sycophancy(args) -> dict:
    from tqdm import tqdm

    from ..corpora.memory import load_corpus
    from ..datasets import load_gold, load_questions
    from ..diversify.methods import find_method
    from ..experiment import Labels, policy_name, side_rows, sycophancy_summary
    from ..retrieval import get_retriever
    from ..retrieval.caching import DEFAULT_DEPTH

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
    pipeline = find_method("none").pipeline(DEFAULT_DEPTH)  # plain retrieval, one search a query form, as the page
    out = {"k": args.k, "retriever": retriever.name, "labels": f"gold:{args.gold}" if gold else judge.name,
           "policy": policy_name(gold is not None, args.policy)}
    for form in tqdm(QUERY_FORMS, desc="query forms", disable=args.quiet, file=sys.stderr):
        try:
            rows = side_rows(questions, {q.id: s for q, s in zip(questions, sides) if s is not None}, form, args.k,
                             corpus_for=lambda q: corpus, retriever_for=lambda c: retriever, pipeline=pipeline,
                             labels=Labels(gold=gold, judge=judge, policy=args.policy))
        except ValueError as err:  # a gold perspective index the question does not have
            raise InputError(args.gold, None, "perspective", str(err)) from None
        out[form] = sycophancy_summary(rows)
    return out
