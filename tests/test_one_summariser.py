"""One summariser (issue 64): the Report that ``berds_core.experiment.score`` returns (``berds_core.eval.report``)
summarises and renders itself, and no face (the CLI verbs, the pages, ``studio_ui``, ``berds_core.studio``)
computes MRecall / Precision or summarises a run itself; leaning's buckets are counted once, in the engine."""
from __future__ import annotations

import ast
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
FACES = sorted([*ROOT.glob("berds_core/cli/*.py"), *ROOT.glob("pages/*.py"), *ROOT.glob("studio_ui/*.py"),
                *ROOT.glob("berds_core/studio/*.py")])
# what computes a measure or summarises per-question scores: the engine's, called by the Report only
FORBIDDEN = {"mrecall_at_k", "precision_at_k", "scores", "label_measures", "summarize", "summarize_scores",
             "bootstrap_ci", "bootstrap_means", "compare_runs", "paired_comparison", "bucket", "bucket_counts",
             "diversity_scores", "pooled_diversity"}


def _eval_module(node: ast.ImportFrom, path: Path) -> str | None:
    """The ``berds_core.eval`` module an import names, absolute or relative (None: another module)."""
    if node.level:
        package = path.relative_to(ROOT).with_suffix("").parts[:-node.level]
        name = ".".join([*package, *([node.module] if node.module else [])])
    else:
        name = node.module or ""
    return name if name == "berds_core.eval" or name.startswith("berds_core.eval.") else None


def self_scoring(source: str, path: Path) -> list[str]:
    """What a face does that only the Report may: import a measure's kernel, the per-question scorer or a
    summariser from ``berds_core.eval``, import the old page summariser, or score a measure (``Measure.score``)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom):
            module = _eval_module(node, path)
            if module is not None:
                found += [f"imports {a.name} from {module}" for a in node.names if a.name in FORBIDDEN]
            if (node.module or "").endswith("studio.summaries") or any(a.name == "summaries" for a in node.names):
                found.append("imports the page summariser (studio.summaries)")
        elif isinstance(node, ast.Import):
            found += [f"imports {a.name}" for a in node.names if a.name.startswith("berds_core.eval")]
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "score":
            found.append(f"line {node.lineno}: scores a measure itself (.score)")
    return found


def test_every_face_is_checked():
    names = {str(p.relative_to(ROOT)) for p in FACES}
    assert {"berds_core/cli/evaluate_cmd.py", "berds_core/cli/leaning_cmd.py", "pages/evaluate.py",
            "pages/leaning.py", "pages/playground.py", "berds_core/studio/columns.py"} <= names
    assert not (ROOT / "berds_core/studio/summaries.py").exists()


@pytest.mark.parametrize("path", FACES, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_face_scores_or_summarises_itself(path):
    assert self_scoring(path.read_text(encoding="utf-8"), path) == []


@pytest.mark.parametrize("source", [
    "from berds_core.eval.measures import mrecall_at_k",
    "from ..eval.evaluation import bootstrap_ci",
    "from berds_core.eval.evaluation import scores as s",
    "from berds_core.studio.summaries import summarize",
    "import berds_core.eval.evaluation",
    "x = [m.score(L) for m in measures]",
])
def test_the_check_catches_a_face_that_scores(source):
    assert self_scoring(source, ROOT / "berds_core/cli/evaluate_cmd.py")


# --- the Report's renderings ------------------------------------------------

def _report():
    from berds_core.experiment import score

    rng = np.random.default_rng(4)
    entries = []
    for i in range(9):
        ids = [f"p{i}-{j}" for j in range(10)]
        entries.append({"id": f"q{i}", "question": f"question {i}", "perspectives": ["a", "b", "c"],
                        "subset": "one" if i < 5 else "two", "ctxs": [{"id": d, "text": d} for d in ids],
                        "jj-preds": (rng.random((10, 3)) < 0.25).tolist()})
    return score(entries, judge="jj")


def test_the_table_and_the_json_tell_one_summary():
    from berds_core.eval.report import HEADLINE, MACRO

    report = _report()
    table = report.to_table(["mrecall@5", "precision@10", "precision@1"])
    assert [r["subset"] for r in table] == ["one", "two", HEADLINE, MACRO]
    assert [r["n"] for r in table] == [5, 4, 9, 9]
    out = report.to_dict(5)
    head = table[2]
    assert head["mrecall@5"]["mean"] == out["mrecall"] == out["at"]["5"]["mrecall"]
    assert [head["mrecall@5"]["lo"], head["mrecall@5"]["hi"]] == out["ci"]["5"]["mrecall"]
    assert [head["precision@1"]["lo"], head["precision@1"]["hi"]] == out["ci"]["5"]["precision_at_1"]
    assert head["precision@10"]["mean"] == out["at"]["10"]["precision"]
    assert table[3]["precision@10"]["mean"] == out["macro"]["10"]["precision"]
    assert [table[3]["mrecall@5"]["lo"], table[3]["mrecall@5"]["hi"]] == out["macro_ci"]["5"]["mrecall"]
    one = report.per_question["mrecall@5"][:5]
    assert table[0]["mrecall@5"]["mean"] == out["subsets"]["one"]["at"]["5"]["mrecall"] == pytest.approx(one.mean())
    assert table[0]["mrecall@5"]["lo"] <= one.mean() <= table[0]["mrecall@5"]["hi"]
    assert "ci" not in out["subsets"]["one"]  # berds evaluate's JSON keeps its shape
    assert report.to_json(k=5) == __import__("json").dumps(out, ensure_ascii=False)
    with pytest.raises(KeyError):
        report.to_table(["alpha_ndcg@5"])  # not scored until with_diversity adds it


def test_significance_against_a_baseline_report():
    from berds_core.eval.report import significance
    from berds_core.eval.significance import compare

    a = _report()
    b = a.only(list(reversed(a.ids)))
    b = b.only(a.ids)  # the same questions, the same order
    b.per_question = {k: np.clip(v + 0.2, 0, 1) for k, v in b.per_question.items()}
    sig = significance({"a": a, "b": b}, "a", metrics=["precision@5"])
    assert sig == compare({"a": a.per_question, "b": b.per_question}, baseline="a", metrics=["precision@5"])
    out = a.against("a", {"b": b}, metrics=["precision@5"]).to_dict(5)
    assert out["significance"]["comparisons"][0]["metrics"]["precision@5"]["diff"] > 0
    assert out["compare"]["run2"] == "b" and out["significance"]["scope"] == "pooled over questions"


def test_leaning_counts_its_buckets_once():
    from berds_core.eval.leaning import BUCKETS, Sides, leaning, leaning_table

    mats = [np.array([[1, 0]] * 5, bool), np.array([[0, 1]] * 5, bool), np.array([[1, 1]] * 5, bool),
            np.zeros((5, 2), bool), np.array([[1, 0]] * 5, bool)]
    sides = [Sides(0, 1, "order")] * 5
    lean = leaning(mats, sides, 5)
    rows = [{"bucket": b} for b in lean["buckets"]]
    (row,) = leaning_table({"plain": rows})
    assert row["questions"] == lean["n"] == 5
    assert {b: row[b] for b in BUCKETS} == {b: lean[b] for b in BUCKETS}
    assert row["support_only_count"] == 2 and row["neither_count"] == 1
    assert leaning_table({"none": []})[0]["both"] == 0.0
