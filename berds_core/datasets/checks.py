"""Validation helpers shared by the dataset loaders.

Every problem becomes an :class:`~berds_core.errors.InputError` naming the
file, the place (a 1-based line, or ``entry N`` / ``row N`` -- a 0-based index
-- for whole-JSON files and tables without lines) and the field.
"""
from __future__ import annotations

import hashlib
import json
from typing import Any

from ..errors import InputError
from ..files.jsonio import read_text

STANCES = ("support", "oppose")


def short_hash(text: str, n: int = 12) -> str:
    """A stable, deterministic id fragment for ``text`` (SHA-1 prefix)."""
    return hashlib.sha1(text.encode("utf-8")).hexdigest()[:n]


def load_json_document(path) -> Any:
    """Parse a whole-JSON file; malformed JSON names the line and column."""
    text = read_text(path)
    if not text.strip():
        raise InputError(path, None, None, "file is empty")
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise InputError(path, e.lineno, None, f"malformed JSON ({e.msg}, column {e.colno})") from None


def as_id(val, path, where, field: str) -> str:
    """An id may be a string or an integer in the file; it is a string here."""
    if isinstance(val, bool) or not isinstance(val, (str, int)):
        raise InputError(path, where, field, f"expected a string or integer id, got {type(val).__name__}")
    out = str(val).strip()
    if not out:
        raise InputError(path, where, field, "must not be empty")
    return out


def nonempty_str(val, path, where, field: str) -> str:
    if val is None:
        raise InputError(path, where, field, "missing")
    if not isinstance(val, str):
        raise InputError(path, where, field, f"expected str, got {type(val).__name__}")
    val = " ".join(val.split())
    if not val:
        raise InputError(path, where, field, "must not be empty")
    return val


def str_list(val, path, where, field: str, *, nonempty: bool = True) -> list[str]:
    """A list of non-blank strings (whitespace collapsed)."""
    if val is None:
        raise InputError(path, where, field, "missing")
    if not isinstance(val, list):
        raise InputError(path, where, field, f"expected a list of strings, got {type(val).__name__}")
    out = []
    for i, item in enumerate(val):
        if not isinstance(item, str):
            raise InputError(path, where, field, f"item {i}: expected str, got {type(item).__name__}")
        item = " ".join(item.split())
        if not item:
            raise InputError(path, where, field, f"item {i} is blank")
        out.append(item)
    if nonempty and not out:
        raise InputError(path, where, field, "a question needs at least one perspective" if field == "perspectives" else "must not be empty")
    return out


def stance_list(val, m: int, path, where, field: str = "stances") -> list[str | None] | None:
    if val is None:
        return None
    if not isinstance(val, list) or len(val) != m:
        raise InputError(path, where, field, f"expected a list of {m} stances (one per perspective)")
    for i, s in enumerate(val):
        if s is not None and s not in STANCES:
            raise InputError(path, where, field, f"item {i}: expected 'support', 'oppose' or null, got {s!r}")
    return list(val)


def optional_str(obj: dict, key: str, path, where) -> str | None:
    val = obj.get(key)
    if val is None:
        return None
    if not isinstance(val, str):
        raise InputError(path, where, key, f"expected str, got {type(val).__name__}")
    return val.strip() or None
