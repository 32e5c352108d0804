"""Checking where a command will write, before it does any work.

A verb that spends half a minute encoding and then fails to write its
output has wasted the user's time and may leave a partial file behind. The
CLI therefore checks every output path first (``berds_core.cli.main`` calls
:func:`check_cli_outputs` before the verb runs):

- a file output (``--out run.jsonl``) must not name an existing directory, and
  the folder it goes into (or the nearest folder that exists, when the
  folders are still to be made) must be a writable directory;
- a folder output (``berds import ... --out DIR``) must not name a file, and
  must be writable itself, or be creatable in a writable folder.

Writability is *probed* (a temporary file is created and removed), not
guessed from permission bits: ``root`` passes every ``access`` check but
still cannot write to a read-only mount or an immutable folder.

Each failure is an ``InputError`` naming the path and the flag, so the CLI
exits 2 with one line and nothing is written.
"""
from __future__ import annotations

import os
import tempfile
from pathlib import Path

from .errors import InputError


def probe_writable(folder: Path) -> str | None:
    """None when a file can be created in the existing ``folder``, else the reason (``strerror``)."""
    try:
        fd, tmp = tempfile.mkstemp(prefix=".berds-write-check-", dir=str(folder))
    except OSError as e:
        return e.strerror or type(e).__name__
    os.close(fd)
    try:
        os.unlink(tmp)
    except OSError:
        pass
    return None


def _nearest_existing(path: Path) -> Path:
    p = path
    while not p.exists() and p != p.parent:
        p = p.parent
    return p


def _check_folder(folder: Path, path: Path, field: str) -> None:
    """``folder`` (where ``path`` will be created) exists as a writable directory, or can be made."""
    base = _nearest_existing(folder)
    if not base.is_dir():
        raise InputError(path, None, field, f"cannot create it: {base} is not a folder")
    why = probe_writable(base)
    if why:
        raise InputError(path, None, field, f"folder {base} is not writable ({why})")


def check_output_file(path, field: str = "--out") -> Path:
    """An output *file* path that can be written: not a directory, in a writable (or creatable) folder."""
    p = Path(path)
    if not str(path).strip():
        raise InputError(field, None, None, "is empty")
    if p.is_dir():
        raise InputError(p, None, field, "is a directory; give a file name")
    _check_folder(p.parent if str(p.parent) else Path("."), p, field)
    return p


def check_output_dir(path, field: str = "--out") -> Path:
    """An output *folder*: an existing writable directory, or one that can be created."""
    p = Path(path)
    if not str(path).strip():
        raise InputError(field, None, None, "is empty")
    if p.exists() and not p.is_dir():
        raise InputError(p, None, field, "exists and is not a folder")
    _check_folder(p, p, field)
    return p


def check_cli_outputs(args) -> None:
    """Check ``args.out`` of a parsed command line before the verb runs.

    A verb whose ``--out`` is a folder says so with ``set_defaults(out_kind="dir")``;
    otherwise ``--out`` is a file. ``--out-dir`` (``args.out_dir``) is always a folder.
    """
    out_dir = getattr(args, "out_dir", None)  # verbs that write several files into --out-dir
    if out_dir is not None:
        check_output_dir(out_dir, "--out-dir")
    out = getattr(args, "out", None)
    if out is None or out == "-":
        return
    if getattr(args, "out_kind", "file") == "dir":
        check_output_dir(out)
    else:
        check_output_file(out)
