"""The engine's import graph (``docs/architecture.md``): no circles, and no import that goes up a layer.

Read from the source (every ``import`` / ``from ... import`` of ``berds_core``, at module level or inside
a function), so a lazy import cannot hide a circle or an upward dependency.
"""
from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PKG = ROOT / "berds_core"

# The layers of docs/architecture.md, bottom up: a module may import its own layer or a lower one.
LAYERS = {
    1: ("errors", "records", "naming", "specs", "runtime"),
    2: ("files", "net"),
    3: ("corpora", "runs", "embeddings", "demo"),
    4: ("judges", "web", "retrieval", "generators", "datasets", "eval", "stance"),
    5: ("convincing", "answers", "studio", "diversify", "lab", "discovery", "distributed", "experiment"),
    6: ("cli", "__main__"),
}
LAYER_OF = {wing: n for n, wings in LAYERS.items() for wing in wings}
KNOWN_CIRCLES: list[set[str]] = []  # none: a new circle is broken, not listed


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


MODULES = {module_name(p): p for p in PKG.rglob("*.py")}


def imports_of(name: str, path: Path) -> set[str]:
    """The berds_core modules ``name`` imports (a ``from pkg import sub`` names the submodule)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            for alias in node.names:
                sub = f"{target}.{alias.name}"
                out.add(sub if sub in MODULES else target)
        elif isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
    return {t for t in out if t in MODULES and t != name}


GRAPH = {name: imports_of(name, path) for name, path in MODULES.items()}
LAYERS_CLI = 6


def all_imports_of(path: Path) -> set[str]:
    """Every top-level module ``path`` imports, berds_core's or not (``argparse``, ``numpy``, ...)."""
    out = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and not node.level and node.module:
            out.add(node.module.split(".")[0])
        elif isinstance(node, ast.Import):
            out.update(a.name.split(".")[0] for a in node.names)
    return out


GRAPH_ALL = {name: all_imports_of(path) for name, path in MODULES.items()}


def reachable(start: str) -> set[str]:
    seen, todo = set(), [start]
    while todo:
        for nxt in GRAPH[todo.pop()]:
            if nxt not in seen:
                seen.add(nxt)
                todo.append(nxt)
    return seen


def circles() -> list[set[str]]:
    """The strongly connected components of more than one module."""
    reach = {m: reachable(m) for m in GRAPH}
    out: list[set[str]] = []
    for m in sorted(GRAPH):
        if m in reach[m] and not any(m in c for c in out):
            out.append({m} | {o for o in reach[m] if m in reach[o]})
    return out


def layer(name: str) -> int | None:
    parts = name.split(".")
    return LAYER_OF.get(parts[1]) if len(parts) > 1 else None


def test_every_wing_has_a_layer():
    wings = {m.split(".")[1] for m in MODULES if "." in m}
    assert wings <= set(LAYER_OF), f"wings without a layer in docs/architecture.md: {sorted(wings - set(LAYER_OF))}"


def test_no_import_circles():
    found = [sorted(c) for c in circles() if c not in KNOWN_CIRCLES]
    assert found == [], f"import circles: {found}"


def test_no_import_goes_up_a_layer():
    up = [f"{a} (layer {layer(a)}) -> {b} (layer {layer(b)})" for a, targets in GRAPH.items() for b in targets
          if layer(a) is not None and layer(b) is not None and layer(b) > layer(a)]
    assert up == [], "imports that go up a layer:\n" + "\n".join(sorted(up))


def test_argparse_lives_only_in_cli():
    """Only the CLI parses command lines: no module below it imports argparse or reads a parser."""
    below = [name for name, path in MODULES.items() if layer(name) != LAYERS_CLI and not name.endswith("__main__")
             and ("argparse" in GRAPH_ALL[name] or "._actions" in path.read_text(encoding="utf-8"))]
    assert below == [], f"modules below cli/ that parse command lines: {below}"


def test_no_verb_imports_another_verb():
    """A verb module (``cli/<verb>_cmd.py``) is no library of another: what two verbs share lives in a shared
    module of cli/ (``_retrieval``, ``_lab_db``, ...) or below cli/."""
    verbs = {name for name in MODULES if name.startswith("berds_core.cli.") and name.endswith("_cmd")}
    crossing = sorted(f"{a} -> {b}" for a in MODULES if a.startswith("berds_core.cli.") for b in GRAPH[a] & verbs)
    assert crossing == [], "modules of cli/ importing a verb's module:\n" + "\n".join(crossing)


# private names still read across modules, each to go with the merge it waits for (none now)
KNOWN_PRIVATE: dict[tuple[str, str], str] = {}


def test_no_module_reaches_into_another_modules_private_names():
    """A name with a leading underscore is its module's own: another module that needs it gets a public name
    (issue 39: ``corpus._Builder``, ``_document_files``, ``_strip_suffixes``, ``_group_index``, ...)."""
    found = []
    for name, path in MODULES.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.ImportFrom) or node.module == "__future__":
                continue
            base = node.module or ""
            if node.level:
                parts = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join(parts + ([node.module] if node.module else []))
            for alias in node.names:
                private = alias.name.startswith("_") and not alias.name.startswith("__")  # __version__ is public
                if private and f"{base}.{alias.name}" not in MODULES and (name, alias.name) not in KNOWN_PRIVATE:
                    found.append(f"{name} imports {base}.{alias.name}")
    assert found == [], "private names read by another module:\n" + "\n".join(sorted(found))
