"""Run files: BERDS-compatible JSON Lines, one question per line.

Each line: ``id``, ``question``, ``perspectives``, ``ctxs`` (``{id, title,
text, score}`` in rank order), optionally ``subset``, and per judge
``<name>-preds``: for each passage a list of booleans, one per perspective.
Runs written by the original BERDS scripts (no ``id``) load as they are.
"""
from __future__ import annotations

import math

import numpy as np

from .errors import InputError
from .jsonio import iter_jsonl, require, write_jsonl
from .records import Gold

PREDS_SUFFIX = "-preds"


def read_run(path) -> list[dict]:
    return read_run_lines(path)[0]


def read_run_lines(path) -> tuple[list[dict], list[int]]:
    """The run's entries and the line number of each (for errors that name a question's line).

    Question ids must be unique (a repeated id would be scored twice). A
    passage's ``score`` is a finite number, null, or a string holding one (the
    original BERDS / Contriever scripts write scores as strings); it is read
    as a float. Anything else (``"high"``, ``NaN``, ``Infinity``) is an error.
    """
    entries, lines = [], []
    seen: dict[str, int] = {}
    for no, obj in iter_jsonl(path):
        require(obj, "question", str, path, no)
        persp = require(obj, "perspectives", list, path, no, nonempty=True)
        if not all(isinstance(p, str) for p in persp):
            raise InputError(path, no, "perspectives", "expected a list of strings")
        ctxs = require(obj, "ctxs", list, path, no)
        for c in ctxs:
            if not isinstance(c, dict) or "text" not in c:
                raise InputError(path, no, "ctxs", "each passage needs at least 'text'")
        obj.setdefault("id", str(len(entries)))
        obj["id"] = str(obj["id"])
        if obj["id"] in seen:
            raise InputError(path, no, "id", f"duplicate question id {obj['id']!r} (first on line "
                                             f"{seen[obj['id']]}); each question must appear once")
        seen[obj["id"]] = no
        for i, c in enumerate(ctxs):
            c["id"] = str(c.get("id", f"{obj['id']}-{i}"))
            c.setdefault("title", "")
            c["score"] = _score(c.get("score"), path, no, i)
        for key, val in obj.items():
            if key.endswith(PREDS_SUFFIX):
                _check_preds(val, len(ctxs), len(persp), path, no, key)
        entries.append(obj)
        lines.append(no)
    if not entries:
        raise InputError(path, None, None, "run file is empty")
    return entries, lines


def _score(val, path, line, i):
    """A passage score as float (or None); strings holding a number are accepted (BERDS writes them)."""
    if val is None:
        return None
    field = f"ctxs[{i}].score"
    if isinstance(val, bool) or not isinstance(val, (int, float, str)):
        raise InputError(path, line, field, f"expected a number, got {type(val).__name__}")
    if isinstance(val, str):
        try:
            num = float(val.strip())
        except ValueError:
            raise InputError(path, line, field, "expected a number, got a string that is not one") from None
    else:
        num = float(val)
    if not math.isfinite(num):
        raise InputError(path, line, field, f"expected a finite number, got {num}")
    return num


def _check_preds(val, n_ctx, m, path, line, key):
    ok = isinstance(val, list) and len(val) <= n_ctx and all(
        isinstance(row, list) and len(row) == m and all(isinstance(x, (bool, int)) for x in row) for row in val)
    if not ok:
        raise InputError(path, line, key, f"expected at most {n_ctx} lists (one per passage) of {m} booleans")


def write_run(path, entries: list[dict]) -> int:
    return write_jsonl(path, entries)


def judges_in(entry: dict) -> list[str]:
    return [k[: -len(PREDS_SUFFIX)] for k in entry if k.endswith(PREDS_SUFFIX)]


def label_matrix(entry: dict, *, gold: Gold | None = None, judge: str | None = None) -> np.ndarray:
    """Boolean matrix (passages x perspectives): passage i supports perspective j.

    Exactly one of ``gold`` (labels by question and passage id) or ``judge``
    (a name whose ``<judge>-preds`` are stored in the entry) must be given.
    """
    m = len(entry["perspectives"])
    ctxs = entry["ctxs"]
    if (gold is None) == (judge is None):
        raise ValueError("give exactly one of gold= or judge=")
    if judge is not None:
        key = judge + PREDS_SUFFIX
        if key not in entry:
            have = ", ".join(judges_in(entry)) or "none"
            raise KeyError(f"question {entry['id']}: no predictions of judge '{judge}' (has: {have})")
        preds = entry[key]
        out = np.zeros((len(ctxs), m), dtype=bool)
        if preds:
            arr = np.asarray(preds, dtype=bool).reshape(len(preds), m)[: len(ctxs)]
            out[: len(arr)] = arr
        return out
    return gold_matrix(gold, entry["id"], m, [c["id"] for c in ctxs])


def gold_matrix(gold: Gold, question_id, m: int, passage_ids) -> np.ndarray:
    """Boolean matrix (passages x m perspectives) of the gold labels of one question.

    A gold perspective index the question does not have raises ValueError.
    """
    labels = gold.get(str(question_id), {})
    out = np.zeros((len(passage_ids), m), dtype=bool)
    for i, pid in enumerate(passage_ids):
        for j in labels.get(str(pid), ()):
            if not 0 <= j < m:
                raise ValueError(f"question {question_id}: gold perspective {j} for passage {pid} "
                                 f"but the question has {m} perspectives")
            out[i, j] = True
    return out
