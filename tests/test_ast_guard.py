"""``studio_ui.guards.serialize_ast_conversion``: every AST conversion of the process runs under one lock
(CPython < 3.13 shares the conversion's recursion counter between threads: "AST constructor recursion depth
mismatch", the flake page tests were re-run for), other compiles are untouched. ``bench/ast_race.py``
reproduces the race without the guard."""
from __future__ import annotations

import ast
import builtins
import sys
import threading
import time

import pytest

import studio_ui  # noqa: F401  (installs the guard, as every page's import does)
from studio_ui import guards


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
    src = open(guards.__file__, encoding="utf-8").read() * 3
    errors = []

    class SwitchOnCollect:
        def __del__(self):
            time.sleep(0)

    def worker():
        for _ in range(60):
            junk = [SwitchOnCollect() for _ in range(50)]
            for j in junk:
                j.me = j
            del junk
            try:
                ast.parse(src)
            except SystemError as e:
                errors.append(str(e))
                return

    threads = [threading.Thread(target=worker) for _ in range(3)]
    [t.start() for t in threads]
    [t.join() for t in threads]
    assert errors == []
