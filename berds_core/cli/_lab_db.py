"""The annotation database options the lab's verbs share (``berds annotations ...``, ``berds agreement``,
``berds users ...``): ``--db`` (and ``--json`` / ``--quiet`` accepted after the action), the database as a
declared input, and opening it with a one-line error."""
from __future__ import annotations

import argparse
from contextlib import contextmanager
from pathlib import Path

from ..errors import InputError
from ..lab.store import Store, default_db_path


def add_db_args(p) -> None:
    # --json / --quiet are accepted before or after the action (SUPPRESS keeps the parent's value)
    p.add_argument("--json", action="store_true", default=argparse.SUPPRESS, help="print one JSON object on stdout")
    p.add_argument("--quiet", action="store_true", default=argparse.SUPPRESS, help="no progress bars")
    p.add_argument("--db", default=None,
                   help=f"annotation database (default: ${'BERDS_ANNOTATIONS_DB'} or {default_db_path()})")


def db_input(args) -> list[tuple[str, Path]]:
    """The annotation database a command opens (``--db`` or the default): never an output."""
    return [("--db", Path(args.db) if getattr(args, "db", None) else default_db_path())]


def open_store(args, *, create: bool = False) -> Store:
    """The ``--db`` store; commands that only read or label need it to exist (nothing is created)."""
    path = Path(args.db) if args.db else default_db_path()
    try:
        return Store(path, create=create)
    except Exception as e:  # missing, not a database, unreadable, newer schema...
        raise InputError(path, None, None, f"cannot open annotation database ({e})") from None


@contextmanager
def store_to_fill(args):
    """The ``--db`` store, created when missing, for a command that fills it (``annotations tasks`` / ``demo``):
    a database this command created is removed again (with its journal files) when the command then fails
    with a one-line error, so a refused command leaves nothing behind."""
    path = Path(args.db) if args.db else default_db_path()
    new = not path.exists()
    try:
        with open_store(args, create=True) as store:
            yield store
    except InputError:
        if new:
            for suffix in ("", "-wal", "-shm", "-journal"):
                Path(str(path) + suffix).unlink(missing_ok=True)
        raise
