"""The pipeline spec language: a retriever, its candidate depth, then ``>>`` stages with keyword arguments.

::

    dense%10>>coverage(probs=model,alpha=0.1,keep=2)
    bm25%30>>mmr(lam=0.5)
    %20>>union>>xquad(source=dataset)        # the retriever in use, 20 candidates
    qe(source=offline)                         # the retriever in use, default depth

Grammar (spaces around tokens are allowed)::

    pipeline := head ('>>' stage)* | stage ('>>' stage)*
    head     := [retriever] ['%' depth]          retriever: bm25 | dense; depth: an integer >= 1
    stage    := name ['(' [key '=' value (',' key '=' value)*] ')']
    value    := a bare word (no spaces, ',', '(' or ')') | 'quoted' | "quoted"

:func:`parse_spec` returns the parts as plain data (``SpecParts``); :func:`format_spec` prints them back
(``format_spec(parse_spec(s))`` parses to the same parts). A malformed spec raises
:class:`berds_core.specs.SpecError` with one line naming the position (1-based) and what was expected.
Which stage names and keys exist is the stages' business (:mod:`.stages`); this module only reads text.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from ..retrieval import CORPUS_RETRIEVERS as RETRIEVERS  # the words a spec may start with: the registry's
from ..specs import SpecError

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_\-]*")
_INT = re.compile(r"[0-9]+")
_BARE = re.compile(r"[^\s,()'\"]+")


@dataclass(frozen=True)
class StagePart:
    """One ``name(key=value, ...)`` of a spec, the values as written (text); ``at``: its 1-based position."""

    name: str
    args: tuple[tuple[str, str], ...] = ()
    at: int = field(default=0, compare=False)
    arg_at: tuple[int, ...] = field(default=(), compare=False)


@dataclass(frozen=True)
class SpecParts:
    retriever: str | None
    depth: int | None
    stages: tuple[StagePart, ...]


class _Reader:
    def __init__(self, text: str):
        self.text, self.i = text, 0

    def fail(self, what: str, at: int | None = None):
        pos = (self.i if at is None else at) + 1
        raise SpecError(f"pipeline '{self.text}': at {pos}: {what}")

    def skip(self) -> None:
        while self.i < len(self.text) and self.text[self.i].isspace():
            self.i += 1

    def peek(self, s: str) -> bool:
        self.skip()
        return self.text.startswith(s, self.i)

    def take(self, s: str) -> bool:
        if self.peek(s):
            self.i += len(s)
            return True
        return False

    def match(self, pattern: re.Pattern) -> str | None:
        self.skip()
        m = pattern.match(self.text, self.i)
        if not m:
            return None
        self.i = m.end()
        return m.group(0)

    def value(self) -> str:
        self.skip()
        if self.i < len(self.text) and self.text[self.i] in "'\"":
            quote, start = self.text[self.i], self.i
            end = self.text.find(quote, self.i + 1)
            if end < 0:
                self.fail(f"unclosed quote {quote}", start)
            self.i = end + 1
            return self.text[start + 1:end]
        word = self.match(_BARE)
        if word is None:
            self.fail("expected a value")
        return word


def parse_spec(text: str) -> SpecParts:
    """``"dense%10>>coverage(alpha=0.1)"`` -> ``SpecParts("dense", 10, (StagePart("coverage", (("alpha", "0.1"),)),))``."""
    r = _Reader(str(text or ""))
    if not r.text.strip():
        raise SpecError(f"pipeline '': empty: give a retriever ({', '.join(RETRIEVERS)}), a stage, or both: "
                        "e.g. bm25%30>>mmr(lam=0.5)")
    retriever = depth = None
    stages: list[StagePart] = []
    r.skip()
    start = r.i
    word = r.match(_NAME)
    if word is not None and word in RETRIEVERS:
        retriever = word
    elif word is not None:
        r.i = start  # a stage: the retriever in use
    if r.take("%"):
        at = r.i
        num = r.match(_INT)
        if num is None or int(num) < 1:
            r.fail("expected the candidate depth (an integer >= 1) after '%'", at)
        depth = int(num)
    head = retriever is not None or depth is not None
    while True:
        if head or stages:
            r.skip()
            if r.i >= len(r.text):
                break
            if not r.take(">>"):
                r.fail(f"expected '>>' before the next stage, got {r.text[r.i:r.i + 8]!r}")
        stages.append(_stage(r))
    return SpecParts(retriever, depth, tuple(stages))


def _stage(r: _Reader) -> StagePart:
    r.skip()
    at = r.i
    name = r.match(_NAME)
    if name is None:
        r.fail("expected a stage name (e.g. mmr, coverage, xquad)")
    if name in RETRIEVERS:
        r.fail(f"the retriever ({name}) comes first, before any stage", at)
    args, arg_at = [], []
    if r.take("("):
        if not r.take(")"):
            while True:
                r.skip()
                kat = r.i
                key = r.match(_NAME)
                if key is None:
                    r.fail(f"expected key=value inside {name}(...)")
                if key in (k for k, _ in args):
                    r.fail(f"{name}: '{key}' given twice", kat)
                if not r.take("="):
                    r.fail(f"expected '=' after '{key}'")
                args.append((key, r.value()))
                arg_at.append(kat)
                if r.take(")"):
                    break
                if not r.take(","):
                    r.fail(f"expected ',' or ')' in {name}(...)")
    return StagePart(name, tuple(args), at, tuple(arg_at))


def format_value(value) -> str:
    """A value as the spec writes it: numbers plainly, words bare, anything else quoted."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return repr(value)
    text = str(value)
    if _BARE.fullmatch(text) and "'" not in text:
        return text
    return "'" + text + "'" if "'" not in text else '"' + text + '"'


def format_spec(parts: SpecParts) -> str:
    """The spec text of ``parts`` (no spaces): the inverse of :func:`parse_spec`."""
    head = (parts.retriever or "") + (f"%{parts.depth}" if parts.depth is not None else "")
    stages = [p.name + (("(" + ",".join(f"{k}={format_value(v)}" for k, v in p.args) + ")") if p.args else "")
              for p in parts.stages]
    return ">>".join(([head] if head else []) + stages)
