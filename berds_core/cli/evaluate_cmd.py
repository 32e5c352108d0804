"""``berds evaluate``: MRecall@k, Precision@k and Precision@1 of a run."""
from __future__ import annotations

from ..metrics import evaluate_matrices
from ..runs import label_matrix, read_run
from ..errors import InputError


def register(sub) -> None:
    p = sub.add_parser("evaluate", help="score a run with gold labels or a judge's stored predictions")
    p.add_argument("--run", required=True, help="run file (BERDS JSON Lines)")
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--gold", help="gold labels JSONL: {question_id, passage_id, perspective}")
    src.add_argument("--labels", help="name of a judge whose <name>-preds are stored in the run")
    p.add_argument("--k", type=int, default=5)
    p.set_defaults(func=run)


def run(args) -> dict:
    from ..datasets import load_gold

    if args.k < 1:
        raise InputError("--k", None, None, "k must be at least 1")
    entries = read_run(args.run)
    gold = load_gold(args.gold) if args.gold else None
    mats = []
    for e in entries:
        try:
            mats.append(label_matrix(e, gold=gold, judge=args.labels))
        except KeyError as err:
            raise InputError(args.run, None, f"{args.labels}-preds", str(err).strip("'\"")) from None
    return evaluate_matrices(mats, args.k)
