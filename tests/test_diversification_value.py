"""``berds retrieve``'s diversification options become one value, once (issue 54, item 2): a
:class:`Diversification` holding the :class:`Pipeline` itself (flags built from the method's registry entry and
its stage's own keywords, the preset's saved pipeline, ``--pipeline`` parsed once) and the names of what its
stages use; no dictionary of the old option names (``qe_source``, ``coverage_probs``, ...) on the way, no spec
printed and parsed again, and no module converting old option names (the deprecated keyword spelling of
``diversify()`` and its converter are gone)."""
from __future__ import annotations

import ast
import json
import pickle
from dataclasses import fields
from pathlib import Path

import pytest

from berds_core.cli import build_parser, main
from berds_core.cli._diversify_options import Diversification, diversify_config
from berds_core.diversify import Pipeline, as_pipeline
from berds_core.diversify import methods

ROOT = Path(__file__).resolve().parents[1]


def _config(*argv):
    args = build_parser().parse_args(["retrieve", "--questions", "q.jsonl", "--out", "o.jsonl", *argv])
    return diversify_config(args), args


@pytest.mark.parametrize("argv,spec,method,names", [
    (["--mmr", "0.5", "--candidates", "30"], "%30>>mmr(lam=0.5)", "mmr", {}),
    (["--mmr", "0.3", "--candidates-from", "union", "--candidates", "15", "--mmr-embedder", "x"],
     "%15>>union>>mmr(lam=0.3)", "mmr", {"embedder": "x"}),
    (["--qe", "offline"], "qe(source=offline)", "qe", {}),
    (["--qe", "pool", "--pool", "demo"], "qe(source=pool)", "qe", {"pool": "demo"}),
    (["--qe", "llm", "--qe-llm", "hf:m"], "qe(source=llm)", "qe", {"llm": "hf:m"}),
    (["--rerank", "coverage", "--candidates", "20", "--alpha", "0.3"], "%20>>coverage(alpha=0.3,source=offline)",
     "coverage", {}),
    (["--rerank", "coverage", "--rerank-probs", "model", "--candidates", "10", "--keep", "2", "--alpha", "0.1"],
     "%10>>coverage(probs=model,alpha=0.1,source=offline,keep=2)", "coverage", {}),
    (["--rerank", "coverage", "--rerank-probs", "index", "--candidates", "20", "--mix", "0.5"],
     "%20>>coverage(probs=index,source=offline,mix=0.5)", "coverage", {}),
    (["--rerank", "coverage", "--rerank-judge", "embedded", "--mix", "0.5", "--perspectives-from", "dataset"],
     "coverage(mix=0.5)", "coverage", {"judge": "embedded"}),
    (["--rerank", "xquad", "--aspect-probs", "judge", "--rerank-judge", "embedded"],
     "xquad(source=offline,probs=judge)", "xquad", {"judge": "embedded"}),
    (["--rerank", "xquad", "--candidates-from", "union", "--candidates", "30"],
     "%30>>union>>xquad(source=offline)", "xquad", {}),
    (["--rerank", "pm2", "--lambda", "0.3", "--candidates", "40"], "%40>>pm2(lam=0.3,source=offline)", "pm2", {}),
    (["--pipeline", "bm25%30>>mmr(lam=0.5)"], "bm25%30>>mmr(lam=0.5)", None, {}),
    (["--pipeline", "%10>>union>>coverage(probs=judge)", "--rerank-judge", "embedded"],
     "%10>>union>>coverage(probs=judge)", None, {"judge": "embedded"}),
])
def test_the_options_become_one_pipeline(argv, spec, method, names):
    div, _ = _config(*argv)
    assert isinstance(div, Diversification) and isinstance(div.pipeline, Pipeline)
    assert div.pipeline == Pipeline.parse(spec) and str(div.pipeline) == spec
    assert div.method == method
    assert {k: getattr(div, k) for k in ("judge", "embedder", "llm", "pool") if getattr(div, k)} == names
    # plain data: the pipeline, names and nothing else (no dict of options), and it pickles (a Ray worker)
    assert all(isinstance(getattr(div, f.name), (Pipeline, str, type(None))) for f in fields(div))
    assert pickle.loads(pickle.dumps(div)) == div
    assert div.to_json() == {k: v for k, v in {"method": method, "pipeline": spec, **names}.items() if v is not None}


def test_the_preset_is_its_saved_pipeline_itself():
    """``--preset diverse`` runs exactly the saved pipeline (its stance model's ``tokens=112`` too), and picks its
    retriever and the default model."""
    div, args = _config("--preset", "diverse", "--retriever", "bm25", "--model", "x")
    assert div.pipeline == as_pipeline("diverse") and div.method == "preset" and div.preset == "diverse"
    assert next(s for s in div.pipeline.stages if s.name == "coverage").tokens == 112
    assert (args.retriever, args.model) == (as_pipeline("diverse").retriever, None)
    assert div.to_json() == {"method": "preset", "preset": "diverse", "pipeline": str(as_pipeline("diverse"))}


@pytest.mark.parametrize("argv,flag", [
    (["--qe", "offline", "--candidates", "30"], "--candidates"),
    (["--qe", "offline", "--candidates-from", "union"], "--candidates-from"),
    (["--preset", "diverse", "--candidates", "30"], "--candidates"),
    (["--preset", "diverse", "--candidates-from", "union"], "--candidates-from"),
])
def test_candidate_flags_that_cannot_reach_the_pipeline_are_refused(tmp_path, capsys, argv, flag):
    """Not silently ignored: one line naming the flag, exit 2, before any work (no run file)."""
    out = tmp_path / "o.jsonl"
    assert main(["retrieve", "--questions", str(tmp_path / "missing.jsonl"), "--corpus", str(tmp_path / "c.jsonl"),
                 "--out", str(out), *argv]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and flag in err and "has no effect" in err and not out.exists()


def test_plain_retrieval_is_none():
    assert _config()[0] is None


DOCS = [{"id": f"d{i}", "text": t} for i, t in enumerate([
    "School uniforms reduce bullying.", "School uniforms reduce bullying at school.",
    "Uniforms restrict students' expression.", "Zoos help species survive.", "Zoos are cruel to animals."])]


@pytest.mark.parametrize("argv,parses", [
    (["--pipeline", "bm25%4>>mmr(lam=0.5)"], 1),  # the spec, once
    (["--retriever", "bm25", "--mmr", "0.5", "--candidates", "4"], 0),  # flags: no spec at all
])
def test_a_spec_is_parsed_once_per_run(tmp_path, capsys, monkeypatch, argv, parses):
    corpus, questions, out = tmp_path / "c.jsonl", tmp_path / "q.jsonl", tmp_path / "run.jsonl"
    corpus.write_text("".join(json.dumps(d) + "\n" for d in DOCS), encoding="utf-8")
    questions.write_text(json.dumps({"id": "q1", "question": "Should schools require uniforms?",
                                     "perspectives": ["a", "b"]}) + "\n", encoding="utf-8")
    parse, seen = Pipeline.parse.__func__, []
    monkeypatch.setattr(Pipeline, "parse", classmethod(lambda cls, text: (seen.append(text), parse(cls, text))[1]))
    code = main(["retrieve", "--questions", str(questions), "--corpus", str(corpus), "--k", "3", "--out", str(out),
                 "--json", "--quiet", *argv])
    assert code == 0, capsys.readouterr().err
    assert len(seen) == parses, seen


def test_no_module_converts_old_option_names():
    """The old option vocabulary's converters are gone, the deprecated keyword spelling of ``diversify()``'s
    included (``_old_call``, ``_old_pipeline``, ``_OLD_KEYS``)."""
    gone = {"method_pipeline", "method_options", "OPTION_KEYS", "pipeline_of", "_old_call", "_old_pipeline",
            "_OLD_KEYS"}
    assert not gone & set(vars(methods))
    found = []
    for path in [*(ROOT / "berds_core").rglob("*.py"), *(ROOT / "studio_ui").rglob("*.py"),
                 *(ROOT / "pages").glob("*.py"), *(ROOT / "bench").rglob("*.py"), *(ROOT / "scripts").rglob("*.py")]:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            name = (node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else
                    None)
            names = [a.name for a in node.names] if isinstance(node, ast.ImportFrom) else [name]
            found += [f"{path.relative_to(ROOT)}:{node.lineno} {n}" for n in names if n in gone]
    assert found == []
