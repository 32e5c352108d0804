"""What a command reads and writes, checked before it does any work.

Every verb declares its files once, where its arguments are defined
(``berds_core.cli._parsing.declare``, which makes the :class:`VerbFiles` of a verb)::

    declare(p, inputs=("questions", "corpus", "pool"), outputs=("out",), servers=("qe_llm",))

and ``berds_core.cli.main`` calls :func:`check_cli_files` (then asks the servers of
:func:`declared_servers`) before the verb runs:

- a file output (``--out run.jsonl``) must not name an existing directory, and
  the folder it goes into (or the nearest folder that exists, when the
  folders are still to be made) must be a writable directory;
- a folder output (``berds import ... --out DIR``) must not name a file, and
  must be writable itself, or be creatable in a writable folder;
- **no output may be an input**: every file a verb will write (its file
  outputs, the files it writes inside its folder outputs, and files derived
  from them such as ``answer``'s ``.partial.jsonl``) is compared with every
  file it reads (same resolved path, or the same inode: hard links and
  symbolic links count), and a match is refused before anything is read, so
  ``retrieve --questions q.jsonl --out q.jsonl`` cannot replace the questions;
- a server a spec option names (``openai:<model>@<url>``,
  ``berds-evaluator:<url>``) must answer (:mod:`berds_core.net.reach`): an
  unreachable one is one line naming it, before any work and any progress bar.

Writability is *probed* (a temporary file is created and removed), not
guessed from permission bits: ``root`` passes every ``access`` check but
still cannot write to a read-only mount or an immutable folder.

Outputs are then written atomically (:func:`berds_core.files.jsonio.atomic_write`:
a temporary file in the same folder, renamed over the target when complete),
so a crash or Ctrl-C never leaves a truncated file where a good one was.

Each failure is an ``InputError`` naming the path and the flag, so the CLI
exits 2 with one line and nothing is written.
"""
from __future__ import annotations

import os
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from ..errors import InputError
from .sinks import is_stdout, resolve_output, writes_to_stdout


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
    """An output *file* path that can be written: not a directory, in a writable (or creatable) folder.

    ``-`` (standard output), a device, a FIFO and ``/dev/stdout`` are written through as they are; a
    symbolic link is checked as its target (a dangling one is refused: :mod:`berds_core.files.sinks`).
    """
    p = Path(path)
    if not str(path).strip():
        raise InputError(field, None, None, "is empty")
    sink = resolve_output(path, field)
    if sink.kind == "stdout":
        return p
    if sink.kind == "stream":
        if not os.access(p, os.W_OK):
            raise InputError(p, None, field, "is not writable (permission denied)")
        return p
    if p.is_dir():
        raise InputError(p, None, field, "is a directory; give a file name")
    real = sink.path
    _check_folder(real.parent if str(real.parent) else Path("."), p, field)
    return p


def check_output_dir(path, field: str = "--out") -> Path:
    """An output *folder*: an existing writable directory, or one that can be created."""
    p = Path(path)
    if not str(path).strip():
        raise InputError(field, None, None, "is empty")
    if str(path).strip() == "-":
        raise InputError(field, None, None, "is a folder: '-' (standard output) is for one file; name a folder")
    if p.exists() and not p.is_dir():
        raise InputError(p, None, field, "exists and is not a folder")
    _check_folder(p, p, field)
    return p


# --------------------------------------------------------------------------- same file


def same_file(a, b) -> bool:
    """Whether paths ``a`` and ``b`` name one file: the same inode when both exist (hard and
    symbolic links included), else the same absolute path once links are resolved."""
    a, b = Path(a), Path(b)
    try:
        if a.exists() and b.exists():
            return os.path.samefile(a, b)
    except OSError:
        pass
    try:
        return a.resolve() == b.resolve()
    except (OSError, RuntimeError):  # a symlink loop
        return os.path.abspath(a) == os.path.abspath(b)


def check_not_input(out, out_flag: str, inputs: list[tuple[str, str]]) -> None:
    """InputError when the output ``out`` is the same file as one of ``inputs`` ((flag, path) pairs)."""
    for flag, path in inputs:
        if path and Path(path).is_file() and same_file(out, path):
            also = "" if os.path.abspath(out) == os.path.abspath(path) else f" ({path})"
            raise InputError(out, None, out_flag, f"is the input {flag}{also}; writing it would replace that "
                                                  "file: choose another output path")


# --------------------------------------------------------------------------- declarations


Paths = Callable[[object], list]  # args -> [path, ...] or [(flag, path), ...]


@dataclass(frozen=True)
class VerbFiles:
    """What one verb reads and writes, by the dests of its options (``berds_core.cli._parsing.declare``)."""

    inputs: tuple[str, ...] = ()
    outputs: tuple[str, ...] = ()
    out_dirs: tuple[str, ...] = ()
    servers: tuple[str, ...] = ()
    flags: dict = field(default_factory=dict)  # dest -> the option string users type
    more_inputs: Paths | None = None   # args -> [(flag, path)]: inputs not given as options (defaults)
    dir_files: Paths | None = None     # args -> files written inside the folder outputs
    derived: Paths | None = None       # args -> other files written beside the outputs

    def flag(self, dest: str) -> str:
        return self.flags.get(dest, "--" + dest.replace("_", "-"))

    def writes(self) -> bool:
        return bool(self.outputs or self.out_dirs)


def _values(val) -> list[str]:
    if val is None:
        return []
    if isinstance(val, (list, tuple)):
        return [str(v) for v in val if v is not None]
    return [str(val)]


def declared_inputs(args, vf: VerbFiles) -> list[tuple[str, str]]:
    pairs = [(vf.flag(d), v) for d in vf.inputs for v in _values(getattr(args, d, None))]
    if vf.more_inputs is not None:
        pairs += [(flag, str(p)) for flag, p in vf.more_inputs(args)]
    return pairs


def declared_outputs(args, vf: VerbFiles) -> list[tuple[str, Path]]:
    """(flag, path) of every file the verb will write."""
    outs = [(vf.flag(d), Path(v)) for d in vf.outputs for v in _values(getattr(args, d, None)) if not is_stdout(v)]
    if vf.dir_files is not None:
        flag = vf.flag(vf.out_dirs[0]) if vf.out_dirs else "--out"
        outs += [(flag, Path(p)) for p in vf.dir_files(args)]
    if vf.derived is not None:
        outs += [(flag, Path(p)) for flag, p in vf.derived(args)]
    return outs


def check_cli_files(args) -> None:
    """Check the parsed command line of a verb against its declaration, before the verb runs."""
    vf: VerbFiles | None = getattr(args, "files", None)
    if vf is None:
        return
    for d in vf.out_dirs:
        for v in _values(getattr(args, d, None)):
            check_output_dir(v, vf.flag(d))
    to_stdout = []
    for d in vf.outputs:
        for v in _values(getattr(args, d, None)):
            if not is_stdout(v):
                check_output_file(v, vf.flag(d))
            if writes_to_stdout(v):
                to_stdout.append(vf.flag(d))
    if len(to_stdout) > 1:
        raise InputError(to_stdout[1], None, None, f"standard output is already {to_stdout[0]}: "
                                                   "name a file for one of them")
    if to_stdout and getattr(args, "json", False):
        raise InputError(to_stdout[0], None, None, "writes the output to standard output, where --json "
                                                   "prints its summary: name a file, or drop --json")
    args.stdout_taken = bool(to_stdout)
    ins = declared_inputs(args, vf)
    for flag, out in declared_outputs(args, vf):
        check_not_input(out, flag, ins)


def report_stream(args):
    """Where a verb's own report lines go: standard output, unless ``--out -`` put the output there."""
    return sys.stderr if getattr(args, "stdout_taken", False) else sys.stdout


def declared_servers(args) -> list[tuple[str, str]]:
    """(flag, spec) of every spec option the verb declared as possibly naming a server
    (``berds_core.cli.main`` hands them to ``net.reach.check_servers`` after :func:`check_cli_files`)."""
    vf: VerbFiles | None = getattr(args, "files", None)
    if vf is None:
        return []
    return [(vf.flag(d), v) for d in vf.servers for v in _values(getattr(args, d, None))]
