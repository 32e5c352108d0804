"""The annotation store's records: a (passage, perspective) :class:`Pair` to judge, an annotator's
:class:`Label`, :class:`StoreError`, and the mappers between them and their table rows.

Plain data: nothing here opens a database (:mod:`berds_core.lab.db`) or loads a judge; ``Pair.judge_text`` is
the run-level passage text a judge reads (:func:`berds_core.runs.passage_text`).
"""
from __future__ import annotations

import os
from datetime import datetime
from dataclasses import dataclass

from .. import __version__
from ..runs import passage_text

SKIP = "skip"


class StoreError(ValueError):
    """A store operation that cannot be done (unknown pair, nothing to undo...)."""


def app_version() -> str:
    """What the labels' ``app_version`` records: ``$BERDS_APP_VERSION`` or ``berds <package version>``."""
    return os.environ.get("BERDS_APP_VERSION") or f"berds {__version__}"


@dataclass(frozen=True)
class Pair:
    pair_id: str
    question: str
    document: str
    perspective: str
    question_id: str | None = None
    passage_id: str | None = None
    perspective_index: int | None = None
    subset: str | None = None
    retriever: str | None = None
    source: str | None = None
    judge_prob: float | None = None
    title: str | None = None
    side: str | None = None

    def to_json(self) -> dict:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}

    @property
    def question_key(self) -> str:
        """What groups pairs by question (bootstrap clusters): the question id, else its text."""
        return self.question_id or self.question

    def judge_text(self, judge=None) -> str:
        """The passage as ``judge`` reads it (:func:`berds_core.runs.passage_text`): the BERDS
        evaluator's ``text + " " + title`` for LLM judges, ``title. text`` for the embedded judge (what the
        stance model reads)."""
        ctx = {"text": self.document} if self.title is None else {"text": self.document, "title": self.title}
        return passage_text(ctx, judge)


@dataclass(frozen=True)
class Label:
    pair_id: str
    annotator: str
    label: int | None  # None when skipped
    skipped: bool
    unsure: bool
    note: str | None
    updated_at: str
    time_ms: int | None = None
    judge_visible: bool | None = None
    app_version: str | None = None
    server_ms: int | None = None  # measured on the server: since the annotator's previous decision

    @property
    def value(self) -> int | str:
        return SKIP if self.skipped else self.label


PAIR_COLS = ("pair_id", "question", "document", "perspective", "question_id", "passage_id",
             "perspective_index", "subset", "retriever", "source", "judge_prob", "title", "side")
LABEL_COLS = ("pair_id", "annotator", "label", "skipped", "unsure", "note", "updated_at", "time_ms",
              "judge_visible", "app_version", "server_ms")


def pair_of_row(row) -> Pair:
    """A ``pairs`` row (its :data:`PAIR_COLS`) as a :class:`Pair`."""
    return Pair(*(row[c] for c in PAIR_COLS))


def label_of_row(row) -> Label:
    """A ``labels`` row as a :class:`Label`."""
    jv = row["judge_visible"]
    return Label(row["pair_id"], row["annotator"], row["label"], bool(row["skipped"]), bool(row["unsure"]),
                 row["note"], row["updated_at"], row["time_ms"], None if jv is None else bool(jv),
                 row["app_version"], row["server_ms"] if "server_ms" in row.keys() else None)


MAX_NOTE = 1000  # characters of a label's note (longer ones are cut, on the server)


def ms_between(earlier: str, later: str, cap: int = 24 * 3600 * 1000) -> int | None:
    """Milliseconds from one stored ISO time to another (0 at least, ``cap`` at most; None when unreadable)."""
    try:
        d = datetime.fromisoformat(later) - datetime.fromisoformat(earlier)
    except (TypeError, ValueError):
        return None
    return int(min(cap, max(0.0, d.total_seconds() * 1000)))


def check_annotator(name) -> str:
    """An annotator's (or adjudicator's) name, stripped; StoreError when empty or over 100 characters."""
    name = str(name or "").strip()
    if not name:
        raise StoreError("annotator name must not be empty")
    if len(name) > 100:
        raise StoreError("annotator name is longer than 100 characters")
    return name
