"""``berds annotations import|label|undo|adjudicate|progress|export|tasks|demo|guidelines`` and ``berds agreement``.

The round's quality-control actions (``round``, ``checks``, ``pause``, ``resume``, ``qualification``,
``answer``, ``reliability``, ``review``, ``judge-failures``, ``health``) live in
:mod:`berds_core.cli._annotations_round`.
"""
from __future__ import annotations

import sys
from pathlib import Path

from ..errors import InputError
from ._parsing import declare
from ..lab.store import SKIP, StoreError
from ._annotations_round import (check_qualification_length, control_flags, register_actions, round_controls,
                                simulate_demo)
from ._lab_db import add_db_args, db_input, open_store, store_to_fill


def register(sub) -> None:
    ann = sub.add_parser("annotations", help="the annotation store: import, label, export, build task sets")
    acts = ann.add_subparsers(dest="action", required=True, parser_class=type(ann))

    p = acts.add_parser("import", help="import a human-pairs TSV (question, id, document, perspective, label)")
    add_db_args(p)
    p.add_argument("--pairs", required=True, help="human-pairs TSV")
    p.add_argument("--annotator", help="queue the pairs for this annotator (and, by default, store the file's labels "
                                       "as theirs)")
    p.add_argument("--labels-are", choices=["annotator", "reference", "ignore"], default=None,
                   help="what the file's labels are: the annotator's, reference labels (gold known in advance, "
                        "used for calibration), or ignored; required when the file has labels and no --annotator")
    p.add_argument("--task-set", help="task set name (default: the file name without extension)")
    p.set_defaults(func=cmd_import)
    declare(p, inputs=("pairs",), more_inputs=db_input)

    p = acts.add_parser("label", help="label one pair (scripted labelling)")
    add_db_args(p)
    p.add_argument("--annotator", required=True)
    p.add_argument("--pair", required=True, help="pair id")
    p.add_argument("--label", required=True, choices=["0", "1", SKIP])
    p.add_argument("--unsure", action="store_true")
    p.add_argument("--note")
    p.add_argument("--unassigned", action="store_true",
                   help="label a pair that is not in the annotator's queue (refused by default once the "
                        "database has task sets)")
    p.set_defaults(func=cmd_label)
    declare(p, more_inputs=db_input)

    p = acts.add_parser("undo", help="undo the annotator's latest label")
    add_db_args(p)
    p.add_argument("--annotator", required=True)
    p.set_defaults(func=cmd_undo)
    declare(p, more_inputs=db_input)

    p = acts.add_parser("adjudicate", help="set the gold label of a pair")
    add_db_args(p)
    p.add_argument("--pair", required=True)
    p.add_argument("--label", required=True, choices=["0", "1"])
    p.add_argument("--adjudicator", required=True)
    p.add_argument("--note")
    p.set_defaults(func=cmd_adjudicate)
    declare(p, more_inputs=db_input)

    p = acts.add_parser("progress", help="an annotator's progress and next pair")
    add_db_args(p)
    p.add_argument("--annotator", required=True)
    p.add_argument("--task-set")
    p.set_defaults(func=cmd_progress)
    declare(p, more_inputs=db_input)

    p = acts.add_parser("export", help="export labels as TSV (human-pairs columns first), CSV or JSONL")
    add_db_args(p)
    p.add_argument("--format", choices=["tsv", "csv", "jsonl"], default="tsv")
    p.add_argument("--what", choices=["labels", "gold", "reference", "majority", "mace", "dawid-skene",
                                       "qualification"],
                   default="labels", help="annotators' labels, adjudicated gold, reference labels, the label set of "
                                          "majority vote, MACE or Dawid-Skene, or the qualification answers")
    p.add_argument("--judge", dest="stored_judge",
                   help="with --what labels: this stored judge's probability and label beside each label")
    p.add_argument("--out", help="output file (default: stdout)")
    p.add_argument("--annotator", help="only this annotator's labels")
    p.add_argument("--gold", action="store_true", help="export adjudicated gold labels instead")
    p.add_argument("--include-skips", action="store_true")
    p.set_defaults(func=cmd_export)
    declare(p, outputs=("out",), more_inputs=db_input)

    p = acts.add_parser("tasks", help="build a task set from runs (or a pairs TSV) and assign it to annotators")
    add_db_args(p)
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--run", action="append", help="run file (repeat for several retrievers)")
    src.add_argument("--pairs", help="human-pairs TSV (labels in it are ignored)")
    p.add_argument("--n", type=int, required=True, help="number of pairs")
    p.add_argument("--strategy", choices=["random", "stratified", "uncertain", "active"], default="random",
                   help="active: half the pairs the judge is unsure of (inside its band), half random, interleaved; "
                        "each pair's weight recorded so the fit and its agreement stay unbiased")
    p.add_argument("--by", choices=["subset", "retriever"], default="subset", help="strata for --strategy stratified")
    p.add_argument("--annotators", required=True, help="comma-separated names")
    _round_flags(p)
    p.add_argument("--k", type=int, default=10, help="top-k passages per question to draw from (0 = all)")
    p.add_argument("--judge", default=None, help="judge spec for probabilities (needed by 'uncertain', 'active' and "
                                                 "--route-uncertain; default embedded there)")
    p.add_argument("--route-uncertain", type=float, default=None, metavar="BAND",
                   help="give pairs with |judge probability - 0.5| <= BAND to --per-shared annotators")
    p.add_argument("--name", help="task set name (default: derived from the source and strategy)")
    p.add_argument("--seed", type=int, default=0)
    control_flags(p)
    p.set_defaults(func=cmd_tasks)
    declare(p, inputs=("run", "pairs"), servers=("judge",), more_inputs=db_input)

    p = acts.add_parser("demo", help="a ready task set from the built-in demo bundle (its gold labels as reference)")
    add_db_args(p)
    p.add_argument("--n", type=int, default=40, help="number of pairs (stratified by subset)")
    p.add_argument("--annotators", required=True, help="comma-separated names")
    _round_flags(p)
    p.add_argument("--name", default="demo", help="task set name")
    p.add_argument("--seed", type=int, default=0)
    control_flags(p)
    p.add_argument("--simulate", metavar="SPEC",
                   help="let simulated annotators of known quality label the round, e.g. "
                        "'ann1=0.95,ann2=0.75,ann3=spammer,ann4=gamer' (competence, or spammer / gamer / strategic / "
                        "order / timing / skipper: the attackers of docs/annotation-lab.md)")
    p.set_defaults(func=cmd_demo)
    declare(p, more_inputs=db_input)

    p = acts.add_parser("guidelines", help="show or set the project's guidelines (Markdown) and label definitions")
    add_db_args(p)
    p.add_argument("--set", dest="set_file", metavar="FILE", help="Markdown file with the guidelines")
    p.add_argument("--define", action="append", default=[], metavar="LABEL=TEXT",
                   help="definition of a label: 1=..., 0=... or skip=... (repeat)")
    p.set_defaults(func=cmd_guidelines)
    declare(p, inputs=("set_file",), more_inputs=db_input)

    p = sub.add_parser("agreement", help="human vs judge (kappa, accuracy, F1, positive rate) and between humans")
    p.add_argument("--db", default=None)
    p.add_argument("--judge", default=None, help="judge name in the store, or a judge spec to run on the labelled pairs")
    p.add_argument("--n-boot", type=int, default=1000)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--fit", metavar="NAME",
                   help="refit the judge on this database's adjudicated (or reference) labels: its map, threshold and "
                        "band, question-grouped cross-validation, agreement before and after out of fold; writes "
                        "judges/NAME.json beside the database when it beats the base judge (--judge lab:NAME)")
    p.add_argument("--base", default="embedded", help="with --fit: the judge refitted (embedded or embedded:v4)")
    p.add_argument("--labels", default="auto", choices=["auto", "adjudicated", "reference"],
                   help="with --fit: the labels fitted on (auto: adjudicated when there are any, else reference)")
    p.add_argument("--task-set", default=None, help="with --fit: only this task set's pairs")
    p.add_argument("--fold-seeds", type=int, default=5, help="with --fit: fold assignments the medians are over")
    p.add_argument("--keep-anyway", action="store_true",
                   help="with --fit: write the judge even when it does not beat the base judge out of fold")
    p.set_defaults(func=cmd_agreement)
    declare(p, more_inputs=db_input)  # --judge may name answers already stored: no server is asked for them

    register_actions(acts)


def _round_flags(p) -> None:
    """Overlap, routing and calibration options of a labelling round."""
    p.add_argument("--overlap", type=float, default=0.0, help="share of pairs given to several annotators")
    p.add_argument("--per-shared", type=int, default=2, help="annotators per shared pair")
    p.add_argument("--redundancy", type=int, default=None, metavar="N",
                   help="every pair labelled by N annotators (same as --overlap 1 --per-shared N)")
    p.add_argument("--route-unsure", action="store_true",
                   help="a pair an annotator marks unsure goes to one more annotator")
    p.add_argument("--calibration", type=int, default=0, metavar="C",
                   help="mix C pairs with reference labels into every queue, unmarked")


def _round_args(args, annotators) -> dict:
    overlap, per_shared = args.overlap, args.per_shared
    if args.redundancy is not None:
        if args.redundancy < 1 or args.redundancy > len(annotators):
            raise InputError("--redundancy", None, None, f"must be between 1 and the number of annotators "
                                                         f"({len(annotators)})")
        overlap, per_shared = (1.0, args.redundancy) if args.redundancy > 1 else (0.0, 2)
    if not 0.0 <= overlap <= 1.0:
        raise InputError("--overlap", None, None, "overlap must be between 0 and 1")
    if overlap > 0 and len(annotators) < 2:
        raise InputError("--overlap", None, None, "overlap needs at least two annotators")
    if args.route_unsure and len(annotators) < 2:
        raise InputError("--route-unsure", None, None, "routing needs at least two annotators")
    if args.calibration < 0:
        raise InputError("--calibration", None, None, "must be 0 or more")
    return {"overlap": overlap, "per_shared": per_shared, "route_unsure": args.route_unsure,
            "calibration": args.calibration}


def _annotator_list(text: str) -> list[str]:
    annotators = [a.strip() for a in text.split(",") if a.strip()]
    if not annotators:
        raise InputError("--annotators", None, None, "give at least one annotator name")
    if len(set(annotators)) != len(annotators):
        raise InputError("--annotators", None, None, "annotator names must be distinct")
    return annotators


def cmd_import(args) -> dict:
    from ..lab.tasks import import_pairs_tsv, read_pairs_tsv

    rows = read_pairs_tsv(args.pairs)  # the whole file is checked before a database is opened or created
    if any(lab is not None for _, _, lab in rows) and not args.annotator and not args.labels_are:
        raise InputError(args.pairs, None, "label", "the file carries labels: give --labels-are reference (gold known "
                                                    "in advance) or --annotator NAME (their labels), or --labels-are ignore")
    with store_to_fill(args) as store:
        try:
            return import_pairs_tsv(store, args.pairs, args.annotator, args.task_set, labels_as=args.labels_are)
        except StoreError as e:
            raise InputError(args.pairs, None, None, str(e)) from None


def cmd_label(args) -> dict:
    from ..lab.rounds import after_label, summary

    with open_store(args) as store:
        if not args.unassigned and store.has_pair(args.pair) \
                and not store.tasks.is_assigned(args.annotator, args.pair) \
                and store.tasks.has_assignments():
            raise InputError(store.path, None, "annotator", f"{args.annotator!r} has no assignment of pair "
                                                            f"{args.pair!r} (their queue is what 'berds annotations "
                                                            "tasks' gave them); --unassigned labels it anyway")
        try:
            event = store.label(args.annotator, args.pair, SKIP if args.label == SKIP else int(args.label),
                                unsure=args.unsure, note=args.note)
            after_label(store, args.annotator, args.pair)  # a gold check may pause the queue
        except StoreError as e:
            raise InputError(store.path, None, "pair" if "pair" in str(e) else "annotator", str(e)) from None
        return {"db": str(store.path), "pair": args.pair, "annotator": args.annotator, "label": args.label,
                "event": event, "next": summary(store, args.annotator)["next"]}


def cmd_undo(args) -> dict:
    with open_store(args) as store:
        pid = store.undo(args.annotator)
        return {"db": str(store.path), "annotator": args.annotator, "undone": pid}


def cmd_adjudicate(args) -> dict:
    with open_store(args) as store:
        try:
            store.adjudicate(args.pair, int(args.label), args.adjudicator, args.note)
        except StoreError as e:
            raise InputError(store.path, None, "pair", str(e)) from None
        return {"db": str(store.path), "pair": args.pair, "gold": int(args.label)}


def cmd_progress(args) -> dict:
    """What the annotator's page says (:func:`berds_core.lab.rounds.summary`, read only)."""
    from ..lab.rounds import summary

    with open_store(args) as store:
        if args.task_set is not None and args.task_set not in store.tasks.names():
            raise InputError("--task-set", None, None, f"no task set named {args.task_set!r} in {store.path}")
        return {"annotator": args.annotator, **summary(store, args.annotator, args.task_set)}


def cmd_export(args) -> dict | None:
    from ..lab.exports import columns_for, export_rows, to_csv, to_jsonl, to_tsv
    from ..files.jsonio import atomic_write

    if getattr(args, "json", False) and not args.out:
        raise InputError("--out", None, None, "--json prints a summary; give --out FILE for the exported rows")
    with open_store(args) as store:
        judge = args.stored_judge
        if judge:
            from ..lab.agreement import canonical_judge

            judge = canonical_judge(store, judge)
            if judge not in store.judges():
                raise InputError("--judge", None, None, f"no answers of a judge named {args.stored_judge!r} are stored")
        what = "gold" if args.gold else args.what
        rows = export_rows(store, what=what, annotator=args.annotator, include_skips=args.include_skips, judge=judge)
        if not rows and what in ("mace", "dawid-skene"):
            raise InputError("--what", None, None, f"no {what} labels: the annotator models need pairs labelled by two "
                                                   "or more annotators, and this database has none")
    cols = columns_for(rows)
    text = {"jsonl": to_jsonl, "tsv": lambda r: to_tsv(r, cols), "csv": lambda r: to_csv(r, cols)}[args.format](rows)
    if args.out:
        with atomic_write(args.out, private=True) as fh:  # labels, names and notes: as private as the database
            fh.write(text)
        return {"out": args.out, "rows": len(rows), "format": args.format}
    sys.stdout.write(text)
    return None


def _load_judge(spec: str):
    from ..judges import get_judge

    try:
        return get_judge(spec)
    except (ValueError, KeyError) as e:
        raise InputError("--judge", None, None, f"cannot load judge {spec!r}: {e}") from None


def cmd_tasks(args) -> dict:
    from ..runs import read_run
    from ..lab.tasks import TaskSetSpec, build_task_set, pairs_from_runs, read_pairs_tsv

    if args.n < 1:
        raise InputError("--n", None, None, "n must be at least 1")
    if args.k < 0:
        raise InputError("--k", None, None, "k must be 0 (all) or more")
    annotators = _annotator_list(args.annotators)
    rnd = _round_args(args, annotators)
    if args.route_uncertain is not None and not 0.0 <= args.route_uncertain <= 0.5:
        raise InputError("--route-uncertain", None, None, "the band is between 0 and 0.5")
    stored_preds = {}
    if args.run:
        runs = [(Path(r).stem, read_run(r)) for r in args.run]
        if len({name for name, _ in runs}) != len(runs):
            raise InputError("--run", None, None, "two run files have the same name; rename one")
        candidates, stored_preds = pairs_from_runs(runs, k=args.k or None)
        source = ",".join(args.run)
    else:
        candidates = [p for _, p, _ in read_pairs_tsv(args.pairs)]
        source = args.pairs
    if not candidates:
        raise InputError(source, None, "ctxs", "no passages to draw pairs from")
    check_qualification_length(args, min(args.n, len(candidates)))  # --n past the candidates takes them all
    needs_judge = args.strategy in ("uncertain", "active") or args.route_uncertain is not None
    spec = args.judge or ("embedded" if needs_judge else None)
    judge = _load_judge(spec) if spec else None
    if judge is not None:
        print(f"judging {len(candidates)} candidate pairs with {judge.name}", file=sys.stderr)
    name = args.name or f"{Path(source.split(',')[0]).stem}-{args.strategy}-{args.n}"
    with store_to_fill(args) as store:  # a database this command created and could not fill: removed again
        try:
            spec = TaskSetSpec(name=name, source=source, n=args.n, strategy=args.strategy,
                               annotators=tuple(annotators), by=args.by, seed=args.seed,
                               route_uncertain=args.route_uncertain, params={"k": args.k},
                               controls=round_controls(args), **rnd)
            return build_task_set(store, candidates, spec, judge=judge, stored_preds=stored_preds)
        except InputError:
            raise
        except ValueError as e:
            raise InputError(source, None, None, str(e)) from None


def cmd_demo(args) -> dict:
    from ..lab.simulate import parse_simulation
    from ..lab.tasks import build_demo_task_set, demo_candidates

    if args.n < 1:
        raise InputError("--n", None, None, "n must be at least 1")
    if not args.name.strip():
        raise InputError("--name", None, None, "a task set needs a name")
    annotators = _annotator_list(args.annotators)
    rnd = _round_args(args, annotators)
    controls = round_controls(args)
    check_qualification_length(args, args.n)
    if args.simulate is not None:  # every input checked before a database is created
        try:
            parse_simulation(args.simulate, annotators)
        except ValueError as e:
            raise InputError("--simulate", None, None, str(e)) from None
    available = len(demo_candidates()[0])
    if args.n > available:
        raise InputError("--n", None, None, f"the built-in demo has {available} pairs; ask for at most that many")
    with store_to_fill(args) as store:  # a database this command created and could not fill: removed again
        if store.tasks.info(args.name.strip()) is not None:
            raise InputError("--name", None, None, f"a task set named {args.name.strip()!r} is already in "
                                                   f"{store.path}; choose another --name")
        try:
            res = build_demo_task_set(store, annotators, n=args.n, seed=args.seed, name=args.name.strip(),
                                      controls=controls, **rnd)
        except ValueError as e:
            raise InputError("demo", None, None, str(e)) from None
        if args.simulate is not None:
            res.update(simulate_demo(store, args, res))
        return res


def cmd_guidelines(args) -> dict:
    from ..lab.access import Actor, Lab
    from ..files.jsonio import read_text

    definitions = {}
    for item in args.define:
        key, sep, text = item.partition("=")
        if not sep or key.strip() not in ("1", "0", SKIP) or not text.strip():
            raise InputError("--define", None, None, "write LABEL=TEXT with LABEL one of 1, 0, skip")
        definitions[key.strip()] = text.strip()
    text = read_text(args.set_file) if args.set_file else None
    with open_store(args, create=bool(text is not None or definitions)) as store:
        lab = Lab(store, Actor("cli", "admin"))
        if text is not None or definitions:
            current = store.settings.get("label_definitions", {}) or {}
            lab.set_guidelines(text, {**current, **definitions} if definitions else None)
        return {"db": str(store.path), **lab.guidelines()}


def cmd_agreement(args) -> dict:
    from ..lab.agreement import agreement_report

    if args.n_boot < 0:
        raise InputError("--n-boot", None, None, "must be 0 or more")
    if args.seed < 0:
        raise InputError("--seed", None, None, "must be 0 or more")
    if args.fit is not None:
        return _fit_judge(args)
    with open_store(args) as store:
        judge_name = args.judge
        if judge_name and judge_name not in store.judges():
            # not stored yet: a spec; its answers are stored once, under the judge's stable name
            from ..judges import JudgeError
            from ..lab.judging import judge_labelled_pairs

            from ..net.reach import check_servers

            check_servers([("--judge", judge_name)])  # a server that is down: one line now, not after retries
            judge = _load_judge(judge_name)
            judge_name = judge.name
            print(f"judging the labelled pairs with {judge.name}", file=sys.stderr)
            try:
                judge_labelled_pairs(store, judge)
            except JudgeError as e:  # a server that is down, a model that failed
                raise InputError("--judge", None, None, " ".join(str(e).split())) from None
        report = agreement_report(store, judge_name, n_boot=args.n_boot, seed=args.seed)
        report["db"] = str(store.path)
        return report


def _fit_judge(args) -> dict:
    """``berds agreement --fit NAME``: :func:`berds_core.lab.judge_fit.fit_lab_judge`, refusals in one line."""
    from ..judges import JudgeError
    from ..lab.judge_fit import FitRefused, fit_lab_judge

    if args.judge:
        raise InputError("--judge", None, None, "--fit refits --base (embedded or embedded:v4); --judge is not read")
    if args.fold_seeds < 1:
        raise InputError("--fold-seeds", None, None, "must be 1 or more")
    with open_store(args) as store:
        try:
            report = fit_lab_judge(store, args.fit, base=args.base, source=args.labels, task_set=args.task_set,
                                   keep_anyway=args.keep_anyway, fold_seeds=args.fold_seeds, n_boot=args.n_boot)
        except (FitRefused, JudgeError) as e:
            raise InputError("--fit", None, None, " ".join(str(e).split())) from None
        report["db"] = str(store.path)
        return report
