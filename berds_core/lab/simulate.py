"""Simulated annotators of known quality, labelling a round through the same server path as people.

The annotator model is MACE's own generative story (Hovy et al. 2013): on each
pair an annotator with competence ``c`` knows the true label with probability
``c`` and gives it; otherwise they answer at random (``P(supports) = bias``).
Kinds that quality control must catch:

- ``spammer``: competence 0 (every answer at random), fast (about 1.2 s a label):
  the gold checks see it and pause their queue;
- ``gamer``: answers every gold check right (as if they could tell checks
  apart) and everything else at random, fast: the checks alone miss them, the
  estimate across redundant labels must not.
- ``order``: the order attacker of issue 63 (:class:`~berds_core.lab.attacks.OrderReader`: the
  fewest-insertions explanation of the queue, the pair on screen and the five the page holds
  ahead, every pair's subset known): reads a pair it flags (answers it right), answers
  the rest at random;
- ``timing``: the placement-timing attacker (:class:`~berds_core.lab.attacks.PlacementTimer`):
  times each run (decision sent, next pairs back) and reads the pairs that came into its
  look-ahead in a slow run or the run after it; the rest at random;
- ``skipper``: skips exactly the checks (as if it could tell them) and answers the rest at
  random (a skipped check used to be neither scored nor reported);
- ``strategic``: a gamer who has only what an annotator has and uses every channel: before
  deciding, the order and the placement timing, and it **skips** a pair they flag; after
  deciding, its own export (a column that sets the row apart), the judge reveal (a pair
  whose reveal differs from most) and the server's time of the label (far longer than its
  others), each followed by undo and the right answer (:class:`StrategicGamer`). Everything
  else at random, fast, its browser claiming 6.5 s a label. Whether the checks paused it is
  in the round's report.

:func:`simulate_round` lets each simulated annotator take their next pair from
:class:`~berds_core.lab.access.Lab` (role checks, qualification, check placement,
pausing: all as for a person), on a simulated clock (each label takes a
log-normal time around the annotator's median), so the round's health figures
(labels per hour, time per label) look like a real round's.
"""
from __future__ import annotations

import heapq
import statistics
import time
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone

import numpy as np

from .access import Actor, Lab
from .attacks import OrderReader, PlacementTimer
from .checks import known_answers, rng_for
from .rounds import LOOKAHEAD
from .store import SKIP, StoreError

KINDS = {"spammer": (0.0, "same", 1.2), "gamer": (0.0, "right", 1.5), "strategic": (0.0, "strategic", 1.5),
         "order": (0.0, "order", 1.5), "timing": (0.0, "timing", 1.5), "skipper": (0.0, "skip", 1.5)}
ATTACKS = ("order", "timing", "skip", "strategic")  # the kinds that look for checks (their flags are counted)
CHANNELS = ("order", "placement", "export", "reveal", "timing")
BREAK_S = 0.25  # mean seconds between a decision and the next pair's reading
SPOOFED_MS = 6500  # what the strategic gamer's browser claims each label took


@dataclass(frozen=True)
class SimAnnotator:
    name: str
    competence: float
    checks: str = "same"  # "same": like any pair; "right": every check right; one of ATTACKS: see the module
    seconds: float = 8.0  # median time per label
    bias: float = 0.5  # P(supports) when answering at random
    kind: str = "competence"

    @property
    def quality(self) -> float:
        """True quality on the pairs that are not checks (what the estimate should recover)."""
        return self.competence


def parse_simulation(text: str, annotators) -> dict[str, SimAnnotator]:
    """``"ann1=0.95,ann2=0.8,ann3=spammer,ann4=gamer,ann5=strategic"`` -> simulated annotators (names must be in
    the round, each named once; kinds: :data:`KINDS`)."""
    names = list(annotators)
    out = {}
    for item in (t.strip() for t in str(text).split(",")):
        if not item:
            continue
        name, sep, what = item.partition("=")
        name, what = name.strip(), what.strip().lower()
        if not sep or not name or not what:
            raise ValueError(f"write NAME=COMPETENCE or NAME={'|'.join(KINDS)}, got {item!r}")
        if name not in names:
            raise ValueError(f"{name!r} is not one of the round's annotators ({', '.join(names)})")
        if name in out:
            raise ValueError(f"{name} is named twice")
        if what in KINDS:
            comp, checks, secs = KINDS[what]
            out[name] = SimAnnotator(name, comp, checks, secs, kind=what)
            continue
        try:
            comp = float(what)
        except ValueError:
            raise ValueError(f"{name}: competence is a number between 0 and 1, or {' / '.join(KINDS)}") from None
        if not 0.0 <= comp <= 1.0:  # nan fails this too
            raise ValueError(f"{name}: competence is between 0 and 1")
        out[name] = SimAnnotator(name, comp, seconds=round(4.0 + 8.0 * comp, 1))
    if not out:
        raise ValueError("name at least one simulated annotator")
    return out


SAFE_COLUMNS = {"label", "note", "updated_at", "time_ms", "server_ms", "unsure", "judge_visible", "document",
                "question", "perspective", "title", "ref", "annotator", "app_version"}


@dataclass
class StrategicGamer:
    """What a gamer can learn about a pair just decided, without reading it: :meth:`after` (its own export, the
    judge reveal, the server's time of the label) says whether to undo and relabel it. Before deciding it reads
    the order and the placement timing (:mod:`berds_core.lab.attacks`)."""

    reveals: list = field(default_factory=list)
    latencies: list = field(default_factory=list)
    undone: int = 0

    def after(self, rows: list[dict], revealed: bool, seconds: float) -> str | None:
        """The channel that marks the pair just labelled as a check (None when none does): ``rows`` is the
        gamer's own export (its last row is this pair), ``revealed`` whether the judge reveal showed an
        answer, ``seconds`` what the label took on the server."""
        why = None
        if len(rows) >= 20:
            last = rows[-1]
            for col in (c for c in last if c not in SAFE_COLUMNS):
                key = (lambda v: str(v).split(":")[0]) if col in ("id", "pair_id") else str
                share = Counter(key(r.get(col)) for r in rows)[key(last.get(col))] / len(rows)
                if share < (0.1 if col in ("id", "pair_id") else 0.03):
                    why = "export"
                    break
        if why is None and len(self.reveals) >= 10:
            usual = sum(self.reveals) * 2 >= len(self.reveals)
            if revealed != usual and sum(r == usual for r in self.reveals) >= 0.9 * len(self.reveals):
                why = "reveal"
        if why is None and len(self.latencies) >= 10:
            med = statistics.median(self.latencies[-50:])
            if seconds > 3 * med and seconds - med > 0.002:
                why = "timing"
        if why is None:
            self.reveals.append(revealed)
            self.latencies.append(seconds)
        return why


@dataclass
class Attacker:
    """One simulated annotator's ways of looking for checks (:data:`ATTACKS`), and what they found: per channel,
    the pairs it flagged that were checks and that were tasks, beside the checks and tasks it was served."""

    kind: str
    order: OrderReader
    timer: PlacementTimer = field(default_factory=PlacementTimer)
    gamer: StrategicGamer = field(default_factory=StrategicGamer)
    served: Counter = field(default_factory=Counter)
    flagged: Counter = field(default_factory=Counter)  # (channel, "check" | "task")
    skipped: int = 0
    last_label_s: float = 0.0

    def report(self) -> dict:
        """``served``, ``flagged`` per channel (checks, tasks) and the flag rates on each, ``skipped``, ``undone``."""
        out = {"served": dict(self.served), "skipped": self.skipped, "undone": self.gamer.undone, "flagged": {}}
        for ch in CHANNELS:
            c, t = self.flagged[(ch, "check")], self.flagged[(ch, "task")]
            if c or t:
                out["flagged"][ch] = {"checks": c, "tasks": t,
                                      "check_rate": c / self.served["check"] if self.served["check"] else None,
                                      "task_rate": t / self.served["task"] if self.served["task"] else None}
        return out


def _attack_step(lab: Lab, a: Attacker, window: list[str], strata: dict, true: int, is_check: bool, rng) -> None:
    """One decision of an attacker (:data:`ATTACKS`) on ``window[0]``, the page's pair on screen (``window``: it
    and the pairs the page holds ahead; ``strata``: every pair's subset, known to it)."""
    pid = window[0]
    what = "check" if is_check else "task"
    a.served[what] += 1
    marks = []
    if a.kind in ("order", "strategic") and a.order.flags([strata.get(p) for p in window]):
        marks.append("order")
    if a.kind in ("timing", "strategic") and a.timer.flags(pid):
        marks.append("placement")
    for ch in marks:
        a.flagged[(ch, what)] += 1
    if a.kind == "skip":
        value = SKIP if is_check else int(rng.random() < 0.5)
    elif marks:
        value = SKIP if a.kind == "strategic" else true  # the strategic gamer skips it, the others read it
    else:
        value = int(rng.random() < 0.5)
    a.skipped += value == SKIP
    t0 = time.perf_counter()
    lab.label(pid, value, time_ms=SPOOFED_MS)
    a.last_label_s = time.perf_counter() - t0
    a.order.seen(strata.get(pid))
    if a.kind != "strategic" or value == SKIP:
        return
    rows = lab.export_rows("labels", include_skips=True)
    why = a.gamer.after(rows, bool(lab.judge_answers(pid)), a.last_label_s)
    if why is None:
        return
    a.flagged[(why, what)] += 1
    try:
        if lab.undo() == pid:
            lab.label(pid, true, time_ms=SPOOFED_MS)
            a.gamer.undone += 1
    except StoreError:  # paused meanwhile: nothing is undone, nothing relabelled
        pass


def qualification_bot(lab: Lab, task_set: str, rng: np.random.Generator) -> bool | None:
    """One qualification attempt by a bot that answers each pair with the opposite of the previous pair's
    expected answer when an answer tells it (at random otherwise). Returns whether it passed (None when
    there was nothing to answer)."""
    res, guess = None, None
    while (item := lab.qualification_next(task_set)) is not None:
        value = guess if guess is not None else int(rng.random() < 0.5)
        res = lab.qualification_answer(task_set, item["attempt"], item["position"], value)
        guess = 1 - int(res["expected"]) if res.get("expected") is not None else None
    return None if res is None else bool(res["passed"])


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
    strata = {p.pair_id: p.subset or "(none)" for p in store.pairs()}
    attackers = {n: Attacker(p.checks, OrderReader(set(strata.values()))) for n, p in people.items()
                 if p.checks in ATTACKS}
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
                    t0 = time.perf_counter()
                    nxt = lab.next_pairs(LOOKAHEAD, task_set)  # the pair on screen and the five the page holds
                    served_s = time.perf_counter() - t0
                    if not nxt:
                        stats[name]["paused"] = any(s["state"] == "paused" for s in lab.round_states(task_set))
                        continue
                    pid = nxt[0]
                    is_check = store.reports.is_check_for(name, pid)
                    true = answers[pid][0] if is_check and pid in answers else int(truth.get(pid, 0))
                    if name in attackers:
                        a = attackers[name]
                        a.timer.run(a.last_label_s + served_s, nxt)  # the run: the last decision, these pairs
                        _attack_step(lab, a, nxt, strata, true, is_check, rng)
                    else:
                        lab.label(pid, _answer(sim, true, is_check, rng), time_ms=int(secs * 1000))
                    stats[name]["labels"] += 1
                    stats[name]["checks"] += int(is_check)
                    steps += 1
                    # the next pair follows after the page's turn (the keyboard widget shows it at once): a
                    # quarter of a second on average, so the server's time per label is the reading time and a bit
                    heapq.heappush(heap, (when + timedelta(seconds=secs + float(rng.exponential(BREAK_S))), i, name))
    finally:
        store.now = old_now
    for name, a in attackers.items():
        stats[name]["attack"] = a.report()
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
