"""``embedded``: the offline CPU judge: a calibrated cosine head, gated on topicality.

P(the passage supports the perspective) is read from the cosine of the packaged MiniLM's embeddings of the
perspective and the passage text (the vectors dense retrieval stores: one embedding per passage, shared)
through a logistic head and the calibration map chosen by question-grouped nested cross-validation on the
BERDS human pairs' development half (``scripts/train_judge.py``; weights and out-of-fold report in
``weights/embedded_v4.npz``, figures in ``docs/judge.md``). It measures closeness, not stance: it cannot
tell a passage for a perspective from one against it (``describe_judge`` says so wherever it is shown).

Two more rules come with the weights:

- **topicality first** (:meth:`EmbeddedJudge.topical`): a passage whose cosine with the *question* is below
  the gate's ``tau`` supports nothing (``judge_run`` and ``judge_passages`` apply it when they know the
  question);
- **unsure** (:attr:`EmbeddedJudge.band`): probabilities inside the band of thresholds the development
  questions cannot tell apart are drawn as "unsure" and not counted as covering a perspective
  (``judges.calibration.verdicts``).

The stance model (``berds_core.stance``) measured below this head as a judge out of fold (F1 0.29 against
0.39; ``docs/judge.md``): it serves the preset and discovery, where it is better.

``encoding`` (default ``auto``: fp32, the reference, on every device unless ``$BERDS_ENCODING`` names a
speed mode; ``berds_core.embeddings.models.resolve_encoding``) picks the encoder's precision; any but fp32
is part of the name (``embedded-cos-v4-bf16``), so its verdicts are cached and labelled apart.
"""
from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path

import numpy as np

from ..embeddings.models import resolve_encoding
from ..embeddings.text_encoders import embed_text, text_encoder
from .base import Judge, JudgeError

WEIGHTS = Path(__file__).with_name("weights") / "embedded_v4.npz"


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


def apply_calibration(c: dict, p: np.ndarray) -> np.ndarray:
    """The calibration map ``c`` (``none`` | ``platt`` | ``isotonic``) applied to head probabilities."""
    p = np.asarray(p, dtype=np.float64)
    if c["kind"] == "platt":
        q = np.clip(p, 1e-6, 1 - 1e-6)
        return 1.0 / (1.0 + np.exp(-(c["a"] * np.log(q / (1 - q)) + c["b"])))
    if c["kind"] == "isotonic":
        return np.interp(p, np.asarray(c["x"]), np.asarray(c["y"]))
    return p


class EmbeddedJudge(Judge):
    what = "MiniLM cosine, calibrated, gated on topicality"  # the status line's first words
    backend = "embedded"
    commit_every = 512  # pairs per committed chunk (and per Ray task)

    def __init__(self, threshold: float | None = None, device: str | None = None, batch_size: int = 64,
                 weights: str | None = None, encoding: str | None = "auto"):
        self.meta = load_head(str(weights or WEIGHTS))
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

    def __getstate__(self):  # a Ray actor gets the weights, not this process's encoder
        return dict(self.__dict__)


def judge_report(weights: str | None = None) -> dict:
    """The out-of-fold judge figures stored with the weights (``{}`` when absent)."""
    try:
        return (load_head(str(weights or WEIGHTS)).get("oof") or {}).get("judge") or {}
    except JudgeError:
        return {}
