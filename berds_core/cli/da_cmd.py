"""``berds da``: Dispute Awareness (DebateQA) of an answers file, from Yes/No log-probabilities.

    berds da --answers answers.jsonl --model openai:qwen2-1.5b@http://127.0.0.1:8000 --json
"""
from __future__ import annotations

from ..errors import InputError
from ._parsing import declare
from ._generator_options import add_backend_args, add_generator_args, generation_failed, make_generator


def register(sub) -> None:
    p = sub.add_parser("da", help="Dispute Awareness: does each answer acknowledge that its question is debated?")
    p.add_argument("--answers", required=True, help="answers JSONL ({id, generation} at least)")
    p.add_argument("--questions", help="questions file, for answers files without the question text")
    add_generator_args(p, "--model", dest="model", help="instruction-tuned LLM: hf:<model> or openai:<model>@<url>")
    p.add_argument("--threshold", type=float, default=0.5, help="P(Yes) at or above which an answer is aware")
    p.add_argument("--out", help="per-question values (JSONL)")
    add_backend_args(p)
    p.set_defaults(func=run)
    declare(p, inputs=("answers", "questions"), outputs=("out",), servers=("model",))


def run(args) -> dict:
    from ..answers.dispute_awareness import dispute_awareness
    from ..answers.rows import scoring_rows
    from ..generators import GenerationError
    from ..files.jsonio import write_jsonl

    if not 0.0 <= args.threshold <= 1.0:
        raise InputError("--threshold", None, None, "must be between 0 and 1")
    rows = scoring_rows(args.answers, args.questions)
    gen = make_generator(args.model, args, "--model")
    try:
        probs, labels = dispute_awareness(gen, [r["question"] for r in rows], [r["generation"] for r in rows],
                                          threshold=args.threshold)
    except GenerationError as err:
        raise generation_failed("--model", err) from None
    if args.out:
        write_jsonl(args.out, [{"id": r["id"], "da_prob": float(p), "da": int(lab)}
                               for r, p, lab in zip(rows, probs, labels)])
    return {"model": gen.name, "n": len(rows), "da": float(labels.mean()) if len(labels) else None,
            "mean_p_yes": float(probs.mean()) if len(probs) else None}
