"""``hf:<model>[+<adapter>]``: a transformers causal LM as judge, one forward pass per pair.

The paper's prompt goes through the tokenizer's chat template; the decision
is read from the next-token logits at the last position: the probability of
support is the softmax over the "Yes" and "No" logits (each the logsumexp
over the tokenisations of the word, with and without a leading space). No
generation. Loading, left padding, batches sorted by length, bf16 on GPU and the
optional PEFT LoRA adapter are :class:`berds_core.generators.hf.HFGenerator`'s. The BERDS evaluator is
``hf:mistralai/Mistral-7B-Instruct-v0.2+timchen0618/Mistral_BERDS_evaluator``.
"""
from __future__ import annotations

import numpy as np

from ..generators.base import GenerationError
from ..generators.hf import HFGenerator, answer_token_ids  # noqa: F401 (answer_token_ids re-exported)
from .base import Judge, JudgeError, model_label
from .prompts import PROMPT_VERSION, messages

BERDS_EVALUATOR = "mistralai/Mistral-7B-Instruct-v0.2+timchen0618/Mistral_BERDS_evaluator"


class HFJudge(Judge):
    """A judge over :class:`berds_core.generators.hf.HFGenerator` (loading, chat template, batching)."""

    backend = "hf"

    def __init__(self, model: str, adapter: str | None = None, *, shot: int = 0, device: str | None = None,
                 dtype: str | None = None, batch_size: int = 8, threshold: float = 0.5,
                 max_length: int = 2048):
        super().__init__(threshold)
        if shot not in (0, 1):
            raise ValueError("shot must be 0 or 1")
        self.model_id, self.adapter_id, self.shot = model, adapter, int(shot)
        self.lm = HFGenerator(model, adapter, device=device, dtype=dtype, batch_size=batch_size,
                              max_length=max_length)
        self.batch_size = self.lm.batch_size
        self.commit_every = max(self.batch_size * 8, 64)
        self._label = None

    def _name_stem(self) -> str:
        stem = f"hf-{self._label or model_label(self.model_id)}"
        if self.adapter_id:
            stem += f"+{model_label(self.adapter_id)}"
        return f"{stem}-{PROMPT_VERSION}-{self.shot}shot"

    @classmethod
    def from_loaded(cls, model, tokenizer, label: str, **opts) -> "HFJudge":
        """A judge around an already built model + tokenizer (benchmarks, notebooks); ``label`` names it."""
        judge = cls(label, **opts)
        judge._label = label
        judge.lm = HFGenerator.from_loaded(model, tokenizer, label, batch_size=judge.batch_size,
                                           max_length=judge.lm.max_length)
        judge._check_answer_tokens()
        return judge

    # -- loading --------------------------------------------------------
    def load(self):
        try:
            self.lm.load()
        except GenerationError as e:
            raise JudgeError(str(e)) from None
        self._check_answer_tokens()
        return self

    def _check_answer_tokens(self):
        if not self.lm.token_ids("Yes") or not self.lm.token_ids("No"):
            raise JudgeError(f"tokenizer of '{self.model_id}' has no single token for 'Yes'/'No'")

    @property
    def _tok(self):
        return self.lm.tokenizer

    @property
    def _model(self):
        return self.lm.model

    @property
    def _yes(self):
        return self.lm.token_ids("Yes")

    @property
    def _no(self):
        return self.lm.token_ids("No")

    def status(self) -> dict:
        return self.lm.status()

    # -- scoring --------------------------------------------------------
    def render(self, document: str, perspective: str) -> str:
        """The full prompt text for one pair (chat template + generation prompt)."""
        return self.render_messages(messages(document, perspective, self.shot))

    def render_messages(self, msgs: list[dict]) -> str:
        """Chat messages as the model's prompt text, ending where the answer begins."""
        self.load()
        return self.lm.render(msgs)

    def yes_no_logits(self, prompts: list[str]):
        """(n, 2) float32 array of logsumexp logits of Yes and No at the last position."""
        return self.lm.logsumexp_of(self.lm.last_logits(prompts), ["Yes", "No"], normalize=False).astype(np.float32)

    def _score(self, pairs):
        self.load()
        return self._p_yes([self.render(p, s) for p, s in pairs])

    def yes_probability(self, prompts: list[str]) -> np.ndarray:
        """P("Yes") vs "No" for free-form yes/no questions, one user turn each (not cached)."""
        self.load()
        return self._p_yes([self.render_messages([{"role": "user", "content": q}]) for q in prompts])

    def _p_yes(self, prompts: list[str]) -> np.ndarray:
        """Softmax over the (Yes, No) log-probabilities at the last position; batches sorted by length."""
        ln = np.asarray(self.yes_no_logits(prompts), dtype=np.float64).reshape(-1, 2)
        return 1.0 / (1.0 + np.exp(ln[:, 1] - ln[:, 0]))
