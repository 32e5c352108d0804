"""BERDS query-expansion JSON Lines (the format of the BERDS dev files).

One line per (question, generated perspective): ``org_id``, ``org_q``,
``perspectives`` (the gold ones), ``perspective`` (a name) and ``text`` (the
generated perspective, used as an expanded query). Lines are grouped by
``org_id``; a question's generated perspectives are its lines in file order.
The subset (arguana / kialo / opinionqa) and split (train / dev / test) come
from the file name when it names them.
"""
from __future__ import annotations

import re
from pathlib import Path

from ..errors import InputError
from ..files.jsonio import iter_jsonl
from ..records import Question
from .checks import as_id, nonempty_str, str_list

SUBSETS = ("arguana", "kialo", "opinionqa")
SPLITS = ("train", "dev", "test")


def subset_from_name(name: str) -> str | None:
    low = name.lower()
    for s in SUBSETS:
        if s in low:
            return s
    return None


def split_from_name(name: str) -> str | None:
    parts = re.split(r"[^a-z]+", Path(name).name.lower())
    for s in SPLITS:
        if s in parts:
            return s
    return None


def is_qe_record(obj: dict) -> bool:
    return "org_id" in obj and "org_q" in obj


def load_qe(path, subset: str | None = None, split: str | None = None) -> list[Question]:
    subset = subset or subset_from_name(Path(path).name)
    split = split or split_from_name(Path(path).name)
    by_id: dict[str, Question] = {}
    first_line: dict[str, int] = {}
    for no, obj in iter_jsonl(path):
        oid = as_id(obj.get("org_id"), path, no, "org_id") if obj.get("org_id") is not None else None
        if oid is None:
            raise InputError(path, no, "org_id", "missing")
        qtext = nonempty_str(obj.get("org_q"), path, no, "org_q")
        persp = str_list(obj.get("perspectives"), path, no, "perspectives")
        gen = obj.get("text")
        gen = nonempty_str(gen, path, no, "text") if gen is not None else None
        qid = f"{subset}-{oid}" if subset else oid
        q = by_id.get(qid)
        if q is None:
            q = by_id[qid] = Question(qid, qtext, persp, subset=subset, split=split)
            first_line[qid] = no
        elif q.question != qtext or q.perspectives != persp:
            field = "org_q" if q.question != qtext else "perspectives"
            raise InputError(path, no, field, f"differs from the first line of org_id {oid!r} (line {first_line[qid]})")
        if gen is not None:
            q.generated_perspectives.append(gen)
    if not by_id:
        raise InputError(path, None, None, "no questions found (empty file?)")
    return list(by_id.values())
