"""``studio_ui.guards.serialize_ast_conversion``: every AST conversion of the process runs under one lock
(CPython < 3.13 shares the conversion's recursion counter between threads: "AST constructor recursion depth
mismatch", the flake page tests were re-run for), other compiles are untouched. ``bench/ast_race.py``
reproduces the race without the guard."""
from __future__ import annotations

import ast
import builtins
import sys
import threading
from pathlib import Path

import pytest

import studio_ui  # noqa: F401  (installs the guard, as every page's import does)
from studio_ui import guards

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.skipif(sys.version_info >= (3, 13), reason="CPython 3.13 keeps the counter per conversion")
def test_importing_studio_ui_serializes_ast_conversion_only():
    assert guards._STATE["ast"] and builtins.compile.__wrapped__ is not builtins.compile
    with guards._AST_LOCK:  # held here: another thread's ast.parse waits for it, a plain compile does not
        done = threading.Event()
        t = threading.Thread(target=lambda: (ast.parse("y = 2"), done.set()))
        t.start()
        assert not done.wait(0.3)
        assert builtins.compile("z = 3", "<t>", "exec") is not None
    assert done.wait(5)
    t.join()
    assert guards.serialize_ast_conversion()  # idempotent


@pytest.mark.slow
@pytest.mark.skipif(sys.version_info >= (3, 13), reason="CPython 3.13 keeps the counter per conversion")
def test_parses_under_thread_switching_collections_never_fail():
    sys.path.insert(0, str(ROOT / "bench"))
    from ast_race import race  # the race bench/ast_race.py times, here with the guard in place

    assert race(open(guards.__file__, encoding="utf-8").read() * 3, parses=60) == []
