"""``openai:<model>@<base_url>``: any OpenAI-compatible chat-completions server.

vLLM (``vllm serve``, e.g. the BERDS evaluator with its LoRA adapter: spec
``berds-evaluator:<base_url>``), Ollama, llama.cpp's server or OpenAI itself.
Requests run concurrently (``concurrency``) through the project's one
OpenAI-style HTTP client (:class:`berds_core.generators.openai.OpenAIClient`:
a timeout per request, retries with backoff on 429, 5xx, timeouts and
connection errors).

The prompt is a named prompt (``berds``, the paper's, by default); chat APIs
get its system turn (``system="auto"`` keeps it, except for models named
Mistral/Mixtral, whose chat template has no system role; ``keep``/``drop``
force it; a vLLM server of the BERDS evaluator needs ``drop``, which the
``berds-evaluator:<url>`` spec sets).

Decisions (``decode``):

- ``logits`` (default): one request with ``max_tokens=1`` and top logprobs; the
  probability of support is the softmax over the log-probabilities of "Yes" and
  "No". When the server offers no logprobs (or neither word is among the top
  ones) the reply of the ``generate`` mode decides;
- ``generate``: greedy decoding of 16 tokens parsed by the authors' parser
  (probability 1 or 0).

The API key comes from ``api_key=`` or the environment
(``BERDS_OPENAI_API_KEY``, ``OPENAI_API_KEY``); it is sent in the Authorization
header only and never logged, named or written.
"""
from __future__ import annotations

import math
import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from ..generators.openai import (LogprobsRejected, OpenAIClient, choice_text, first_token_logprobs,
                                 option_logprobs)
from .base import Judge, JudgeError, safe_name
from .hf import GENERATE_TOKENS, AskOptions, ask_options, is_mistral, prompt_tag
from .prompts import parse_answer

__all__ = ["OpenAIJudge"]


def _yes_no_from_logprobs(choice: dict) -> float | None:
    """Probability of Yes from the first generated token's top logprobs, if Yes/No are among them."""
    yes, no = option_logprobs(first_token_logprobs(choice), ["yes", "no"])
    if yes == -math.inf and no == -math.inf:
        return None
    return float(1.0 / (1.0 + math.exp(no - yes))) if yes > -math.inf and no > -math.inf else float(no == -math.inf)


class OpenAIJudge(Judge):
    backend = "openai"

    def __init__(self, model: str, base_url: str, *, concurrency: int = 8, timeout: float = 60.0, retries: int = 4,
                 backoff: float = 0.5, api_key: str | None = None, top_logprobs: int = 5,
                 ask: AskOptions | None = None, **ask_fields):
        """``ask`` (:class:`~.hf.AskOptions`; or its fields as keywords); the rest reach the server."""
        a = ask_options(ask, ask_fields)
        super().__init__(a.threshold)
        self.prompt, self.shot, self.decode, self.system = a.checked()
        self.model_id = model
        self.keep_system = not is_mistral(model) if a.system == "auto" else a.system == "keep"
        self.http = OpenAIClient(base_url, api_key=api_key, timeout=timeout, retries=retries, backoff=backoff,
                                 concurrency=concurrency, error=JudgeError, who="openai judge")
        self.base_url, self.concurrency, self.timeout = self.http.base_url, self.http.concurrency, self.http.timeout
        self.top_logprobs = int(top_logprobs)
        self.commit_every = max(4 * self.concurrency, 16)
        self._use_logprobs = True
        self._lock = threading.Lock()
        self.decided_by = {"logprobs": 0, "text": 0}  # how each scored pair was decided (reported by the CLI)

    def __getstate__(self):  # picklable (the client drops its key itself); the lock is rebuilt
        state = dict(self.__dict__)
        state.pop("_lock", None)
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        self._lock = threading.Lock()

    def _name_stem(self) -> str:
        host = self.base_url.split("://", 1)[-1]
        return (f"openai-{safe_name(self.model_id)}@{safe_name(host)}-"
                f"{prompt_tag(self.prompt, self.shot, self.decode, self.keep_system)}")

    def status(self) -> dict:
        return self.http.status()

    def messages(self, document: str, perspective: str) -> list[dict]:
        """The chat messages for one pair (the system turn already kept or dropped)."""
        return self.prompt.messages(document, perspective, self.shot, system=self.keep_system)

    def score_one(self, document: str, perspective: str) -> float:
        return self.ask(self.messages(document, perspective))

    def reply(self, msgs: list[dict]) -> str:
        """The authors' reply: greedy, up to 16 tokens."""
        return choice_text(self.http.chat(self.model_id, msgs, max_tokens=GENERATE_TOKENS, temperature=0.0))

    def ask(self, msgs: list[dict]) -> float:
        """P("Yes") for one chat: from logprobs when the server offers them, else the parsed reply."""
        if self.decode == "logits" and self._use_logprobs:
            try:
                choice = self.http.chat(self.model_id, msgs, max_tokens=1, top_logprobs=self.top_logprobs)
            except LogprobsRejected:
                self._use_logprobs = False
            else:
                prob = _yes_no_from_logprobs(choice)
                if prob is not None:
                    self._count("logprobs")
                    return prob
        self._count("text")
        return 1.0 if parse_answer(self.reply(msgs)) else 0.0

    def _count(self, how: str) -> None:
        with self._lock:
            self.decided_by[how] += 1

    def yes_probability(self, prompts: list[str]) -> np.ndarray:
        """P("Yes") for free-form yes/no questions, one user turn each (not cached)."""
        with ThreadPoolExecutor(max_workers=self.concurrency) as pool:
            return np.array(list(pool.map(lambda q: self.ask([{"role": "user", "content": q}]), prompts)))

    def _score(self, pairs):
        out = np.full(len(pairs), np.nan)
        error: BaseException | None = None
        with ThreadPoolExecutor(max_workers=self.concurrency) as pool:
            futures = [pool.submit(self.score_one, p, s) for p, s in pairs]
            for i, f in enumerate(futures):
                try:
                    out[i] = f.result()
                except JudgeError as e:
                    error = error or e
        if error is not None:
            done = ~np.isnan(out)
            self._commit([pairs[i] for i in np.flatnonzero(done)], out[done])  # keep what was done
            raise error
        return out
