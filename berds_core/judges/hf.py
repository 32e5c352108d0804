"""``hf:<model>[+<adapter>]``: a transformers causal LM as judge.

The prompt is a named prompt (:mod:`berds_core.judges.prompts`; ``berds``, the
paper's, by default) built as the BERDS authors build it, through the
tokenizer's chat template with the generation prompt. The system turn is
dropped for Mistral-Instruct models (``system="auto"``), as the authors do
for their evaluator; ``system="keep"|"drop"`` forces it.

Two decisions (``decode``):

- ``logits`` (default): one forward pass; the probability of support is the
  softmax over the "Yes" and "No" logits at the first answer position (each the
  logsumexp over the word's spellings: ``Yes``, ``▁Yes``, ``yes``...). It agrees
  with greedy decoding whenever the first generated token is Yes or No, and
  gives a probability;
- ``generate``: the authors' exact procedure, greedy decoding of 16 new tokens
  parsed by their parser (:func:`prompts.parse_answer`); probability 1 or 0.

Loading, left padding, batching, bf16 on GPU, the optional PEFT LoRA adapter
and the optimised forward path (``inference``: on CUDA by default, the
shared prefix ``[INST] Document: ... Statement:`` of a passage's perspectives
computed once, length buckets, the LoRA merged; the same decisions as the
plain path) are :class:`berds_core.generators.hf.HFGenerator`'s. The
BERDS evaluator is ``hf:mistralai/Mistral-7B-Instruct-v0.2+timchen0618/Mistral_BERDS_evaluator``
(spec ``berds-evaluator``).
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass, replace

import numpy as np

from ..generators import get_generator
from ..generators.base import GenerationError
from ..generators.hf import HFGenerator
from ..naming import model_label
from ..specs import SpecError
from .base import Judge, JudgeError
from .prompts import DEFAULT_PROMPT, get_prompt, parse_answer

BERDS_EVALUATOR = "mistralai/Mistral-7B-Instruct-v0.2+timchen0618/Mistral_BERDS_evaluator"
DECODES = ("logits", "generate")
SYSTEMS = ("auto", "keep", "drop")
GENERATE_TOKENS = 16  # the authors' max_new_tokens


def is_mistral(model: str, model_type: str | None = None) -> bool:
    """Mistral / Mixtral (Instruct) by name, or by ``model_type`` in a local folder's config.json."""
    name = str(model).lower()
    if "mistral" in name or "mixtral" in name:
        return True
    if model_type is None and os.path.isfile(os.path.join(str(model), "config.json")):
        try:
            with open(os.path.join(str(model), "config.json"), encoding="utf-8") as fh:
                model_type = json.load(fh).get("model_type")
        except (OSError, ValueError):
            model_type = None
    return str(model_type or "").lower() in ("mistral", "mixtral")


def llm_judge_options(prompt, shot, decode, system) -> tuple:
    """Validated (prompt, shot, decode, system) of an LLM judge; ValueError (one line) otherwise."""
    try:
        p = get_prompt(prompt or DEFAULT_PROMPT)
    except SpecError as e:
        raise ValueError(str(e)) from None
    if int(shot) not in (0, 1):
        raise ValueError("shot must be 0 or 1")
    if decode not in DECODES:
        raise ValueError(f"decode must be one of {', '.join(DECODES)}, not {decode!r}")
    if system not in SYSTEMS:
        raise ValueError(f"system must be one of {', '.join(SYSTEMS)}, not {system!r}")
    return p, int(shot), decode, system


@dataclass(frozen=True)
class AskOptions:
    """How an LLM judge asks and decides, the same for every backend: the named ``prompt`` (``berds`` /
    ``studio``; None: the default), ``shot`` (0 or 1 example), ``decode`` (``logits`` or ``generate``), the
    ``system`` turn (``auto``, ``keep`` or ``drop``) and the decision ``threshold``."""

    prompt: str | None = None
    shot: int = 0
    decode: str = "logits"
    system: str = "auto"
    threshold: float = 0.5

    def checked(self) -> tuple:
        """(prompt object, shot, decode, system), validated (ValueError, one line)."""
        return llm_judge_options(self.prompt, self.shot, self.decode, self.system)


def ask_options(ask: AskOptions | None, fields: dict) -> AskOptions:
    """``ask`` (default ``AskOptions()``) with the fields a caller gave as keywords set on top."""
    return replace(ask or AskOptions(), **fields)


def prompt_tag(prompt, shot: int, decode: str, keep_system: bool) -> str:
    """The part of a judge's name that says how it was asked: prompt, system turn, shots, decoding."""
    tag = prompt.name + ("-nosys" if prompt.has_system and not keep_system else "")
    return f"{tag}-{shot}shot" + ("-gen" if decode == "generate" else "")


class HFJudge(Judge):
    """A judge over :class:`berds_core.generators.hf.HFGenerator` (loading, chat template, batching)."""

    backend = "hf"

    def __init__(self, model: str, adapter: str | None = None, *, device: str | None = None, dtype: str | None = None,
                 batch_size: int = 8, max_length: int = 4096, inference=None, ask: AskOptions | None = None,
                 **ask_fields):
        """``ask`` (:class:`AskOptions`; or its fields as keywords: ``prompt``, ``shot``, ``decode``,
        ``system``, ``threshold``); the rest load the model (:class:`HFGenerator`)."""
        a = ask_options(ask, ask_fields)
        super().__init__(a.threshold)
        self.prompt, self.shot, self.decode, self.system = a.checked()
        self.model_id, self.adapter_id = model, adapter
        self.keep_system = self._resolve_system(is_mistral(model))

        # shared per process with every judge / generator of the same model and options: the logits and
        # generate decodings of one model (``--compare-decode``) load it once
        self.lm = get_generator(f"hf:{model}" + (f"+{adapter}" if adapter else ""), device=device, dtype=dtype,
                                batch_size=int(batch_size), max_length=int(max_length),
                                system="keep" if self.system == "keep" else "auto", inference=inference)
        self.batch_size = self.lm.batch_size
        self.commit_every = max(self.batch_size * 8, 64)
        self._label = None

    def _resolve_system(self, mistral: bool) -> bool:
        """Whether the prompt's system turn is sent. ``auto``: not for Mistral models (the authors drop it
        for their evaluator; newer Mistral templates would merge it into the user turn), else kept when the
        chat template accepts a system role and dropped when it does not (a property of the model, so one
        judge name still means one input)."""
        if self.system == "auto":
            return not mistral
        return self.system == "keep"

    def _name_stem(self) -> str:
        stem = f"hf-{self._label or model_label(self.model_id)}"
        if self.adapter_id:
            stem += f"+{model_label(self.adapter_id)}"
        return f"{stem}-{prompt_tag(self.prompt, self.shot, self.decode, self.keep_system)}"

    @classmethod
    def from_loaded(cls, model, tokenizer, label: str, **opts) -> "HFJudge":
        """A judge around an already built model + tokenizer (benchmarks, notebooks); ``label`` names it."""
        judge = cls(label, **opts)
        judge._label = label
        judge.keep_system = judge._resolve_system(
            is_mistral(label, getattr(getattr(model, "config", None), "model_type", None)))
        judge.lm = HFGenerator.from_loaded(model, tokenizer, label, batch_size=judge.batch_size,
                                           max_length=judge.lm.max_length, system=judge.lm.system,
                                           inference=judge.lm.inference)
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

    def _before_scoring(self) -> None:
        self.load()

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

    # -- prompts --------------------------------------------------------
    def messages(self, document: str, perspective: str) -> list[dict]:
        """The chat messages for one pair (the system turn already kept or dropped)."""
        return self.prompt.messages(document, perspective, self.shot, system=self.keep_system)

    def render(self, document: str, perspective: str) -> str:
        """The full prompt text for one pair (chat template + generation prompt)."""
        return self.render_messages(self.messages(document, perspective))

    def render_messages(self, msgs: list[dict]) -> str:
        """Chat messages as the model's prompt text, ending where the answer begins."""
        self.load()
        try:
            return self.lm.render(msgs)
        except GenerationError as e:
            hint = " (use system='drop' / --system drop)" if any(m["role"] == "system" for m in msgs) else ""
            raise JudgeError(f"{e}{hint}") from None

    # -- scoring --------------------------------------------------------
    def yes_no_logits(self, prompts: list[str]):
        """(n, 2) float32 array of logsumexp logits of Yes and No at the last position."""
        return self.lm.logsumexp_of(self.lm.last_logits(prompts), ["Yes", "No"], normalize=False).astype(np.float32)

    def generate_answers(self, pairs) -> list[str]:
        """The authors' greedy 16-token replies for pairs (cached in the generation cache)."""
        self.load()
        for p, s in pairs[:1]:
            self.render(p, s)  # a template that rejects the messages fails here with the hint
        try:
            return self.lm.generate([self.messages(p, s) for p, s in pairs], max_new_tokens=GENERATE_TOKENS)
        except GenerationError as e:
            raise JudgeError(str(e)) from None

    def _score(self, pairs):
        self.load()
        if self.decode == "generate":
            return np.array([1.0 if parse_answer(t) else 0.0 for t in self.generate_answers(list(pairs))])
        return self._p_yes([self.render(p, s) for p, s in pairs])

    def yes_probability(self, prompts: list[str]) -> np.ndarray:
        """P("Yes") vs "No" for free-form yes/no questions, one user turn each (not cached)."""
        self.load()
        return self._p_yes([self.render_messages([{"role": "user", "content": q}]) for q in prompts])

    def _p_yes(self, prompts: list[str]) -> np.ndarray:
        """Softmax over the (Yes, No) log-probabilities at the last position; batches sorted by length."""
        ln = np.asarray(self.yes_no_logits(prompts), dtype=np.float64).reshape(-1, 2)
        return 1.0 / (1.0 + np.exp(ln[:, 1] - ln[:, 0]))
