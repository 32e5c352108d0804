"""Where an output path really goes: standard output, a stream (a device, a FIFO, ``/dev/stdout``), or a file.

Atomic replace (a temporary file renamed over the target) is right for a
regular file and wrong for everything else: renaming over ``/dev/null`` or a
FIFO replaces the node with a plain file (as root, the system's own), and a
symbolic link would become a file instead of updating what it points to.
:func:`resolve_output` says what a path is before anything is written:

- ``-``: standard output (:data:`STDOUT`);
- an existing character or block device, FIFO or socket, or a link through
  ``/proc/<pid>/fd/N`` or ``/dev/fd/N`` (what ``/dev/stdout`` and
  ``/dev/stderr`` are): a **stream**, opened and written through as it is;
- a symbolic link to a file: the link's final target, written atomically
  (the link stays a link); a link whose target does not exist (dangling),
  or a loop, is refused in one line: writing would create a file somewhere
  the user never named;
- anything else: a regular (possibly new) **file**, written atomically.

:func:`write_through` opens standard output or a stream for writing, as it is
(``files.jsonio.atomic_write`` does the atomic files).
"""
from __future__ import annotations

import io
import os
import re
import stat
import sys
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from ..errors import InputError

STDOUT_NAME = "-"
_FD_LINK = re.compile(r"^/(?:proc/[^/]+|dev)/fd/\d+$")
_MAX_HOPS = 40  # the kernel's own limit on symbolic links in one lookup


@dataclass(frozen=True)
class Sink:
    """``kind``: ``stdout``, ``stream`` (write through ``path`` as it is) or ``file`` (atomic, at ``path``)."""

    kind: str
    path: Path | None

    @property
    def atomic(self) -> bool:
        return self.kind == "file"


STDOUT = Sink("stdout", None)


def is_stdout(path) -> bool:
    return path is not None and str(path) == STDOUT_NAME


def _special(mode: int) -> bool:
    return stat.S_ISCHR(mode) or stat.S_ISBLK(mode) or stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)


def resolve_output(path, field: str | None = None) -> Sink:
    """What writing ``path`` means (see the module docstring); ``InputError`` for a dangling link or a loop."""
    if is_stdout(path):
        return STDOUT
    given = Path(path)
    p = given
    for _ in range(_MAX_HOPS):
        if _FD_LINK.match(os.path.abspath(p)):
            return Sink("stream", given)  # /proc/self/fd/1 and friends: open them, never resolve them
        if not p.is_symlink():
            break
        target = os.readlink(p)
        p = Path(target) if os.path.isabs(target) else p.parent / target
    else:
        raise InputError(given, None, field, "is a loop of symbolic links")
    if p is not given and not os.path.lexists(p):
        raise InputError(given, None, field, f"is a symbolic link to {p}, which does not exist (a dangling link): "
                                             "create the target or give the file itself")
    try:
        mode = os.stat(p).st_mode
    except (FileNotFoundError, NotADirectoryError):  # a new file (its folder is checked by the caller)
        return Sink("file", p)
    except OSError as e:
        raise InputError(given, None, field, f"cannot be examined ({e.strerror})") from None
    if _special(mode):
        return Sink("stream", given)
    return Sink("file", p)


def writes_to_stdout(path) -> bool:
    """Whether writing ``path`` lands on this process's standard output (``-``, ``/dev/stdout``, or a
    device or FIFO that standard output is)."""
    if is_stdout(path):
        return True
    try:
        sink = resolve_output(path)
        if sink.kind != "stream":
            return False
        a, b = os.stat(sink.path), os.fstat(1)
    except (InputError, OSError):
        return False
    return (a.st_dev, a.st_ino) == (b.st_dev, b.st_ino)


@contextmanager
def write_through(sink: Sink, mode: str, encoding: str | None):
    """Standard output or a device / FIFO / ``/proc/self/fd`` link, written through (never renamed over)."""
    binary = "b" in mode
    if sink.kind == "stdout":
        sys.stdout.flush()
        raw = getattr(sys.stdout, "buffer", None)
        if raw is None:  # a text-only stand-in (a test's capture)
            yield sys.stdout
            return
        if binary:
            yield raw
            raw.flush()
            return
        fh = io.TextIOWrapper(raw, encoding=encoding or "utf-8", newline="\n", write_through=True)
        try:
            yield fh
            fh.flush()
        finally:
            fh.detach()  # standard output stays open
        return
    try:
        fh = open(sink.path, mode, encoding=None if binary else encoding)
    except OSError as e:
        raise InputError(sink.path, None, None, f"cannot be opened for writing ({e.strerror})") from None
    with fh:
        yield fh
