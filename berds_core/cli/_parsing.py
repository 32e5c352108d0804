"""The ``berds`` parsers: one-line usage errors, and what each verb reads, writes and asks.

:class:`Parser` is the argparse parser of ``berds`` and of every verb (``parser_class`` of the sub-parsers):
a usage error exits 2 with one line, and the parser remembers the option string of every argument it was
given (``options``: dest -> ``--flag``, or the positional's name), through argparse's public
``add_argument`` (in groups too). :func:`declare` turns a verb's dests into the
:class:`~berds_core.files.outputs.VerbFiles` that ``berds_core.cli.main`` checks before the verb runs.
"""
from __future__ import annotations

import argparse

from ..files.outputs import Paths, VerbFiles
from ..runs import DEFAULT_POLICY, POLICIES


def _remember(options: dict, action) -> None:
    options[action.dest] = action.option_strings[0] if action.option_strings else action.dest.upper()


class _Recorded:
    """An argument group (or a mutually exclusive one) whose arguments the parser remembers."""

    def __init__(self, group, options: dict):
        self._group, self._options = group, options

    def add_argument(self, *args, **kw):
        action = self._group.add_argument(*args, **kw)
        _remember(self._options, action)
        return action

    def add_mutually_exclusive_group(self, **kw):
        return _Recorded(self._group.add_mutually_exclusive_group(**kw), self._options)

    def __getattr__(self, name):
        return getattr(self._group, name)


class Parser(argparse.ArgumentParser):
    """``berds``' parser: usage errors are one line (exit 2); ``options`` maps each dest to its option string."""

    def __init__(self, *args, **kw):
        self.options: dict[str, str] = {}
        self._made = False  # argparse's own groups (positionals, options) stay as argparse made them
        super().__init__(*args, **kw)
        self._made = True

    def error(self, message):
        self.exit(2, f"{self.prog}: error: {message}\n")

    def add_argument(self, *args, **kw):
        action = super().add_argument(*args, **kw)
        _remember(self.options, action)
        return action

    def add_argument_group(self, *args, **kw):
        group = super().add_argument_group(*args, **kw)
        return _Recorded(group, self.options) if self._made else group

    def add_mutually_exclusive_group(self, **kw):
        return _Recorded(super().add_mutually_exclusive_group(**kw), self.options)


def declare(parser: Parser, *, inputs=(), outputs=(), out_dirs=(), servers=(), more_inputs: Paths | None = None,
            dir_files: Paths | None = None, derived: Paths | None = None) -> VerbFiles:
    """Declare what the verb of ``parser`` reads (``inputs``: dests of paths, or lists of paths) and
    writes (``outputs``: files; ``out_dirs``: folders, with ``dir_files(args)`` the files it writes in
    them), and which spec options may name a server (``servers``). Call it after the arguments are added:
    every dest must exist (a typo is a programming error, raised at once)."""
    known = parser.options
    names = tuple(inputs) + tuple(outputs) + tuple(out_dirs) + tuple(servers)
    unknown = [n for n in names if n not in known]
    if unknown:
        raise ValueError(f"{parser.prog}: declare() names no argument {unknown[0]!r}")
    vf = VerbFiles(tuple(inputs), tuple(outputs), tuple(out_dirs), tuple(servers),
                   {n: known[n] for n in names}, more_inputs, dir_files, derived)
    parser.set_defaults(files=vf)
    return vf


def add_policy_arg(p) -> None:
    """``--policy``: how a judge's labels count when the verb scores (``runs.POLICIES``, applied by
    ``berds_core.experiment``; gold labels have none)."""
    p.add_argument("--policy", choices=tuple(POLICIES), default=DEFAULT_POLICY,
                   help=f"with a judge's labels: {'; '.join(f'{k}: {v}' for k, v in POLICIES.items())} "
                        f"(default {DEFAULT_POLICY}; named in the output as 'policy')")
