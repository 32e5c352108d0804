"""The base of the stages: the ``STAGES`` registry, a stage's parameters (spec keywords, checked), the
:class:`Stage` class every stage derives from and the ``none`` stage.

A stage is a frozen dataclass whose fields are its spec keywords, each declared with :func:`param` (its
kind, help and bounds), registered with :func:`register` under its spec name. A re-ranker implements
``rerank(query, candidates)``: the new ranking, the candidates' indices in their new order (or its own
:class:`~berds_core.records.Hits` when it brings passages of its own, as ``rvr`` does); the pipeline's step
(:meth:`.context.Candidates.after`) makes the next candidates of it. A source stage implements
``candidates(query, depth)``. See docs/pipelines.md.
"""
from __future__ import annotations

import math

from dataclasses import dataclass, field, fields
from typing import ClassVar

from ...specs import Registry, SpecError

STAGES = Registry("diversifier")


def param(default, kind, help: str, lo: float | None = None, hi: float | None = None):
    """A stage parameter: ``kind`` is float, int, str (a word) or a tuple of the allowed words."""
    return field(default=default, metadata={"kind": kind, "help": help, "lo": lo, "hi": hi})


def _convert(stage: str, key: str, f, text: str):
    kind = f.metadata["kind"]
    if isinstance(kind, tuple):
        if text not in kind:
            raise SpecError(f"{stage}: {key} must be one of {', '.join(kind)}, got {text!r}")
        return text
    if kind is str:
        return text
    try:
        value = kind(text)
    except ValueError:
        raise SpecError(f"{stage}: {key} must be {'an integer' if kind is int else 'a number'}, got {text!r}") from None
    if kind is float and not math.isfinite(value):  # float() takes 'nan' and 'inf'; no parameter means them
        raise SpecError(f"{stage}: {key} must be a finite number, got {text!r}")
    return value


def _check(stage: str, f, value) -> None:
    lo, hi, kind = f.metadata["lo"], f.metadata["hi"], f.metadata["kind"]
    if value is None:
        return
    if isinstance(value, float) and not math.isfinite(value):
        raise SpecError(f"{stage}: {f.name} must be a finite number, got {value}")
    if isinstance(kind, tuple) and value not in kind:
        raise SpecError(f"{stage}: {f.name} must be one of {', '.join(kind)}, got {value!r}")
    if (lo is not None and value < lo) or (hi is not None and value > hi):
        span = f"in [{lo}, {hi}]" if hi is not None else f"{lo} or more"
        raise SpecError(f"{stage}: {f.name} must be {span}, got {value}")


@dataclass(frozen=True)
class Stage:
    """Base of the stages. ``name``: its spec name; ``makes_candidates``: it makes the candidates (first stage only);
    ``reorders``: it changes the ranking (``none`` does not)."""

    name: ClassVar[str] = ""
    help: ClassVar[str] = ""
    makes_candidates: ClassVar[bool] = False
    reorders: ClassVar[bool] = True

    def reads_stored_vectors_only(self) -> bool:
        """It re-ranks from stored passage vectors and the question alone (no judge, LLM or stance model call
        per candidate), so running it twice, ahead of the loop and in it, costs only vector operations."""
        return False

    def models(self) -> frozenset[str]:
        """The models it reads from the run's ``Using`` (``stance_model``, ``side_reader``): the pipeline has
        the shipped ones loaded there when none was given (``Using.with_models``)."""
        return frozenset()

    def __post_init__(self):
        for f in fields(self):
            _check(self.name, f, getattr(self, f.name))

    @classmethod
    def from_args(cls, args: dict[str, str]) -> "Stage":
        """The stage of the spec's ``key=value`` texts (SpecError naming the key on a bad one)."""
        known = {f.name: f for f in fields(cls)}
        values = {}
        for key, text in args.items():
            if key not in known:
                takes = ", ".join(known) or "no arguments"
                raise SpecError(f"{cls.name} takes {takes}; not '{key}'")
            values[key] = _convert(cls.name, key, known[key], text)
        return cls(**values)

    def args(self) -> tuple[tuple[str, object], ...]:
        """The parameters that differ from their defaults, in declaration order (what the spec prints)."""
        return tuple((f.name, getattr(self, f.name)) for f in fields(self) if getattr(self, f.name) != f.default)

    def rerank(self, q, c):
        """The new ranking of the candidates ``c`` for the query ``q``: their indices in order (at most
        ``q.k``), or a ``Hits`` of its own (passages the stage brings)."""
        raise NotImplementedError

    def candidates(self, q, depth: int):
        """A source stage's candidates for the query ``q`` (a :class:`.context.Candidates`)."""
        raise NotImplementedError

    def prefetch(self, batch) -> None:
        """Batch work for many questions ahead of the per-question loop (same results, faster)."""


def register(cls):
    """Class decorator: the stage in ``STAGES`` under ``cls.name``."""
    STAGES.register(cls.name, help=cls.help, builds=cls)(lambda arg, **args: cls.from_args(args))
    return cls


def keep_order(q, c) -> list[int]:
    """The candidates' own order, cut at ``q.k`` (a re-ranker with nothing to go on)."""
    return list(range(min(q.k, len(c))))


@register
@dataclass(frozen=True)
class PassThrough(Stage):
    name: ClassVar[str] = "none"
    help: ClassVar[str] = "no diversification: the retriever's order"
    reorders: ClassVar[bool] = False

    def rerank(self, q, c):
        return keep_order(q, c)
