"""Method and retriever names live in their registries (issue 54, item 2): the diversification methods in
``berds_core.diversify.methods.METHOD_TABLE`` (names, aliases, labels, what each takes), the retrievers in
``berds_core.retrieval.RETRIEVERS``. Outside the registry modules, no list, tuple, set or dict written in the
source of ``berds_core/``, ``studio_ui/``, ``pages/``, ``app.py``, ``bench/`` or ``scripts/`` names two or more
of them (a command line, a list holding an ``--option``, is no list of names): a face, a bench or a script
reads them from the registry. ``KNOWN`` (empty) would hold a hand-written list allowed to stay, named by file and its
names; a new one fails, and one moved away must leave ``KNOWN`` too."""
from __future__ import annotations

import ast
from pathlib import Path

from berds_core.diversify.methods import ALIASES, METHOD_STAGES, METHODS
from berds_core.retrieval import RETRIEVERS

ROOT = Path(__file__).resolve().parents[1]
REGISTRIES = {"berds_core/diversify/methods.py", "berds_core/diversify/presets.py", "berds_core/retrieval/__init__.py"}
NAMES = set(METHODS) | set(ALIASES) | set(METHOD_STAGES) | set(RETRIEVERS.names())

# (file, the registered names of the literal, in order): hand-written lists allowed to stay. None: the CLI's method
# flags, the pipeline grammar's retriever words and the pages' pickers and column headings read the registries
KNOWN: set[tuple[str, tuple[str, ...]]] = set()


def literals() -> list[tuple[str, int, tuple[str, ...]]]:
    """Every list, tuple, set or dict (its keys) written in the faces', the engine's, the benches' and the scripts'
    source that holds two or more registered names: (file, line, the names)."""
    out = []
    files = [*(ROOT / "berds_core").rglob("*.py"), *(ROOT / "studio_ui").rglob("*.py"), *(ROOT / "pages").glob("*.py"),
             *([ROOT / "app.py"] if (ROOT / "app.py").exists() else []), *(ROOT / "bench").rglob("*.py"),
             *(ROOT / "scripts").rglob("*.py")]
    for path in files:
        rel = path.relative_to(ROOT).as_posix()
        if rel in REGISTRIES:
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        exports = {id(n.value) for n in ast.walk(tree) if isinstance(n, ast.Assign)  # __all__: function names
                   and any(isinstance(t, ast.Name) and t.id == "__all__" for t in n.targets)}
        for node in ast.walk(tree):
            if id(node) in exports:
                continue
            elts = (node.elts if isinstance(node, (ast.List, ast.Tuple, ast.Set)) else
                    node.keys if isinstance(node, ast.Dict) else [])
            words = [e.value for e in elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]
            if any(w.startswith("--") for w in words):  # a command line: ["index", "--retriever", "dense"]
                continue
            names = tuple(w for w in words if w in NAMES)
            if len(names) >= 2:
                out.append((rel, node.lineno, names))
    return out


def test_no_new_hand_written_list_of_method_or_retriever_names():
    found = literals()
    new = [f"{f}:{line} {names}" for f, line, names in found if (f, names) not in KNOWN]
    assert new == [], ("a hand-written list of registered names; read them from the registry "
                       "(diversify.methods.METHOD_TABLE, retrieval.RETRIEVERS):\n" + "\n".join(new))
    gone = KNOWN - {(f, names) for f, _, names in found}
    assert not gone, f"moved to the registry: take them out of KNOWN: {sorted(gone)}"


def test_the_check_finds_a_hand_written_list(tmp_path, monkeypatch):
    """The scan sees a tuple of two retriever names and a dict keyed by method names."""
    bad = tmp_path / "berds_core" / "x.py"
    bad.parent.mkdir()
    bad.write_text('KINDS = ("bm25", "dense")\nLABELS = {"mmr": "MMR", "xquad": "xQuAD", "other": 1}\n')
    script = tmp_path / "bench" / "y.py"
    script.parent.mkdir()
    script.write_text('METHODS = ["none", "mmr", "qe", "rerank"]\nARGV = ["index", "--retriever", "dense"]\n')
    monkeypatch.setattr(__import__(__name__), "ROOT", tmp_path)
    assert [(f, n) for f, _, n in literals()] == [("berds_core/x.py", ("bm25", "dense")),
                                                    ("berds_core/x.py", ("mmr", "xquad")),
                                                    ("bench/y.py", ("none", "mmr", "qe", "rerank"))]


def test_the_faces_read_the_registries():
    """The pages' labels and the CLI's choices are the registries' own."""
    from berds_core.diversify.methods import METHOD_STAGES, METHOD_TABLE, PERSPECTIVE_METHODS, RERANKERS
    from berds_core.retrieval import CORPUS_RETRIEVERS
    from berds_core.studio.columns import METHOD_NAMES

    assert METHOD_NAMES == {m.name: m.label for m in METHOD_TABLE}
    assert PERSPECTIVE_METHODS == tuple(m.name for m in METHOD_TABLE if m.perspectives)
    assert ALIASES == {a: m.name for m in METHOD_TABLE for a in m.aliases}
    assert CORPUS_RETRIEVERS == tuple(e.name for e in RETRIEVERS.entries() if not e.takes_arg)
    from berds_core.cli import build_parser

    sub = next(a for a in build_parser()._actions if getattr(a, "choices", None) and "sycophancy" in a.choices)
    retr = next(a for a in sub.choices["sycophancy"]._actions if a.dest == "retriever")
    assert tuple(retr.choices) == CORPUS_RETRIEVERS
    retrieve = sub.choices["retrieve"]
    assert tuple(next(a for a in retrieve._actions if a.dest == "retriever").choices) == CORPUS_RETRIEVERS
    assert tuple(next(a for a in retrieve._actions if a.dest == "rerank").choices) == RERANKERS
    assert all(METHOD_STAGES[r] for r in RERANKERS) and "coverage" in RERANKERS


def test_the_method_flags_and_the_grammar_read_the_registries():
    """``berds retrieve``'s method flags are the registry's (each one an option of the verb), the pipeline
    grammar's retriever words are the retriever registry's, and the Playground's headings cover every method."""
    from berds_core.cli import build_parser
    from berds_core.diversify import spec
    from berds_core.diversify.methods import HEADINGS, METHOD_FLAGS, METHOD_TABLE
    from berds_core.retrieval import CORPUS_RETRIEVERS

    assert METHOD_FLAGS == tuple(dict.fromkeys(m.flag for m in METHOD_TABLE if m.flag))
    assert {m.flag for m in METHOD_TABLE if m.reranks} == {"rerank"} and "none" not in METHOD_FLAGS
    sub = next(a for a in build_parser()._actions if getattr(a, "choices", None) and "retrieve" in a.choices)
    dests = {a.dest for a in sub.choices["retrieve"]._actions}
    assert set(METHOD_FLAGS) <= dests
    assert spec.RETRIEVERS == CORPUS_RETRIEVERS
    assert set(HEADINGS) == set(METHODS) and all(HEADINGS.values())
