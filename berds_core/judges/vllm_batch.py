"""``vllm[:<model>[+<adapter>]]``: an LLM judge run by vLLM engines inside Ray Data (``ray.data.llm``).

Only with ``--ray`` (``berds_core.distributed.judge`` builds the processor):
pairs not in the prediction cache become a Ray dataset, each row one request
to a vLLM engine actor (one per GPU), the evaluator's LoRA adapter loaded by
the engine (``enable_lora``; the row's ``model`` names the adapter, a hub id
or a path). ``vllm`` alone is the BERDS paper's evaluator:
Mistral-7B-Instruct-v0.2 + ``timchen0618/Mistral_BERDS_evaluator``, the
``berds`` prompt, system turn dropped (as ``berds-evaluator`` does).

This class holds what the judge *is*, testable without vLLM: its name, the
chat messages of a pair (the same prompt, byte for byte, as the ``hf:`` and
``openai:`` judges send), the sampling parameters of each decoding and how
an engine's output row becomes P(Yes):

- ``logits`` (default): one generated token with its top log-probabilities;
  P(Yes) is the softmax over "Yes" and "No" (any spelling of the token, as the
  ``openai:`` judge reads them); neither among them: the reply decides;
- ``generate``: greedy, 16 tokens, the authors' parser (probability 1 or 0).

vLLM's kernels differ from transformers', so this judge has its own name and
cache entries (``vllm-...``), like ``openai:`` has.
"""
from __future__ import annotations

import math

from ..generators.openai import option_logprobs
from ..naming import model_label
from .base import Judge, JudgeError
from .hf import AskOptions, GENERATE_TOKENS, ask_options, is_mistral, prompt_tag
from .prompts import parse_answer

MAX_LORA_RANK = 64  # the evaluator's adapter (the README's `vllm serve` command uses the same)


class VLLMJudge(Judge):
    backend = "vllm"
    commit_every = 4096  # rows per Ray dataset; the engines batch on their own

    def __init__(self, model: str, adapter: str | None = None, *, batch_size: int = 64, max_model_len: int = 4096,
                 top_logprobs: int = 20, ask: AskOptions | None = None, **ask_fields):
        """``ask`` (:class:`~.hf.AskOptions`; or its fields as keywords); the rest size the engines."""
        a = ask_options(ask, ask_fields)
        super().__init__(a.threshold)
        self.prompt, self.shot, self.decode, self.system = a.checked()
        self.model_id, self.adapter_id = model, adapter
        self.keep_system = not is_mistral(model) if a.system == "auto" else a.system == "keep"
        self.batch_size, self.max_model_len, self.top_logprobs = int(batch_size), int(max_model_len), int(top_logprobs)

    def _name_stem(self) -> str:
        stem = f"vllm-{model_label(self.model_id)}"
        if self.adapter_id:
            stem += f"+{model_label(self.adapter_id)}"
        return f"{stem}-{prompt_tag(self.prompt, self.shot, self.decode, self.keep_system)}"

    def status(self) -> dict:
        return {"ok": True, "detail": "vLLM engines on a Ray cluster (berds judge --ray ADDRESS)"}

    def messages(self, document: str, perspective: str) -> list[dict]:
        return self.prompt.messages(document, perspective, self.shot, system=self.keep_system)

    def sampling_params(self) -> dict:
        if self.decode == "generate":
            return {"temperature": 0.0, "max_tokens": GENERATE_TOKENS}
        return {"temperature": 0.0, "max_tokens": 1, "logprobs": self.top_logprobs}

    def request(self, document: str, perspective: str) -> dict:
        """The columns a ``ray.data.llm`` vLLM processor reads for one pair."""
        row = {"messages": self.messages(document, perspective), "sampling_params": self.sampling_params()}
        if self.adapter_id:
            row["model"] = self.adapter_id  # the engine loads this LoRA adapter (hub id or path)
        return row

    def engine_kwargs(self) -> dict:
        kw = {"max_model_len": self.max_model_len, "enable_prefix_caching": True}
        if self.adapter_id:
            kw.update(enable_lora=True, max_lora_rank=MAX_LORA_RANK, max_loras=1)
        return kw

    def probability(self, row: dict) -> float:
        """P(Yes) from one output row of the engine (``generated_text``, ``logprobs``)."""
        if self.decode == "logits":
            first = _first_token_candidates(row.get("logprobs"))
            if first:
                yes, no = option_logprobs(first, ["yes", "no"])
                if yes > -math.inf or no > -math.inf:
                    if yes > -math.inf and no > -math.inf:
                        return float(1.0 / (1.0 + math.exp(no - yes)))
                    return float(no == -math.inf)
        return 1.0 if parse_answer(str(row.get("generated_text") or "")) else 0.0

    def _before_scoring(self) -> None:  # predict() calls this before any progress bar
        raise JudgeError("the vllm judge runs on a Ray cluster through ray.data.llm: add --ray ADDRESS "
                         "(or set BERDS_RAY_ADDRESS)")

    def _score(self, pairs):
        self._before_scoring()


def _first_token_candidates(logprobs) -> dict[str, float]:
    """``{token text: logprob}`` of the first generated token: vLLM gives, per token, a mapping of token
    id to ``{logprob, rank, decoded_token}`` (after Ray Data, possibly a list of ``(id, info)`` pairs)."""
    if logprobs is None or len(logprobs) == 0:
        return {}
    first = logprobs[0]
    items = first.items() if isinstance(first, dict) else first
    out: dict[str, float] = {}
    for item in items or ():
        try:
            _tok, info = item
            text, lp = info.get("decoded_token"), float(info.get("logprob"))
        except (TypeError, ValueError, AttributeError):
            continue
        if text is not None and not math.isnan(lp):
            out.setdefault(str(text), lp)
    return out
