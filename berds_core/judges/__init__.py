"""Perspective-detection judges: does a passage support a perspective?

``get_judge(spec, **opts)``:

- ``embedded`` (default): offline CPU judge, MiniLM features + a trained head
  (opts: ``threshold``, ``device``, ``batch_size``, ``encoding`` fp32|bf16|int8|auto);
- ``hf:<model-id-or-path>[+<adapter-id-or-path>]``: a transformers causal LM
  (opts: ``shot``, ``device``, ``dtype``, ``batch_size``, ``threshold``);
- ``openai:<model>@<base_url>``: an OpenAI-compatible server (opts:
  ``concurrency``, ``timeout``, ``retries``, ``api_key``, ``shot``, ``threshold``).

Every judge has ``.name``, ``.predict(pairs) -> (probs, labels)`` (cached),
and ``.status()``. ``judge_run`` adds ``<name>-preds`` (and ``<name>-probs``)
to run entries.
"""
from __future__ import annotations

from .base import Judge, JudgeError, PredictionCache, prediction_cache

PROBS_SUFFIX = "-probs"

__all__ = ["get_judge", "judge_run", "Judge", "JudgeError", "PredictionCache", "prediction_cache",
           "parse_spec"]


def parse_spec(spec: str) -> tuple[str, dict]:
    """``spec`` -> (backend, positional parts). Raises ValueError with a readable message."""
    spec = (spec or "embedded").strip()
    if spec in ("embedded", "default") or spec.startswith("embedded:"):
        return "embedded", {"variant": spec.partition(":")[2] or None}
    if spec.startswith("hf:"):
        rest = spec[3:]
        model, _, adapter = rest.partition("+")
        if not model:
            raise ValueError("hf judge needs a model: hf:<model-id-or-path>[+<adapter>]")
        return "hf", {"model": model, "adapter": adapter or None}
    if spec.startswith("openai:"):
        rest = spec[7:]
        model, at, url = rest.rpartition("@")
        if not at or not model or not url:
            raise ValueError("openai judge needs a model and a URL: openai:<model>@<base_url>")
        return "openai", {"model": model, "base_url": url}
    raise ValueError(f"unknown judge '{spec}' (use embedded, hf:<model>[+<adapter>] or openai:<model>@<url>)")


def get_judge(spec: str = "embedded", **opts) -> Judge:
    """A judge from its spec string; ``opts`` with value None are ignored."""
    opts = {k: v for k, v in opts.items() if v is not None}
    backend, parts = parse_spec(spec)
    if backend == "embedded":
        from .embedded import EmbeddedJudge

        allowed = {"threshold", "device", "batch_size", "encoding"}
        return EmbeddedJudge(**{k: v for k, v in opts.items() if k in allowed})
    if backend == "hf":
        from .hf import HFJudge

        allowed = {"shot", "device", "dtype", "batch_size", "threshold", "max_length"}
        return HFJudge(parts["model"], parts["adapter"], **{k: v for k, v in opts.items() if k in allowed})
    from .openai_compat import OpenAIJudge

    allowed = {"shot", "concurrency", "timeout", "retries", "backoff", "api_key", "threshold"}
    return OpenAIJudge(parts["model"], parts["base_url"], **{k: v for k, v in opts.items() if k in allowed})


def passage_text(ctx: dict) -> str:
    """The text a judge reads for a run passage (BERDS judges the passage text)."""
    return str(ctx.get("text") or "")


def judge_run(entries: list[dict], judge: Judge, progress: bool = True) -> list[dict]:
    """Add ``<judge.name>-preds`` (one bool per perspective per passage) and ``-probs`` to entries.

    All pairs of the run go through one cached ``predict`` call, so an
    interrupted run resumes where it stopped.
    """
    pairs = [(passage_text(c), p) for e in entries for c in e["ctxs"] for p in e["perspectives"]]
    probs, labels = judge.predict(pairs, progress=progress, desc=f"judge {judge.name}")
    i = 0
    for e in entries:
        m = len(e["perspectives"])
        preds, prs = [], []
        for _ in e["ctxs"]:
            preds.append([bool(x) for x in labels[i:i + m]])
            prs.append([round(float(x), 5) for x in probs[i:i + m]])
            i += m
        e[judge.name + "-preds"] = preds
        e[judge.name + PROBS_SUFFIX] = prs
    return entries
