"""Diversification as composable stages: the spec language (round trip, one-line errors with the position),
the stages against the old ``diversify()`` code path's rankings on the demo bundle (recorded from the code
before the change: ``tests/fixtures/stages_demo_old.json``, each case with the old call it was recorded from) and
the presets."""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from berds_core.diversify import STAGES, Pipeline, SpecError, Using, as_pipeline, diversify, get_preset
from berds_core.diversify.spec import format_spec, parse_spec
from berds_core.records import Question

FIXTURE = Path(__file__).parent / "fixtures" / "stages_demo_old.json"
# The first built-in demo (402 passages in one corpus), kept as a fixture: the old if-chain recorded FIXTURE's
# rankings on it (issue 26). Its two judge cases (coverage and xQuAD with the embedded judge) were dropped when
# issue 37 replaced the judge they were recorded with (the stance model); the stages read a judge's
# probabilities as before (tests/test_coverage_rerank.py, tests/test_xquad_pm2.py).
DEMO_V1 = Path(__file__).parent / "fixtures" / "demo_v1"

ROUND_TRIP = [
    ("dense%10>>coverage(probs=model,alpha=0.1,keep=2)", "dense%10>>coverage(probs=model,alpha=0.1,keep=2)"),
    ("bm25%30>>mmr(lam=0.5)", "bm25%30>>mmr(lam=0.5)"),
    (" dense % 20 >> xquad ( lam = 0.6 , probs = judge ) ", "dense%20>>xquad(lam=0.6,probs=judge)"),
    ("%20>>union>>mmr(lam=0.6)", "%20>>union>>mmr(lam=0.6)"),
    ("qe(source=offline)", "qe(source=offline)"),
    ("bm25", "bm25"),
    ("bm25%100>>mmr(lam=0.75)", "bm25>>mmr"),  # defaults are not printed
    ("coverage(source='oracle')>>none", "coverage(source=oracle)>>none"),
    ("pm2(lam=0.25,source=pool)", "pm2(lam=0.25,source=pool)"),
]


@pytest.mark.parametrize("text,canonical", ROUND_TRIP)
def test_spec_round_trip(text, canonical):
    p = Pipeline.parse(text)
    assert str(p) == canonical
    assert Pipeline.parse(str(p)) == p
    assert format_spec(parse_spec(canonical)) == canonical


def test_spec_parts_are_read_as_written():
    parts = parse_spec("dense%10>>coverage(probs=model,alpha=0.1,keep=2)")
    assert (parts.retriever, parts.depth) == ("dense", 10)
    assert [(s.name, s.args) for s in parts.stages] == [("coverage", (("probs", "model"), ("alpha", "0.1"), ("keep", "2")))]
    p = Pipeline.parse("dense%10>>coverage(probs=model,alpha=0.1,keep=2)")
    (stage,) = p.stages
    assert (stage.probs, stage.alpha, stage.keep, stage.mix) == ("model", 0.1, 2, 1.0)
    assert Pipeline.parse("qe").depth == 100 and Pipeline.parse("qe").retriever is None


@pytest.mark.parametrize("text,at,words", [
    ("dense%x", 7, "candidate depth"),
    ("dense%0>>mmr", 7, "candidate depth"),
    ("dense>>foo", 8, "unknown stage 'foo'; choose from: none"),
    ("bm25>>mmr(lam=2)", 11, "lam must be in [0.0, 1.0]"),
    ("mmr(alpha=1)", 5, "mmr takes lam; not 'alpha'"),
    ("mmr(lam=abc)", 5, "lam must be a number"),
    ("mmr>>union", 6, "union makes the candidates: it must be the first stage"),
    ("mmr(lam=0.5", 12, "expected ',' or ')'"),
    ("bm25 mmr", 6, "expected '>>'"),
    ("mmr>>bm25", 6, "the retriever (bm25) comes first"),
    ("coverage(probs=nope)", 10, "probs must be one of auto, judge, model, index, stance, similarity"),
    ("coverage(keep=-1)", 10, "keep must be 0 or more"),
    ("mmr(lam=0.5,lam=0.6)", 13, "'lam' given twice"),
    ("coverage(source='x", 17, "unclosed quote"),
    ("dense>>", 8, "expected a stage name"),
])
def test_spec_errors_are_one_line_with_the_position(text, at, words):
    with pytest.raises(SpecError) as e:
        Pipeline.parse(text)
    msg = str(e.value)
    assert "\n" not in msg and msg.startswith(f"pipeline '{text}': at {at}: ") and words in msg, msg


def test_empty_spec_error():
    with pytest.raises(SpecError, match="empty"):
        Pipeline.parse("  ")


def test_stages_are_the_diversifier_registry():
    assert STAGES.kind == "diversifier"
    assert set(STAGES.names()) == {"none", "union", "qe", "mmr", "coverage", "xquad", "pm2", "rvr", "reread"}
    assert all(STAGES.describe().values())  # every stage says what it does


def test_preset_is_a_saved_pipeline():
    p = get_preset("diverse")
    assert isinstance(p, Pipeline) and p.retriever == "dense" and p.depth == 6
    assert str(p) == "dense%6>>coverage(probs=model,alpha=0.1,mix=0.5,tokens=112)"
    assert as_pipeline("diverse") == p == as_pipeline("preset")
    with pytest.raises(ValueError, match="unknown preset 'nope'"):
        get_preset("nope")


class _Retriever:
    def __init__(self, n):
        self.n = n

    def search(self, queries, k):
        return [[(i, float(self.n - i)) for i in range(min(k, self.n))] for _ in queries]


def test_using_takes_objects_not_names():
    with pytest.raises(TypeError, match="Judge object"):
        Using(judge="embedded")
    with pytest.raises(TypeError, match="encoder object"):
        Using(embedder="all-MiniLM-L6-v2")


def test_passthrough_and_k():
    q = Question("q", "a question?", [])
    ret = _Retriever(5)
    assert diversify(q, None, ret, "none", 3) == [(0, 5.0), (1, 4.0), (2, 3.0)]
    assert diversify(q, None, ret, "bm25%2", 4) == diversify(q, None, ret, "none", 4)  # no re-ranker: top k
    with pytest.raises(ValueError, match="k must be at least 1"):
        diversify(q, None, ret, "none", 0)


@pytest.fixture(scope="module")
def demo():
    old = os.environ.get("BERDS_ENCODING")
    os.environ["BERDS_ENCODING"] = "fp32"  # as recorded
    from berds_core import datasets
    from berds_core.corpora.memory import corpus_from_passages
    from berds_core.retrieval import get_retriever

    b = datasets.load_demo(DEMO_V1)  # the demo as it was when the old code path recorded these rankings
    corpus = corpus_from_passages(b.passages, "demo")
    yield b, corpus, {kind: get_retriever(kind, corpus, progress=False) for kind in ("bm25", "dense")}
    if old is None:
        os.environ.pop("BERDS_ENCODING", None)
    else:
        os.environ["BERDS_ENCODING"] = old


RECORDED = json.loads(FIXTURE.read_text(encoding="utf-8"))


@pytest.mark.slow
@pytest.mark.parametrize("case", RECORDED, ids=[c["name"] for c in RECORDED])
def test_stage_matches_the_old_code_path_on_the_demo(demo, case, tmp_path, monkeypatch):
    """Each stage (and its parameters) ranks every demo question as the old if-chain did.

    A case that runs the stance model (the embedded judge, ``probs=model``, the preset) starts, as it was
    recorded, from an empty cache and no pair in the model's memory: which pairs share an encoder batch
    moves its fp32 outputs by ~1e-7, enough to swap near-tied candidates."""
    bundle, corpus, rets = demo
    if case["judge"] or "model" in case["spec"] or case["spec"] == "diverse":
        import berds_core.stance.model as stance_model

        monkeypatch.setenv("BERDS_CACHE", str(tmp_path / "cache"))
        monkeypatch.setattr(stance_model, "_MODELS", {})
    judge = None
    if case["judge"]:
        from berds_core.judges import get_judge

        judge = get_judge(case["judge"])
    p = as_pipeline(case["spec"])
    # a union's second retriever is opened by the caller (the other kind over the same corpus)
    using = Using(other_retriever=rets["bm25" if case["retriever"] == "dense" else "dense"]) \
        if p.pool == "union" else None
    for q in bundle.questions:
        got = diversify(q, corpus, rets[case["retriever"]], p, case["k"], judge=judge, using=using)
        want = case["rankings"][q.id]
        assert [r for r, _ in got] == [r for r, _ in want], (case["name"], q.id)
        assert [s for _, s in got] == pytest.approx([s for _, s in want], rel=1e-6, abs=1e-6)


# --- berds retrieve --pipeline --------------------------------------------------------------------------

DOCS = [
    {"id": "u1", "title": "Uniforms", "text": "School uniforms reduce bullying and peer pressure at school."},
    {"id": "u2", "title": "Uniforms", "text": "School uniforms reduce bullying and peer pressure in school."},
    {"id": "u3", "title": "Uniforms", "text": "School uniforms restrict students' freedom of expression."},
    {"id": "z1", "title": "Zoos", "text": "Zoos help endangered species survive through breeding programs."},
    {"id": "z2", "title": "Zoos", "text": "Keeping wild animals in zoos is cruel and causes stress."},
]
QUESTIONS = [
    {"id": "q1", "question": "Should schools require uniforms?",
     "perspectives": ["Uniforms reduce bullying", "Uniforms restrict expression"],
     "generated_perspectives": ["uniforms reduce bullying", "uniforms restrict freedom of expression"]},
    {"id": "q2", "question": "Are zoos good for animals?",
     "perspectives": ["Zoos save species", "Zoos are cruel"]},
]


@pytest.fixture
def cli_files(tmp_path):
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text("".join(json.dumps(d) + "\n" for d in DOCS), encoding="utf-8")
    questions = tmp_path / "questions.jsonl"
    questions.write_text("".join(json.dumps(q) + "\n" for q in QUESTIONS), encoding="utf-8")
    return tmp_path, str(corpus), str(questions)


def _retrieve(capsys, files, name, *extra):
    from berds_core.cli import main

    tmp, corpus, questions = files
    out = tmp / f"{name}.jsonl"
    code = main(["retrieve", "--questions", questions, "--corpus", corpus, "--k", "3", "--out", str(out), "--json",
                 "--quiet", *extra])
    cap = capsys.readouterr()
    return code, cap, out


@pytest.mark.parametrize("old,spec", [
    (["--retriever", "bm25", "--mmr", "0.5", "--candidates", "4"], "bm25%4>>mmr(lam=0.5)"),
    (["--retriever", "bm25", "--qe", "dataset"], "qe(source=dataset)"),
    (["--retriever", "bm25", "--rerank", "coverage", "--alpha", "0.3", "--candidates", "4"],
     "%4>>coverage(alpha=0.3,source=offline)"),
    (["--retriever", "bm25", "--rerank", "xquad", "--perspectives-from", "oracle"], "bm25>>xquad(source=oracle)"),
])
def test_cli_pipeline_ranks_as_the_old_flags(cli_files, capsys, old, spec):
    code, cap, out_old = _retrieve(capsys, cli_files, "old", *old)
    assert code == 0, cap.err
    code, cap, out_new = _retrieve(capsys, cli_files, "new", "--pipeline", spec)
    assert code == 0, cap.err
    assert json.loads(cap.out)["diversify"] == {"pipeline": str(Pipeline.parse(spec))}
    assert out_new.read_text(encoding="utf-8") == out_old.read_text(encoding="utf-8")


def test_cli_pipeline_names_its_retriever_as_the_preset_does(cli_files, capsys):
    code, cap, out_old = _retrieve(capsys, cli_files, "old", "--preset", "diverse")
    assert code == 0, cap.err
    code, cap, out_new = _retrieve(capsys, cli_files, "new", "--pipeline", "dense%6>>coverage(probs=model,alpha=0.1,mix=0.5,tokens=112)")
    assert code == 0, cap.err
    res = json.loads(cap.out)
    assert res["retriever"].startswith("dense") and res["diversify"]["pipeline"] == "dense%6>>coverage(probs=model,alpha=0.1,mix=0.5,tokens=112)"
    assert out_new.read_text(encoding="utf-8") == out_old.read_text(encoding="utf-8")


@pytest.mark.parametrize("extra,words", [
    (["--pipeline", "bm25%x>>mmr"], "--pipeline: pipeline 'bm25%x>>mmr': at 6: expected the candidate depth"),
    (["--pipeline", "bm25>>mmr(alpha=0.3)"], "at 11: mmr takes lam; not 'alpha'"),
    (["--pipeline", "mmr", "--mmr", "0.5"], "--pipeline: choose one diversification method (also given: --mmr)"),
    (["--pipeline", "coverage", "--alpha", "0.3"], "--alpha: sets a stage parameter"),
    (["--pipeline", "coverage", "--candidates", "30"], "--candidates: sets a stage parameter"),
    (["--pipeline", "qe(source=pool)"], "--pool: perspectives from 'pool' need --pool FILE"),
    (["--pipeline", "qe(source=llm)"], "--qe-llm: source=llm needs an LLM"),
])
def test_cli_pipeline_errors_are_one_line(cli_files, capsys, extra, words):
    code, cap, out = _retrieve(capsys, cli_files, "bad", *extra)
    assert code == 2 and cap.out == "" and cap.err.count("\n") == 1 and words in cap.err, cap.err
    assert not out.exists()


# --- the pages' columns --------------------------------------------------------------------------------

@pytest.mark.parametrize("method,lam,source,spec", [
    ("none", None, "dataset", "none"), ("mmr", 0.75, "dataset", "mmr"), ("mmr", 0.3, "offline", "mmr(lam=0.3)"),
    ("qe", None, "offline", "qe(source=offline)"), ("rerank", None, "oracle", "coverage(source=oracle)"),
    ("coverage", None, "dataset", "coverage"), ("xquad", None, "offline", "xquad(source=offline)"),
    ("pm2", 0.4, "dataset", "pm2(lam=0.4)"), ("rvr", 0.3, "offline", "rvr"),
    ("preset", None, "offline", "dense%6>>coverage(probs=model,alpha=0.1,mix=0.5,tokens=112)"),
])
def test_page_columns_build_the_pipelines_of_the_old_page_calls(method, lam, source, spec):
    """``column_pipeline`` is what the pages' old ``rank`` asked diversify() for: the method, lam (where its stage
    takes one), the source (where it reads perspectives) and the top 100 candidates (the preset its own)."""
    from berds_core.studio.columns import DEPTH, column_pipeline

    got = column_pipeline(method, lam, source)
    assert got == Pipeline.parse(spec) and (got.depth == DEPTH or method == "preset")
    assert str(got) == spec  # and it is a spec string


def test_page_column_pipeline_refuses_an_unknown_method():
    from berds_core.studio.columns import column_pipeline

    with pytest.raises(ValueError, match="unknown method 'nope'"):
        column_pipeline("nope")


def test_rank_runs_the_pipeline_over_the_engine():
    from berds_core.studio.columns import Engine, rank

    q = Question("q", "a question?", [])
    assert rank(Engine(None, _Retriever(4)), q, "none", 2) == [(0, 4.0), (1, 3.0)]


def test_no_stage_builds_a_retriever():
    """issue 39: stages receive what the caller resolved (the union's second retriever is ``Using.other_retriever``,
    as PyTerrier's ``SetUnion(left, right)`` takes two retrievers built by the caller): nothing in diversify/
    opens a retriever or keeps one in a module-level cache."""
    import ast
    from pathlib import Path

    import berds_core.diversify as pkg

    for path in Path(pkg.__file__).parent.glob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        names = {a.name for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) for a in n.names}
        assert "get_retriever" not in names, path.name
        calls = {n.func.id for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)}
        assert not calls & {"get_retriever", "DenseRetriever", "BM25Retriever"}, path.name


def test_cli_preset_searches_each_question_once(cli_files, capsys, monkeypatch):
    """With the shipped preset (its stance model's pairs batched ahead of the loop) `berds retrieve` searches
    each question once, as the pages do with their SharedSearch (issue 54: it searched every question twice)."""
    from collections import Counter

    from berds_core.retrieval.base import SearchBase

    searched = Counter()
    real = SearchBase.search

    def counting(self, queries, k):
        searched.update(queries)
        return real(self, queries, k)

    monkeypatch.setattr(SearchBase, "search", counting)
    code, cap, out = _retrieve(capsys, cli_files, "preset", "--preset", "diverse")
    assert code == 0, cap.err
    assert searched == Counter({q["question"]: 1 for q in QUESTIONS})
