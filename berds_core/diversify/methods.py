"""The diversification methods by name: the vocabulary of ``berds retrieve``'s flags (``--mmr``, ``--qe``,
``--rerank``, ``--preset``), the pages' method pickers and the benches' option dicts, turned into pipelines.

``method_pipeline("mmr", {"lam": 0.5, "candidates": 30})`` is ``%30>>mmr(lam=0.5)``; a spec string says the
same in the pipeline language (docs/pipelines.md), which is what runs.
"""
from __future__ import annotations

from dataclasses import dataclass, fields

from .candidates import POOLS
from .pipeline import DEFAULT_DEPTH, Pipeline
from .pm2 import DEFAULT_LAMBDA as PM2_LAMBDA
from .presets import as_pipeline
from .stages import MMR_LAMBDA, STAGES, Stage
from .xquad import DEFAULT_LAMBDA as XQUAD_LAMBDA


@dataclass(frozen=True)
class Method:
    """One diversification method: its ``name``, what it is (``help``), its ``label`` on the pages, other
    ``aliases`` (the CLI's ``--rerank``, the preset's name), the pipeline ``stage`` it runs (None: the saved
    preset), whether it reads a perspective source (``perspectives``: ``qe``, the re-rankers), the ``berds
    retrieve`` flag that asks for it (``flag``: ``--mmr``, ``--qe``, ``--rerank`` for every re-ranker,
    ``--preset``) and its column's heading on the Playground (``heading``)."""

    name: str
    help: str
    label: str
    stage: str | None
    aliases: tuple[str, ...] = ()
    perspectives: bool = False
    reranks: bool = False  # a re-ranker of the top candidates (the CLI's --rerank)
    flag: str | None = None  # the CLI flag that picks it (None: none picks it, plain retrieval)
    heading: str = ""  # the Playground's column heading


# the one list of the methods: the CLI's choices, the pages' pickers and labels are read from it
METHOD_TABLE: tuple[Method, ...] = (
    Method("none", "No diversification (retriever order)", "plain retrieval", "none", heading="Plain retrieval"),
    Method("mmr", "MMR (maximal marginal relevance)", "+ MMR", "mmr", flag="mmr", heading="+ MMR"),
    Method("qe", "Query expansion (round-robin over perspectives)", "+ query expansion", "qe", perspectives=True,
           flag="qe", heading="+ Query expansion"),
    Method("coverage", "Perspective-coverage re-ranker", "+ perspective re-ranker", "coverage", ("rerank",),
           perspectives=True, reranks=True, flag="rerank", heading="+ Re-ranker"),
    Method("xquad", "xQuAD (explicit aspects: one expanded query per perspective)", "+ xQuAD", "xquad",
           perspectives=True, reranks=True, flag="rerank", heading="+ xQuAD"),
    Method("pm2", "PM-2 (proportional seats for the perspectives)", "+ PM-2", "pm2", perspectives=True,
           reranks=True, flag="rerank", heading="+ PM-2"),
    Method("rvr", "Retrieve, verify, retrieve again (the stance model finds the missing side)",
           "+ retrieve-verify-retrieve", "rvr", heading="+ Retrieve, verify, retrieve"),
    Method("preset", "Preset: diverse (best found)", "preset: diverse", None, ("diverse",), flag="preset",
           heading="+ Diverse preset"),
)
METHODS = {m.name: m.help for m in METHOD_TABLE}
# other names of the same methods
ALIASES = {a: m.name for m in METHOD_TABLE for a in m.aliases}
LABELS = {m.name: m.label for m in METHOD_TABLE}  # the pages' names of the methods
PERSPECTIVE_METHODS = tuple(m.name for m in METHOD_TABLE if m.perspectives)  # they take a perspective source
RERANKERS = tuple(m.name for m in METHOD_TABLE if m.reranks)  # the CLI's --rerank choices
METHOD_FLAGS = tuple(dict.fromkeys(m.flag for m in METHOD_TABLE if m.flag))  # berds retrieve's method flags
HEADINGS = {m.name: m.heading for m in METHOD_TABLE}  # the Playground's column headings


def default_lambda(method: str) -> float | None:
    """λ when none is given: MMR 0.75 (BERDS); xQuAD / PM-2 their tuned defaults; None otherwise."""
    return {"mmr": MMR_LAMBDA, "xquad": XQUAD_LAMBDA, "pm2": PM2_LAMBDA}.get(method)


# method name (and alias) -> stage name (``rerank`` is another name of ``coverage``)
METHOD_STAGES = {n: m.stage for m in METHOD_TABLE if m.stage for n in (m.name, *m.aliases)}
# option keyword -> the stage keyword it sets
OPTION_KEYS = {"lam": "lam", "qe_source": "source", "alpha": "alpha", "coverage_probs": "probs", "keep": "keep",
               "mix": "mix", "temperature": "temperature", "aspect_probs": "probs"}


def method_pipeline(method: str, options: dict) -> Pipeline:
    """The pipeline of a method and its option keywords (``lam``, ``qe_source``, ``candidates``,
    ``candidates_from``, ``alpha``, ``coverage_probs``, ``aspect_probs``, ``keep``, ``mix``, ``temperature``;
    None values are left out): what ``berds retrieve``'s flags, the pages' pickers and the benches' option
    dicts ask for. ``preset`` / ``diverse`` is the saved preset."""
    opts = {key: v for key, v in options.items() if v is not None}
    if ALIASES.get(method, method) == "preset":
        return as_pipeline("diverse")
    if method not in METHOD_STAGES:
        raise ValueError(f"unknown method {method!r}; choose from {', '.join(METHOD_STAGES)}, preset")
    cls = type(STAGES.create(METHOD_STAGES[method]))
    own = {f.name for f in fields(cls)}
    kind = METHOD_STAGES[method]
    args = {}
    for key, value in opts.items():
        new = OPTION_KEYS.get(key)
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


def method_options(p: Pipeline) -> dict:
    """A one-stage pipeline (a preset) said back in the method vocabulary: ``retriever``, ``candidates``,
    ``candidates_from``, ``method`` and the stage's options under their option keys (what ``berds retrieve
    --preset`` prints); the inverse of :func:`method_pipeline`."""
    (stage,) = [s for s in p.stages if not s.makes_candidates]
    opts = {"retriever": p.retriever, "candidates": p.depth, "candidates_from": p.pool, "method": stage.name}
    for f in (f.name for f in fields(stage)):
        value = getattr(stage, f)
        if value is None or (f == "source" and getattr(stage, "probs", None) == "model"):
            continue  # the stance model needs no perspectives
        opts[{"source": "qe_source", "probs": "coverage_probs" if stage.name == "coverage" else "aspect_probs"}
             .get(f, f)] = value
    return opts
