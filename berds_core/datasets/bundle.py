"""A (dataset, corpus, gold) triple, and reading a plain passages JSONL."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from ..errors import InputError
from ..files.jsonio import iter_jsonl
from ..records import Gold, Passage, Question
from .checks import as_id


@dataclass
class Bundle:
    """Questions, the passages to retrieve from, and gold labels (may be empty).

    Unpacks as ``questions, passages, gold = bundle``.
    """

    name: str
    questions: list[Question]
    passages: list[Passage] = field(default_factory=list)
    gold: Gold = field(default_factory=dict)
    # question id -> the ids of the passages it retrieves from (BERDS's web setting: a corpus per question);
    # empty: every question retrieves from all the passages
    pools: dict[str, list[str]] = field(default_factory=dict)

    def __iter__(self):
        return iter((self.questions, self.passages, self.gold))

    @property
    def n_gold_pairs(self) -> int:
        return sum(len(ps) for by_p in self.gold.values() for ps in by_p.values())

    def summary(self) -> dict:
        return {"name": self.name, "questions": len(self.questions),
                "passages": len(self.passages), "gold_pairs": self.n_gold_pairs}


def read_passages_jsonl(path) -> tuple[list[Passage], dict[str, int]]:
    """``{id, title?, text}`` per line -> passages and the line of each id."""
    passages, lines = [], {}
    for no, obj in iter_jsonl(path):
        pid = as_id(obj.get("id"), path, no, "id") if obj.get("id") is not None else None
        if pid is None:
            raise InputError(path, no, "id", "missing")
        text = obj.get("text")
        if not isinstance(text, str):
            raise InputError(path, no, "text", "missing" if text is None else f"expected str, got {type(text).__name__}")
        if not text.strip():
            raise InputError(path, no, "text", "must not be empty")
        title = obj.get("title") or ""
        if not isinstance(title, str):
            raise InputError(path, no, "title", f"expected str, got {type(title).__name__}")
        if pid in lines:
            raise InputError(path, no, "id", f"duplicate id {pid!r} (first at line {lines[pid]})")
        lines[pid] = no
        passages.append(Passage(pid, title, text))
    if not passages:
        raise InputError(path, None, None, "no passages found (empty file?)")
    return passages, lines


def read_pools(path, questions) -> dict[str, list[str]]:
    """The optional ``question_id`` of each line of a passages JSONL: question id -> its passages' ids
    (in file order). A ``question_id`` that names no question of ``questions`` is an error."""
    known = {q.id for q in questions}
    pools: dict[str, list[str]] = {}
    for no, obj in iter_jsonl(path):
        qid = obj.get("question_id")
        if qid is None:
            continue
        qid = as_id(qid, path, no, "question_id")
        if qid not in known:
            raise InputError(path, no, "question_id", f"names no question of the dataset ({qid!r})")
        pools.setdefault(qid, []).append(as_id(obj.get("id"), path, no, "id"))
    return pools


def merge_unique(parts: list[tuple[Path, list, dict[str, int]]], what: str) -> list:
    """Concatenate items from several files; an id seen in two files is an error."""
    out, where = [], {}
    for path, items, lines in parts:
        for item in items:
            if item.id in where:
                raise InputError(path, lines.get(item.id), "id",
                                 f"duplicate {what} id {item.id!r} (also in {where[item.id]})")
            where[item.id] = f"{path}:{lines.get(item.id)}"
            out.append(item)
    return out


__all__ = ["Bundle", "read_passages_jsonl", "read_pools", "merge_unique"]
