"""The diversification methods by name: the vocabulary of ``berds retrieve``'s flags (``--mmr``, ``--qe``,
``--rerank``, ``--preset``) and the pages' method pickers, each entry with its pipeline stage.

``find_method("mmr").pipeline(30, lam=0.5)`` is ``%30>>mmr(lam=0.5)``: the entry's stage from ``STAGES`` with
the stage's own keywords (its spec keywords, docs/pipelines.md); a spec string says the same in the pipeline
language.
"""
from __future__ import annotations

from dataclasses import dataclass, fields

from .candidates import POOLS
from .pipeline import DEFAULT_DEPTH, Pipeline
from .pm2 import DEFAULT_LAMBDA as PM2_LAMBDA
from .presets import get_preset
from .stages import MMR_LAMBDA, STAGES
from .xquad import DEFAULT_LAMBDA as XQUAD_LAMBDA


@dataclass(frozen=True)
class Method:
    """One diversification method: its ``name``, what it is (``help``), its ``label`` on the pages, other
    ``aliases`` (the CLI's ``--rerank``, the preset's name), the pipeline ``stage`` it runs (None: the saved
    preset), whether it reads a perspective source (``perspectives``: ``qe``, the re-rankers), the ``berds
    retrieve`` flag that asks for it (``flag``: ``--mmr``, ``--qe``, ``--rerank`` for every re-ranker,
    ``--preset``), its column's heading on the Playground (``heading``), the label of the Playground's toggle
    for its column (``toggle``; empty: no toggle) and whether the column is shown before any toggle is touched (``shown``);
    ``preset``: the saved preset it runs (when ``stage`` is None); ``sets``: the stage keyword its own control
    sets (``--mmr LAMBDA`` and the pages' λ slider: ``lam``; ``--qe SOURCE``: ``source``; None: its flag's value
    names it, ``--rerank``, ``--preset``)."""

    name: str
    help: str
    label: str
    stage: str | None
    aliases: tuple[str, ...] = ()
    perspectives: bool = False
    reranks: bool = False  # a re-ranker of the top candidates (the CLI's --rerank)
    flag: str | None = None  # the CLI flag that picks it (None: none picks it, plain retrieval)
    heading: str = ""  # the Playground's column heading
    toggle: str = ""  # the label of the Playground's toggle for its column ("": none)
    shown: bool = False  # the Playground shows its column by default
    preset: str | None = None  # the saved preset it runs (stage None)
    sets: str | None = None  # the stage keyword its own control sets (--mmr LAMBDA, the λ slider: lam)

    def pipeline(self, depth: int = DEFAULT_DEPTH, pool: str = "retriever", **params) -> Pipeline:
        """This method as a pipeline over the retriever in use: its stage made by ``STAGES`` from ``params``
        (the stage's own keywords: ``lam``, ``source``, ``probs``, ...) over the top ``depth`` candidates, led
        by the ``union`` stage when ``pool`` is ``union``; the preset's saved pipeline (its own retriever and
        depth). A bad value raises the stage's SpecError."""
        if self.stage is None:
            return get_preset(self.preset)
        if pool not in POOLS:
            raise ValueError(f"pool must be one of {', '.join(POOLS)}, got {pool!r}")
        stage = STAGES.create(self.stage, **params)
        return Pipeline(None, int(depth), (STAGES.create("union"), stage) if pool == "union" else (stage,))


# the one list of the methods: the CLI's choices, the pages' pickers and labels are read from it
METHOD_TABLE: tuple[Method, ...] = (
    Method("none", "No diversification (retriever order)", "plain retrieval", "none", heading="Plain retrieval",
           shown=True),
    Method("mmr", "MMR (maximal marginal relevance)", "+ MMR", "mmr", flag="mmr", heading="+ MMR", toggle="MMR",
           shown=True, sets="lam"),
    Method("qe", "Query expansion (round-robin over perspectives)", "+ query expansion", "qe", perspectives=True,
           flag="qe", heading="+ Query expansion", toggle="Query expansion", shown=True, sets="source"),
    Method("coverage", "Perspective-coverage re-ranker", "+ perspective re-ranker", "coverage", ("rerank",),
           perspectives=True, reranks=True, flag="rerank", heading="+ Re-ranker",
           toggle="Perspective re-ranker", shown=True),
    Method("xquad", "xQuAD (explicit aspects: one expanded query per perspective)", "+ xQuAD", "xquad",
           perspectives=True, reranks=True, flag="rerank", heading="+ xQuAD", toggle="xQuAD"),
    Method("pm2", "PM-2 (proportional seats for the perspectives)", "+ PM-2", "pm2", perspectives=True,
           reranks=True, flag="rerank", heading="+ PM-2", toggle="PM-2"),
    Method("rvr", "Retrieve, verify, retrieve again (the stance model finds the missing side)",
           "+ retrieve-verify-retrieve", "rvr", heading="+ Retrieve, verify, retrieve"),
    Method("preset", "Preset: diverse (best found)", "preset: diverse", None, ("diverse",), flag="preset",
           heading="+ Diverse preset", toggle="Diverse preset", preset="diverse"),
)
BY_NAME = {n: m for m in METHOD_TABLE for n in (m.name, *m.aliases)}  # every name and alias -> its method
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
PLAYGROUND = tuple(m.name for m in METHOD_TABLE if m.shown or m.toggle)  # the Playground's columns, in order


def find_method(name: str) -> Method:
    """The method of a name or an alias (``rerank``, ``diverse``); ValueError naming the choices."""
    try:
        return BY_NAME[str(name).strip()]
    except KeyError:
        raise ValueError(f"unknown method {name!r}; choose from {', '.join(BY_NAME)}") from None


def slider_lambda(method: str) -> bool:
    """Whether the pages' λ slider sets the λ of ``method`` (a name or an alias): MMR's, whose own control is its
    λ; xQuAD and PM-2 keep their tuned λ."""
    return find_method(method).sets == "lam"


def flag_method(flag: str, value) -> Method:
    """The method ``berds retrieve --<flag> VALUE`` asks for: the one method of that flag, or the one ``value``
    names when several share the flag (``--rerank coverage|xquad|pm2``)."""
    of_flag = [m for m in METHOD_TABLE if m.flag == flag]
    return of_flag[0] if len(of_flag) == 1 else find_method(value)


def stage_keywords(method: Method) -> frozenset[str]:
    """The keywords the method's stage takes (its spec keywords; none for the preset)."""
    return frozenset(f.name for f in fields(STAGES.builds(method.stage))) if method.stage else frozenset()
