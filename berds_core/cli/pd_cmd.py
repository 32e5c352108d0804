"""``berds pd``: Perspective Diversity (DebateQA) of an answers file.

    berds pd --answers answers.jsonl --model hf:Qwen/Qwen2-0.5B-Instruct --json
    berds pd --answers debateqa_answers.jsonl --questions debateqa_test.jsonl --model hf:gpt2 --compat released
"""
from __future__ import annotations

from ..errors import InputError
from ._parsing import declare
from ._generator_options import add_backend_args, add_generator_args, generation_failed, make_generator


def register(sub) -> None:
    p = sub.add_parser("pd", help="Perspective Diversity: perplexity of each reference perspective after the answer")
    p.add_argument("--answers", required=True, help="answers JSONL ({id, generation} at least)")
    p.add_argument("--questions", help="questions file (DebateQA JSONL: partial answers are the references; "
                                       "other formats: the perspectives)")
    add_generator_args(p, "--model", dest="model", help="causal LM: hf:<model> or openai:<model>@<url> "
                                                        "(a server returning prompt logprobs, e.g. vLLM)")
    p.add_argument("--compat", choices=["released"],
                   help="DebateQA's released eval_PD.py, step by step (hf: models; answers without partial "
                        "answers in --questions are skipped; see docs/answers.md)")
    p.add_argument("--max-length", type=int, dest="max_length",
                   help="input tokens at most (default: the model's, at most 4096; --compat released: the "
                        "tokenizer's model_max_length, as the released script)")
    p.add_argument("--out", help="per-question values (JSONL)")
    add_backend_args(p)
    p.set_defaults(func=run)
    declare(p, inputs=("answers", "questions"), outputs=("out",), servers=("model",))


def run(args) -> dict:
    from ..answers.rows import scoring_rows
    from ..answers.perspective_diversity import input_limit, perspective_diversity, summarize_pd
    from ..generators import GenerationError
    from ..files.jsonio import write_jsonl

    if args.max_length is not None and args.max_length < 2:
        raise InputError("--max-length", None, None, "must be at least 2")
    mode = args.compat or "defined"
    skipped: list | None = [] if mode == "released" else None
    rows = scoring_rows(args.answers, args.questions, pd_mode=mode, skipped=skipped)
    if not rows:
        raise InputError(args.answers, None, "id", f"none of the {len(skipped or [])} answers has partial "
                                                   f"answers in {args.questions}")
    gen = make_generator(args.model, args, "--model")
    try:
        res = perspective_diversity(gen, [r["generation"] for r in rows], [r["references"] for r in rows],
                                    mode=mode, max_length=args.max_length)
    except GenerationError as err:
        raise generation_failed("--model", err) from None
    if args.out:
        write_jsonl(args.out, [{"id": r["id"], **p} for r, p in zip(rows, res)])
    out = {"model": gen.name, "mode": mode, "max_length": input_limit(gen, mode, args.max_length), **summarize_pd(res)}
    if skipped is not None:
        out["answers_skipped"] = len(skipped)
        out["skipped_ids"] = skipped[:20]
    return out
