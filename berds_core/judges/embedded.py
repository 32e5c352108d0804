"""``embedded``: the offline CPU judge (packaged MiniLM features + a small trained head).

Features come from ``features.Featurizer`` (one MiniLM pass per unique text,
passage embeddings reused across perspectives); the head is a standardised
logistic regression over the feature subset chosen by
``scripts/train_embedded_judge.py``, whose weights ship in
``weights/embedded_v2.npz`` with the decision threshold, the number of tokens
a text is truncated to (``max_seq_length``: 128 in v2, which bench/judge_cpu.py
measured at ~1.6x the speed of MiniLM's 256, with the same ranking quality on
the human pairs: out-of-fold AUC 0.664 vs 0.655) and the training report.

``encoding`` (default ``auto``: bf16 on CPUs with native bf16, else int8 on
CPU, fp32 on accelerators; see ``berds_core.embeddings.models.resolve_encoding``) picks the
MiniLM precision; bench/judge_cpu.py measured bf16 at ~1.7x the fp32 speed
with identical decisions on the human pairs. The encoding is part of the name.

Only the features the head uses are computed: the shipped head uses sentence
cosines only, so scoring is one encoding per unique text (passages reused
across perspectives and, through ``features.EmbeddingStore``, across runs and
processes) plus a vectorised dot product.
"""
from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path

import numpy as np

from .base import Judge, JudgeError
from .features import FEATURES, Featurizer

WEIGHTS = Path(__file__).with_name("weights") / "embedded_v2.npz"
VERSION = "v2"


@lru_cache(maxsize=4)
def load_head(path: str = str(WEIGHTS)) -> dict:
    """The trained head: feature names, scaler, coefficients, threshold, relevance head, report."""
    p = Path(path)
    if not p.exists():
        raise JudgeError(f"embedded judge weights missing: {p} (run scripts/train_embedded_judge.py)")
    z = np.load(p, allow_pickle=False)
    head = {k: z[k] for k in z.files}
    head["features"] = [str(f) for f in head["features"]]
    unknown = [f for f in head["features"] if f not in FEATURES]
    if unknown:
        raise JudgeError(f"embedded judge weights name unknown features {unknown}")
    head["meta"] = json.loads(str(head.get("meta", "{}")))
    msl = head.get("max_seq_length")
    head["max_seq_length"] = int(msl) if msl is not None and int(msl) > 0 else None
    return head


class EmbeddedJudge(Judge):
    backend = "embedded"
    commit_every = 2048

    def __init__(self, threshold: float | None = None, device: str | None = None, batch_size: int = 64,
                 weights: str | None = None, encoding: str | None = "auto"):
        from ..embeddings.models import resolve_encoding

        self.head = load_head(str(weights or WEIGHTS))
        try:
            self.encoding = resolve_encoding(encoding, device)
        except ValueError as e:
            raise JudgeError(str(e)) from None
        super().__init__(float(self.head["threshold"]) if threshold is None else threshold)
        self.featurizer = Featurizer(device=device, batch_size=batch_size,
                                     rel_head=(self.head["rel_w"].astype(np.float32), float(self.head["rel_b"])),
                                     encoding=self.encoding, needed=self.head["features"],
                                     max_seq_length=self.head["max_seq_length"])
        self._cols = [FEATURES.index(f) for f in self.head["features"]]

    def _name_stem(self) -> str:
        # the head was trained on fp32 features; other encodings get their own name and cache entries
        return f"embedded-minilm-{VERSION}" + ("" if self.encoding == "fp32" else f"-{self.encoding}")

    def status(self) -> dict:
        m = self.head["meta"].get("cv", {})
        detail = "MiniLM + trained head"
        if m:
            detail += f" (grouped-CV F1 {m.get('f1', float('nan')):.2f} on BERDS human pairs)"
        return {"ok": True, "detail": detail}

    def document(self, ctx: dict) -> str:
        """The passage text alone: the head was trained on the human pairs' documents, not on
        the BERDS evaluator's ``text + " " + title``."""
        return str(ctx.get("text") or "")

    def probabilities(self, X: np.ndarray) -> np.ndarray:
        """Head output for a full feature matrix (rows x FEATURES)."""
        x = (X[:, self._cols] - self.head["mean"]) / self.head["scale"]
        z = x @ self.head["coef"] + float(self.head["intercept"])
        return 1.0 / (1.0 + np.exp(-z))

    def _score(self, pairs):
        return self.probabilities(self.featurizer.features(list(pairs)))
