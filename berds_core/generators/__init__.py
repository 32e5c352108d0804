"""Text generators named by spec strings, shared by every LLM-backed feature.

``get_generator(spec, **opts)``:

- ``hf:<model id or path>[+<adapter id or path>]``: transformers, locally
  (opts: ``device``, ``dtype``, ``batch_size``, ``max_length``, ``system``, ``inference``:
  ``auto`` | ``plain`` | ``fast``[,changes], see :mod:`.hf_inference`);
- ``openai:<model>@<base_url>``: an OpenAI-compatible server -- vLLM
  (``vllm serve``), Ollama, llama.cpp's server, OpenAI (opts: ``api_key``,
  ``concurrency``, ``timeout``, ``retries``, ``backoff``, ``top_logprobs``, ``tokenizer``: a local
  tokenizer whose chat template renders prompts for the completions endpoint).

Query expansion, perspective discovery, RAG answers, dispute awareness and
the convincingness experiments call ``generate`` / ``choice_probs``; the
judges build on the same backends (``HFGenerator``, ``OpenAIClient``).
Loaded generators are kept per (spec, options), so a model loads once per process.
"""
from __future__ import annotations

import threading

from ..errors import InputError
from ..files.cache import text_hash
from ..files.safepaths import resolve_user_model
from ..net.endpoints import check_endpoint
from ..specs import Registry, SpecError, split_model_url
from .base import GenerationError, Generator, ScoredText, as_messages, generation_cache, truncate_ids
from .hf import HFGenerator
from .openai import OpenAIGenerator

GENERATORS = Registry("generator")

__all__ = ["GENERATORS", "GenerationError", "Generator", "ScoredText", "SpecError", "app_spec", "as_messages",
           "generation_cache", "get_generator", "split_openai_spec", "truncate_ids", "try_generator"]


def split_openai_spec(arg: str) -> tuple[str, str]:
    """``<model>@<base_url>`` -> (model, base_url) (:func:`berds_core.specs.split_model_url`: the first ``@`` that
    starts a URL; the model may itself contain '@'; an '@' left in the address is refused)."""
    try:
        return split_model_url(arg)
    except SpecError as e:
        raise SpecError(f"openai generator {e}") from None


@GENERATORS.register("hf", usage="hf:<model>[+<adapter>]", needs_arg=True,
                     help="a transformers causal LM (hub id or local folder), optional LoRA adapter")
def _hf(arg, **opts):
    model, _, adapter = arg.partition("+")
    allowed = {"device", "dtype", "batch_size", "max_length", "system", "inference"}
    return HFGenerator(model, adapter or None, **{k: v for k, v in opts.items() if k in allowed})


@GENERATORS.register("openai", usage="openai:<model>@<base_url>", needs_arg=True,
                     help="an OpenAI-compatible server: vLLM, Ollama, llama.cpp, OpenAI")
def _openai(arg, **opts):
    model, url = split_openai_spec(arg)
    allowed = {"api_key", "concurrency", "timeout", "retries", "backoff", "top_logprobs", "tokenizer"}
    return OpenAIGenerator(model, url, **{k: v for k, v in opts.items() if k in allowed})


_LOADED: dict[tuple, Generator] = {}
_LOCK = threading.Lock()


def get_generator(spec: str, **opts) -> Generator:
    """The generator a spec names (one instance per spec and options in this process).

    ``opts`` with value None are ignored. An API key is never part of the
    instance key in a readable form (it is hashed).
    """
    opts = {k: v for k, v in opts.items() if v is not None}
    key = (str(spec).strip(), tuple(sorted((k, text_hash(str(v)) if k == "api_key" else repr(v))
                                           for k, v in opts.items())))
    with _LOCK:
        gen = _LOADED.get(key)
        if gen is None:
            gen = _LOADED[key] = GENERATORS.create(spec, **opts)
        return gen


def app_spec(spec: str, what: str = "model path") -> str:
    """A generator spec typed into the app, checked before anything is loaded or requested:
    an ``hf:`` model or adapter given as a folder must lie under the allowed roots (hub ids pass:
    :func:`berds_core.files.safepaths.resolve_user_model`); an ``openai:`` server must be on the
    operator's list (:func:`berds_core.net.endpoints.check_endpoint`). Raises InputError."""
    name, arg = GENERATORS.parse(spec)
    if name == "openai":
        check_endpoint(split_openai_spec(arg)[1], what=what.replace("model path", "server address"))
        return spec
    if name != "hf":
        return spec
    return "hf:" + "+".join(resolve_user_model(part, what=what) for part in arg.split("+"))


def try_generator(spec: str | None, what: str = "model path", **opts):
    """``(generator, None)`` when ``spec`` names a usable generator, ``(None, one-line reason)`` when it
    does not, ``(None, None)`` for an empty spec. For the app: paths checked by :func:`app_spec`,
    nothing loaded before first use, a server's reachability checked."""
    spec = (spec or "").strip()
    if not spec:
        return None, None
    try:
        gen = get_generator(app_spec(spec, what), **opts)
        status = gen.status()
    except (InputError, ValueError, GenerationError) as e:
        return None, " ".join(str(e).split())
    if not status.get("ok"):
        return None, f"{spec}: {status.get('detail')}"
    return gen, None
