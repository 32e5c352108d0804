"""``embedded``: the offline CPU judge, the studio's stance model (``berds_core.stance``).

P(the passage supports the perspective) is the stance model's support
probability for the pair ``(perspective, passage)`` with its ``judge`` rule:
a temperature and, when the cross-validation chose it, the consistency
reading (averaged with P(oppose) of the perspective's negation); a passage is
labelled "supports" at the rule's threshold, chosen for F1 by
question-grouped cross-validation on the BERDS human pairs' development half
(``scripts/train_stance.py``; the out-of-fold figures are in the weights'
report and ``docs/stance.md``).

The passage is read as ``title. text`` (``stance.passage_string``), the same
string the ``diverse`` preset reads, so a pair is encoded once for every use
(the stance model's encodings live in the embedding store).

``encoding`` (default ``auto``: bf16 on CPUs with native bf16, else int8 on
CPU, fp32 on accelerators; see ``berds_core.embeddings.models.resolve_encoding``) picks the
network's precision; the precision is part of the judge's name.
"""
from __future__ import annotations

import numpy as np

from .base import Judge, JudgeError


class EmbeddedJudge(Judge):
    backend = "embedded"
    commit_every = 512

    def __init__(self, threshold: float | None = None, device: str | None = None, batch_size: int = 64,
                 weights: str | None = None, encoding: str | None = "auto"):
        from ..embeddings.models import resolve_encoding
        from ..stance import get_stance_model

        try:
            self.encoding = resolve_encoding(encoding, device)
            # the process-wide model: the preset and discovery read the same network (loaded once)
            self.model = get_stance_model(weights, device=device, encoding=self.encoding, batch_size=batch_size)
        except (ValueError, FileNotFoundError) as e:
            raise JudgeError(str(e)) from None
        super().__init__(self.model.threshold("judge") if threshold is None else threshold)

    def load(self) -> None:
        """Load the network now (the app's warm-up), not at the first uncached pair."""
        with self.model._lock:
            if self.model._net is None:
                self.model._load()

    def _before_scoring(self) -> None:
        self.load()  # a missing base model fails before any progress bar (and at a Ray actor's start)

    def _name_stem(self) -> str:
        return f"embedded-{self.model.name}" + ("" if self.encoding == "fp32" else f"-{self.encoding}")

    def status(self) -> dict:
        cv = (self.model.meta.get("oof") or {}).get("judge") or {}
        detail = "stance model (MiniLM cross-encoder)"
        if cv:
            detail += (f" (out-of-fold F1 {cv['f1']:.2f}, kappa {cv['kappa']:.2f} on the BERDS human pairs' "
                       "development half)")
        return {"ok": True, "detail": detail}

    def document(self, ctx: dict) -> str:
        """``title. text``: what the stance model reads for a passage in every use."""
        from ..stance import passage_string

        return passage_string(ctx)

    def _score(self, pairs):
        return np.asarray(self.model.supports([(persp, doc) for doc, persp in pairs]), dtype=np.float64)


def judge_report(weights: str | None = None) -> dict:
    """The out-of-fold judge figures stored with the stance model's weights (``{}`` when absent)."""
    from ..stance.model import WEIGHTS
    from ..stance.network import load_weights

    try:
        return (load_weights(weights or WEIGHTS)["meta"].get("oof") or {}).get("judge") or {}
    except (OSError, ValueError, KeyError):
        return {}
