"""``embedded``: the offline CPU judge: a calibrated cosine head, gated on topicality, one side of opposite
perspectives.

P(the passage supports the perspective) is read from the cosine of the packaged MiniLM's embeddings of the
perspective and the passage text (the vectors dense retrieval stores: one embedding per passage, shared)
through a logistic head and the calibration map chosen by question-grouped nested cross-validation on the
BERDS human pairs' development half (``scripts/train_judge.py``). Alone that measures closeness, not stance:
a passage gets nearly the same value for a statement and its negation.

Three more rules come with the weights (``weights/embedded_v5.npz``, figures in ``docs/judge.md``):

- **topicality first** (:meth:`EmbeddedJudge.topical`): a passage whose cosine with the *question* is below
  the gate's ``tau`` supports nothing (``judge_run`` and ``judge_passages`` apply it when they know the
  question);
- **one passage, one side** (:meth:`EmbeddedJudge.decide`, :mod:`.one_side`, v5): of two perspectives that
  exclude each other (:mod:`.groups`: a statement and its negation) a passage supports at most one, the side
  the stance model (``berds_core.stance``) reads, with the group's own threshold and unsure band; chosen by
  ``scripts/train_one_side_judge.py`` (nested cross-validation, the stance reads out of fold);
- **unsure** (:attr:`EmbeddedJudge.band`, :attr:`EmbeddedJudge.group_band`): probabilities inside the band of
  thresholds the development questions cannot tell apart are drawn as "unsure" and not counted as covering a
  perspective (``judges.calibration.verdicts``).

``encoding`` (default ``auto``: fp32, the reference, on every device unless ``$BERDS_ENCODING`` names a
speed mode; ``berds_core.embeddings.models.resolve_encoding``) picks the encoder's precision; any but fp32
is part of the name (``embedded-cos-v5-bf16``), so its verdicts are cached and labelled apart.
"""
from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path

import numpy as np

from ..embeddings.models import resolve_encoding
from ..embeddings.text_encoders import embed_text, text_encoder
from ..stance.model import get_stance_model
from .base import Judge, JudgeError
from .calibration import apply_calibration
from .groups import affirmative_first
from .one_side import OneSideRule, picked, stance_margin

WEIGHTS = Path(__file__).with_name("weights") / "embedded_v5.npz"


@lru_cache(maxsize=4)
def load_head(path: str = str(WEIGHTS)) -> dict:
    """The judge's weights (head, calibration, threshold, band, gate) and out-of-fold report."""
    p = Path(path)
    if not p.exists():
        raise JudgeError(f"embedded judge weights missing: {p} (run scripts/train_judge.py)")
    try:
        meta = json.loads(str(np.load(p, allow_pickle=False)["meta"]))
        for key in ("head", "calibration", "threshold", "band", "gate"):
            meta[key]  # noqa: B018 - every field must be there
    except (OSError, ValueError, KeyError) as e:
        raise JudgeError(f"embedded judge weights {p}: unreadable ({type(e).__name__}: {e})") from None
    return meta


class EmbeddedJudge(Judge):
    what = "MiniLM cosine, calibrated, gated on topicality"  # the status line's first words
    backend = "embedded"
    commit_every = 512  # pairs per committed chunk (and per Ray task)

    def __init__(self, threshold: float | None = None, device: str | None = None, batch_size: int = 64,
                 weights: str | None = None, encoding: str | None = "auto"):
        self.meta = load_head(str(weights or WEIGHTS))
        self.weights_dir = Path(weights or WEIGHTS).parent
        try:
            self.encoding = resolve_encoding(encoding, device)
        except ValueError as e:
            raise JudgeError(str(e)) from None
        self.device, self.batch_size = device, batch_size
        super().__init__(float(self.meta["threshold"]) if threshold is None else threshold)
        lo, hi = (float(v) for v in self.meta["band"])
        # the band always holds the threshold, so a label and its verdict never disagree
        self.band = (min(lo, self.threshold), max(hi, self.threshold))
        self.tau = float(self.meta["gate"]["tau"])
        try:  # v5: the rule for perspectives that exclude each other (None: every pair alone, as v4)
            self.one_side = OneSideRule.from_meta(self.meta["one_side"]) if self.meta.get("one_side") else None
        except (KeyError, TypeError, ValueError) as e:
            raise JudgeError(f"embedded judge weights {weights or WEIGHTS}: one_side rule unreadable ({e})") from None
        self.group_band = self.one_side.band if self.one_side else None

    @property
    def encoder(self):
        """The process-wide text encoder (MiniLM at the judge's precision): its vectors are dense retrieval's."""
        return text_encoder(None, device=self.device, encoding=self.encoding)

    def load(self) -> None:
        """Load the encoder now (the app's warm-up), not at the first text the store does not hold."""
        try:
            self.encoder.encoder  # noqa: B018 - loads it
        except Exception as e:  # noqa: BLE001 - the encoder's own loader says what is missing
            raise JudgeError(f"embedded judge: cannot load its encoder: {e}".splitlines()[0]) from None

    def _name_stem(self) -> str:
        return f"embedded-cos-{self.meta.get('version', 'v4')}" + ("" if self.encoding == "fp32" else f"-{self.encoding}")

    def status(self) -> dict:
        cv = (self.meta.get("oof") or {}).get("judge") or {}
        detail = self.what
        if cv:
            detail += (f" (out-of-fold F1 {cv['f1']:.2f}, kappa {cv['kappa']:.2f}, calibration error "
                       f"{cv['ece']:.2f} on the BERDS human pairs' development half)")
        return {"ok": True, "detail": detail}

    def document(self, ctx: dict) -> str:
        """The passage text: the string dense retrieval embeds (``embeddings.text_encoders.embed_text``)."""
        return embed_text(ctx)

    def probabilities(self, cos: np.ndarray) -> np.ndarray:
        """Calibrated P(supports) for cosines of (perspective, passage) embeddings."""
        h = self.meta["head"]
        z = (np.asarray(cos, np.float64) - h["mean"]) / h["scale"] * h["coef"] + h["intercept"]
        return apply_calibration(self.meta["calibration"], 1.0 / (1.0 + np.exp(-z)))

    def _score(self, pairs):
        return self.probabilities(self.cosines(pairs))

    def cosines(self, pairs) -> np.ndarray:
        """The cosine of the embeddings of each ``(passage, perspective)`` pair."""
        docs = list(dict.fromkeys(d for d, _ in pairs))
        persp = list(dict.fromkeys(p for _, p in pairs))
        enc = self.encoder  # texts the embedding store holds need no model (the demo ships its vectors)
        try:
            D = dict(zip(docs, enc.embed(docs)))
            P = dict(zip(persp, enc.embed(persp)))
        except (OSError, ValueError) as e:
            raise JudgeError(f"embedded judge: cannot load its encoder: {e}".splitlines()[0]) from None
        return np.array([float(np.dot(D[d], P[p])) for d, p in pairs])

    def topical(self, question: str, docs: list[str]) -> np.ndarray:
        """Per passage text: is it about ``question`` (cosine with the question >= the gate's tau)?"""
        if not docs:
            return np.zeros(0, dtype=bool)
        enc = self.encoder
        q = enc.embed([question])[0]
        return enc.embed(list(docs)) @ q >= self.tau

    # -------------------------------------------------------------- one passage, one side
    @property
    def stance_model(self):
        """The one-side rule's side reader (its weights beside the judge's, at the judge's precision)."""
        return get_stance_model(str(self.weights_dir / self.one_side.stance_model), device=self.device,
                                encoding=self.encoding)

    def decide(self, question, docs, perspectives, probs, labels, groups):
        """The one-side rule (:mod:`.one_side`) on the members of ``groups``; other pairs as they are."""
        rule = self.one_side
        if rule is None or not groups or not len(docs):
            return probs, labels
        P, L = np.array(probs, dtype=float, copy=True), np.array(labels, dtype=bool, copy=True)
        enc = self.encoder
        C = enc.embed(list(docs)) @ enc.embed(list(perspectives)).T
        on = self.topical(question, list(docs)) if question is not None else np.ones(len(docs), bool)
        todo, reads = [], []
        for group in groups:
            (i, j), affirmative = affirmative_first(tuple(group), perspectives, question)
            g = np.where(on, rule.group_probability((C[:, i] + C[:, j]) / 2.0), 0.0)
            need = np.flatnonzero(rule.needs_side(g))
            todo.append((i, j, affirmative, g, need))
            reads += [(perspectives[k], docs[r]) for r in need for k in (i, j)]
        try:
            M = stance_margin(self.stance_model.logits(reads)).reshape(-1, 2) if reads else np.zeros((0, 2))
        except (OSError, ValueError) as e:
            raise JudgeError(f"embedded judge: cannot load its side reader: {e}".splitlines()[0]) from None
        at = 0
        for i, j, affirmative, g, need in todo:
            s = np.full(len(docs), 0.5)
            s[need] = rule.side_probability(M[at:at + len(need), 0], M[at:at + len(need), 1], affirmative)
            at += len(need)
            P[:, [i, j]] = rule.member_probabilities(g, s)
        # of each group the more probable member (equal: the lower perspective index) at the rule's threshold
        members = sorted({k for group in groups for k in group})
        L[:, members] = (picked(P, groups) & (P >= rule.threshold))[:, members]
        return P, L

    def __getstate__(self):  # a Ray actor gets the weights, not this process's encoder
        return dict(self.__dict__)


def judge_report(weights: str | None = None, part: str = "judge") -> dict:
    """The out-of-fold figures stored with the weights (``{}`` when absent): ``judge`` (the project's fold
    assignment, seed 0) or ``median`` (medians over the fold assignments, v5's one-side rule)."""
    try:
        return (load_head(str(weights or WEIGHTS)).get("oof") or {}).get(part) or {}
    except JudgeError:
        return {}
