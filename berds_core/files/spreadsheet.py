"""Delimited text (CSV, TSV) that a spreadsheet opens without running anything (CSV injection).

Every delimited file the studio writes for people (label exports, the
pages' CSV downloads, ``berds judge-eval --out``) goes through
:func:`delimited`. Two rules, both needed:

- **Quoting.** A field holding a delimiter, a quote, a line feed *or a
  carriage return* is quoted (``"..."``, inner quotes doubled). Python's
  ``csv.writer`` with ``lineterminator="\\n"`` leaves a bare ``\\r`` unquoted,
  and spreadsheets end a record at a bare ``\\r``: the text after it became a
  row of its own, with no guard. Here the writer is told ``\\r\\n`` ends a
  record (so it quotes both characters) and the file still ends its records
  with ``\\n``.
- **Formula guard** (OWASP): a cell line that starts with ``=``, ``+``,
  ``-``, ``@``, a tab or a carriage return gets a leading ``'``, so a
  spreadsheet shows it as text. The rule is applied to *every line inside a
  cell* (after each ``\\r\\n``, ``\\r`` or ``\\n``), not only to the cell's first
  character: a reader that splits a cell at a line break still finds no
  formula. A cell that starts with a line break gets a ``'`` too (no cell
  starts with ``\\r``). Plain numbers (``-0.25``) are left as they are. A line
  that already starts with ``'`` gets one more, so :func:`unneutralise`
  (drop one leading ``'`` per line) gives back exactly what was written.
"""
from __future__ import annotations

import csv
import io
import re
from typing import Iterable

FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
_NUMBER = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?")
_BREAK = re.compile(r"(\r\n|\r|\n)")


def _guard_line(line: str, first: bool, more: bool) -> str:
    if not line:
        return "'" if first and more else line  # a cell that starts with a line break
    if line[0] == "'" or (line[0] in FORMULA_START and not _NUMBER.fullmatch(line)):
        return "'" + line
    return line


def neutralise(value):
    """A cell as a spreadsheet may open it safely (see the module docstring); non-strings are left as they are."""
    if not isinstance(value, str) or not value:
        return value
    parts = _BREAK.split(value)  # line, break, line, break, ... line
    out = [_guard_line(part, i == 0, len(parts) > 1) if i % 2 == 0 else part for i, part in enumerate(parts)]
    return "".join(out)


def unneutralise(value):
    """The cell :func:`neutralise` was given (drops one leading ``'`` of each line)."""
    if not isinstance(value, str) or not value:
        return value
    parts = _BREAK.split(value)
    return "".join(p[1:] if i % 2 == 0 and p.startswith("'") else p for i, p in enumerate(parts))


def delimited_lines(rows: Iterable, columns: list[str], delimiter: str = ",", *, header: bool = True):
    """The records of :func:`delimited`, one string each (header first), for writing as they come."""
    buf = io.StringIO(newline="")
    w = csv.writer(buf, delimiter=delimiter, quotechar='"', doublequote=True, quoting=csv.QUOTE_MINIMAL,
                   lineterminator="\r\n")  # so that both \r and \n inside a field are quoted

    def one(cells) -> str:
        w.writerow([neutralise(c) for c in cells])
        text = buf.getvalue()
        buf.seek(0)
        buf.truncate()
        return text[:-2] + "\n"  # the record's own \r\n, outside any quote, becomes \n

    if header:
        yield one([str(c) for c in columns])
    for r in rows:
        yield one([r.get(c, "") for c in columns] if isinstance(r, dict) else list(r))


def delimited(rows: Iterable, columns: list[str], delimiter: str = ",", *, header: bool = True) -> str:
    """``rows`` (dicts, or sequences in ``columns`` order) as CSV / TSV text: every cell neutralised, every
    field with a delimiter, a quote, ``\n`` or ``\r`` quoted, records ended by ``\n``."""
    return "".join(delimited_lines(rows, columns, delimiter, header=header))
