"""Annotator quality control on simulated rounds: do the checks pause the spammer, does the estimate order
the annotators by their true quality, are the annotator models' labels closer to the truth than majority vote?

    python bench/lab_reliability.py [--rounds 20] [--first-seed 0] [--n 300] [--redundancy 3]
        [--simulate "ann1=0.95,ann2=0.75,ann3=0.5,ann4=spammer,ann5=gamer"] [--check-rate 0.05] [--floor 0.7]
    python bench/lab_reliability.py --qualification-bot 200 [--qualification 10] [--first-seed 20]

``strategic`` in ``--simulate`` is the gamer who has only an annotator's channels (lab/simulate.py); ``order``,
``timing`` and ``skipper`` are the order attacker (fewest insertions, five pairs ahead, subsets known), the
placement-timing attacker and the skipper of issue 63's audit. The summary counts the rounds where the checks
paused each of them, and, per attacker and channel, the share of the checks and of the task pairs it was served
that it flagged (pooled over the rounds) and their ratio. ``--qualification-bot`` measures a bot that answers
each qualification pair from the previous one's feedback.

``--shape`` is the queue shape: ``many`` (one task set, every pair to ``--redundancy`` of the annotators: each
gets part of each stratified block; the annotator models are fitted), ``one`` (each annotator a task set of
their own, ``--n`` pairs: whole blocks) or ``pair`` (the annotators two by two, in the order named, each pair a
task set of ``--n`` pairs at redundancy 2: whole blocks, both the same order). ``--shapes one,pair,many`` runs
each in turn and prints one summary per shape. ``--whole-queue`` also runs each round with no floor and counts
the attackers' flags over their whole queues (as the audit read queues offline): as played, an attacker the
floor pauses early is measured on the few pairs it was served.

    python bench/lab_reliability.py --rounds 20 --first-seed 20 --check-rate 0.1 --shapes one,pair,many \
        --simulate "ann1=0.95,ann2=0.75,order=order,timing=timing,skip=skipper,strat=strategic" --whole-queue \
        --markdown

Each round is ``berds annotations demo --simulate`` with another seed: the built-in demo bundle's pairs (its
gold labels are the truth and the pool of gold checks), every pair to ``--redundancy`` annotators, gold
checks at ``--check-rate`` with a floor, and simulated annotators of known quality labelling through the
server path (lab/simulate.py). Per round: which annotators the checks paused; whether each model's
competence orders the annotators as their true quality (ties in truth: any order); the accuracy against
the truth of majority vote (ties count one half), MACE's and Dawid-Skene's labels, and of crowd-kit's
MACE (the paper's uniform prior on the true label; the alternative to the project's MACE, measured in the
same run); the gamer's check accuracy and competence; the time of each fit. The variant the project ships
was chosen on seeds 0-19; ``--first-seed 20`` gives rounds it never saw. Prints one JSON object (per-round rows and a summary with
medians and counts) and, with ``--markdown``, the summary table for docs/annotation-lab.md.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from berds_core.lab.controls import RoundControls  # noqa: E402
from berds_core.lab.reliability import METHODS, estimate, majority, model_labels  # noqa: E402
from berds_core.lab import simulate  # noqa: E402
from berds_core.lab.simulate import accuracy_against, parse_simulation, simulate_round, true_order_agrees  # noqa: E402
from berds_core.lab.store import Store  # noqa: E402
from berds_core.lab.checks import check_scores  # noqa: E402
from berds_core.lab.tasks import build_demo_task_set  # noqa: E402


def crowdkit_mace(rows):
    """crowd-kit 1.4.2's MACE (uniform prior on the true label), as the project used it before its own."""
    from crowdkit.aggregation import MACE

    from berds_core.lab.reliability import _coded

    df, names, values = _coded(rows)
    model = MACE(n_restarts=1, n_iter=100, method="vb", random_state=0).fit(df)
    one = values.index(1)
    competence = {w: float(model.spamming_[i, 1]) for i, w in enumerate(names)}
    return competence, {str(p): int(v == one) for p, v in model.labels_.items()}


ALL = (*METHODS, "crowdkit-mace")
SHAPES = ("many", "one", "pair")
NAMES = {"mace": "MACE (shipped)", "dawid-skene": "Dawid-Skene", "crowdkit-mace": "crowd-kit MACE"}


def build_shape(store, names: list[str], seed: int, args, *, floor="round") -> None:
    """The round's task sets in the queue shape ``args.shape`` (see the module docstring); ``floor`` None: no
    floor (nobody is paused: the attackers read their whole queues)."""
    controls = RoundControls(check_rate=args.check_rate, check_floor=args.floor if floor == "round" else floor,
                             check_min=args.check_min, seed=seed)
    if args.shape == "many":
        build_demo_task_set(store, names, n=args.n, overlap=1.0, per_shared=args.redundancy, seed=seed,
                            controls=controls)
        return
    size = 1 if args.shape == "one" else 2
    for i in range(0, len(names), size):
        group = names[i:i + size]
        extra = {"overlap": 1.0, "per_shared": 2} if len(group) == 2 else {}
        build_demo_task_set(store, group, name=f"set{i // size}", n=args.n, seed=seed, controls=controls, **extra)


def one_round(seed: int, args) -> dict:
    names = [x.split("=")[0].strip() for x in args.simulate.split(",")]
    with tempfile.TemporaryDirectory() as tmp:
        store = Store(Path(tmp) / "round.db")
        build_shape(store, names, seed, args)
        people = parse_simulation(args.simulate, names)
        truth = store.reference_labels()
        sim = simulate_round(store, people, truth, seed=seed)
        out = {"seed": seed, "shape": args.shape, "kinds": {a: p.kind for a, p in people.items()},
               "paused": sorted(a for a, s in sim["annotators"].items() if s["paused"]),
               "attack": {a: st["attack"] for a, st in sim["annotators"].items() if "attack" in st},
               "labels": sim["labels"]}
        scores = check_scores(store)
        out["check_accuracy"] = {a: scores[a]["accuracy"] if a in scores else None for a in names}
        out["checks_skipped"] = {a: scores[a]["skipped"] if a in scores else 0 for a in names}
        if out["attack"] and args.whole_queue:
            out["attack_whole"] = whole_queues(names, seed, args, Path(tmp))
        if args.shape != "many":  # no pair has two annotators' labels to fit a model on (or too few)
            store.close()
            return out
        rows = model_labels(store)
        maj = majority(rows)
        task_truth = {p: truth[p] for p in maj}
        out.update({"labels": len(rows),
                    "accuracy": {"majority": accuracy_against(task_truth, {p: v["label"] for p, v in maj.items()})},
                    "ordered": {}, "competence": {}, "fit_seconds": {}})
        true_q = {a: p.quality for a, p in people.items()}
        for m in METHODS:
            t0 = time.perf_counter()
            est = estimate(rows, m, seed=seed)
            out["fit_seconds"][m] = time.perf_counter() - t0
            out["accuracy"][m] = accuracy_against(task_truth, est.labels)
            out["competence"][m] = {a: est.competence.get(a) for a in names}
            out["ordered"][m] = true_order_agrees(true_q, est.competence)
        t0 = time.perf_counter()
        comp, labels = crowdkit_mace(rows)
        out["fit_seconds"]["crowdkit-mace"] = time.perf_counter() - t0
        out["accuracy"]["crowdkit-mace"] = accuracy_against(task_truth, labels)
        out["competence"]["crowdkit-mace"] = {a: comp.get(a) for a in names}
        out["ordered"]["crowdkit-mace"] = true_order_agrees(true_q, comp)
        store.close()
    return out


def whole_queues(names: list[str], seed: int, args, tmp: Path) -> dict:
    """The same round with no floor: every attacker reads its whole queue (as the audit read queues offline), so
    what a channel flags is measured on every check and task pair, not only on those served before a pause."""
    store = Store(tmp / "whole.db")
    build_shape(store, names, seed, args, floor=None)
    sim = simulate_round(store, parse_simulation(args.simulate, names), store.reference_labels(), seed=seed)
    store.close()
    return {a: st["attack"] for a, st in sim["annotators"].items() if "attack" in st}


def median_or_none(values):
    """The median of the values that are not None (None when there is none: an annotator who decided no check)."""
    got = [v for v in values if v is not None]
    return statistics.median(got) if got else None


def _f(x, fmt: str = ".2f") -> str:
    return "–" if x is None else format(x, fmt)


def attack_summary(rounds: list[dict], key: str = "attack") -> dict:
    """Per attacker (its kind) and channel, pooled over the rounds: checks and tasks served and flagged, the share
    of each flagged and their ratio (checks / tasks); and the rounds each kind was paused in. ``key``: ``attack``
    (the round as played, the floor pausing) or ``attack_whole`` (:func:`whole_queues`)."""
    kinds = rounds[0]["kinds"]
    out = {}
    for a in (x for x in kinds if any(x in r.get(key, {}) for r in rounds)):
        served = {"check": 0, "task": 0}
        flagged: dict[str, dict[str, int]] = {}
        for r in rounds:
            rep = r.get(key, {}).get(a)
            if rep is None:
                continue
            for k in served:
                served[k] += rep["served"].get(k, 0)
            for ch, f in rep["flagged"].items():
                got = flagged.setdefault(ch, {"checks": 0, "tasks": 0})
                got["checks"] += f["checks"]
                got["tasks"] += f["tasks"]
        for f in flagged.values():
            f["check_rate"] = f["checks"] / served["check"] if served["check"] else None
            f["task_rate"] = f["tasks"] / served["task"] if served["task"] else None
            f["ratio"] = (f["check_rate"] / f["task_rate"]) if f["task_rate"] else None
        out[a] = {"kind": kinds[a], "served": served, "flagged": flagged,
                  "skipped": sum(r.get(key, {}).get(a, {}).get("skipped", 0) for r in rounds),
                  "paused": sum(a in r["paused"] for r in rounds)}
    return out


def shape_summary(rounds: list[dict], args) -> dict:
    """What every shape reports: pauses per annotator, check accuracy and skips, the attackers' flags."""
    kinds = rounds[0]["kinds"]
    med = statistics.median
    return {"shape": rounds[0]["shape"], "rounds": len(rounds), "seeds": [r["seed"] for r in rounds],
            "simulate": args.simulate, "n": args.n, "check_rate": args.check_rate, "floor": args.floor,
            "check_min": args.check_min, "paused": {a: sum(a in r["paused"] for r in rounds) for a in kinds},
            "honest_paused": sum(any(a in r["paused"] for a in kinds if kinds[a] == "competence") for r in rounds),
            "check_accuracy_median": {a: median_or_none(r["check_accuracy"][a] for r in rounds) for a in kinds},
            "attacks": attack_summary(rounds), "attacks_whole_queue": attack_summary(rounds, "attack_whole"),
            "labels_median": med(r["labels"] for r in rounds)}


def summary(rounds: list[dict], args) -> dict:
    if rounds[0]["shape"] != "many":
        return shape_summary(rounds, args)
    names = list(rounds[0]["kinds"])
    kinds = rounds[0]["kinds"]
    spam = [a for a in names if kinds[a] == "spammer"]
    gamer = [a for a in names if kinds[a] == "gamer"]
    med = statistics.median
    out = {"shape": "many", "rounds": len(rounds), "seeds": [r["seed"] for r in rounds], "simulate": args.simulate,
           "n": args.n, "redundancy": args.redundancy,
           "check_rate": args.check_rate, "floor": args.floor, "check_min": args.check_min,
           "labels_median": med(r["labels"] for r in rounds),
           "spammer_paused": sum(all(a in r["paused"] for a in spam) for r in rounds) if spam else None,
           "gamer_paused": sum(any(a in r["paused"] for a in gamer) for r in rounds) if gamer else None,
           "good_paused": sum(any(a in r["paused"] for a in names if kinds[a] == "competence") for r in rounds),
           "strategic_paused": (sum(any(a in r["paused"] for a in names if kinds[a] == "strategic") for r in rounds)
                                if "strategic" in kinds.values() else None),

           "best_paused": {a: sum(a in r["paused"] for r in rounds) for a in names if kinds[a] == "competence"},
           "accuracy_median": {k: med(r["accuracy"][k]["accuracy"] for r in rounds) for k in ("majority", *ALL)},
           "beats_majority": {m: sum(r["accuracy"][m]["accuracy"] > r["accuracy"]["majority"]["accuracy"]
                                     for r in rounds) for m in ALL},
           "ordered_as_true": {m: sum(r["ordered"][m] for r in rounds) for m in ALL},
           "competence_median": {m: {a: median_or_none(r["competence"][m][a] for r in rounds)
                                     for a in names} for m in ALL},
           "check_accuracy_median": {a: median_or_none(r["check_accuracy"][a] for r in rounds) for a in names},
           "fit_seconds_median": {m: med(r["fit_seconds"][m] for r in rounds) for m in ALL}}
    out.update({k: v for k, v in shape_summary(rounds, args).items() if k not in out})
    return out


def attack_markdown(s: dict) -> str:
    """The attackers' tables of one shape (docs/annotation-lab.md): as played, and over whole queues."""
    out = [_attack_table(s, "attacks", "as played (the floor pauses)")]
    if s.get("attacks_whole_queue"):
        out.append(_attack_table(s, "attacks_whole_queue", "whole queues (no floor: every check and task pair read)"))
    r = s["rounds"]
    honest = {a: n for a, n in s["paused"].items() if a not in s["attacks"]}
    out.append(f"Paused (rounds of {r}): " + ", ".join(f"{a} {n}" for a, n in honest.items()) +
               "; check accuracy (median): " + ", ".join(f"{a} {_f(v)}" for a, v in s["check_accuracy_median"].items()))
    return "\n\n".join(out)


def _attack_table(s: dict, key: str, what: str) -> str:
    r = s["rounds"]
    seeds = f"seeds {s['seeds'][0]}-{s['seeds'][-1]}"
    lines = [f"Shape `{s['shape']}`, {r} rounds ({seeds}), check rate {s['check_rate']}, floor {s['floor']}, {what}:",
             "", "| annotator (kind) | channel | checks flagged | task pairs flagged | ratio | skipped | paused (rounds) |",
             "|---|---|---|---|---|---|---|"]
    for a, x in s[key].items():
        paused = f"{x['paused']} of {r}" if key == "attacks" else "–"
        chans = x["flagged"] or {"–": None}
        for ch, f in chans.items():
            if f is None:
                lines.append(f"| {a} ({x['kind']}) | – | – | – | – | {x['skipped']} | {paused} |")
                continue
            cr = "–" if f["check_rate"] is None else f"{f['checks']} of {x['served']['check']} ({f['check_rate']:.1%})"
            tr = "–" if f["task_rate"] is None else f"{f['tasks']} of {x['served']['task']} ({f['task_rate']:.1%})"
            ratio = "–" if f["ratio"] is None else f"{f['ratio']:.2f}"
            lines.append(f"| {a} ({x['kind']}) | {ch} | {cr} | {tr} | {ratio} | {x['skipped']} | {paused} |")
    return "\n".join(lines)


def markdown(s: dict) -> str:
    if s["shape"] != "many" or "competence_median" not in s:
        return attack_markdown(s)
    names = list(s["check_accuracy_median"])
    seeds = f"seeds {s['seeds'][0]}-{s['seeds'][-1]}"
    lines = [f"| annotator (true quality) | gold-check accuracy | competence, MACE θ (shipped) | "
             f"competence, Dawid-Skene J | competence, crowd-kit MACE θ |", "|---|---|---|---|---|"]
    spec = dict(x.split("=") for x in s["simulate"].split(","))
    for a in names:
        c = s["competence_median"]
        lines.append(f"| {a} ({spec[a]}) | {_f(s['check_accuracy_median'][a])} | {_f(c['mace'][a])} | "
                     f"{_f(c['dawid-skene'][a])} | {_f(c['crowdkit-mace'][a])} |")
    r = s["rounds"]
    lines += ["", f"| estimate ({r} rounds, {seeds}) | rounds with all five in the order of true quality | "
                  "label accuracy against the truth (median) | rounds with labels better than majority vote | "
                  "fit time (median) |", "|---|---|---|---|---|",
              f"| majority vote (ties count 1/2) | – | {s['accuracy_median']['majority']:.3f} | – | – |"]
    for m in ALL:
        lines.append(f"| {NAMES[m]} | {s['ordered_as_true'][m]} of {r} | {s['accuracy_median'][m]:.3f} | "
                     f"{s['beats_majority'][m]} of {r} | {s['fit_seconds_median'][m]:.2f} s |")
    lines += ["", f"Spammer paused by the checks: {s['spammer_paused']} of {r}; gamer paused: {s['gamer_paused']} of "
                  f"{r}; strategic gamer paused: {s['strategic_paused']} of {r}; an honest annotator paused: "
                  f"{s['good_paused']} of {r} (each: {s['best_paused']}); about {s['labels_median']:.0f} labels "
                  "a round."]
    if s["attacks"]:
        lines += ["", attack_markdown(s)]
    return "\n".join(lines)


def qualification_bot(args) -> dict:
    """``--qualification-bot N``: N attempts of :func:`~berds_core.lab.simulate.qualification_bot` (the opposite
    of the previous pair's expected answer when an answer tells it) at ``--qualification`` pairs and the
    default pass mark; the share passed beside the chance of passing by guessing (binomial)."""
    from math import ceil, comb

    from berds_core.lab.access import Actor, Lab
    from berds_core.lab.checks import rng_for

    n, mark = args.qualification, RoundControls().qualification_pass
    names = [f"bot{i}" for i in range(args.qualification_bot)]
    with tempfile.TemporaryDirectory() as tmp:
        store = Store(Path(tmp) / "qual.db")
        build_demo_task_set(store, names, n=len(names), seed=args.first_seed,
                            controls=RoundControls(qualification_n=n, seed=args.first_seed))
        passed = sum(bool(simulate.qualification_bot(Lab(store, Actor(a, "annotator")), "demo",
                                                     rng_for(args.first_seed, "bot", a))) for a in names)
        store.close()
    need = ceil(mark * n - 1e-9)
    chance = sum(comb(n, k) for k in range(need, n + 1)) / 2 ** n
    return {"attempts": len(names), "pairs": n, "pass_mark": mark, "passed": passed,
            "passed_share": passed / len(names), "chance": chance}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--first-seed", type=int, default=0, help="seeds first-seed .. first-seed + rounds - 1")
    ap.add_argument("--n", type=int, default=300)
    ap.add_argument("--redundancy", type=int, default=3)
    ap.add_argument("--simulate", default="ann1=0.95,ann2=0.75,ann3=0.5,ann4=spammer,ann5=gamer")
    ap.add_argument("--check-rate", type=float, default=0.05)
    ap.add_argument("--floor", type=float, default=0.7)
    ap.add_argument("--check-min", type=int, default=5)
    ap.add_argument("--markdown", action="store_true")
    ap.add_argument("--shape", choices=SHAPES, default="many", help="the queue shape (module docstring)")
    ap.add_argument("--shapes", default=None, help="comma-separated shapes, each in turn (overrides --shape)")
    ap.add_argument("--whole-queue", action="store_true",
                    help="also run each round with no floor and count the attackers' flags over whole queues")
    ap.add_argument("--qualification-bot", type=int, default=0, metavar="N",
                    help="instead: N qualification attempts by a bot reading the previous pair's feedback")
    ap.add_argument("--qualification", type=int, default=10, help="pairs of the bot's qualification")
    args = ap.parse_args()
    if args.qualification_bot:
        print(json.dumps(qualification_bot(args), indent=1))
        return
    shapes = [x.strip() for x in args.shapes.split(",")] if args.shapes else [args.shape]
    bad = [x for x in shapes if x not in SHAPES]
    if bad:
        ap.error(f"--shapes: {bad[0]!r} is not one of {', '.join(SHAPES)}")
    results = []
    for shape in shapes:
        args.shape = shape
        rounds = []
        for seed in range(args.first_seed, args.first_seed + args.rounds):
            rounds.append(one_round(seed, args))
            print(f"{shape} round {seed}: paused {rounds[-1]['paused']}, ordered {rounds[-1].get('ordered')}",
                  file=sys.stderr)
        results.append({"summary": summary(rounds, args), "rounds": rounds})
    print(json.dumps(results[0] if len(results) == 1 else {"shapes": results}, indent=1))
    if args.markdown:
        for res in results:
            print(markdown(res["summary"]) + "\n", file=sys.stderr)


if __name__ == "__main__":
    main()
