"""The data model shared by every part of the engine: questions, passages, gold labels and ranked hits."""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Iterable, Iterator

import numpy as np


@dataclass
class Question:
    """A contested question and its perspectives.

    ``generated_perspectives`` are model-written perspectives used for query
    expansion, in generation order. ``stances`` (optional) gives each gold
    perspective's side: ``"support"``, ``"oppose"`` or ``None``; for
    two-sided formats perspective 0 is the supporting side.
    """

    id: str
    question: str
    perspectives: list[str]
    subset: str | None = None
    split: str | None = None
    generated_perspectives: list[str] = field(default_factory=list)
    stances: list[str | None] | None = None

    def to_json(self) -> dict:
        d = {"id": self.id, "question": self.question, "perspectives": self.perspectives}
        for key in ("subset", "split", "stances"):
            if getattr(self, key) is not None:
                d[key] = getattr(self, key)
        if self.generated_perspectives:
            d["generated_perspectives"] = self.generated_perspectives
        return d


@dataclass(frozen=True)
class Passage:
    id: str
    title: str
    text: str

    def to_json(self) -> dict:
        return asdict(self)


# Gold labels: question id -> passage id -> indices of supported perspectives.
Gold = dict[str, dict[str, set[int]]]


@dataclass(frozen=True, eq=False)
class Hits:
    """One ranked list of corpus rows: ``rows`` (int64) and their ``scores`` (float64), best first.

    The one form a ranking takes from a retriever's ``search`` to a run line (:func:`berds_core.runs.ctxs_for`):
    the pipeline, its candidates and its stages pass it on without rebuilding it. Ties keep the order they were
    given in (a retriever breaks them by row, :mod:`berds_core.retrieval.topk`). Scores are kept as float64: a
    float32 score widens exactly, so a run file gets the number ``float(score)`` gives. Iterating gives
    ``(row, score)`` pairs of Python ``int`` and ``float``; ``hits[i]`` is one pair, ``hits[a:b]`` a ``Hits``;
    a ``Hits`` equals another with the same pairs, or a sequence of those pairs. The arrays are read-only.
    """

    rows: np.ndarray
    scores: np.ndarray

    def __post_init__(self):
        rows = np.asarray(self.rows, dtype=np.int64).reshape(-1).view()  # a view: the caller's array stays writable
        scores = np.asarray(self.scores, dtype=np.float64).reshape(-1).view()
        if len(rows) != len(scores):
            raise ValueError(f"Hits: {len(rows)} rows but {len(scores)} scores")
        rows.flags.writeable = scores.flags.writeable = False
        object.__setattr__(self, "rows", rows)
        object.__setattr__(self, "scores", scores)

    @classmethod
    def of(cls, hits: "Hits | Iterable[tuple[int, float]]") -> "Hits":
        """``hits`` itself when it is a ``Hits``, else the ``Hits`` of its ``(row, score)`` pairs."""
        if isinstance(hits, cls):
            return hits
        pairs = list(hits)
        return cls(np.array([int(r) for r, _ in pairs], dtype=np.int64),
                   np.array([float(s) for _, s in pairs], dtype=np.float64))

    @classmethod
    def empty(cls) -> "Hits":
        return cls(np.zeros(0, np.int64), np.zeros(0, np.float64))

    def __len__(self) -> int:
        return len(self.rows)

    def __iter__(self) -> Iterator[tuple[int, float]]:
        return zip(self.rows.tolist(), self.scores.tolist())

    def __getitem__(self, i):
        if isinstance(i, slice):
            return Hits(self.rows[i], self.scores[i])
        return int(self.rows[i]), float(self.scores[i])

    def __eq__(self, other) -> bool:
        if isinstance(other, Hits):
            return bool(np.array_equal(self.rows, other.rows) and np.array_equal(self.scores, other.scores))
        if isinstance(other, (list, tuple)):
            return list(self) == list(other)
        return NotImplemented

    __hash__ = None  # equal to a list: not hashable

    def __repr__(self) -> str:
        return f"Hits({list(self)!r})"

    def top(self, k: int) -> "Hits":
        """The ``k`` best (all when fewer)."""
        return self[:max(0, int(k))]

    def take(self, order) -> "Hits":
        """The hits at positions ``order``, in that order."""
        order = np.asarray(order, dtype=np.int64).reshape(-1)
        return Hits(self.rows[order], self.scores[order])

    def then(self, tail: "Hits", k: int) -> "Hits":
        """These hits cut at ``k`` or, when fewer, followed by ``tail``'s rows that are not among them (in
        ``tail``'s order, with its scores) up to ``k`` in all."""
        k = max(0, int(k))
        if len(self) >= k:
            return self[:k]
        tail = Hits.of(tail)
        more = tail.take(np.flatnonzero(~np.isin(tail.rows, self.rows)))[:k - len(self)]
        return Hits(np.concatenate([self.rows, more.rows]), np.concatenate([self.scores, more.scores]))
