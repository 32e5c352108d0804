"""``argkp``: the offline cross-encoder judge trained on human-labelled argument matching (IBM ArgKP).

A cross-encoder reads ``[CLS] perspective [SEP] passage [SEP]`` together: the stance network
(:mod:`berds_core.stance.network`, the packaged MiniLM with LoRA factors merged at load) trained by
``scripts/train_argkp_judge.py`` on ArgKP train to say whether an argument expresses a key point (class 0 of
its three; ``weights/argkp_ce_v1.npz``, about 1 MB). Its match logit (:func:`match_logits`), beside the
MiniLM cosine when the head reads both, goes through the logistic head, calibration, threshold, unsure band
and topicality gate chosen by ``scripts/train_judge.py --features ce|ce+cos`` (question-grouped nested
cross-validation on the BERDS human pairs' development half; ``weights/argkp_judge_v1.npz``). Pairs are
encoded through the stance model's embedding store and their probabilities through the prediction cache, so
a pair is read by the network once. Figures: ``docs/judge.md``.
"""
from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np

from ..stance.model import get_stance_model
from .base import JudgeError
from .calibration import head_probability
from .embedded import EmbeddedJudge, apply_calibration

CE_WEIGHTS = Path(__file__).with_name("weights") / "argkp_ce_v1.npz"
HEAD_WEIGHTS = Path(__file__).with_name("weights") / "argkp_judge_v1.npz"


def match_logits(logits) -> np.ndarray:
    """log P(match) - log P(no match) from the network's three logits (class 0: match; 1 and 2: not)."""
    L = np.asarray(logits, np.float64)
    rest = np.logaddexp(L[:, 1], L[:, 2])
    return L[:, 0] - rest


class CrossEncoderJudge(EmbeddedJudge):
    """The embedded judge's calibration, band and topicality gate over the ArgKP cross-encoder's logit."""

    what = "ArgKP cross-encoder, calibrated, gated on topicality"
    backend = "argkp"

    def __init__(self, threshold: float | None = None, device: str | None = None, batch_size: int = 64,
                 weights: str | None = None, encoding: str | None = "auto", cross_encoder: str | None = None):
        super().__init__(threshold, device, batch_size, str(weights or HEAD_WEIGHTS), encoding)
        self.ce_path = Path(cross_encoder or CE_WEIGHTS)
        if not self.ce_path.exists():
            raise JudgeError(f"argkp judge: cross-encoder weights missing: {self.ce_path} "
                             "(run scripts/train_argkp_judge.py)")
        # the cache namespace names both files: a retrained network or a new head is another judge
        digest = hashlib.sha1(Path(weights or HEAD_WEIGHTS).read_bytes() + self.ce_path.read_bytes()).hexdigest()
        self.stamp = digest[:8]
        self.features = list(self.meta.get("features") or [])
        self.uses_cos = any(f.startswith("cos") for f in self.features)

    @property
    def cross_encoder(self):
        return get_stance_model(str(self.ce_path), device=self.device, encoding=self.encoding,
                                batch_size=self.batch_size)

    def load(self) -> None:
        super().load()  # the gate's encoder
        try:
            self.cross_encoder._load()
        except Exception as e:  # noqa: BLE001 - the loader says what is missing
            raise JudgeError(f"argkp judge: cannot load its cross-encoder: {e}".splitlines()[0]) from None

    def _name_stem(self) -> str:
        return f"argkp-ce-{self.stamp}" + ("" if self.encoding == "fp32" else f"-{self.encoding}")


    def features_of(self, pairs) -> np.ndarray:
        """The head's features of ``(passage, perspective)`` pairs: the match logit (and the cosine)."""
        ce = match_logits(self.cross_encoder.logits([(p, d) for d, p in pairs]))
        if not self.uses_cos:
            return ce
        return np.stack([ce, super().cosines(pairs)], 1)

    def _score(self, pairs):
        try:
            x = self.features_of(pairs)
        except (OSError, ValueError) as e:
            raise JudgeError(f"argkp judge: cannot load its models: {e}".splitlines()[0]) from None
        return apply_calibration(self.meta["calibration"], head_probability(self.meta["head"], x))
