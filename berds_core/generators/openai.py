"""``openai:<model>@<base_url>``: any OpenAI-compatible server (vLLM, Ollama, llama.cpp, OpenAI).

:class:`OpenAIClient` is the one HTTP client of the project's OpenAI-style
backends (generators and judges): a timeout per request, retries with
exponential backoff and jitter on 429, 5xx, timeouts and connection errors
(``Retry-After`` honoured, capped), one-line errors. The API key comes from
``api_key=`` or the environment (``BERDS_OPENAI_API_KEY``, ``OPENAI_API_KEY``);
it is sent in the Authorization header only, never logged, named, pickled or
written.
"""
from __future__ import annotations

import math
import random
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from ..naming import safe_name
from ..net.hub import locate
from ..net.openai_api import api_key as resolve_key, describe_reply, headers, normalize_base_url
from .base import GenerationError, Generator, Messages, ScoredText, as_messages

RETRY_STATUS = {408, 409, 425, 429, 500, 502, 503, 504}


class LogprobsRejected(Exception):
    """The server refused the logprobs parameters (HTTP 400): ask again without them."""


class OpenAIClient:
    """POST/GET against an OpenAI-compatible ``base_url`` with retries; errors name the URL, never the key."""

    def __init__(self, base_url: str, *, api_key: str | None = None, timeout: float = 60.0, retries: int = 4,
                 backoff: float = 0.5, concurrency: int = 8, error=GenerationError, who: str = "openai"):
        self.base_url = normalize_base_url(base_url)
        self.timeout, self.retries, self.backoff = float(timeout), max(0, int(retries)), float(backoff)
        self.concurrency = max(1, int(concurrency))
        self.error, self.who = error, who
        self._key = resolve_key(api_key)
        self._http = None

    def __getstate__(self):  # never pickle the key along
        state = dict(self.__dict__)
        state["_key"] = None
        state["_http"] = None
        return state

    def __repr__(self) -> str:
        return f"<OpenAIClient {self.base_url}>"

    @property
    def http(self):
        if self._http is None:
            import httpx

            self._http = httpx.Client(base_url=self.base_url, headers=headers(self._key), timeout=self.timeout,
                                      limits=httpx.Limits(max_connections=self.concurrency))
        return self._http

    def status(self) -> dict:
        import httpx

        try:
            r = self.http.get("/models", timeout=min(self.timeout, 5.0))
        except httpx.HTTPError as e:
            return {"ok": False, "detail": f"{self.base_url} unreachable ({type(e).__name__})"}
        if r.status_code in (401, 403):
            return {"ok": False, "detail": f"{self.base_url} refused the API key (HTTP {r.status_code})"}
        if r.status_code >= 400 and r.status_code != 404:
            return {"ok": False, "detail": f"{self.base_url} answered HTTP {r.status_code}"}
        return {"ok": True, "detail": f"{self.base_url} reachable"}

    def post(self, path: str, body: dict) -> dict:
        """The JSON reply; retries transient failures; :class:`LogprobsRejected` on a 400 to a logprobs request."""
        import httpx

        last = ""
        for attempt in range(self.retries + 1):
            if attempt:
                time.sleep(self.backoff * (2 ** (attempt - 1)) * (1 + 0.25 * random.random()))
            try:
                r = self.http.post(path, json=body)
            except httpx.TimeoutException:
                last = f"timed out after {self.timeout:g}s"
                continue
            except httpx.TransportError as e:
                last = f"cannot connect ({type(e).__name__}: {str(e).splitlines()[0] if str(e) else 'no detail'})"
                continue
            if r.status_code in RETRY_STATUS:
                last = f"HTTP {r.status_code}"
                ra = r.headers.get("retry-after")
                if ra and ra.replace(".", "", 1).isdigit():
                    time.sleep(min(float(ra), 30.0))
                continue
            if r.status_code == 400 and (body.get("logprobs") or body.get("prompt_logprobs")):
                raise LogprobsRejected()
            if r.status_code >= 400:
                raise self.error(f"{self.who}: {self.base_url} answered {describe_reply(r)}")
            try:
                return r.json()
            except ValueError:
                raise self.error(f"{self.who}: {self.base_url} answered non-JSON ({describe_reply(r)})") from None
        raise self.error(f"{self.who}: {self.base_url}: {last} (gave up after {self.retries + 1} tries)")

    def chat(self, model: str, messages: Messages, *, max_tokens: int, temperature: float = 0.0,
             top_logprobs: int = 0) -> dict:
        """The first choice of a chat completion (with ``logprobs`` when asked and the server agrees)."""
        body = {"model": model, "messages": messages, "max_tokens": int(max_tokens), "temperature": float(temperature)}
        if top_logprobs:
            body.update(logprobs=True, top_logprobs=int(top_logprobs))
        data = self.post("/chat/completions", body)
        try:
            choice = data["choices"][0]
        except (KeyError, IndexError, TypeError):
            raise self.error(f"{self.who}: {self.base_url} answered without choices: {str(data)[:120]}") from None
        if not isinstance(choice, dict):
            raise self.error(f"{self.who}: {self.base_url} answered a malformed choice: {str(choice)[:120]}")
        return choice

    def echo_logprobs(self, model: str, prompt: str) -> dict:
        """The ``logprobs`` of a legacy completion that echoes the prompt (``tokens``,
        ``token_logprobs``, ``text_offset``; vLLM, llama.cpp and OpenAI's legacy endpoint offer it)."""
        body = {"model": model, "prompt": prompt, "max_tokens": 1, "temperature": 0.0, "echo": True, "logprobs": 1}
        try:
            data = self.post("/completions", body)
        except LogprobsRejected:
            raise self.error(f"{self.who}: {self.base_url} does not return prompt logprobs "
                             "(/v1/completions with echo=true and logprobs); use an hf: model or a vLLM server") from None
        try:
            lp = data["choices"][0]["logprobs"]
            tokens, values = list(lp["tokens"]), list(lp["token_logprobs"])
        except (KeyError, IndexError, TypeError):
            raise self.error(f"{self.who}: {self.base_url} answered without prompt logprobs: "
                             f"{str(data)[:120]}") from None
        offsets = lp.get("text_offset")
        if not isinstance(offsets, list) or len(offsets) != len(tokens):
            offsets, at = [], 0
            for t in tokens:
                offsets.append(at)
                at += len(str(t))
        return {"tokens": tokens, "token_logprobs": values, "text_offset": offsets}


def choice_text(choice: dict) -> str:
    return str(((choice.get("message") or {}).get("content")) or choice.get("text") or "")


def first_token_logprobs(choice: dict) -> dict[str, float]:
    """``{token: logprob}`` of the first generated token's alternatives (the chosen one included)."""
    lp = choice.get("logprobs") or {}
    content = lp.get("content") if isinstance(lp, dict) else None
    if not content or not isinstance(content, list):
        return {}
    first = content[0] or {}
    cands: dict[str, float] = {}
    for c in list(first.get("top_logprobs") or []) + [first]:
        try:
            cands.setdefault(str(c["token"]), float(c["logprob"]))
        except (KeyError, TypeError, ValueError):
            continue
    return cands


def option_logprobs(cands: dict[str, float], options: list[str]) -> np.ndarray:
    """Log-probability of each option among a token distribution: spellings with or without a
    leading space / SentencePiece '▁' / BPE 'Ġ', any case, summed; ``-inf`` when absent."""
    out = np.full(len(options), -math.inf)
    want = [o.strip().lower() for o in options]
    for raw, val in cands.items():
        tok = raw.strip().strip("▁Ġ").lower()
        for i, o in enumerate(want):
            if tok == o:
                out[i] = np.logaddexp(out[i], val)
    return out


class OpenAIGenerator(Generator):
    backend = "openai"

    def __init__(self, model: str, base_url: str, *, api_key: str | None = None, concurrency: int = 8,
                 timeout: float = 120.0, retries: int = 4, backoff: float = 0.5, top_logprobs: int = 20,
                 tokenizer: str | None = None):
        super().__init__()
        self.model_id = model
        self.tokenizer_id = tokenizer  # local tokenizer: chat template + left truncation for scoring
        self._tokenizer = None
        self.client = OpenAIClient(base_url, api_key=api_key, timeout=timeout, retries=retries, backoff=backoff,
                                   concurrency=concurrency, who="openai generator")
        self.base_url = self.client.base_url
        self.top_logprobs = int(top_logprobs)
        self.commit_every = max(2 * self.client.concurrency, 8)
        self._use_logprobs = True

    def _name_stem(self) -> str:
        return f"openai-{safe_name(self.model_id)}@{safe_name(self.base_url.split('://', 1)[-1])}"

    def status(self) -> dict:
        return self.client.status()

    def _map(self, fn, items):
        with ThreadPoolExecutor(max_workers=self.client.concurrency) as pool:
            return list(pool.map(fn, items))

    def _generate(self, chats: list[Messages], max_new_tokens: int, temperature: float) -> list[str]:
        return self._map(lambda c: choice_text(self.client.chat(self.model_id, c, max_tokens=max_new_tokens,
                                                                temperature=temperature)), chats)

    def _one_choice(self, chat: Messages, options: list[str]) -> np.ndarray:
        choice = None
        if self._use_logprobs:
            try:
                choice = self.client.chat(self.model_id, chat, max_tokens=1, top_logprobs=self.top_logprobs)
            except LogprobsRejected:
                self._use_logprobs = False
        if choice is None:
            choice = self.client.chat(self.model_id, chat, max_tokens=1)
        lp = option_logprobs(first_token_logprobs(choice), options)
        if np.all(np.isneginf(lp)):  # no logprobs: the answer text decides
            text = choice_text(choice).strip().strip("\"'*`").lower()
            for i, o in enumerate(options):
                if text.startswith(o.strip().lower()):
                    lp[i] = 0.0
                    break
        return lp

    def _choice_logprobs(self, chats: list[Messages], options: list[str]) -> np.ndarray:
        return np.vstack(self._map(lambda c: self._one_choice(c, options), chats))

    # -- continuation scoring through /v1/completions with echo ---------------
    @property
    def tokenizer(self):
        """The local tokenizer named by ``tokenizer=`` (None without one)."""
        if self._tokenizer is None and self.tokenizer_id:
            from transformers import AutoTokenizer

            local, error = locate(self.tokenizer_id, "tokenizer", probes=("tokenizer_config.json", "config.json"))
            if error:
                raise GenerationError(error)
            try:
                self._tokenizer = AutoTokenizer.from_pretrained(self.tokenizer_id, local_files_only=local)
            except (OSError, ValueError) as e:
                raise GenerationError(f"cannot load tokenizer '{self.tokenizer_id}': {str(e).splitlines()[0]}") from None
        return self._tokenizer

    def render(self, messages: Messages, add_generation_prompt: bool = True) -> str:
        """The chat template of ``tokenizer=`` when given; otherwise the turns joined by blank lines.

        A server's completions endpoint reads raw text: the template must be applied here."""
        tok = self.tokenizer
        if tok is None or not getattr(tok, "chat_template", None):
            return super().render(messages, add_generation_prompt)
        return tok.apply_chat_template(as_messages(messages), tokenize=False,
                                       add_generation_prompt=add_generation_prompt)

    def _left_cut(self, context: str, continuation: str, max_length: int) -> str:
        """With a local tokenizer, drop context tokens from the left so that the pair fits."""
        tok = self.tokenizer
        if tok is None:
            return context
        cids = tok(context, add_special_tokens=False)["input_ids"]
        n_cont = len(tok(continuation, add_special_tokens=False)["input_ids"])
        room = max(1, max_length - n_cont)
        return context if len(cids) <= room else tok.decode(cids[len(cids) - room:])

    def _score_one(self, context: str, continuation: str, max_length: int | None, truncation: str) -> ScoredText:
        if max_length and truncation == "left":
            context = self._left_cut(context, continuation, int(max_length))
        prompt = context + continuation
        lp = self.client.echo_logprobs(self.model_id, prompt)
        offsets, values = lp["text_offset"], lp["token_logprobs"]
        start, end = len(context), len(prompt)
        ends = [offsets[i + 1] for i in range(len(offsets) - 1)] + [end]
        # the continuation's tokens: those holding any of its characters (a token that straddles the
        # boundary, e.g. "\nCities", counts as the continuation's; generated tokens start at or after the end)
        idx = [i for i, (o, e) in enumerate(zip(offsets, ends)) if o < end and e > start]
        n_ctx = sum(1 for o, e in zip(offsets, ends) if e <= start)
        n_cont = len(idx)
        if max_length and truncation == "right":
            idx = idx[:max(0, int(max_length) - n_ctx)]
        idx = [i for i in idx if i > 0]  # the prompt's first token has nothing to condition on
        if any(values[i] is None for i in idx):
            raise GenerationError(f"openai generator: {self.base_url} gave no logprob for a prompt token")
        vals = np.asarray([float(values[i]) for i in idx], dtype=np.float64)
        return ScoredText(vals, n_cont, n_ctx, n_ctx + len(vals))

    def _score_continuations(self, contexts: list[str], continuations: list[str], max_length: int | None,
                             truncation: str) -> list[ScoredText]:
        return self._map(lambda pair: self._score_one(pair[0], pair[1], max_length, truncation),
                         list(zip(contexts, continuations)))
