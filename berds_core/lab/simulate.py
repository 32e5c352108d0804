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
- ``strategic``: a gamer who has only what an annotator has (:class:`StrategicGamer`):
  it reads a pair carefully (answers it right) only when a channel marks it as
  a check, and otherwise answers at random, fast, telling the browser it took
  6.5 s. Before deciding, the queue's order (a pair whose stratum breaks a
  round-robin cycle of strata, once the order has shown such a cycle); after
  deciding, its own export (a column that sets the row apart), the judge
  reveal (a pair whose reveal differs from most), and the server's time (a
  label that took far longer than its others), each followed by undo and the
  right answer. Whether the checks paused it is in the round's report.

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
from .checks import known_answers, rng_for
from .store import StoreError

KINDS = {"spammer": (0.0, "same", 1.2), "gamer": (0.0, "right", 1.5), "strategic": (0.0, "strategic", 1.5)}
BREAK_S = 0.25  # mean seconds between a decision and the next pair's reading
SPOOFED_MS = 6500  # what the strategic gamer's browser claims each label took


@dataclass(frozen=True)
class SimAnnotator:
    name: str
    competence: float
    checks: str = "same"  # "same": like any pair; "right": every check right; "strategic": :class:`StrategicGamer`
    seconds: float = 8.0  # median time per label
    bias: float = 0.5  # P(supports) when answering at random
    kind: str = "competence"

    @property
    def quality(self) -> float:
        """True quality on the pairs that are not checks (what the estimate should recover)."""
        return self.competence


def parse_simulation(text: str, annotators) -> dict[str, SimAnnotator]:
    """``"ann1=0.95,ann2=0.8,ann3=spammer,ann4=gamer,ann5=strategic"`` -> simulated annotators (names must be in
    the round, each named once)."""
    names = list(annotators)
    out = {}
    for item in (t.strip() for t in str(text).split(",")):
        if not item:
            continue
        name, sep, what = item.partition("=")
        name, what = name.strip(), what.strip().lower()
        if not sep or not name or not what:
            raise ValueError(f"write NAME=COMPETENCE or NAME=spammer|gamer|strategic, got {item!r}")
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
            raise ValueError(f"{name}: competence is a number between 0 and 1, or spammer / gamer / strategic") from None
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
    """What a gamer can learn about a pair from the channels an annotator has, without reading it.

    :meth:`before` (the queue's order) decides whether to read a pair before labelling it; :meth:`after`
    (its own export, the judge reveal, the server's time) whether to undo and relabel it. ``flags``
    counts the pairs each channel marked, ``hits`` those of them that were checks.
    """

    strata: list = field(default_factory=list)
    predictions: list = field(default_factory=list)
    reveals: list = field(default_factory=list)
    latencies: list = field(default_factory=list)
    flags: Counter = field(default_factory=Counter)
    hits: Counter = field(default_factory=Counter)
    undone: int = 0

    def before(self, stratum: str) -> bool:
        """Whether ``stratum`` breaks the round-robin cycle the queue has shown so far (then: a check)."""
        cycle = list(dict.fromkeys(self.strata))
        if len(cycle) < 2:
            self.strata.append(stratum)
            return False
        predicted = cycle[(cycle.index(self.strata[-1]) + 1) % len(cycle)]
        recent = self.predictions[-30:]
        active = len(recent) >= 20 and sum(recent) >= 0.8 * len(recent)
        hit = stratum == predicted
        if active and not hit:
            return True  # the cycle holds and this pair breaks it: read it
        self.predictions.append(hit)
        self.strata.append(stratum)
        return False

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


def _strategic_step(store, lab: Lab, pid: str, true: int, is_check: bool, gamer: StrategicGamer, rng) -> None:
    """One pair for the strategic gamer: read it if the order marks it, else answer at random; then undo
    and answer right if its export, the reveal or the server's time marks it."""
    stratum = store.pair(pid).subset or "(none)"
    if gamer.before(stratum):
        gamer.flags["order"] += 1
        gamer.hits["order"] += int(is_check)
        lab.label(pid, true, time_ms=SPOOFED_MS)
        return
    t0 = time.perf_counter()
    lab.label(pid, int(rng.random() < 0.5), time_ms=SPOOFED_MS)
    seconds = time.perf_counter() - t0
    rows = lab.export_rows("labels", include_skips=True)
    why = gamer.after(rows, bool(lab.judge_answers(pid)), seconds)
    if why is None:
        return
    gamer.flags[why] += 1
    gamer.hits[why] += int(is_check)
    try:
        if lab.undo() == pid:
            lab.label(pid, true, time_ms=SPOOFED_MS)
            gamer.undone += 1
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
    gamers: dict[str, StrategicGamer] = {}
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
                    is_check = store.is_check_for(name, pid)
                    true = answers[pid][0] if is_check and pid in answers else int(truth.get(pid, 0))
                    if sim.checks == "strategic":
                        _strategic_step(store, lab, pid, true, is_check, gamers.setdefault(name, StrategicGamer()),
                                        rng)
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
    for name, g in gamers.items():
        stats[name]["strategic"] = {"flags": dict(g.flags), "checks_among_flags": dict(g.hits), "undone": g.undone}
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
