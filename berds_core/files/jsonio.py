"""Reading JSON Lines with precise errors, and writing files atomically."""
from __future__ import annotations

import json
import os
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterable, Iterator

from ..errors import InputError
from .sinks import resolve_output, write_through


def read_text(path) -> str:
    """Read a UTF-8 text file; a missing or non-UTF-8 file is an InputError."""
    p = Path(path)
    try:
        data = p.read_bytes()
    except FileNotFoundError:
        raise InputError(p, None, None, "file not found") from None
    except IsADirectoryError:
        raise InputError(p, None, None, "is a directory, expected a file") from None
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        line = data[: e.start].count(b"\n") + 1
        raise InputError(p, line, None, f"not valid UTF-8 (byte {e.start})") from None


def iter_jsonl(path) -> Iterator[tuple[int, dict]]:
    """Yield ``(line_number, object)`` for each non-blank line of a JSONL file."""
    text = read_text(path)
    for no, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as e:
            raise InputError(path, no, None, f"malformed JSON ({e.msg}, column {e.colno})") from None
        if not isinstance(obj, dict):
            raise InputError(path, no, None, "expected a JSON object")
        yield no, obj


def require(obj: dict, key: str, kind, path, line, *, nonempty: bool = False) -> Any:
    """Return ``obj[key]`` checked against ``kind`` (a type or tuple of types)."""
    if key not in obj or obj[key] is None:
        raise InputError(path, line, key, "missing")
    val = obj[key]
    if not isinstance(val, kind) or isinstance(val, bool) and bool not in (kind if isinstance(kind, tuple) else (kind,)):
        names = kind.__name__ if isinstance(kind, type) else " or ".join(k.__name__ for k in kind)
        raise InputError(path, line, key, f"expected {names}, got {type(val).__name__}")
    if nonempty and not val:
        raise InputError(path, line, key, "must not be empty")
    return val


@contextmanager
def atomic_write(path, mode: str = "w", encoding: str | None = "utf-8", *, private: bool = False):
    """Write to a temporary file next to ``path`` and rename it into place.

    Readers never see a half-written file; on error the old file is untouched.
    Only a regular file is replaced (:func:`berds_core.files.sinks.resolve_output`):
    ``-`` writes to standard output, a device, a FIFO or ``/dev/stdout`` is
    written through as it is, and a symbolic link updates its target (a
    dangling one is an ``InputError``). ``private``: the new file is the owner's alone (0600, as the
    annotation database it was exported from), not the umask's ordinary permissions.
    """
    sink = resolve_output(path)
    if not sink.atomic:
        with write_through(sink, mode, encoding) as fh:
            yield fh
        return
    path = sink.path
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, mode, encoding=encoding if "b" not in mode else None) as fh:
            yield fh
            fh.flush()
            os.fsync(fh.fileno())
        if not private:
            umask = os.umask(0)
            os.umask(umask)
            os.chmod(tmp, 0o666 & ~umask)  # mkstemp creates 0600; give the file ordinary permissions
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise


def write_jsonl(path, rows: Iterable[dict]) -> int:
    n = 0
    with atomic_write(path) as fh:
        for row in rows:
            fh.write(json.dumps(row, ensure_ascii=False) + "\n")
            n += 1
    return n
