"""Diversification as composable stages: the spec language (round trip, one-line errors with the position),
the stages against the old ``diversify()`` code path's rankings on the demo bundle (recorded from the code
before the change: ``tests/fixtures/stages_demo_old.json``), the presets, and the deprecated spellings."""
from __future__ import annotations

import json
import os
import warnings
from pathlib import Path

import pytest

from berds_core.diversify import STAGES, Pipeline, SpecError, Using, as_pipeline, diversify, get_preset
from berds_core.diversify.spec import format_spec, parse_spec
from berds_core.records import Question

FIXTURE = Path(__file__).parent / "fixtures" / "stages_demo_old.json"

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
    ("coverage(probs=nope)", 10, "probs must be one of auto, judge, model, stance, similarity"),
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
    assert set(STAGES.names()) == {"none", "union", "qe", "mmr", "coverage", "xquad", "pm2"}
    assert all(STAGES.describe().values())  # every stage says what it does


def test_preset_is_a_saved_pipeline():
    p = get_preset("diverse")
    assert isinstance(p, Pipeline) and p.retriever == "dense" and p.depth == 10
    assert str(p) == "dense%10>>coverage(probs=model,alpha=0.1,keep=2)"
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


def test_old_keyword_spelling_warns_and_gives_the_same_pipeline():
    from berds_core.diversify import pipeline_from_options

    assert str(pipeline_from_options("mmr", {"lam": 0.5, "candidates": 30})) == "%30>>mmr(lam=0.5)"
    assert str(pipeline_from_options("rerank", {"qe_source": "offline", "coverage_probs": "model", "mix": 0.5,
                                                "candidates_from": "union", "candidates": 10})) == \
        "%10>>union>>coverage(probs=model,source=offline,mix=0.5)"
    assert str(pipeline_from_options("xquad", {"aspect_probs": "judge", "lam": 0.8})) == "xquad(probs=judge)"
    assert pipeline_from_options("preset", {}) == get_preset("diverse")
    q = Question("q", "a question?", [])
    with pytest.warns(DeprecationWarning, match=r"pass a pipeline \(e\.g\. '%50>>none'\)"):
        got = diversify(q, None, _Retriever(5), "none", 2, candidates=50)
    assert got == [(0, 5.0), (1, 4.0)]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the new spelling warns about nothing
        diversify(q, None, _Retriever(5), "%50>>none", 2)


@pytest.fixture(scope="module")
def demo():
    old = os.environ.get("BERDS_ENCODING")
    os.environ["BERDS_ENCODING"] = "fp32"  # as recorded
    from berds_core import datasets
    from berds_core.corpus import corpus_from_passages
    from berds_core.retrieval import get_retriever

    b = datasets.load_demo()
    corpus = corpus_from_passages(b.passages, "demo")
    yield b, corpus, {kind: get_retriever(kind, corpus, progress=False) for kind in ("bm25", "dense")}
    if old is None:
        os.environ.pop("BERDS_ENCODING", None)
    else:
        os.environ["BERDS_ENCODING"] = old


RECORDED = json.loads(FIXTURE.read_text(encoding="utf-8"))


@pytest.mark.slow
@pytest.mark.parametrize("case", RECORDED, ids=[c["name"] for c in RECORDED])
def test_stage_matches_the_old_code_path_on_the_demo(demo, case):
    """Each stage (and its parameters) ranks every demo question as the old if-chain did."""
    bundle, corpus, rets = demo
    judge = None
    if case["judge"]:
        from berds_core.judges import get_judge

        judge = get_judge(case["judge"])
    p = as_pipeline(case["spec"])
    for q in bundle.questions:
        got = diversify(q, corpus, rets[case["retriever"]], p, case["k"], judge=judge)
        want = case["rankings"][q.id]
        assert [r for r, _ in got] == [r for r, _ in want], (case["name"], q.id)
        assert [s for _, s in got] == pytest.approx([s for _, s in want], rel=1e-6, abs=1e-6)
    # the old spelling still gives the same rankings (with a DeprecationWarning)
    old = dict(case["old"])
    method = old.pop("method")
    q = bundle.questions[0]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        got = diversify(q, corpus, rets[case["retriever"]], method, case["k"], judge=judge, **old)
    assert [r for r, _ in got] == [r for r, _ in case["rankings"][q.id]]
