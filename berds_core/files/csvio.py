"""Reading CSV / TSV records with strict quoting and errors that name the real cause.

Python's ``csv`` module, when not strict, reads a field whose opening quote is
never closed up to the end of the file (or up to the next quote), so a single
stray ``"`` swallows the following lines and the file is reported wrong
somewhere else ("field 'perspectives': missing"), or read silently wrong.
:func:`records` reads strictly and turns ``csv.Error`` into one line that says
what is wrong and where the record began::

    bad.csv:3: unterminated quote: the quoted field that starts on line 3 runs to the end of the
    file; close it with " (a quote inside a quoted field is written "")
"""
from __future__ import annotations

import csv
import io
import sys
from typing import Iterable, Iterator

from ..errors import InputError


def explain(err: csv.Error, start: int, end: int, delimiter: str) -> str:
    """What ``err`` (raised reading the record that starts on line ``start``; the reader stopped on
    line ``end``) means, in words."""
    msg = str(err)
    sep = "tab" if delimiter == "\t" else repr(delimiter)
    if "unexpected end of data" in msg or "EOF" in msg:
        return (f"unterminated quote: the quoted field that starts on line {start} runs to the end of the file; "
                'close it with " (a quote inside a quoted field is written "")')
    if "expected after" in msg:
        opened = f"; the quote opened on line {start} is probably never closed" if end > start else ""
        return (f"a closing quote on line {end} is followed by text instead of a {sep}{opened} "
                '(a quote inside a quoted field is written "")')
    if "field larger than field limit" in msg:
        return f"a field longer than {csv.field_size_limit():,} characters (an unterminated quote?)"
    return f"malformed {'TSV' if delimiter == chr(9) else 'CSV'} ({msg})"


def records(source: str | Iterable[str], path, delimiter: str = ",") -> Iterator[tuple[int, list[str]]]:
    """``(line, fields)`` of each record of ``source`` (the text, or its lines with their line ends), strict
    quoting; ``line`` is where the record starts. Blank lines give ``[]``. A malformed record is an
    :class:`InputError` at its first line that names the cause (:func:`explain`)."""
    lines = io.StringIO(source, newline="") if isinstance(source, str) else source
    csv.field_size_limit(sys.maxsize)
    reader = csv.reader(lines, delimiter=delimiter, quotechar='"', doublequote=True, strict=True)
    start = 1
    while True:
        try:
            rec = next(reader)
        except StopIteration:
            return
        except csv.Error as e:
            raise InputError(path, start, None, explain(e, start, reader.line_num, delimiter)) from None
        yield start, rec
        start = reader.line_num + 1
