"""``berds evaluate``: MRecall@k, Precision@k and Precision@1 of a run.

Top-level keys ``n, mrecall, precision, precision_at_1`` are for ``--k``
(issue 2); ``at`` has every k of ``--ks`` (default 5 and 10) plus ``--k``,
``subsets`` per subset, ``macro`` the mean over subsets, ``ci`` / ``macro_ci``
seeded bootstrap intervals. Beside MRecall / Precision, every k <= 20 reports
the TREC diversity measures ``alpha_ndcg``, ``err_ia``, ``p_ia``, ``strecall``
(ndeval through ir_measures, perspectives as subtopics; see
``berds_core.eval.diversity``). ``--compare RUN2 [RUN3 ...]`` adds
``significance`` (each run against RUN: randomisation and paired t-tests per
metric, Holm-corrected, effect sizes with intervals; ``berds_core.eval.significance``),
scores the diversity measures of every run on the shared pool (the union of the
runs' judged passages), and, with a single RUN2, the earlier ``compare`` block
(RUN2 - RUN per metric).

With ``--labels``, ``--policy`` says how the judge's labels count (``berds_core.experiment``): ``threshold``
(the default: the stored ``-preds``, the BERDS paper's rule) or ``confident`` (only pairs above the judge's
unsure band, read from the run's ``-probs`` and ``-band``; ``unsure`` counts the pairs left out). The JSON
names it as ``policy`` (``gold`` with ``--gold``).

With ``--gold``, every label must name a perspective its question has, and a
question of the run with no gold label at all is an error unless
``--missing-gold skip`` (left out) or ``zero`` (scored as covering nothing);
``missing_gold`` reports the policy and the count.

``--measures`` names measures the studio's way or ``ir_measures``' way
(``MRecall@5,P@5,alpha_nDCG@10,ERR_IA@10``; see ``berds_core.eval.measures``):
their cutoffs join ``--ks``, ``measures`` holds their means under their printed
keys (``mrecall@5``, ``precision@5``, ``alpha_ndcg@10``, ...), and
``per_question`` and ``significance`` are limited to them.

A k deeper than the run keeps the TREC convention (the missing ranks count as
passages that support nothing, so Precision@k divides by k), but says so:
``run_depth`` (the fewest and most passages a question of RUN has) is in the
JSON and one warning line goes to stderr.
"""
from __future__ import annotations

import sys

from ..errors import InputError
from ._parsing import add_policy_arg, declare
from ..runs import align_runs, authors_judge, label_matrices, read_run, read_run_lines, run_depth


def register(sub) -> None:
    p = sub.add_parser("evaluate", help="score a run with gold labels or a judge's stored predictions")
    p.add_argument("--run", required=True, help="run file (BERDS JSON Lines)")
    src = p.add_mutually_exclusive_group()
    src.add_argument("--gold", help="gold labels JSONL: {question_id, passage_id, perspective}")
    src.add_argument("--labels", help="name of a judge whose <name>-preds are stored in the run (default for "
                                      "the BERDS authors' *.mistralpred* / *.gpt4pred* files: mistral / gpt4)")
    add_policy_arg(p)
    p.add_argument("--missing-gold", choices=("error", "skip", "zero"), default="error",
                   help="with --gold, questions with no gold label at all: error (default), skip them, "
                        "or score them zero")
    p.add_argument("--k", type=int, default=5, help="k of the top-level keys (default 5)")
    p.add_argument("--ks", default="5,10", help="comma-separated ks reported under 'at' (default 5,10)")
    p.add_argument("--compare", metavar="RUN2", nargs="+",
                   help="runs of the same questions compared with RUN: paired tests per metric, corrected")
    add_significance_args(p)
    p.add_argument("--bootstrap", type=int, default=1000, help="bootstrap resamples (0: no intervals)")
    p.add_argument("--seed", type=int, default=0, help="bootstrap seed")
    p.add_argument("--per-question", action="store_true", help="include per-question scores")
    p.add_argument("--measures", metavar="LIST",
                   help="comma-separated measures, e.g. MRecall@5,P@5,alpha_nDCG@10,ERR_IA@10 (also mrecall@5, "
                        "precision@5, ...): their means under 'measures'; per-question scores and tests only for them")
    p.set_defaults(func=run)
    declare(p, inputs=("run", "gold", "compare"))


def add_significance_args(p) -> None:
    from ..eval.diversity import DEFAULT_ALPHA
    from ..eval.significance import CORRECTIONS, DEFAULT_RESAMPLES, TESTS

    g = p.add_argument_group("diversity measures and significance")
    g.add_argument("--ndcg-alpha", type=float, default=DEFAULT_ALPHA, help="alpha of alpha-nDCG (default 0.5)")
    g.add_argument("--test", choices=TESTS, default="permutation",
                   help="test behind the corrected p and the stars (both are reported; default permutation)")
    g.add_argument("--correction", choices=CORRECTIONS, default="holm",
                   help="multiple-comparison correction per metric across the comparisons (default holm)")
    g.add_argument("--pairs", choices=("baseline", "all"), default="baseline",
                   help="compare every run with RUN (baseline) or every pair of runs (all)")
    g.add_argument("--permutations", type=int, default=DEFAULT_RESAMPLES,
                   help=f"random sign patterns of the randomisation test (exact below 2^n; default {DEFAULT_RESAMPLES})")


def parse_ks(text: str, k: int) -> list[int]:
    try:
        ks = [int(x) for x in str(text).split(",") if x.strip()]
    except ValueError:
        raise InputError("--ks", None, None, f"expected comma-separated integers, got {text!r}") from None
    if any(x < 1 for x in ks) or k < 1:
        raise InputError("--ks" if any(x < 1 for x in ks) else "--k", None, None, "k must be at least 1")
    return sorted(set(ks) | {k})


def chosen_measures(args, ks: list[int]) -> tuple[list, list[int]]:
    """``--measures`` parsed (``[]`` without it) and ``ks`` with their cutoffs; an alpha given in
    ``alpha_nDCG(alpha=…)@k`` becomes ``--ndcg-alpha`` (InputError when the two disagree)."""
    from ..eval.diversity import DEFAULT_ALPHA
    from ..eval.measures import parse_measures

    if args.measures is None:
        return [], ks
    chosen = parse_measures(args.measures, source="--measures")
    if not chosen:
        raise InputError("--measures", None, None, "name at least one measure, e.g. MRecall@5,alpha_nDCG@10")
    alphas = {m.alpha for m in chosen if m.alpha is not None}
    if len(alphas) > 1 or (alphas and args.ndcg_alpha != DEFAULT_ALPHA and args.ndcg_alpha not in alphas):
        raise InputError("--measures", None, None, "alpha_nDCG is computed at one alpha per call: give one "
                                                   "alpha (in --measures or --ndcg-alpha)")
    if alphas:
        args.ndcg_alpha = alphas.pop()
    return chosen, sorted(set(ks) | {m.cutoff for m in chosen})


def warn_depth(ks, runs) -> None:
    """One stderr line when a k goes deeper than a run (the scores keep the TREC convention)."""
    for path, depth in runs:
        deeper = [k for k in ks if k > depth["max"]]
        if deeper:
            ks_text = ", ".join(str(k) for k in deeper)
            sys.stderr.write(f"berds evaluate: warning: k = {ks_text} is deeper than {path} (at most {depth['max']} "
                             f"passages per question): the missing ranks count as supporting nothing, so "
                             f"Precision@k divides by k (the TREC convention)\n")
            return


def run(args) -> dict:
    from ..datasets.gold import check_run_gold, check_run_ids, read_gold
    from ..eval.report import with_diversity
    from ..experiment import score

    if not args.gold and not args.labels:
        args.labels = authors_judge(args.run)  # their --compute_only: the judge the file is named for
        if not args.labels:
            raise InputError("--labels", None, None, "give --gold FILE or --labels JUDGE")
    ks = parse_ks(args.ks, args.k)
    chosen, ks = chosen_measures(args, ks)
    if args.bootstrap < 0:
        raise InputError("--bootstrap", None, None, "must be 0 or more")
    if not 0.0 <= args.ndcg_alpha <= 1.0:
        raise InputError("--ndcg-alpha", None, None, f"must be in [0, 1], got {args.ndcg_alpha}")
    if args.permutations < 1:
        raise InputError("--permutations", None, None, "must be at least 1")
    entries, lines = read_run_lines(args.run)
    others = [(path, align_runs(args.run, entries, path, read_run(path))) for path in (args.compare or [])]
    gold, missing_gold = None, None
    if args.gold:
        gold, gold_lines = read_gold(args.gold)
        keep, without = check_run_gold(entries, gold, gold_lines, args.gold, args.run, lines, args.missing_gold)
        entries = [entries[i] for i in keep]
        others = [(path, [ents[i] for i in keep]) for path, ents in others]
        for path, ents in others:  # the same questions as RUN (after --missing-gold); labels checked against each
            check_run_gold(ents, gold, gold_lines, args.gold, path, missing="zero")
        for path, ents in [(args.run, entries)] + others:  # ids that match nothing in the gold
            warning = check_run_ids(ents, gold, args.gold, path)
            if warning:
                sys.stderr.write(f"berds evaluate: warning: {warning}\n")
        missing_gold = {"policy": args.missing_gold, "count": len(without), "ids": without}
    label_matrices(args.run, entries, gold, args.labels, args.gold)  # a line without the labels: named here
    for path, ents in others:
        label_matrices(path, ents, gold, args.labels, args.gold)
    report = score(entries, gold=gold, judge=args.labels, policy=args.policy, ks=ks)
    other_reports = [score(ents, gold=gold, judge=args.labels, policy=args.policy, ks=ks) for _, ents in others]
    try:  # the ndeval measures, on the shared pool of every compared run
        report, *other_reports = with_diversity([report] + other_reports, gold=gold, ks=ks, alpha=args.ndcg_alpha)
    except ValueError as err:
        raise InputError(args.gold or args.run, None, "perspective", str(err)) from None
    report.missing_gold = missing_gold
    if others:
        named = {}
        for (path, _), r2 in zip(others, other_reports):
            if str(path) in named or str(path) == str(args.run):
                raise InputError(path, None, None, "the same run file is given twice")
            named[str(path)] = r2
        report = report.against(str(args.run), named, pairs=args.pairs, metrics=[m.key for m in chosen] or None,
                                correction=args.correction, test=args.test, n_resamples=args.permutations,
                                n_boot=max(args.bootstrap, 1), seed=args.seed)
    out = report.to_dict(args.k, measures=[m.key for m in chosen], per_question=args.per_question,
                         bootstrap=args.bootstrap, seed=args.seed)
    depth = out["run_depth"]
    warn_depth(ks, [(args.run, depth)] + [(path, run_depth(r.entries))  # on success only
                                          for (path, _), r in zip(others, other_reports)])
    return out
