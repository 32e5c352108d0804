"""The data model shared by every part of the engine."""
from __future__ import annotations

from dataclasses import asdict, dataclass, field


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
