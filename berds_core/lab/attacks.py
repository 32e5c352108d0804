"""What an annotator can learn about which pairs are gold checks from what the server sends, as the audit of
issue 63 did it: the simulated attackers :mod:`berds_core.lab.simulate` lets label a round.

- :class:`OrderReader` (the order attacker): knows the subsets (every pair's, and that a stratified queue
  takes one pair of each per block) and sees the pair on screen and the next five the page holds. It keeps
  the fewest-insertions explanation of the queue so far: the fewest pairs to take out so that what is left
  is whole blocks (each subset once) in a row, the last one possibly open. The pair on screen is *flagged*
  when an explanation of the history, the pair and the five ahead with that fewest number calls it an
  insertion. A dynamic programme over (position, subsets of the open block): ``2^S`` states a step.
- :class:`PlacementTimer` (the placement-timing attacker): times each run (a decision sent, the next pairs
  back) and flags the pairs that came into its look-ahead in a run slower than ``factor`` times the median
  of its recent runs, or in the run after it: a check used to be placed just past the pairs the page holds
  (it came into view one decision later) by a run that read every known answer.

Each keeps what it flagged; whether a flagged pair was a check is counted by the simulation, which knows.
"""
from __future__ import annotations

import statistics
from dataclasses import dataclass, field

import numpy as np

INF = np.iinfo(np.int32).max // 4


class OrderReader:
    """The order attacker over ``strata`` (the subsets it knows); see the module docstring."""

    def __init__(self, strata):
        self.strata = sorted(set(strata))
        self.bit = {s: 1 << i for i, s in enumerate(self.strata)}
        self.full = (1 << len(self.strata)) - 1
        size = 1 << len(self.strata)
        self.f = np.full(size, INF, dtype=np.int64)
        self.f[0] = 0  # the queue starts at a block's start
        states = np.arange(size)
        self._moves = {}
        for s, b in self.bit.items():
            src = states[(states & b) == 0]
            dst = src | b
            dst[dst == self.full] = 0  # a block is whole: the next one starts
            self._moves[s] = (src, dst)

    def _step(self, f: np.ndarray, stratum, *, keep: bool = True, drop: bool = True) -> np.ndarray:
        """The costs after one more pair: taken out (+1) and/or kept in the open block."""
        out = f + 1 if drop else np.full_like(f, INF)
        if keep and stratum in self._moves:
            src, dst = self._moves[stratum]
            np.minimum.at(out, dst, f[src])
        return np.minimum(out, INF)

    def flags(self, window: list) -> bool:
        """Whether the first pair of ``window`` (strata of the pair on screen and those the page holds ahead)
        can be called an insertion by a fewest-insertions explanation of everything seen."""
        if not window or window[0] not in self.bit:
            return True  # a subset no block has: an insertion whatever else
        forced = self._step(self.f, window[0], keep=False)
        free = self._step(self.f, window[0])
        for s in window[1:]:
            forced, free = self._step(forced, s), self._step(free, s)
        return int(forced.min()) <= int(free.min())

    def seen(self, stratum) -> None:
        """The pair on screen was decided: it joins the history."""
        self.f = self._step(self.f, stratum)


@dataclass
class PlacementTimer:
    """The placement-timing attacker; see the module docstring."""

    factor: float = 1.5
    runs: list = field(default_factory=list)
    window: list = field(default_factory=list)
    marked: set = field(default_factory=set)
    armed: bool = False  # the last run was slow: what this one brings into view is marked too

    def run(self, seconds: float, window: list) -> list:
        """One run took ``seconds`` and left ``window`` (the pairs the page holds, in order); returns the pairs
        it marks: those new in the window when this run or the one before it was slow."""
        new = [p for p in window if p not in self.window]
        slow = len(self.runs) >= 10 and seconds > self.factor * statistics.median(self.runs[-50:])
        self.runs.append(seconds)
        self.window = list(window)
        hit = slow or self.armed
        self.armed = slow
        if hit:
            self.marked.update(new)
            return new
        return []

    def flags(self, pair_id: str) -> bool:
        return pair_id in self.marked
