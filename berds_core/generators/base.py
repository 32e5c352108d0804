"""The generator interface and its on-disk cache of generated texts.

A generator answers chat prompts. Two questions are asked of it:

- ``generate(prompts)``: the text it writes (greedy / temperature 0 by
  default), cached in ``cache_dir("generations")/generations.sqlite`` by
  (generator name, messages, decoding parameters), so a second run is free
  and an interrupted batch keeps what was done;
- ``choice_logprobs(prompts, options)``: the log-probability of each option
  (``["Yes", "No"]``, ``["0", "1"]``) as the first token of the answer, in
  one forward pass (hf) or one ``max_tokens=1`` request with top logprobs
  (openai). ``choice_probs`` normalises them over the options.
- ``score_continuations(contexts, continuations)``: the log-probability of
  every token of a given continuation after a given context (perplexity of a
  reference text, DebateQA's P.D.), with the input cut to ``max_length``
  tokens from the left of the context (default) or from the right;
  :func:`truncate_ids` is the rule; ``score_token_ids`` scores token ids
  the caller made itself (hf: only; DebateQA's released P.D.).

A prompt is a string (one user turn) or a list of chat messages
``[{"role": "system"|"user"|"assistant", "content": str}]``.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence, Union

import numpy as np

from ..files.cache import cache_dir, text_hash
from ..files.kvcache import KeyValueCache

Messages = list[dict]
Prompt = Union[str, Messages]


class GenerationError(RuntimeError):
    """A generator could not answer (model missing, server down, unusable reply)."""


def as_messages(prompt: Prompt) -> Messages:
    """A string is one user turn; a list of ``{role, content}`` dicts is used as is (validated)."""
    if isinstance(prompt, str):
        return [{"role": "user", "content": prompt}]
    msgs = []
    for m in prompt:
        if not isinstance(m, dict) or m.get("role") not in ("system", "user", "assistant") \
                or not isinstance(m.get("content"), str):
            raise ValueError("a chat message is {'role': system|user|assistant, 'content': str}")
        msgs.append({"role": m["role"], "content": m["content"]})
    if not msgs:
        raise ValueError("empty chat")
    return msgs


TRUNCATION = ("left", "right")


@dataclass
class ScoredText:
    """Log-probabilities of a continuation's tokens after a context (one forward pass).

    ``logprobs``: one per scored continuation token, in order (the tokens that
    survived truncation; with an empty context the first token has nothing to
    condition on and is not scored). ``n_continuation``: tokens of the whole
    continuation; ``n_context``: context tokens fed to the model after
    truncation; ``n_input``: every token fed to the model.
    """

    logprobs: np.ndarray
    n_continuation: int
    n_context: int
    n_input: int

    @property
    def n_scored(self) -> int:
        return int(len(self.logprobs))

    @property
    def complete(self) -> bool:
        """Every continuation token was scored (truncation did not cut the continuation)."""
        return self.n_scored == self.n_continuation


def truncate_ids(context: Sequence[int], continuation: Sequence[int], max_length: int, side: str = "left",
                 keep_first: bool = False) -> tuple[list[int], list[int]]:
    """Cut ``context + continuation`` to at most ``max_length`` tokens; return (context, continuation) kept.

    ``side="left"``: tokens are dropped from the start of the context, so the
    continuation stays whole whenever it fits (``keep_first`` keeps the
    context's first token, e.g. BOS, in front of what remains); a continuation
    longer than ``max_length - 1`` keeps one context token and loses its own
    tail. ``side="right"``: the concatenation is cut at the end (what
    DebateQA's released scripts do), which can cut the continuation off.
    """
    ctx, cont, n = list(context), list(continuation), int(max_length)
    if n < 2:
        raise ValueError("max_length must be at least 2")
    if side not in TRUNCATION:
        raise ValueError(f"truncation must be one of {TRUNCATION}, not {side!r}")
    if len(ctx) + len(cont) <= n:
        return ctx, cont
    if side == "right":
        ids = (ctx + cont)[:n]
        return ids[:min(len(ctx), n)], ids[len(ctx):]
    room = n - len(cont)
    if room < 1:  # the continuation alone does not fit: one context token, the continuation's head
        return (ctx[:1] if keep_first else ctx[-1:]), cont[:n - min(1, len(ctx))]
    if keep_first and room >= 2:
        return ctx[:1] + ctx[len(ctx) - (room - 1):], cont
    return ctx[len(ctx) - room:], cont


class GenerationCache(KeyValueCache):
    """Generated texts keyed by (generator name, sha1 of the request) in SQLite (``files.kvcache``)."""

    table, namespace, keys, value, value_type = "gen", "generator", ("request",), "text", "TEXT"

    def __init__(self, path: Path | None = None):
        super().__init__(path or cache_dir("generations") / "generations.sqlite")


def generation_cache() -> GenerationCache:
    return GenerationCache.shared(cache_dir("generations") / "generations.sqlite")


class Generator:
    """Base class: subclasses set ``backend`` and implement ``_name_stem``, ``_generate`` and
    ``_choice_logprobs``."""

    backend = "base"
    commit_every = 16

    def __init__(self):
        self.calls = 0  # how many times _generate ran (tests check cache hits)

    @property
    def name(self) -> str:
        return self._name_stem()

    def _name_stem(self) -> str:
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name}>"

    def status(self) -> dict:
        return {"ok": True, "detail": "ready"}

    # -- generation -------------------------------------------------------
    def _generate(self, chats: list[Messages], max_new_tokens: int, temperature: float) -> list[str]:
        raise NotImplementedError

    @staticmethod
    def _request_keys(chats: list[Messages], max_new_tokens: int, temperature: float) -> list[str]:
        return [text_hash(json.dumps([c, int(max_new_tokens), float(temperature)], ensure_ascii=False,
                                     sort_keys=True)) for c in chats]

    def cached(self, prompts: Sequence[Prompt], *, max_new_tokens: int = 256) -> list[str | None]:
        """The greedy answers already in the cache (None where a prompt was never answered); no model call."""
        chats = [as_messages(p) for p in prompts]
        keys = self._request_keys(chats, max_new_tokens, 0.0)
        known = generation_cache().get_many(self.name, list(dict.fromkeys(keys)))
        return [known.get(k) for k in keys]

    def generate(self, prompts: Sequence[Prompt], *, max_new_tokens: int = 256, temperature: float = 0.0,
                 use_cache: bool = True, progress: bool = False, desc: str | None = None) -> list[str]:
        """The answer to each prompt; cached by (name, messages, max_new_tokens, temperature).

        Sampling (``temperature > 0``) is never cached: a cached sample would
        pretend to be a fresh one. Answers are committed every
        ``commit_every`` prompts, so a failure keeps what was done (:meth:`cached`).
        """
        chats = [as_messages(p) for p in prompts]
        keys = self._request_keys(chats, max_new_tokens, temperature)
        cacheable = use_cache and temperature == 0.0
        cache = generation_cache() if cacheable else None
        known = cache.get_many(self.name, list(dict.fromkeys(keys))) if cache else {}
        todo: dict[str, Messages] = {}
        for k, c in zip(keys, chats):
            if k not in known and k not in todo:
                todo[k] = c
        if todo:
            from tqdm.auto import tqdm

            items = list(todo.items())
            bar = tqdm(total=len(items), desc=desc or f"generate {self.name}", unit="prompt",
                       disable=not progress, leave=False)
            try:
                for i in range(0, len(items), self.commit_every):
                    chunk = items[i:i + self.commit_every]
                    texts = self._generate([c for _, c in chunk], int(max_new_tokens), float(temperature))
                    self.calls += 1
                    if len(texts) != len(chunk):
                        raise GenerationError(f"generator {self.name} returned {len(texts)} answers for {len(chunk)}")
                    got = [(k, str(t)) for (k, _), t in zip(chunk, texts)]
                    if cache:
                        cache.put_many(self.name, got)
                    known.update(got)
                    bar.update(len(chunk))
            finally:
                bar.close()
        return [known[k] for k in keys]

    # -- answers read from log-probabilities --------------------------------
    def _choice_logprobs(self, chats: list[Messages], options: list[str]) -> np.ndarray:
        raise NotImplementedError

    def choice_logprobs(self, prompts: Sequence[Prompt], options: Sequence[str]) -> np.ndarray:
        """(n, len(options)) log-probabilities of each option as the answer's first token.

        ``-inf`` where the backend gives no evidence for an option (e.g. not
        among a server's top logprobs).
        """
        options = [str(o) for o in options]
        if len(options) < 2:
            raise ValueError("give at least two options")
        chats = [as_messages(p) for p in prompts]
        if not chats:
            return np.zeros((0, len(options)))
        return np.asarray(self._choice_logprobs(chats, options), dtype=np.float64)

    # -- reference texts scored token by token --------------------------------
    def _score_continuations(self, contexts: list[str], continuations: list[str], max_length: int | None,
                             truncation: str) -> list[ScoredText]:
        raise GenerationError(f"generator {self.name} cannot score given text token by token")

    def score_continuations(self, contexts: Sequence[str], continuations: Sequence[str], *,
                            max_length: int | None = None, truncation: str = "left") -> list[ScoredText]:
        """Per pair, the log-probability of each token of ``continuations[i]`` after ``contexts[i]``.

        Contexts are prompt text as the model reads it (see ``render``); the
        continuation follows it directly. ``max_length`` (default: the
        backend's) bounds the input; ``truncation`` says which side is cut
        (see :func:`truncate_ids`). Not cached: one forward pass per pair.
        """
        contexts, continuations = [str(c) for c in contexts], [str(x) for x in continuations]
        if len(contexts) != len(continuations):
            raise ValueError("one continuation per context")
        if truncation not in TRUNCATION:
            raise ValueError(f"truncation must be one of {TRUNCATION}, not {truncation!r}")
        if not contexts:
            return []
        return self._score_continuations(contexts, continuations, max_length, truncation)

    scores_token_ids = False  # backends that score given token ids (hf:) set it

    def score_token_ids(self, contexts: Sequence[Sequence[int]], continuations: Sequence[Sequence[int]],
                        n_continuation: Sequence[int] | None = None) -> list[ScoredText]:
        """Like :meth:`score_continuations` on token ids the caller made (no tokenisation, no truncation).

        ``n_continuation[i]``: the continuation's length before the caller
        truncated it (default ``len(continuations[i])``), so that
        :attr:`ScoredText.complete` tells a cut continuation. With an empty
        context the continuation's first token conditions the rest.
        """
        raise GenerationError(f"generator {self.name} cannot score given token ids (an hf: model can)")

    def render(self, messages: Messages, add_generation_prompt: bool = True) -> str:
        """Chat messages as prompt text ending where the answer begins (backends with a template override)."""
        return "\n\n".join(m["content"] for m in as_messages(messages)) + "\n"

    def choice_probs(self, prompts: Sequence[Prompt], options: Sequence[str]) -> np.ndarray:
        """Probabilities over ``options`` (softmax of :meth:`choice_logprobs`, rows sum to 1)."""
        lp = self.choice_logprobs(prompts, options)
        if lp.size == 0:
            return lp
        if np.any(np.all(np.isneginf(lp), axis=1)):
            raise GenerationError(f"generator {self.name} gave none of the options {list(options)}")
        z = lp - lp.max(axis=1, keepdims=True)
        e = np.exp(z)
        return e / e.sum(axis=1, keepdims=True)
