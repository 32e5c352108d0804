"""No face branches on a method's, a stage's or a retriever's name (issue 64, item 5): the faces (``pages/``,
``app.py``, ``studio_ui/``, ``berds_core/studio/`` and ``berds_core/cli/``) ask the registries what a part takes
or is (``retrieval.retriever_traits``: ``model``, ``index_kind``, ``engine``, ``lexical``; a method's stage
keywords, ``perspectives``, ``reranks``, ``sets``, ``methods.slider_lambda``; ``retrieval.index_folder``)
instead of comparing names. The scan fails on any comparison (``==``, ``!=``, ``in``, ``not in``, ...) with a
string constant that is a registered name (alone or in a tuple, list or set), on a ``match``/``case`` on one,
and on ``.startswith`` of one (or of its spec prefix, ``index:``). ``KNOWN`` holds the comparisons allowed to
stay, each with its reason; a new one fails, and one gone must leave ``KNOWN`` too."""
from __future__ import annotations

import ast
from pathlib import Path

from berds_core.diversify import STAGES
from berds_core.diversify.methods import ALIASES, METHOD_STAGES, METHODS
from berds_core.retrieval import RETRIEVERS

ROOT = Path(__file__).resolve().parents[1]
NAMES = set(METHODS) | set(ALIASES) | set(METHOD_STAGES) | set(STAGES.names()) | set(RETRIEVERS.names())

# (file, the comparison's source): comparisons with a registered name's text allowed to stay, each with a reason
KNOWN: dict[tuple[str, str], str] = {
    ("berds_core/cli/_annotations_round.py", 'str(floor).lower() in ("none", "")'):
        "the word none of --check-floor (no floor), not the plain-retrieval method",
    ("berds_core/cli/convincing_cmd.py", 'args.edits.strip().lower() == "none"'):
        "the word none of --edits (no edits), not the plain-retrieval method",
}


def _faces(root: Path) -> list[Path]:
    return sorted([*(root / "pages").glob("*.py"), *([root / "app.py"] if (root / "app.py").exists() else []),
                   *(root / "studio_ui").rglob("*.py"), *(root / "berds_core" / "studio").rglob("*.py"),
                   *(root / "berds_core" / "cli").rglob("*.py")])


def _names_in(node: ast.AST, prefix: bool = False) -> list[str]:
    """The registered names a constant (or a tuple, list or set of constants) spells; ``prefix``: also a spec
    prefix (``index:...``)."""
    elts = node.elts if isinstance(node, (ast.Tuple, ast.List, ast.Set)) else [node]
    words = [e.value for e in elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]
    return [w for w in words if w in NAMES or (prefix and ":" in w and w.partition(":")[0] in NAMES)]


def branches(root: Path = ROOT) -> list[tuple[str, int, str, str]]:
    """Every comparison, ``case`` and ``.startswith`` of the faces' source on a registered name:
    (file, line, the names, the source of the comparison)."""
    out = []
    for path in _faces(root):
        rel, text = path.relative_to(root).as_posix(), path.read_text(encoding="utf-8")
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.Compare):
                found = [w for side in (node.left, *node.comparators) for w in _names_in(side)]
            elif isinstance(node, ast.match_case):
                found = [w for p in ast.walk(node.pattern) if isinstance(p, ast.MatchValue) for w in _names_in(p.value)]
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                    and node.func.attr in ("startswith", "endswith"):
                found = [w for a in node.args for w in _names_in(a, prefix=True)]
            else:
                continue
            if found:
                where = node.pattern if isinstance(node, ast.match_case) else node
                out.append((rel, where.lineno, ",".join(found), ast.get_source_segment(text, where) or ""))
    return sorted(out)


def test_no_face_branches_on_a_registered_name():
    found = branches()
    new = [f"{f}:{line} {names}: {src}" for f, line, names, src in found if (f, src) not in KNOWN]
    assert new == [], ("a face compares a method's, a stage's or a retriever's name; ask the registry what it takes "
                       "(retrieval.retriever_traits, the METHOD_TABLE entry, methods.slider_lambda):\n"
                       + "\n".join(new))
    gone = set(KNOWN) - {(f, src) for f, _, _, src in found}
    assert not gone, f"no longer in the source: take them out of KNOWN: {sorted(gone)}"
    assert all(KNOWN.values()), "every comparison allowed to stay says why"


def test_the_scan_finds_every_kind_of_branch(tmp_path):
    """Not vacuous: the scan sees ==, !=, in, not in (a name on either side, alone or in a tuple), a case, and
    a .startswith of a name or a spec prefix, in each face folder; a call, an assignment or a dict key is no
    branch."""
    src = {
        "pages/p.py": 'if method == "mmr":\n    pass\nx = lam if m != "mmr" else None\n'
                      'y = "qe" in chosen\nz = kind not in ("bm25", "other")\n',
        "app.py": 'match args.retriever:\n    case "dense" | "other":\n        pass\n',
        "studio_ui/s.py": 'if spec.startswith("index:"):\n    pass\nw = s.startswith(("rerank", "zz"))\n',
        "berds_core/studio/d.py": 'ok = cfg.retriever == "bm25"\n',
        "berds_core/cli/c.py": 'find_method("mmr")\nkind = "bm25"\nd = {"xquad": 1}\nfine = a == "flat"\n',
        "bench/b.py": 'if method == "mmr":\n    pass\n',  # not a face
    }
    for rel, text in src.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    found = [(f, line, names) for f, line, names, _ in branches(tmp_path)]
    assert found == [("app.py", 2, "dense"),
                     ("berds_core/studio/d.py", 1, "bm25"),
                     ("pages/p.py", 1, "mmr"), ("pages/p.py", 3, "mmr"), ("pages/p.py", 4, "qe"),
                     ("pages/p.py", 5, "bm25"),
                     ("studio_ui/s.py", 1, "index:"), ("studio_ui/s.py", 3, "rerank")]


def test_the_registries_answer_what_the_faces_ask():
    """The traits and the method entries say what the names used to: dense reads an embedder and builds a FAISS
    index kind, bm25 has an engine and scores shared words, a prebuilt folder neither; only MMR's λ is the
    slider's, only query expansion's flag value is its source; an index spec names its folder."""
    from berds_core.diversify.methods import METHOD_TABLE, flag_method, slider_lambda
    from berds_core.retrieval import index_folder, index_spec, retriever_traits, takes_model

    assert retriever_traits("dense") == {"model", "index_kind"} and retriever_traits("bm25") == {"engine", "lexical"}
    assert retriever_traits("static") == {"index_kind", "distilled"}  # its model is a distilled one, never the pages' embedder
    assert takes_model("dense") and not takes_model("bm25") and not takes_model("index:/x") and not takes_model("static")
    assert retriever_traits("index") == frozenset() and retriever_traits("no-such") == frozenset()
    assert [m.name for m in METHOD_TABLE if slider_lambda(m.name)] == ["mmr"]
    assert [m.name for m in METHOD_TABLE if m.sets == "source"] == ["qe"]
    assert flag_method("mmr", 0.5).name == "mmr" and flag_method("rerank", "pm2").name == "pm2"
    assert flag_method("preset", "diverse").name == "preset"
    assert index_folder(index_spec("/a/b", "enc")) == "/a/b" and index_folder("bm25") is None
