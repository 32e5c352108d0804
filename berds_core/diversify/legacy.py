"""The old keyword spelling of ``diversify(q, corpus, retriever, "mmr", k, lam=0.5, candidates=30, ...)`` as a
pipeline (kept for one release; ``diversify`` warns when it is used). The CLI's old flags and the benches'
option dicts read through it too.
"""
from __future__ import annotations

from dataclasses import fields

from .candidates import POOLS
from .pipeline import DEFAULT_DEPTH, Pipeline
from .presets import as_pipeline
from .stages import STAGES, Stage

# method name -> stage name (the old names and their aliases)
METHOD_STAGES = {"none": "none", "mmr": "mmr", "qe": "qe", "coverage": "coverage", "rerank": "coverage",
                 "xquad": "xquad", "pm2": "pm2"}
# old keyword -> the stage keyword it became
OLD_KEYS = {"lam": "lam", "qe_source": "source", "alpha": "alpha", "coverage_probs": "probs", "keep": "keep",
            "mix": "mix", "temperature": "temperature", "aspect_probs": "probs"}


def pipeline_from_options(method: str, options: dict) -> Pipeline:
    """The pipeline of the old ``diversify(method, lam=..., qe_source=..., candidates=..., ...)`` keywords
    (``options``: those keywords; None values are left out). ``preset`` / ``diverse`` is the saved preset."""
    opts = {key: v for key, v in options.items() if v is not None}
    if method in ("preset", "diverse"):
        return as_pipeline("diverse")
    if method not in METHOD_STAGES:
        raise ValueError(f"unknown method {method!r}; choose from {', '.join(METHOD_STAGES)}, preset")
    cls = type(STAGES.create(METHOD_STAGES[method]))
    own = {f.name for f in fields(cls)}
    kind = METHOD_STAGES[method]
    args = {}
    for key, value in opts.items():
        new = OLD_KEYS.get(key)
        if new in own and not (key == "coverage_probs" and kind != "coverage") and not (
                key == "aspect_probs" and kind == "coverage"):
            args[new] = value
    stage = cls(**args)
    stages: tuple[Stage, ...] = (stage,)
    if opts.get("candidates_from", "retriever") == "union" and kind in ("mmr", "coverage", "xquad", "pm2"):
        stages = (STAGES.create("union"), stage)
    elif opts.get("candidates_from", "retriever") not in POOLS:
        raise ValueError(f"pool must be one of {', '.join(POOLS)}, got {opts['candidates_from']!r}")
    return Pipeline(None, int(opts.get("candidates", DEFAULT_DEPTH)), stages)
