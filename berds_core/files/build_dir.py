"""Building a folder (a corpus store, an index) so that it is either complete or absent.

::

    with building(final, "BM25 index") as tmp:
        ... write everything into tmp ...
    # here final exists and is complete

Everything is written into a temporary sibling folder
(``.<name>.tmp-<pid>-<ns>``) that is renamed to ``final`` when the block ends
normally (one atomic rename; a reader never sees half a folder). On any
exception -- bad input, a full disk, Ctrl-C -- the temporary folder is removed
and the exception goes on; a process killed outright leaves only a temporary
folder, which no loader opens and the next build of the same folder removes
(its process is gone). A full disk (``ENOSPC``, a quota, a file-size limit, or
the same reported by SQLite, tantivy or FAISS) becomes one ``InputError`` line
naming the folder. When another process finished the same folder first, its folder
is kept and ours discarded.
"""
from __future__ import annotations

import errno
import os
import re
import shutil
import sqlite3
import time
from pathlib import Path

from ..errors import InputError

_TMP = re.compile(r"^\.(?P<name>.+)\.tmp-(?P<pid>\d+)-\d+$")
_FULL_ERRNOS = {errno.ENOSPC: "no space left on the device", errno.EDQUOT: "disk quota exceeded",
                errno.EFBIG: "file too large (a file-size limit)", errno.EIO: "input/output error"}
_FULL_TEXTS = {"no space left": "no space left on the device", "os error 28": "no space left on the device",
               "disk is full": "no space left on the device", "quota exceeded": "disk quota exceeded",
               "file too large": "file too large (a file-size limit)", "os error 27": "file too large (a file-size limit)",
               "disk i/o error": "disk I/O error (a full disk or a file-size limit?)"}


def write_failure(exc: BaseException) -> str | None:
    """Why writing failed, for the errors a full disk (a quota, a file-size limit, a failing
    device) gives whoever reports it (the OS, SQLite, tantivy, FAISS); None for any other error."""
    if isinstance(exc, OSError) and exc.errno in _FULL_ERRNOS:
        return _FULL_ERRNOS[exc.errno]
    if isinstance(exc, (OSError, sqlite3.Error, ValueError, RuntimeError)):
        text = str(exc).lower()
        for needle, why in _FULL_TEXTS.items():
            if needle in text:
                return why
    return None


def pid_alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def remove_stale(final: Path) -> int:
    """Remove temporary folders of ``final`` left by processes that are gone; returns how many."""
    final = Path(final)
    n = 0
    if not final.parent.is_dir():
        return 0
    for p in final.parent.iterdir():
        m = _TMP.match(p.name)
        if m and m.group("name") == final.name and not pid_alive(int(m.group("pid"))):
            shutil.rmtree(p, ignore_errors=True)
            n += 1
    return n


class building:
    """``with building(final, what) as tmp:`` -- a temporary folder that becomes ``final`` when the
    block completes (see the module). A build whose name is known only at its end sets
    ``.final`` before the block ends; one that turns out not to be needed sets ``.discard``."""

    def __init__(self, final, what: str):
        self.final = Path(final)
        self.what = what
        self.discard = False
        self.tmp: Path | None = None

    def __enter__(self) -> Path:
        parent = self.final.parent
        parent.mkdir(parents=True, exist_ok=True)
        remove_stale(self.final)
        self.tmp = parent / f".{self.final.name}.tmp-{os.getpid()}-{time.time_ns()}"
        self.tmp.mkdir()
        return self.tmp

    def __exit__(self, exc_type, exc, tb) -> bool:
        if exc_type is None:
            try:
                if self.discard:
                    shutil.rmtree(self.tmp, ignore_errors=True)
                    return False
                self.final.parent.mkdir(parents=True, exist_ok=True)
                os.rename(self.tmp, self.final)
                return False
            except OSError as e:
                if self.final.exists() and e.errno in (errno.ENOTEMPTY, errno.EEXIST, errno.EISDIR):
                    shutil.rmtree(self.tmp, ignore_errors=True)  # another process finished first: keep theirs
                    return False
                exc = e
        shutil.rmtree(self.tmp, ignore_errors=True)
        why = write_failure(exc)
        if why is not None:
            raise InputError(self.final.parent, None, None, f"cannot write the {self.what}: {why}; the half-built "
                                                            "folder was removed (free space, or set BERDS_CACHE to a "
                                                            "larger disk)") from None
        if exc_type is None:
            raise exc
        return False
