"""Generic question files: JSON Lines and CSV/TSV.

JSONL, one question per line (also what ``berds import`` writes)::

    {"id"?, "question", "perspectives": [...], "subset"?, "split"?,
     "generated_perspectives"?: [...], "stances"?: ["support"|"oppose"|null, ...]}

CSV/TSV with a header: ``question``, ``perspectives`` (a JSON list, or
statements separated by ``|``), optional ``id``, ``subset``, ``split``.

A question without an id gets ``q-<hash of its text>`` (stable when lines move).
"""
from __future__ import annotations

import json
from pathlib import Path

from ..files.csvio import records
from ..errors import InputError
from ..files.jsonio import iter_jsonl, read_text
from ..records import Question
from .checks import as_id, nonempty_str, optional_str, short_hash, stance_list, str_list


def question_id(text: str) -> str:
    return "q-" + short_hash(text, 10)


def read_questions_jsonl(path) -> tuple[list[Question], dict[str, int]]:
    """Questions and the line each id came from."""
    questions, lines = [], {}
    for no, obj in iter_jsonl(path):
        text = nonempty_str(obj.get("question"), path, no, "question")
        qid = as_id(obj["id"], path, no, "id") if obj.get("id") is not None else question_id(text)
        persp = str_list(obj.get("perspectives"), path, no, "perspectives")
        gen = obj.get("generated_perspectives")
        gen = str_list(gen, path, no, "generated_perspectives", nonempty=False) if gen is not None else []
        q = Question(qid, text, persp, subset=optional_str(obj, "subset", path, no),
                     split=optional_str(obj, "split", path, no), generated_perspectives=gen,
                     stances=stance_list(obj.get("stances"), len(persp), path, no))
        _add(questions, lines, q, path, no)
    if not questions:
        raise InputError(path, None, None, "no questions found (empty file?)")
    return questions, lines


def load_questions_jsonl(path) -> list[Question]:
    return read_questions_jsonl(path)[0]


def _add(questions: list, lines: dict, q: Question, path, no) -> None:
    if q.id in lines:
        raise InputError(path, no, "id", f"duplicate id {q.id!r} (first at line {lines[q.id]})")
    lines[q.id] = no
    questions.append(q)


def _split_cell(cell: str, path, no) -> list[str]:
    cell = cell.strip()
    if cell.startswith("["):
        try:
            val = json.loads(cell)
        except json.JSONDecodeError as e:
            raise InputError(path, no, "perspectives", f"malformed JSON list ({e.msg})") from None
        return str_list(val, path, no, "perspectives")
    return str_list([p for p in cell.split("|") if p.strip()], path, no, "perspectives")


def load_questions_csv(path, delimiter: str | None = None) -> list[Question]:
    text = read_text(path)
    if not text.strip():
        raise InputError(path, None, None, "file is empty")
    if delimiter is None:
        header = text.split("\n", 1)[0]
        delimiter = "\t" if Path(path).suffix.lower() == ".tsv" or ("\t" in header and "," not in header) else ","
    rows = records(text, path, delimiter)  # strict quoting: an unterminated quote is named as such
    fields = [f.strip() for f in next((rec for _, rec in rows if rec), [])]
    for col in ("question", "perspectives"):
        if col not in fields:
            raise InputError(path, 1, col, f"missing column (the first line has {len(fields)} cells, none named "
                                           f"{col!r}; a questions CSV/TSV starts with a header such as id, question, "
                                           "perspectives)")  # the file's cells are never quoted
    questions, lines = [], {}
    for no, rec in rows:
        if not any(v.strip() for v in rec):
            continue
        if len(rec) > len(fields):
            raise InputError(path, no, None, f"{len(rec)} cells, header has {len(fields)}")
        row = dict(zip(fields, rec))
        qtext = nonempty_str(row.get("question"), path, no, "question")
        if row.get("perspectives") is None:
            raise InputError(path, no, "perspectives", f"missing ({len(rec)} cells, header has {len(fields)})")
        persp = _split_cell(row["perspectives"], path, no)
        qid = (row.get("id") or "").strip() or question_id(qtext)
        q = Question(qid, qtext, persp, subset=(row.get("subset") or "").strip() or None,
                     split=(row.get("split") or "").strip() or None)
        _add(questions, lines, q, path, no)
    if not questions:
        raise InputError(path, None, None, "no questions found (header only?)")
    return questions
