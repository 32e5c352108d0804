"""The ``berds`` command line.

Each module in this package adds its verbs through ``register(subparsers)``
and sets ``func`` on its parsers; ``func(args)`` returns a dict (printed as
JSON with ``--json``) or None. Progress goes to stderr; with ``--json`` stdout
holds one JSON object and nothing else. Exit 0 on success, 2 on bad input
with a one-line message naming the file, line and field. Each verb declares
the files it reads and writes and the servers it asks
(``berds_core.cli._parsing.declare``); they are checked before the verb runs: an
unwritable output, an output that is one of the inputs or an unreachable
server is one line, exit 2, before any work.
"""
from __future__ import annotations

import argparse
import importlib
import json
import os
import pkgutil
import sys

from ..embeddings.models import check_env_encoding
from ..errors import InputError
from ..files.outputs import check_cli_files, declared_servers, report_stream
from ..net import reach
from ._parsing import Parser


def add_common_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--json", action="store_true", help="print one JSON object on stdout")
    p.add_argument("--quiet", action="store_true", help="no progress bars")


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(prog="berds", description="BERDS Studio: perspective diversity of retrieval.")
    sub = parser.add_subparsers(dest="verb", required=True, parser_class=Parser)
    orig_add = sub.add_parser

    def add_parser(name, **kw):
        p = orig_add(name, **kw)
        add_common_args(p)
        return p

    sub.add_parser = add_parser  # every verb gets --json and --quiet
    for mod in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        if mod.name.startswith("_"):
            continue
        module = importlib.import_module(f"{__name__}.{mod.name}")
        if hasattr(module, "register"):
            module.register(sub)
    return parser


def print_result(args, result) -> None:
    if result is None:
        return
    if getattr(args, "json", False):
        sys.stdout.write(json.dumps(result, ensure_ascii=False) + "\n")
    else:
        to = report_stream(args)  # stderr when ``--out -`` put the output itself on stdout
        for key, val in result.items():
            if isinstance(val, float):
                val = f"{val:.4f}"
            elif isinstance(val, (dict, list)):
                val = json.dumps(val, ensure_ascii=False)
            to.write(f"{key}\t{val}\n")


def main(argv=None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        check_environment()  # a bad setting of the operator's (BERDS_ENCODING): before any work
        check_cli_files(args)  # an unwritable output, an output that is an input: before any work
        reach.check_servers(declared_servers(args))  # a server down: before any work too
        result = args.func(args)
    except InputError as e:
        sys.stderr.write(f"berds {args.verb}: error: {e}\n")
        return 2
    except KeyboardInterrupt:
        sys.stderr.write("interrupted\n")
        return 130
    except BrokenPipeError:  # ``berds ... --out - | head``: the reader left; stop quietly, as a shell tool does
        _silence_stdout()
        return 141
    try:
        print_result(args, result)
    except BrokenPipeError:
        _silence_stdout()
        return 141
    return 0


def check_environment() -> None:
    """The environment variables every encoder reads, checked before any work (not after a corpus is read)."""
    try:
        check_env_encoding()
    except ValueError as e:
        raise InputError("BERDS_ENCODING", None, None, str(e).removeprefix("BERDS_ENCODING ")) from None


def _silence_stdout() -> None:
    """Point stdout at /dev/null so the interpreter's final flush raises nothing more."""
    try:
        fd = os.open(os.devnull, os.O_WRONLY)
        os.dup2(fd, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):
        pass


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
