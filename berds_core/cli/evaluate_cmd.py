"""``berds evaluate``: MRecall@k, Precision@k and Precision@1 of a run.

Top-level keys ``n, mrecall, precision, precision_at_1`` are for ``--k``
(issue 2); ``at`` has every k of ``--ks`` (default 5 and 10) plus ``--k``,
``subsets`` per subset, ``macro`` the mean over subsets, ``ci`` / ``macro_ci``
seeded bootstrap intervals. ``--compare RUN2`` adds ``compare``: RUN2 - RUN per
metric with its bootstrap interval and a randomisation p-value.

With ``--gold``, every label must name a perspective its question has, and a
question of the run with no gold label at all is an error unless
``--missing-gold skip`` (left out) or ``zero`` (scored as covering nothing);
``missing_gold`` reports the policy and the count.
"""
from __future__ import annotations

from ..errors import InputError
from ..runs import label_matrix, read_run, read_run_lines


def register(sub) -> None:
    p = sub.add_parser("evaluate", help="score a run with gold labels or a judge's stored predictions")
    p.add_argument("--run", required=True, help="run file (BERDS JSON Lines)")
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--gold", help="gold labels JSONL: {question_id, passage_id, perspective}")
    src.add_argument("--labels", help="name of a judge whose <name>-preds are stored in the run")
    p.add_argument("--missing-gold", choices=("error", "skip", "zero"), default="error",
                   help="questions with no gold label at all: error (default), skip them, or score them zero")
    p.add_argument("--k", type=int, default=5, help="k of the top-level keys (default 5)")
    p.add_argument("--ks", default="5,10", help="comma-separated ks reported under 'at' (default 5,10)")
    p.add_argument("--compare", metavar="RUN2", help="a second run of the same questions: paired comparison RUN2 - RUN")
    p.add_argument("--bootstrap", type=int, default=1000, help="bootstrap resamples (0: no intervals)")
    p.add_argument("--seed", type=int, default=0, help="bootstrap seed")
    p.add_argument("--per-question", action="store_true", help="include per-question scores")
    p.set_defaults(func=run)


def parse_ks(text: str, k: int) -> list[int]:
    try:
        ks = [int(x) for x in str(text).split(",") if x.strip()]
    except ValueError:
        raise InputError("--ks", None, None, f"expected comma-separated integers, got {text!r}") from None
    if any(x < 1 for x in ks) or k < 1:
        raise InputError("--ks" if any(x < 1 for x in ks) else "--k", None, None, "k must be at least 1")
    return sorted(set(ks) | {k})


def matrices_of(path, entries, gold, judge, gold_path=None):
    mats = []
    for e in entries:
        try:
            mats.append(label_matrix(e, gold=gold, judge=judge))
        except KeyError as err:
            raise InputError(path, None, f"{judge}-preds", str(err).strip("'\"")) from None
        except ValueError as err:  # a gold perspective index the question does not have
            raise InputError(gold_path or "gold", None, "perspective", str(err)) from None
    return mats


def run(args) -> dict:
    from ..evaluation import compare_runs, scores, summarize

    ks = parse_ks(args.ks, args.k)
    if args.bootstrap < 0:
        raise InputError("--bootstrap", None, None, "must be 0 or more")
    entries, lines = read_run_lines(args.run)
    gold, missing_gold, run_ids = None, None, [e["id"] for e in entries]
    if args.gold:
        from ..datasets.gold import check_run_gold, read_gold

        gold, gold_lines = read_gold(args.gold)
        keep, without = check_run_gold(entries, gold, gold_lines, args.gold, args.run, lines, args.missing_gold)
        entries = [entries[i] for i in keep]
        missing_gold = {"policy": args.missing_gold, "count": len(without), "ids": without}
    mats = matrices_of(args.run, entries, gold, args.labels, args.gold)
    subsets = [e.get("subset") or "all" for e in entries]
    summ = summarize(mats, subsets, ks=ks, n_boot=max(args.bootstrap, 1), seed=args.seed)
    top = summ["at"][str(args.k)]
    out = {"n": summ["n"], "mrecall": top["mrecall"], "precision": top["precision"],
           "precision_at_1": top["precision_at_1"], "k": args.k, "at": summ["at"],
           "subsets": summ["subsets"], "macro": summ["macro"]}
    if missing_gold is not None:
        out["missing_gold"] = missing_gold
    if args.bootstrap:
        out.update(ci=summ["ci"], macro_ci=summ["macro_ci"], bootstrap={"n": args.bootstrap, "seed": args.seed})
    if args.per_question:
        per_q = scores(mats, ks)
        out["per_question"] = [{"id": e["id"], **{name: float(v[i]) for name, v in per_q.items()}}
                               for i, e in enumerate(entries)]
    if args.compare:
        other = read_run(args.compare)
        by_id = {e["id"]: e for e in other}
        missing = [e["id"] for e in entries if e["id"] not in by_id]
        if missing or len(other) != len(run_ids):
            extra = sorted(set(by_id) - set(run_ids))
            what = f"question {missing[0]!r} of {args.run} is missing" if missing else \
                f"question {extra[0]!r} is not in {args.run}"
            raise InputError(args.compare, None, "id", f"runs must have the same questions: {what}")
        other = [by_id[e["id"]] for e in entries]
        if gold is not None:  # the same questions as RUN (after --missing-gold); labels checked against RUN2 too
            check_run_gold(other, gold, gold_lines, args.gold, args.compare, missing="zero")
        mats2 = matrices_of(args.compare, other, gold, args.labels)
        cmp = compare_runs(mats, mats2, ks=ks, n_boot=max(args.bootstrap, 1), seed=args.seed)
        out["compare"] = {"run": str(args.run), "run2": str(args.compare), "direction": "run2 - run",
                          "metrics": cmp}
    return out
