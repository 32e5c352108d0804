"""``berds coverage``: union coverage of several runs and passages needed to cover.

    berds coverage --runs A.jsonl B.jsonl --gold gold.jsonl --n 5 --json

``union``: MRecall over the union of the top ``--n`` passages of every run
(BERDS Table 6), next to each run alone at depth n. ``passages_needed``: per
run, how many top passages it takes to cover all perspectives (Table 17).
Runs are aligned by question id; they must hold the same questions.
"""
from __future__ import annotations

from ..errors import InputError
from ._parsing import declare
from ..runs import read_run
from ..runs import label_matrices


def register(sub) -> None:
    p = sub.add_parser("coverage", help="MRecall of the union of several runs; passages needed to cover all perspectives")
    p.add_argument("--runs", nargs="+", required=True, metavar="RUN", help="run files (BERDS JSON Lines)")
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--gold", help="gold labels JSONL: {question_id, passage_id, perspective}")
    src.add_argument("--labels", help="name of a judge whose <name>-preds are stored in the runs")
    p.add_argument("--n", type=int, default=5, help="top passages taken from each run (default 5)")
    p.add_argument("--per-question", action="store_true", help="include per-question values")
    p.set_defaults(func=run)
    declare(p, inputs=("runs", "gold"))


def run(args) -> dict:
    from ..datasets import load_gold
    from ..eval.evaluation import passages_needed, union_coverage

    if args.n < 1:
        raise InputError("--n", None, None, "n must be at least 1")
    gold = load_gold(args.gold) if args.gold else None
    first = read_run(args.runs[0])
    order = [e["id"] for e in first]
    first_persp = {e["id"]: e["perspectives"] for e in first}
    runs = []
    needed = {}
    for path in args.runs:
        entries = first if path is args.runs[0] else read_run(path)
        by_id = {e["id"]: e for e in entries}
        missing = [q for q in order if q not in by_id]
        if missing or len(by_id) != len(order):
            what = f"question {missing[0]!r} is missing" if missing else \
                f"question {sorted(set(by_id) - set(order))[0]!r} is not in {args.runs[0]}"
            raise InputError(path, None, "id", f"runs must have the same questions: {what}")
        entries = [by_id[q] for q in order]
        for e in entries:
            if e["perspectives"] != first_persp[e["id"]]:
                raise InputError(path, None, "perspectives",
                                 f"question {e['id']!r} has other perspectives than in {args.runs[0]}")
        mats = label_matrices(path, entries, gold, args.labels)
        runs.append([([c["id"] for c in e["ctxs"]], L) for e, L in zip(entries, mats)])
        pn = passages_needed(mats)
        if not args.per_question:
            pn.pop("per_question")
        needed[str(path)] = pn
    union = union_coverage(runs, args.n)
    if args.per_question:
        union["per_question"] = dict(zip(order, union["per_question"]))
    else:
        union.pop("per_question")
    union["mrecall_single"] = dict(zip(map(str, args.runs), union["mrecall_single"]))
    return {"n_questions": len(order), "union": union, "passages_needed": needed}
