"""``berds convincing``: which side wins? ConflictingQA's convincingness experiments on a run or on ConflictingQA.

    berds convincing --run runs/bm25.jsonl --gold gold.jsonl --model hf:Qwen/Qwen2-1.5B-Instruct --out conv.json
    berds convincing --run runs/bm25.jsonl --judge embedded --model openai:m@http://127.0.0.1:8000 --out conv.json
    berds convincing --data conflictingqa.parquet --model hf:... --edits control,prefix,keywords,stance --out conv.json

Writes every paragraph's win-rate (with its interval and features), the
position bias, the feature correlations, the counterfactual effects and the
raw outcomes to ``--out`` (JSON); prints the summary.
"""
from __future__ import annotations

from ..errors import InputError
from ._parsing import declare
from ._generator_options import add_backend_args, add_generator_args, generation_failed, make_generator


def register(sub) -> None:
    p = sub.add_parser("convincing", help="win-rates of paragraphs paired with opposing ones (ConflictingQA)")
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--run", help="run file: its passages are the paragraphs")
    src.add_argument("--data", help="ConflictingQA file (JSONL, CSV/TSV or Parquet; pickles are refused)")
    lab = p.add_mutually_exclusive_group()
    lab.add_argument("--gold", help="gold labels JSONL: passage stances from the gold labels and the question's sides")
    lab.add_argument("--judge", help="judge spec: passage stances from the judge's labels and the question's sides")
    p.add_argument("--sides", choices=["auto", "stances", "order", "rule"], default="auto",
                   help="how the supporting perspective is decided (as in berds leaning)")
    p.add_argument("--k", type=int, help="with --run: the top k passages of each question (default: all)")
    add_generator_args(p, "--model", dest="model", help="the LLM whose Yes/No answer decides: hf:... or openai:...")
    p.add_argument("--pairing", choices=["all", "sample"], default="all")
    p.add_argument("--max-pairs", type=int, dest="max_pairs", help="with --pairing sample: pairs per question")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--min-opponents", type=int, default=5, dest="min_opponents",
                   help="paragraphs with fewer distinct opponents are dropped (and counted)")
    p.add_argument("--no-features", action="store_true", dest="no_features")
    p.add_argument("--ppl-model", dest="ppl_model", metavar="SPEC", help="causal LM for the perplexity feature")
    p.add_argument("--edits", default="control,prefix,keywords",
                   help="comma-separated counterfactual edits: control, prefix, keywords (deterministic), "
                        "science, information, objective, stance (LLM-written); 'none' for no edits")
    p.add_argument("--editor", metavar="SPEC", help="generator writing the LLM edits (default: --model)")
    p.add_argument("--edit-sample", type=int, default=20, dest="edit_sample",
                   help="paragraphs (seeded sample of the kept ones) the edits are applied to; 0 = all")
    p.add_argument("--bootstrap", type=int, default=1000)
    p.add_argument("--out", required=True, help="results (JSON)")
    add_backend_args(p)
    p.set_defaults(func=run)
    declare(p, inputs=("run", "data", "gold"), outputs=("out",), servers=("model", "editor", "ppl_model", "judge"))


def load_sets(args):
    from ..convincing import from_run, load_conflictingqa

    if args.data:
        return load_conflictingqa(args.data), {}
    from ..runs import read_run

    entries = read_run(args.run)
    gold = judge = None
    if args.gold:
        from ..datasets import load_gold

        gold = load_gold(args.gold)
    elif args.judge:
        from ..judges import JudgeError, get_judge

        try:
            judge = get_judge(args.judge)
        except (ValueError, JudgeError) as e:
            raise InputError("--judge", None, None, str(e)) from None
    elif not any("stance" in c for e in entries for c in e["ctxs"]):
        raise InputError(args.run, None, "stance", "the passages carry no stance: give --gold or --judge")
    try:
        return from_run(entries, gold=gold, judge=judge, k=args.k, side_method=args.sides)
    except ValueError as e:  # a gold index the question lacks, or --sides stances without stance labels
        raise InputError(args.gold or args.run, None, "perspective" if args.gold else "stances", str(e)) from None


def run(args) -> dict:
    from ..convincing import EDITS, Experiment, run_experiment
    from ..generators import GenerationError
    from ..files.jsonio import atomic_write

    edits = [] if args.edits.strip().lower() == "none" else [e.strip() for e in args.edits.split(",") if e.strip()]
    bad = [e for e in edits if e not in EDITS]
    if bad:
        raise InputError("--edits", None, None, f"unknown edit {bad[0]!r}; choose from {', '.join(EDITS)}")
    for flag, val, low in (("--min-opponents", args.min_opponents, 1), ("--max-pairs", args.max_pairs, 1),
                           ("--k", args.k, 1), ("--edit-sample", args.edit_sample, 0), ("--bootstrap", args.bootstrap, 1)):
        if val is not None and val < low:
            raise InputError(flag, None, None, f"must be at least {low}")
    if args.pairing == "sample" and not args.max_pairs:
        raise InputError("--max-pairs", None, None, "--pairing sample needs --max-pairs")
    sets, counts = load_sets(args)
    decider = make_generator(args.model, args, "--model")
    editor = make_generator(args.editor, args, "--editor") if args.editor else decider
    ppl = make_generator(args.ppl_model, args, "--ppl-model") if args.ppl_model else None
    try:
        settings = Experiment(pairing=args.pairing, max_pairs=args.max_pairs, seed=args.seed,
                              min_opponents=args.min_opponents, features=not args.no_features, edits=tuple(edits),
                              edit_sample=args.edit_sample or None, n_boot=args.bootstrap)
        res = run_experiment(sets, decider, settings, ppl_generator=ppl, editor=editor, progress=not args.quiet)
    except GenerationError as err:
        raise generation_failed("--model/--editor", err) from None
    res.update(counts)
    import json

    with atomic_write(args.out) as fh:
        json.dump(res, fh, ensure_ascii=False)
    return summary(res, args.out)


def summary(res: dict, out) -> dict:
    corr = res.get("correlations") or {}
    cf = (res.get("counterfactuals") or {}).get("edits") or {}
    return {"out": str(out), "decider": res["decider"], "questions": res["questions"], "paragraphs": res["paragraphs"],
            "comparisons": res["comparisons"], "dropped_paragraphs": res["dropped_paragraphs"],
            "position_bias": res["position_bias"], "by_side": res["by_side"],
            "correlations": {k: v for k, v in corr.items() if v["rho"] is not None},
            "edits": cf, **{k: res[k] for k in ("skipped_questions", "passages_without_side") if k in res}}
