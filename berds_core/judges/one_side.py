"""One passage, one side: the embedded judge's decision for perspectives that exclude each other.

For a passage and a group of two opposite perspectives (:mod:`.groups`) the judge decides none or exactly one
member (``scripts/train_one_side_judge.py`` chose the rule by question-grouped nested cross-validation;
``docs/judge.md``, "One passage, one side"):

- ``g`` = P(the passage supports one of the two): the calibrated logistic head of the members' mean cosine
  with the passage (v4's closeness; 0 for a passage off the question's topic);
- ``s`` = P(this member | one of them) = sigmoid(a * (m1 - m2) + b * affirmative): ``m1``, ``m2`` the stance
  model's support-minus-oppose margins of the two members, ``b`` the prior of the affirmative member
  (:func:`groups.affirmative_first`: of a statement and its negation the one without it, of an either-or
  question's alternatives the one it names first; no prior for a group without one). Swapping two members
  swaps the decision: the order a dataset lists them in never moves it;
- P(member) = g * s, P(other) = g * (1 - s); the more probable member is the one decided (equal: the lower
  perspective index), "supports" when its probability reaches the rule's threshold; its unsure band is the
  rule's own.

The stance model (its own weights, ``weights/side_stance_v1.npz``: the recipe of ``berds_core.stance`` trained
without the questions the rule was fitted on) reads the members only where ``g`` reaches the bottom of the
unsure band: below it no member can be "supports" or "unsure" whatever the side, and the members get ``g / 2``
each (the side unknown). Pure numpy here; the judge (:class:`berds_core.judges.embedded.EmbeddedJudge`)
supplies cosines and stance margins.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .calibration import apply_calibration, head_probability

@dataclass(frozen=True)
class OneSideRule:
    head: dict
    calibration: dict
    side: dict  # {"a": slope of the margin difference, "b": the affirmative member's prior}
    threshold: float
    band: tuple[float, float]
    stance_model: str  # the side reader's weights file, beside the judge's

    @classmethod
    def from_meta(cls, meta: dict) -> "OneSideRule":
        if meta.get("rule", "stance-2") != "stance-2":
            raise ValueError(f"one-side rule {meta.get('rule')!r}: this version reads stance-2")
        t = float(meta["threshold"])
        lo, hi = (float(v) for v in meta["band"])
        return cls(dict(meta["head"]), dict(meta["calibration"]), {"a": float(meta["side"]["a"]),
                   "b": float(meta["side"]["b"])}, t, (min(lo, t), max(hi, t)), str(meta["stance_model"]))

    def group_probability(self, mean_cos) -> np.ndarray:
        """g: P(the passage supports one member) from the members' mean cosine with it."""
        return apply_calibration(self.calibration, head_probability(self.head, np.asarray(mean_cos, float)))

    def needs_side(self, g) -> np.ndarray:
        """Where the stance model must read the members: g at or above the bottom of the band."""
        return np.asarray(g, float) >= self.band[0]

    def side_probability(self, margin_first, margin_second, affirmative: bool) -> np.ndarray:
        """s: P(the first member | one of them) from the stance margins (support minus oppose logits);
        ``affirmative``: the first member is the group's affirmative (its prior applies)."""
        x = np.asarray(margin_first, float) - np.asarray(margin_second, float)
        return 1.0 / (1.0 + np.exp(-(self.side["a"] * x + self.side["b"] * float(bool(affirmative)))))

    def member_probabilities(self, g, s) -> np.ndarray:
        """(n, 2): P(first member), P(second member) = g * s, g * (1 - s)."""
        g, s = np.asarray(g, float), np.asarray(s, float)
        return np.stack([g * s, g * (1.0 - s)], axis=1)


def picked(P, groups) -> np.ndarray:
    """(passages x perspectives) bool: where a column is decided by its own probability: every column outside
    ``groups``, and in each group (two members) the more probable member (equal: the lower perspective index),
    the one the rule decides "supports" or not; its partner is "does not support" whatever its probability."""
    P = np.asarray(P, float)
    out = np.ones(P.shape, dtype=bool)
    for group in groups:
        i, j = sorted(group)
        first = P[:, i] >= P[:, j]  # i < j: equal goes to the lower index
        out[:, i] &= first
        out[:, j] &= ~first
    return out


def stance_margin(logits) -> np.ndarray:
    """The stance model's support-minus-oppose logit per ``(target, text)`` read (classes: support, oppose,
    unrelated)."""
    Z = np.asarray(logits, float).reshape(-1, 3)
    return Z[:, 0] - Z[:, 1]


__all__ = ["OneSideRule", "picked", "stance_margin"]
