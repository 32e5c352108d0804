"""``berds annotations round|checks|pause|resume|qualification|answer|reliability|review|judge-failures|health``.

The round's quality control from the command line, every figure of the
Agreement page's Annotators, Round health and Judge failures tabs with
``--json``. Registered by :mod:`berds_core.cli.annotations_cmd`. The CLI is the
operator on the server: it acts as the lead (``--by`` names who, for the audit log).
"""
from __future__ import annotations

from ..errors import InputError
from ._lab_db import add_db_args, db_input, open_store
from ._parsing import declare


def register_actions(acts) -> None:
    p = acts.add_parser("round", help="show or change a task set's quality controls (gold checks, floor, qualification)")
    add_db_args(p)
    p.add_argument("--task-set", required=True)
    control_flags(p, defaults=False)
    p.add_argument("--by", default="cli", help="who changes them (audit log)")
    p.set_defaults(func=cmd_round)
    declare(p, more_inputs=db_input)

    p = acts.add_parser("checks", help="each annotator's gold checks: decided, skipped, accuracy (95%% Wilson "
                                       "interval), pauses")
    add_db_args(p)
    p.add_argument("--task-set")
    p.add_argument("--annotator", help="also list this annotator's answered checks")
    p.set_defaults(func=cmd_checks)
    declare(p, more_inputs=db_input)

    for verb, what in (("pause", "pause an annotator's queue in a task set"),
                       ("resume", "resume an annotator's paused queue (nothing was deleted)")):
        p = acts.add_parser(verb, help=what)
        add_db_args(p)
        p.add_argument("--task-set", required=True)
        p.add_argument("--annotator", required=True)
        p.add_argument("--note")
        p.add_argument("--by", default="cli", help="the lead (audit log)")
        p.set_defaults(func=cmd_pause if verb == "pause" else cmd_resume)
        declare(p, more_inputs=db_input)

    p = acts.add_parser("qualification", help="qualification states and scores; --retry lets an annotator try again")
    add_db_args(p)
    p.add_argument("--task-set")
    p.add_argument("--retry", metavar="ANNOTATOR", help="allow this annotator another attempt (needs --task-set)")
    p.add_argument("--by", default="cli")
    p.set_defaults(func=cmd_qualification)
    declare(p, more_inputs=db_input)

    p = acts.add_parser("answer", help="type the answer of a pair: it joins the pool of gold checks")
    add_db_args(p)
    p.add_argument("--pair", required=True)
    p.add_argument("--label", required=True, choices=["0", "1"])
    p.add_argument("--by", default="cli")
    p.set_defaults(func=cmd_answer)
    declare(p, more_inputs=db_input)

    p = acts.add_parser("reliability", help="each annotator's estimated competence (MACE / Dawid-Skene), checks, "
                                            "agreement with the others, time per label, drift")
    add_db_args(p)
    p.add_argument("--method", choices=["mace", "dawid-skene"], default="mace",
                   help="the model whose competence is 'competence' and orders the annotators (both are reported)")
    p.add_argument("--task-set")
    p.add_argument("--time-floor", type=float, default=None, metavar="SECONDS",
                   help="labels faster than this count as under the floor (default: the round's, else 2 s)")
    p.add_argument("--window", type=int, default=20, help="labels per window of the drift (rolling agreement)")
    p.set_defaults(func=cmd_reliability)
    declare(p, more_inputs=db_input)

    p = acts.add_parser("review", help="the reviewer's disagreements, ordered by judge vs reliability-weighted majority")
    add_db_args(p)
    p.add_argument("--judge", dest="stored_judge", help="judge name in the store (its stored answers; no judge is run)")
    p.add_argument("--limit", type=int, default=50)
    p.set_defaults(func=cmd_review)
    declare(p, more_inputs=db_input)

    p = acts.add_parser("judge-failures", help="where the judge is wrong: per question, perspective length, source")
    add_db_args(p)
    p.add_argument("--judge", dest="stored_judge", required=True,
                   help="judge name in the store (its stored answers; no judge is run)")
    p.add_argument("--min-posterior", type=float, default=0.8,
                   help="use the model's label as truth where its posterior is at least this")
    p.set_defaults(func=cmd_judge_failures)
    declare(p, more_inputs=db_input)

    p = acts.add_parser("health", help="the round's health: labels per hour, queues left, checks failed, pauses, "
                                       "pairs waiting for adjudication")
    add_db_args(p)
    p.add_argument("--task-set")
    p.set_defaults(func=cmd_health)
    declare(p, more_inputs=db_input)


def control_flags(p, *, defaults: bool = True) -> None:
    """Gold checks, their floor and qualification (for ``tasks``, ``demo`` and ``round``)."""
    d = (lambda v: v) if defaults else (lambda v: None)
    p.add_argument("--check-rate", type=float, default=d(0.0), metavar="R",
                   help="share of each queue that is gold checks, over the whole round (0.05 = one in 20)")
    p.add_argument("--check-floor", default=d(None), metavar="ACC",
                   help="check accuracy below which a queue pauses (none: never pause)")
    p.add_argument("--check-min", type=int, default=d(5), metavar="N",
                   help="checks answered (since the last resume) before the floor applies")
    p.add_argument("--check-confidence", type=float, default=d(0.9), metavar="P",
                   help="pause once the checks make it this likely that the accuracy is below the floor")
    p.add_argument("--time-floor", type=float, default=d(2.0), metavar="SECONDS",
                   help="labels faster than this count as under the floor (a sign of clicking through)")
    p.add_argument("--qualification", type=int, default=d(0), metavar="N",
                   help="a qualification of N gold pairs to pass before the real queue")
    p.add_argument("--qualification-pass", type=float, default=d(0.8), metavar="SHARE",
                   help="share of qualification pairs to answer right")


def control_values(args) -> dict:
    """The control flags given, as :class:`~berds_core.lab.controls.RoundControls` fields (validated later)."""
    out = {}
    if getattr(args, "check_rate", None) is not None:
        out["check_rate"] = args.check_rate
    floor = getattr(args, "check_floor", None)
    if floor is not None:
        if str(floor).lower() in ("none", ""):
            out["check_floor"] = None
        else:
            try:
                out["check_floor"] = float(floor)
            except ValueError:
                raise InputError("--check-floor", None, None, "an accuracy between 0 and 1, or none") from None
    for flag, key in (("check_min", "check_min"), ("check_confidence", "check_confidence"),
                      ("qualification", "qualification_n"),
                      ("qualification_pass", "qualification_pass")):
        if getattr(args, flag, None) is not None:
            out[key] = getattr(args, flag)
    if getattr(args, "time_floor", None) is not None:
        out["time_floor_ms"] = time_floor_ms(args.time_floor)
    return out


def check_qualification_length(args, pairs: int | None) -> None:
    """``--qualification N`` no longer than the round it admits to (``pairs``, its ``--n``): a qualification of
    1,000 pairs before a round of 40 is a slip of the lead's, refused in one line before anything is built."""
    n = getattr(args, "qualification", None)
    if n and pairs is not None and n > pairs:
        raise InputError("--qualification", None, None, f"{n} qualification pairs for a round of {pairs} pairs: a "
                                                        f"qualification is at most as long as the round (at most "
                                                        f"{pairs} here)")


def time_floor_ms(seconds: float) -> int:
    """``--time-floor SECONDS`` in milliseconds (0 to an hour; nan and infinities refused)."""
    from ..lab.controls import MAX_TIME_FLOOR_MS

    if not seconds >= 0:  # negative or nan
        raise InputError("--time-floor", None, None, "must be 0 or more seconds")
    if seconds * 1000 > MAX_TIME_FLOOR_MS:
        raise InputError("--time-floor", None, None, f"must be at most {MAX_TIME_FLOOR_MS // 1000} seconds")
    return int(round(seconds * 1000))


def round_controls(args):
    """A :class:`RoundControls` from ``tasks`` / ``demo`` flags, or None when no control is asked for."""
    from ..lab.controls import RoundControls

    vals = control_values(args)
    seed = getattr(args, "seed", 0)
    try:
        got = RoundControls(seed=seed, **vals)
    except ValueError as e:
        flag = next((f for key, f in (("rate", "--check-rate"), ("floor is", "--check-floor"), ("before", "--check-min"), ("confidence", "--check-confidence"),
                                      ("time", "--time-floor"), ("pass", "--qualification-pass"),
                                      ("qualification", "--qualification")) if key in str(e)), "--check-rate")
        raise InputError(flag, None, None, str(e)) from None
    return None if got == RoundControls(seed=seed) else got


def _task_set(store, name):
    if name is not None and store.tasks.info(name) is None:
        raise InputError("--task-set", None, None, f"no task set named {name!r} in {store.path}")
    return name


def cmd_round(args) -> dict:
    from ..lab.checks import refuse_empty_pool
    from ..lab.controls import get_controls, set_controls

    with open_store(args) as store:
        ts = _task_set(store, args.task_set)
        check_qualification_length(args, store.tasks.info(ts)["params"].get("n"))
        changes = control_values(args)
        pool = store.checks.pool_counts(ts).get(ts, 0)
        if changes:
            try:
                refuse_empty_pool(store, ts, changes)
                set_controls(store, ts, by=args.by, **changes)
            except ValueError as e:
                raise InputError("--" + next(iter(changes)).replace("_", "-"), None, None, str(e)) from None
            store.audit.add(args.by, None, "round.controls", ts, allowed=True,
                            detail=", ".join(f"{k}={v}" for k, v in sorted(changes.items())))
        c = get_controls(store, ts)
        return {"db": str(store.path), "task_set": ts, "controls": c.to_json(), "changed": sorted(changes),
                "check_pool": pool, "qualification_passed_by_guessing": c.chance_pass}


def cmd_checks(args) -> dict:
    from ..lab.checks import check_answers, check_scores, pauses, slot_summary

    with open_store(args) as store:
        ts = _task_set(store, args.task_set)
        scores = {a: {k: v for k, v in s.items() if k != "running"} for a, s in check_scores(store, ts).items()}
        out = {"db": str(store.path), "task_set": ts, "annotators": scores, "slots": slot_summary(store, ts),
               "paused": [p for p in pauses(store, open_only=True) if ts is None or p["task_set"] == ts]}
        if args.annotator:
            if args.annotator not in store.tasks.annotators():
                raise InputError("--annotator", None, None, f"no annotator named {args.annotator!r} in {store.path}")
            out["answers"] = check_answers(store, args.annotator, ts)
        return out


def cmd_pause(args) -> dict:
    from ..lab.checks import pause

    with open_store(args) as store:
        ts = _task_set(store, args.task_set)
        if not store.tasks.queue(args.annotator, ts):
            raise InputError("--annotator", None, None, f"{args.annotator!r} has no queue in task set {ts!r}")
        pid = pause(store, ts, args.annotator, reason="lead", by=args.by,
                    lead_message=f"{args.annotator}: paused by {args.by} in {ts}" + (f" ({args.note})" if args.note else ""))
        return {"db": str(store.path), "task_set": ts, "annotator": args.annotator, "paused": pid is not None,
                "already_paused": pid is None}


def cmd_resume(args) -> dict:
    from ..lab.checks import resume

    with open_store(args) as store:
        ts = _task_set(store, args.task_set)
        done = resume(store, ts, args.annotator, args.by, args.note)
        return {"db": str(store.path), "task_set": ts, "annotator": args.annotator, "resumed": done}


def cmd_qualification(args) -> dict:
    from ..lab.qualification import allow_retry, overview

    with open_store(args) as store:
        ts = _task_set(store, args.task_set)
        out = {"db": str(store.path), "task_set": ts}
        if args.retry:
            if ts is None:
                raise InputError("--task-set", None, None, "--retry needs the task set")
            if not store.tasks.queue(args.retry, ts):
                raise InputError("--retry", None, None, f"{args.retry!r} has no queue in task set {ts!r}")
            out["retry"] = {"annotator": args.retry, "allowed": allow_retry(store, ts, args.retry, args.by)}
        out["annotators"] = overview(store, ts)
        return out


def cmd_answer(args) -> dict:
    from ..lab.checks import add_typed_answers
    from ..lab.store import StoreError

    with open_store(args) as store:
        try:
            got = add_typed_answers(store, {args.pair: int(args.label)}, args.by)
        except StoreError as e:
            raise InputError(store.path, None, "pair", str(e)) from None
        return {"db": str(store.path), "pair": args.pair, "answer": int(args.label), "by": args.by,
                "check_pools": got["pools"]}


def cmd_reliability(args) -> dict:
    from ..lab.reliability import reliability_report

    if args.window < 2:
        raise InputError("--window", None, None, "must be 2 or more")
    floor = None if args.time_floor is None else time_floor_ms(args.time_floor)
    with open_store(args) as store:
        ts = _task_set(store, args.task_set)
        rep = reliability_report(store, method=args.method, task_set=ts, window=args.window, time_floor_ms=floor)
        return {"db": str(store.path), **rep}


def cmd_review(args) -> dict:
    from ..lab.agreement import canonical_judge
    from ..lab.judge_review import review_queue

    if args.limit < 1:
        raise InputError("--limit", None, None, "must be 1 or more")
    with open_store(args) as store:
        judge = canonical_judge(store, args.stored_judge)
        if judge and judge not in store.judges():
            raise InputError("--judge", None, None, f"no answers of a judge named {args.stored_judge!r} are stored")
        rows = review_queue(store, judge)
        return {"db": str(store.path), "judge": judge, "pairs": len(rows), "queue": rows[:args.limit]}


def cmd_judge_failures(args) -> dict:
    from ..lab.agreement import canonical_judge
    from ..lab.judge_review import judge_failures

    if not 0.5 <= args.min_posterior <= 1.0:
        raise InputError("--min-posterior", None, None, "between 0.5 and 1")
    with open_store(args) as store:
        judge = canonical_judge(store, args.stored_judge)
        if judge not in store.judges():
            raise InputError("--judge", None, None, f"no answers of a judge named {args.stored_judge!r} are stored")
        return {"db": str(store.path), **judge_failures(store, judge, min_posterior=args.min_posterior)}


def cmd_health(args) -> dict:
    from ..lab.health import round_health

    with open_store(args) as store:
        return {"db": str(store.path), **round_health(store, _task_set(store, args.task_set))}


def simulate_demo(store, args, res: dict) -> dict:
    """``demo --simulate``: let simulated annotators label the round, then report what quality control saw."""
    from ..lab.qualification import QualificationError
    from ..lab.reliability import label_sets, reliability_report
    from ..lab.simulate import accuracy_against, parse_simulation, simulate_round, true_order_agrees

    try:
        people = parse_simulation(args.simulate, [a for a in res["assignments"]])
    except ValueError as e:
        raise InputError("--simulate", None, None, str(e)) from None
    truth = store.reference_labels()
    try:
        sim = simulate_round(store, people, truth, task_set=res["task_set"], seed=args.seed)
    except QualificationError as e:
        raise InputError("--qualification", None, None, str(e)) from None
    rep = reliability_report(store, task_set=res["task_set"])
    sets = label_sets(store, task_set=res["task_set"])
    task_truth = {p: truth[p] for p in sets["majority"] if p in truth}
    ann = rep["annotators"]
    estimated = {a: ann.get(a, {}).get("competence") for a in people}
    true_q = {a: p.quality for a, p in people.items()}
    return {"simulation": {a: {**sim["annotators"][a], "true_quality": people[a].quality, "kind": people[a].kind,
                               "competence": estimated[a],
                               "competence_by_model": ann.get(a, {}).get("competence_by_model"),
                               "check_accuracy": (ann.get(a, {}).get("checks") or {}).get("accuracy")}
                           for a in people},
            "method": rep["method"], "true_order": sorted(true_q, key=lambda a: -true_q[a]),
            "estimated_order": rep["order"], "ordered_as_true": true_order_agrees(true_q, estimated),
            "paused": sorted(a for a, s in sim["annotators"].items() if s["paused"]),
            "vs_truth": {name: accuracy_against(task_truth, {p: v["label"] for p, v in sets[name].items()})
                         for name in ("majority", "mace", "dawid-skene")},
            "labels": sim["labels"], "ended_at": sim["ended_at"]}
