"""docs/architecture.md's lists that are facts about the code are the code's (``scripts/architecture_facts.py``):
the imports that wait inside a function, each deferring something heavy (or waiting for another branch's
merge, named), and the functions over 8 parameters, each with its reason; none takes more than 10."""
from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))

import architecture_facts as facts  # noqa: E402


def test_the_document_lists_what_the_code_does():
    assert facts.main(["--check"]) == 0, "run: python scripts/architecture_facts.py --write"


def test_every_import_inside_a_function_defers_something_heavy():
    light = [f"{i.module}:{i.line} ({i.function}) imports {i.target}" for i in facts.late_imports() if not i.why]
    assert light == [], "imports inside a function that defer nothing heavy (move them to module level):\n" + \
        "\n".join(light)


def test_no_engine_function_takes_more_than_ten_parameters_and_each_over_eight_says_why():
    over = [f"{q} ({n})" for q, n in facts.long_signatures() if n > facts.MAX_PARAMETERS]
    assert over == [], f"engine functions over {facts.MAX_PARAMETERS} parameters (group options in an object): {over}"
    unexplained = [q for q, _ in facts.long_signatures() if facts.reason_for(q) is None]
    assert unexplained == [], f"give a reason in scripts/architecture_facts.py REASONS: {unexplained}"


def test_the_heaviness_reading_follows_module_level_imports():
    """A module that imports a heavy library at load is heavy, and so is one that imports it at load."""
    heavy = facts.heavy_at_load()
    assert heavy["berds_core.errors"] == ""
    assert all(v == "" or v in facts.HEAVY for v in heavy.values())


def test_every_reason_names_a_function_that_needs_it():
    """A reason is kept for a function that has more than 8 parameters, and for nothing else."""
    needed = {q for q, _ in facts.long_signatures()}
    stale = [k for k in facts.REASONS if not any(q == k or q.startswith(k + ".") for q in needed)]
    assert stale == [], f"reasons for functions that no longer need one: {stale}"
