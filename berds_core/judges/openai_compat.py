"""``openai:<model>@<base_url>``: any OpenAI-compatible chat-completions server.

vLLM (``vllm serve``), Ollama, llama.cpp's server or OpenAI itself. Requests
run concurrently (``concurrency``), each with a timeout, retried with
exponential backoff on 429, 5xx, timeouts and connection errors. When the
server returns ``logprobs``/``top_logprobs`` the probability of support is the
softmax over the log-probabilities of "Yes" and "No"; otherwise the answer
text is parsed (Yes -> 1, No -> 0). The API key comes from ``api_key=``, or
the environment (``BERDS_OPENAI_API_KEY``, ``OPENAI_API_KEY``); it is sent in
the Authorization header only and never logged, named or written.
"""
from __future__ import annotations

import math
import os
import random
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from .base import Judge, JudgeError, safe_name
from .prompts import PROMPT_VERSION, messages, parse_answer

RETRY_STATUS = {408, 409, 425, 429, 500, 502, 503, 504}


def normalize_base_url(url: str) -> str:
    """``http://host:port`` or ``.../v1`` -> ``.../v1`` (no trailing slash)."""
    url = url.strip().rstrip("/")
    if not url.startswith(("http://", "https://")):
        url = "http://" + url
    if not url.endswith("/v1"):
        url += "/v1"
    return url


def _yes_no_from_logprobs(choice: dict) -> float | None:
    """Probability of Yes from the first generated token's top logprobs, if Yes/No are among them."""
    lp = choice.get("logprobs") or {}
    content = lp.get("content") if isinstance(lp, dict) else None
    if not content or not isinstance(content, list):
        return None
    first = content[0] or {}
    cands: dict[str, float] = {}  # exact token -> logprob (the chosen token is usually listed too)
    for c in list(first.get("top_logprobs") or []) + [first]:
        try:
            cands.setdefault(str(c["token"]), float(c["logprob"]))
        except (KeyError, TypeError, ValueError):
            continue
    yes = no = -math.inf
    for raw, val in cands.items():
        tok = raw.strip().strip("▁Ġ").lower()
        if tok == "yes":
            yes = np.logaddexp(yes, val) if yes > -math.inf else val
        elif tok == "no":
            no = np.logaddexp(no, val) if no > -math.inf else val
    if yes == -math.inf and no == -math.inf:
        return None
    if no == -math.inf:
        return 1.0
    if yes == -math.inf:
        return 0.0
    return float(1.0 / (1.0 + math.exp(no - yes)))


class OpenAIJudge(Judge):
    backend = "openai"

    def __init__(self, model: str, base_url: str, *, shot: int = 0, concurrency: int = 8,
                 timeout: float = 60.0, retries: int = 4, backoff: float = 0.5, api_key: str | None = None,
                 threshold: float = 0.5):
        super().__init__(threshold)
        self.model_id, self.base_url, self.shot = model, normalize_base_url(base_url), int(shot)
        self.concurrency, self.timeout = max(1, int(concurrency)), float(timeout)
        self.retries, self.backoff = max(0, int(retries)), float(backoff)
        self.commit_every = max(4 * self.concurrency, 16)
        self._key = api_key or os.environ.get("BERDS_OPENAI_API_KEY") or os.environ.get("OPENAI_API_KEY")
        self._use_logprobs = True
        self._client = None

    def __getstate__(self):  # never pickle the key along
        state = dict(self.__dict__)
        state["_key"] = None
        state["_client"] = None
        return state

    def _name_stem(self) -> str:
        host = self.base_url.split("://", 1)[-1]
        return f"openai-{safe_name(self.model_id)}@{safe_name(host)}-{PROMPT_VERSION}-{self.shot}shot"

    @property
    def client(self):
        if self._client is None:
            import httpx

            headers = {"Content-Type": "application/json"}
            if self._key:
                headers["Authorization"] = f"Bearer {self._key}"
            self._client = httpx.Client(base_url=self.base_url, headers=headers, timeout=self.timeout,
                                        limits=httpx.Limits(max_connections=self.concurrency))
        return self._client

    def status(self) -> dict:
        import httpx

        try:
            r = self.client.get("/models", timeout=min(self.timeout, 5.0))
        except httpx.HTTPError as e:
            return {"ok": False, "detail": f"{self.base_url} unreachable ({type(e).__name__})"}
        if r.status_code in (401, 403):
            return {"ok": False, "detail": f"{self.base_url} refused the API key (HTTP {r.status_code})"}
        if r.status_code >= 400 and r.status_code != 404:
            return {"ok": False, "detail": f"{self.base_url} answered HTTP {r.status_code}"}
        return {"ok": True, "detail": f"{self.base_url} reachable"}

    # -- one request ----------------------------------------------------
    def _post(self, body: dict) -> dict:
        import httpx

        last = ""
        for attempt in range(self.retries + 1):
            if attempt:
                time.sleep(self.backoff * (2 ** (attempt - 1)) * (1 + 0.25 * random.random()))
            try:
                r = self.client.post("/chat/completions", json=body)
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
            if r.status_code == 400 and body.get("logprobs"):
                raise _NoLogprobs()
            if r.status_code >= 400:
                raise JudgeError(f"openai judge: {self.base_url} answered HTTP {r.status_code}: "
                                 f"{r.text[:200].strip()}")
            try:
                return r.json()
            except ValueError:
                raise JudgeError(f"openai judge: {self.base_url} answered non-JSON: {r.text[:120]!r}") from None
        raise JudgeError(f"openai judge: {self.base_url}: {last} (gave up after {self.retries + 1} tries)")

    def score_one(self, document: str, perspective: str) -> float:
        return self.ask(messages(document, perspective, self.shot))

    def ask(self, msgs: list[dict]) -> float:
        """P("Yes") for one chat: from logprobs when the server offers them, else the parsed answer."""
        body = {"model": self.model_id, "messages": msgs, "max_tokens": 1, "temperature": 0.0}
        if self._use_logprobs:
            body.update(logprobs=True, top_logprobs=5)
        try:
            data = self._post(body)
        except _NoLogprobs:
            self._use_logprobs = False
            return self.ask(msgs)
        try:
            choice = data["choices"][0]
        except (KeyError, IndexError, TypeError):
            raise JudgeError(f"openai judge: {self.base_url} answered without choices: {str(data)[:120]}") from None
        prob = _yes_no_from_logprobs(choice) if isinstance(choice, dict) else None
        if prob is None:
            text = ((choice.get("message") or {}).get("content") if isinstance(choice, dict) else None) or ""
            prob = parse_answer(str(text))
        if prob is None:
            raise JudgeError(f"openai judge: answer is neither Yes nor No: {str(text)[:80]!r}")
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


class _NoLogprobs(Exception):
    """The server rejected the logprobs parameters: retry the request without them."""
