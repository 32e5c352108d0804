"""``openai:<model>@<base_url>``: any OpenAI-compatible chat-completions server.

vLLM (``vllm serve``), Ollama, llama.cpp's server or OpenAI itself. Requests
run concurrently (``concurrency``) through the project's one OpenAI-style
HTTP client (:class:`berds_core.generators.openai.OpenAIClient`: a timeout
per request, retries with backoff on 429, 5xx, timeouts and connection errors). When the
server returns ``logprobs``/``top_logprobs`` the probability of support is the
softmax over the log-probabilities of "Yes" and "No"; otherwise the answer
text is parsed (Yes -> 1, No -> 0). The API key comes from ``api_key=``, or
the environment (``BERDS_OPENAI_API_KEY``, ``OPENAI_API_KEY``); it is sent in
the Authorization header only and never logged, named or written.
"""
from __future__ import annotations

import math
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from ..generators.openai import (LogprobsRejected, OpenAIClient, choice_text, first_token_logprobs,
                                 normalize_base_url, option_logprobs)
from .base import Judge, JudgeError, safe_name
from .prompts import PROMPT_VERSION, messages, parse_answer

__all__ = ["OpenAIJudge", "normalize_base_url"]


def _yes_no_from_logprobs(choice: dict) -> float | None:
    """Probability of Yes from the first generated token's top logprobs, if Yes/No are among them."""
    yes, no = option_logprobs(first_token_logprobs(choice), ["yes", "no"])
    if yes == -math.inf and no == -math.inf:
        return None
    return float(1.0 / (1.0 + math.exp(no - yes))) if yes > -math.inf and no > -math.inf else float(no == -math.inf)


class OpenAIJudge(Judge):
    backend = "openai"

    def __init__(self, model: str, base_url: str, *, shot: int = 0, concurrency: int = 8,
                 timeout: float = 60.0, retries: int = 4, backoff: float = 0.5, api_key: str | None = None,
                 threshold: float = 0.5):
        super().__init__(threshold)
        self.model_id, self.shot = model, int(shot)
        self.http = OpenAIClient(base_url, api_key=api_key, timeout=timeout, retries=retries, backoff=backoff,
                                 concurrency=concurrency, error=JudgeError, who="openai judge")
        self.base_url, self.concurrency, self.timeout = self.http.base_url, self.http.concurrency, self.http.timeout
        self.commit_every = max(4 * self.concurrency, 16)
        self._use_logprobs = True

    def _name_stem(self) -> str:
        host = self.base_url.split("://", 1)[-1]
        return f"openai-{safe_name(self.model_id)}@{safe_name(host)}-{PROMPT_VERSION}-{self.shot}shot"

    def status(self) -> dict:
        return self.http.status()

    def score_one(self, document: str, perspective: str) -> float:
        return self.ask(messages(document, perspective, self.shot))

    def ask(self, msgs: list[dict]) -> float:
        """P("Yes") for one chat: from logprobs when the server offers them, else the parsed answer."""
        choice = None
        if self._use_logprobs:
            try:
                choice = self.http.chat(self.model_id, msgs, max_tokens=1, top_logprobs=5)
            except LogprobsRejected:
                self._use_logprobs = False
        if choice is None:
            choice = self.http.chat(self.model_id, msgs, max_tokens=1)
        prob = _yes_no_from_logprobs(choice)
        if prob is None:
            text = choice_text(choice)
            prob = parse_answer(text)
            if prob is None:
                raise JudgeError(f"openai judge: answer is neither Yes nor No: {text[:80]!r}")
        return prob

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
