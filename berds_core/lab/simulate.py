"""Simulated annotators of known quality, labelling a round through the same server path as people.

The annotator model is MACE's own generative story (Hovy et al. 2013): on each
pair an annotator with competence ``c`` knows the true label with probability
``c`` and gives it; otherwise they answer at random (``P(supports) = bias``).
Two kinds that quality control must catch:

- ``spammer``: competence 0 (every answer at random), fast (about 1.2 s a label):
  the gold checks see it and pause their queue;
- ``gamer``: answers every gold check right (as if they could tell checks
  apart) and everything else at random, fast: the checks alone miss them, the
  estimate across redundant labels must not.

:func:`simulate_round` lets each simulated annotator take their next pair from
:class:`~berds_core.lab.access.Lab` (role checks, qualification, check placement,
pausing: all as for a person), on a simulated clock (each label takes a
log-normal time around the annotator's median), so the round's health figures
(labels per hour, time per label) look like a real round's.
"""
from __future__ import annotations

import heapq
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone

import numpy as np

from .access import Actor, Lab
from .checks import known_answers, rng_for

KINDS = {"spammer": (0.0, "same", 1.2), "gamer": (0.0, "right", 1.5)}


@dataclass(frozen=True)
class SimAnnotator:
    name: str
    competence: float
    checks: str = "same"  # "same": checks answered like any pair; "right": every check answered right
    seconds: float = 8.0  # median time per label
    bias: float = 0.5  # P(supports) when answering at random
    kind: str = "competence"

    @property
    def quality(self) -> float:
        """True quality on the pairs that are not checks (what the estimate should recover)."""
        return self.competence


def parse_simulation(text: str, annotators) -> dict[str, SimAnnotator]:
    """``"ann1=0.95,ann2=0.8,ann3=spammer,ann4=gamer"`` -> simulated annotators (names must be in the round)."""
    names = list(annotators)
    out = {}
    for item in (t.strip() for t in str(text).split(",")):
        if not item:
            continue
        name, sep, what = item.partition("=")
        name, what = name.strip(), what.strip().lower()
        if not sep or not name or not what:
            raise ValueError(f"write NAME=COMPETENCE or NAME=spammer|gamer, got {item!r}")
        if name not in names:
            raise ValueError(f"{name!r} is not one of the round's annotators ({', '.join(names)})")
        if what in KINDS:
            comp, checks, secs = KINDS[what]
            out[name] = SimAnnotator(name, comp, checks, secs, kind=what)
            continue
        try:
            comp = float(what)
        except ValueError:
            raise ValueError(f"{name}: competence is a number between 0 and 1, or spammer / gamer") from None
        if not 0.0 <= comp <= 1.0:
            raise ValueError(f"{name}: competence is between 0 and 1")
        out[name] = SimAnnotator(name, comp, seconds=round(4.0 + 8.0 * comp, 1))
    if not out:
        raise ValueError("name at least one simulated annotator")
    return out


def _answer(sim: SimAnnotator, truth: int, is_check: bool, rng: np.random.Generator) -> int:
    if is_check and sim.checks == "right":
        return int(truth)
    if rng.random() < sim.competence:
        return int(truth)
    return int(rng.random() < sim.bias)


def simulate_round(store, people: dict[str, SimAnnotator], truth: dict[str, int], *, task_set: str | None = None,
                   seed: int = 0, start: str = "2026-01-05T09:00:00+00:00", chunk: int = 50) -> dict:
    """Let ``people`` label their queues (in ``task_set``, or all theirs) until done, paused or not qualified.

    ``truth``: the true label of the pairs (the answer of a check or qualification pair is its known
    answer). Labels are written ``chunk`` at a time in one transaction each. Returns per annotator the
    labels given, checks met, qualification outcome and whether their queue ended paused.
    """
    t0 = datetime.fromisoformat(start)
    if t0.tzinfo is None:
        t0 = t0.replace(tzinfo=timezone.utc)
    clock = {"now": t0}
    old_now = store.now
    store.now = lambda: clock["now"].isoformat(timespec="milliseconds")
    rngs = {n: rng_for(seed, "simulate", n) for n in people}
    stats = {n: {"labels": 0, "checks": 0, "qualification": None, "paused": False} for n in people}
    heap = [(t0, i, n) for i, n in enumerate(sorted(people))]
    heapq.heapify(heap)
    answers = known_answers(store)
    steps = 0
    try:
        while heap:
            with store.batch():
                for _ in range(chunk):
                    if not heap:
                        break
                    when, i, name = heapq.heappop(heap)
                    clock["now"] = when
                    sim, rng, lab = people[name], rngs[name], Lab(store, Actor(name, "annotator"))
                    secs = float(rng.lognormal(np.log(sim.seconds), 0.35))
                    if _qualify_step(lab, sim, rng, task_set, answers, secs, stats[name]):
                        heapq.heappush(heap, (when + timedelta(seconds=secs + 2.0), i, name))
                        continue
                    nxt = lab.next_pairs(1, task_set)
                    if not nxt:
                        stats[name]["paused"] = any(s["state"] == "paused" for s in lab.round_states(task_set))
                        continue
                    pid = nxt[0]
                    is_check = bool(store.query("SELECT 1 FROM assignments WHERE pair_id = ? AND annotator = ? AND "
                                                "kind IN ('check', 'calibration')", (pid, name)))
                    true = answers[pid][0] if is_check and pid in answers else int(truth.get(pid, 0))
                    lab.label(pid, _answer(sim, true, is_check, rng), time_ms=int(secs * 1000))
                    stats[name]["labels"] += 1
                    stats[name]["checks"] += int(is_check)
                    steps += 1
                    heapq.heappush(heap, (when + timedelta(seconds=secs + float(rng.exponential(1.0))), i, name))
    finally:
        store.now = old_now
    return {"annotators": stats, "labels": steps, "ended_at": clock["now"].isoformat(timespec="seconds")}


def _qualify_step(lab: Lab, sim: SimAnnotator, rng, task_set, answers, secs: float, stat: dict) -> bool:
    """Answer one qualification pair when a set asks for one; True when a step was taken."""
    for st in lab.round_states(task_set):
        if st["state"] != "qualify":
            if st["state"] == "failed":
                stat["qualification"] = "failed"
            continue
        item = lab.qualification_next(st["task_set"])
        if item is None:
            continue
        true = answers[item["pair_id"]][0]
        res = lab.qualification_answer(st["task_set"], item["attempt"], item["position"],
                                       _answer(sim, true, True, rng), time_ms=int(secs * 1000))
        if res["done"]:
            stat["qualification"] = "passed" if res["passed"] else "failed"
        return True
    return False


def true_order_agrees(true_quality: dict[str, float], estimated: dict[str, float | None]) -> bool:
    """Whether every annotator of higher true quality has a higher estimate (ties in truth: any order)."""
    names = [n for n in true_quality if estimated.get(n) is not None]
    if len(names) < len(true_quality):
        return False
    return all(estimated[a] > estimated[b] for a in names for b in names if true_quality[a] > true_quality[b])


def accuracy_against(truth: dict[str, int], labels: dict[str, int | None]) -> dict:
    """Share of ``labels`` equal to ``truth`` over the pairs both have; a tie (None) counts one half."""
    common = [p for p in labels if p in truth]
    if not common:
        return {"n": 0, "accuracy": None, "ties": 0}
    ties = sum(labels[p] is None for p in common)
    right = sum(labels[p] == truth[p] for p in common if labels[p] is not None)
    return {"n": len(common), "accuracy": (right + 0.5 * ties) / len(common), "ties": ties}
