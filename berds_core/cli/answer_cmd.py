"""``berds answer`` (RAG answers from a run's top-k passages) and ``berds answer-eval`` (one table:
retrieval MRecall@k, answer coverage, P.D. and D.A. per configuration).

    berds answer --run runs/bm25.jsonl --generator openai:qwen2-1.5b@http://127.0.0.1:8000 \\
          --k 5 --prompt comprehensive --out answers/bm25.comprehensive.jsonl
    berds answer-eval --answers answers/bm25.jsonl answers/diverse.jsonl --judge embedded \\
          --pd-model hf:Qwen/Qwen2-0.5B-Instruct --da-model openai:qwen2-1.5b@http://127.0.0.1:8000 --json
"""
from __future__ import annotations

from pathlib import Path

from ..errors import InputError
from ._parsing import declare
from ._generator_options import add_backend_args, add_generator_args, generation_failed, make_generator


def register(sub) -> None:
    p = sub.add_parser("answer", help="write a RAG answer per question from its top-k passages (cited by rank)")
    p.add_argument("--run", required=True, help="run file (BERDS JSON Lines)")
    add_generator_args(p)
    p.add_argument("--k", type=int, default=5, help="passages per answer (default 5)")
    p.add_argument("--prompt", choices=["basic", "comprehensive"], default="basic")
    p.add_argument("--max-new-tokens", type=int, default=512, dest="max_new_tokens")
    p.add_argument("--limit", type=int, help="only the first N questions")
    p.add_argument("--out", required=True, help="answers JSONL ({id, question, perspectives, generation, ctxs, ...})")
    add_backend_args(p)
    p.set_defaults(func=run_answer)
    declare(p, inputs=("run",), outputs=("out",), servers=("generator",),
            derived=lambda args: [("--out", partial_path(args.out))])

    e = sub.add_parser("answer-eval", help="retrieval MRecall@k, answer coverage, P.D. and D.A. side by side")
    e.add_argument("--answers", nargs="+", required=True, metavar="ANSWERS", help="answers files (one per configuration)")
    e.add_argument("--names", nargs="+", metavar="NAME", help="configuration names (default: the file names)")
    e.add_argument("--questions", help="questions file (needed for answers files without question/perspectives, "
                                       "e.g. DebateQA's {id, generation}; DebateQA partial answers become P.D.'s references)")
    src = e.add_mutually_exclusive_group()
    src.add_argument("--judge", help="perspective-detection judge for answer coverage (and retrieval MRecall)")
    src.add_argument("--gold", help="gold labels JSONL for retrieval MRecall (answer coverage then needs --answer-judge)")
    e.add_argument("--answer-judge", help="judge for answer coverage when --gold labels the passages")
    add_generator_args(e, "--pd-model", dest="pd_model", required=False, help="causal LM for P.D. (hf:... or openai:...)")
    add_generator_args(e, "--da-model", dest="da_model", required=False, help="instruction-tuned LLM for D.A.")
    e.add_argument("--compat", choices=["released"], help="P.D. as DebateQA's released script computes it")
    e.add_argument("--max-length", type=int, dest="max_length", help="P.D.: input tokens at most (default: the model's; "
                                                                     "--compat released: the tokenizer's model_max_length)")
    e.add_argument("--k", type=int, help="retrieval depth / answer MRecall bar (default: each answer's own k)")
    e.add_argument("--bootstrap", type=int, default=1000, help="bootstrap resamples for the intervals")
    e.add_argument("--per-question", dest="per_question", help="write per-question values (JSONL)")
    add_backend_args(e)
    e.set_defaults(func=run_eval)
    declare(e, inputs=("answers", "questions", "gold"), outputs=("per_question",),
            servers=("judge", "answer_judge", "pd_model", "da_model"))


def run_answer(args) -> dict:
    from ..answers import AnswersIncomplete, answer_rows
    from ..files.jsonio import write_jsonl
    from ..runs import read_run

    if args.k < 1:
        raise InputError("--k", None, None, "k must be at least 1")
    if args.max_new_tokens < 1:
        raise InputError("--max-new-tokens", None, None, "must be at least 1")
    entries = read_run(args.run)
    if args.limit is not None:
        entries = entries[:max(0, args.limit)]
    gen = make_generator(args.generator, args)
    try:
        rows = answer_rows(entries, gen, k=args.k, prompt=args.prompt, max_new_tokens=args.max_new_tokens,
                           progress=not args.quiet)
    except AnswersIncomplete as err:
        kept = ""
        if err.done:
            partial = partial_path(args.out)
            write_jsonl(partial, err.done)
            kept = f"{len(err.done)} answers made so far written to {partial}"
        raise generation_failed("--generator", err, (kept + "; " if kept else "") +
                                "answers are cached: rerun to resume") from None
    write_jsonl(args.out, rows)
    empty = sum(1 for r in rows if not r["generation"])
    return {"out": str(args.out), "answers": len(rows), "empty": empty, "generator": gen.name,
            "prompt": args.prompt, "k": args.k}


def partial_path(out) -> Path:
    """Where answers made before a failure go: beside --out (its target, for a link), which is left as it
    was; ``answers.partial.jsonl`` in the current folder when --out is standard output, a device or a FIFO."""
    from ..files.sinks import resolve_output

    sink = resolve_output(out, "--out")
    if not sink.atomic:
        return Path("answers.partial.jsonl")
    p = sink.path
    return p.with_name(p.stem + ".partial" + (p.suffix or ".jsonl"))


def run_eval(args) -> dict:
    from ..answers.coverage import AnswerScoring, evaluate_answers, table_row
    from ..answers.rows import join_questions, load_answers, load_questions_and_references
    from ..generators import GenerationError
    from ..files.jsonio import write_jsonl

    if args.names and len(args.names) != len(args.answers):
        raise InputError("--names", None, None, f"give one name per answers file ({len(args.answers)})")
    if args.k is not None and args.k < 1:
        raise InputError("--k", None, None, "k must be at least 1")
    questions, refs = (load_questions_and_references(args.questions, args.compat or "defined")  # P.D.'s texts
                       if args.questions else (None, None))
    gold = None
    if args.gold:
        from ..datasets import load_gold

        gold = load_gold(args.gold)
    judge = _judge(args.judge or args.answer_judge)
    pd_gen = make_generator(args.pd_model, args, "--pd-model") if args.pd_model else None
    da_gen = make_generator(args.da_model, args, "--da-model") if args.da_model else None
    if judge is None and gold is None and pd_gen is None and da_gen is None:
        raise InputError("answer-eval", None, None, "nothing to compute: give --judge, --gold, --pd-model or --da-model")
    scoring = AnswerScoring(judge=judge, gold=gold, pd_generator=pd_gen, da_generator=da_gen,
                            pd_mode=args.compat or "defined", max_length=args.max_length, n_boot=max(1, args.bootstrap))
    names = args.names or [Path(a).stem for a in args.answers]
    table, summaries, per_question = [], {}, []
    for name, path in zip(names, args.answers):
        rows = join_questions(path, load_answers(path), questions, refs)
        try:
            res = evaluate_answers(rows, scoring, k=args.k)
        except GenerationError as err:
            raise generation_failed("--pd-model/--da-model", err) from None
        except ValueError as err:  # a gold perspective index the question does not have
            raise InputError(args.gold or path, None, "perspective", str(err)) from None
        table.append(table_row(name, res["summary"]))
        summaries[name] = res["summary"]
        per_question += [dict(q, configuration=name) for q in res["per_question"]]
    if args.per_question:
        write_jsonl(args.per_question, per_question)
    return {"table": table, "summaries": summaries, "judge": getattr(judge, "name", None),
            "pd_model": getattr(pd_gen, "name", None), "da_model": getattr(da_gen, "name", None)}


def _judge(spec):
    if not spec:
        return None
    from ..judges import JudgeError, get_judge

    try:
        return get_judge(spec)
    except (ValueError, JudgeError) as e:
        raise InputError("--judge", None, None, str(e)) from None
