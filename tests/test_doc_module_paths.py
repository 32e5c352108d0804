"""Every module path named in docs/ (and the README) and in the code's docstrings exists (issue 54, item 6): a renamed or removed
module leaves no stale name behind.

Read as module paths: ``berds_core.x.y`` / ``studio_ui.x`` (and their attributes), names relative to
``berds_core`` that start with one of its packages (``diversify.vectors.encode``; in a docstring also relative
to the module's own package, ``runtime.ray_session`` in ``berds_core.distributed``), and ``.py`` paths
(``pages/playground.py``, ``diversify/vectors.py``, relative to the repository, ``berds_core`` or
``studio_ui``). A dotted name's module part must be a module or package; what follows must be defined at its top
level (a function, class, assignment or import) or be a submodule.
"""
from __future__ import annotations

import ast
import functools
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("berds_core", "studio_ui")
SUBPACKAGES = sorted(p.name for p in (ROOT / "berds_core").iterdir() if (p / "__init__.py").exists())
DOTTED = re.compile(r"(?<![\w./-])((?:%s)(?:\.[A-Za-z_]\w*)+)" % "|".join(PACKAGES + tuple(SUBPACKAGES)))
PY_PATH = re.compile(r"(?<![\w./-])((?:[A-Za-z_]\w*/)+[A-Za-z_]\w*\.py)\b")
FILE_SUFFIXES = ("py", "md", "json", "jsonl", "npz", "npy", "csv", "tsv", "txt", "html", "yaml", "toml")

# Names that are not this repository's modules, or that only a branch that owns them may change.
NOT_OURS = {
    "scripts/eval_PD.py": "DebateQA's released script (the reference --compat released follows), not ours",
    "pages/x.py": "a placeholder in an example",
    "berds_core.x.y": "a placeholder in an example",
    "net.enc": "a variable in berds_core/stance/network.py (the network's encoder), not the berds_core.net package",
}
# Earlier names kept on purpose where a document says what they became (``was``, ``became``, ``renamed``, within
# a few words either side).
HISTORY = re.compile(r"\b(was|were|became|become|renamed|removed|replaced|earlier|formerly|now)\b", re.I)


def _module_file(parts: list[str]) -> Path | None:
    base = ROOT.joinpath(*parts)
    if base.with_suffix(".py").is_file():
        return base.with_suffix(".py")
    if (base / "__init__.py").is_file():
        return base / "__init__.py"
    return None


@functools.lru_cache(maxsize=None)
def _top_level_names(path: Path) -> frozenset[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            for t in node.targets if isinstance(node, ast.Assign) else [node.target]:
                names.update(n.id for n in ast.walk(t) if isinstance(n, ast.Name))
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
    return frozenset(names)


def dotted_exists(name: str) -> bool:
    """``a.b.c``: the longest prefix that is a module, then a name defined at its top level (or a submodule)."""
    parts = name.split(".")
    for i in range(len(parts), 0, -1):
        path = _module_file(parts[:i])
        if path is None:
            continue
        rest = parts[i:]
        return not rest or rest[0] in _top_level_names(path)
    return False


def _package_of(source: Path) -> list[str]:
    rel = source.resolve().relative_to(ROOT).with_suffix("")
    parts = list(rel.parts)
    return parts[:-1] if parts[-1] != "__init__" else parts[:-1]


def stale_dotted(name: str, source: Path | None) -> bool:
    if name.rsplit(".", 1)[-1] in FILE_SUFFIXES or name in NOT_OURS:
        return False
    if name.split(".")[0] in PACKAGES:
        return not dotted_exists(name)
    candidates = [f"berds_core.{name}"]
    if source is not None and source.suffix == ".py":
        pkg = _package_of(source)
        candidates += [".".join(pkg[:i] + [name]) for i in range(len(pkg), 0, -1)]
    return not any(dotted_exists(c) for c in candidates)


def stale_path(path: str) -> bool:
    if path in NOT_OURS:
        return False
    return not any((base / path).is_file() for base in (ROOT, ROOT / "berds_core", ROOT / "studio_ui"))


def texts():
    """(file, text) of the README, every document under docs/ and every docstring of the code."""
    for p in [ROOT / "README.md"] + sorted((ROOT / "docs").glob("*.md")):
        yield p, p.read_text(encoding="utf-8")
    code = [ROOT / "app.py", ROOT / "serve.py"] + sorted(
        p for d in ("berds_core", "studio_ui", "pages", "scripts", "bench") for p in (ROOT / d).rglob("*.py"))
    for p in code:
        for node in ast.walk(ast.parse(p.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                doc = ast.get_docstring(node, clean=False)
                if doc:
                    yield p, doc


def _history(text: str, m: re.Match) -> bool:
    return HISTORY.search(text[max(0, m.start() - 60):m.end() + 40]) is not None


def stale_names() -> list[str]:
    out = []
    for source, text in texts():
        for m in DOTTED.finditer(text):
            name = m.group(1).rstrip(".")
            if stale_dotted(name, source) and not _history(text, m):
                out.append(f"{source.relative_to(ROOT)}: {name}")
        for m in PY_PATH.finditer(text):
            if stale_path(m.group(1)) and not _history(text, m):
                out.append(f"{source.relative_to(ROOT)}: {m.group(1)}")
    return sorted(set(out))


def test_every_module_path_in_docs_and_docstrings_exists():
    assert stale_names() == [], "module paths that do not exist (rename them to the module that does):\n" + \
        "\n".join(stale_names())


def test_the_check_finds_a_stale_name(tmp_path):
    """The check can fail: a removed module, a moved function, a file that is not there."""
    assert stale_dotted("diversify.embeddings.encode", None)      # the module is diversify/vectors.py now
    assert not stale_dotted("diversify.vectors.encode", None)
    assert stale_dotted("berds_core.cache", None)                 # now berds_core.files.cache
    assert not stale_dotted("berds_core.files.cache.cache_dir", None)
    assert stale_dotted("retrieval.retrieve_run", None)            # retrieve_run lives in berds_core.runs
    assert not stale_dotted("runtime.ray_session", ROOT / "berds_core" / "distributed" / "__init__.py")
    assert stale_path("diversify/embeddings.py") and not stale_path("diversify/vectors.py")
    assert not stale_path("pages/playground.py")
