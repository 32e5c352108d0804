"""The ``rvr`` stage (retrieve, verify, retrieve again; issue 48): the merge, its determinism, a missing side
found on a corpus whose first round argues one side only, each (question, passage) pair read by the stance
network once, and the spec's errors."""
import numpy as np
import pytest

from berds_core.corpora.memory import corpus_from_passages
from berds_core.diversify import Pipeline, SpecError, Using, diversify
from berds_core.diversify.rvr import merge, missing_sides, retrieve_verify, second_round_order, side_of
from berds_core.diversify.stages import Batch, Query
from berds_core.records import Passage, Question

TEXTS = ["cats are good", "cats are good pets", "cats are very good", "cats are good friends", "weather today",
         "cats are bad", "cats are bad pets"]
IDS = ["p0", "p1", "p2", "p3", "p4", "z5", "a6"]  # rows 5 and 6: the id order is not the row order
QUESTION = Question("q", "Should cats be pets?", ["yes", "no"])  # sides: "Cats should be pets" / "... not ..."


class StubStance:
    """P(yes), P(no), P(off) by key words (the stance model's ``sides`` interface); records what it read."""

    def __init__(self):
        self.read = []

    def sides(self, question, passages, max_length=None):
        self.read += [(question, p) for p in passages]
        return np.array([[0.9, 0.05, 0.05] if "good" in p else [0.05, 0.9, 0.05] if "bad" in p
                         else [0.02, 0.02, 0.96] for p in passages])


class SideRetriever:
    """The question and the yes statement rank the 'good' passages first; the no statement ('... not ...')
    ranks the 'bad' ones first, rows 5 and 6 tied (their order in the hits is ``tie_order``)."""

    name = "side"

    def __init__(self, tie_order=(5, 6)):
        self.tie_order = tie_order
        self.queries = []

    def search(self, queries, k):
        out = []
        for text in queries:
            self.queries.append(text)
            if " not " in text or "bad" in text:
                hits = [(self.tie_order[0], 0.9), (self.tie_order[1], 0.9), (4, 0.2), (0, 0.1), (1, 0.1)]
            else:
                hits = [(0, 1.0), (1, 0.99), (2, 0.98), (3, 0.97), (4, 0.5), (5, 0.3), (6, 0.29)]
            out.append(hits[:k])
        return out


@pytest.fixture
def corpus():
    return corpus_from_passages([Passage(i, "", t) for i, t in zip(IDS, TEXTS)])


def rows(hits):
    return [r for r, _ in hits]


def test_side_reading_and_missing_sides():
    assert side_of([0.6, 0.3, 0.1], 0.5) == 0 and side_of([0.2, 0.7, 0.1], 0.5) == 1
    assert side_of([0.45, 0.4, 0.15], 0.5) is None and side_of([0.45, 0.4, 0.15], 0.4) == 0
    assert missing_sides([[0.9, 0.05, 0.05]], 0.5) == [1]
    assert missing_sides([[0.9, 0.05, 0.05], [0.1, 0.8, 0.1]], 0.5) == []
    assert missing_sides([[0.1, 0.1, 0.8]], 0.5) == [0, 1]


def test_merge_keeps_the_first_rounds_best_and_fills_with_verified_passages():
    first = [(0, 1.0), (1, 0.9), (2, 0.8), (3, 0.7)]
    assert rows(merge(first, {1: [(9, 0.5), (8, 0.4)]}, keep=2, add=1)) == [0, 1, 9, 2, 3]
    assert rows(merge(first, {1: [(9, 0.5), (8, 0.4)]}, keep=2, add=2)) == [0, 1, 9, 8, 2, 3]
    # two missing sides take turns (yes first); a passage already placed is not placed twice
    assert rows(merge(first, {1: [(9, 0.5), (7, 0.4)], 0: [(9, 0.6), (6, 0.3)]}, keep=1, add=2)) == [0, 9, 7, 6, 1, 2, 3]
    # a first-round passage verified for the missing side moves up, once
    assert rows(merge(first, {1: [(3, 0.7)]}, keep=1, add=1)) == [0, 3, 1, 2]
    assert rows(merge(first, {1: []}, keep=2, add=1)) == rows(first)


def test_second_round_ties_go_by_passage_id():
    ids = {5: "z5", 6: "a6", 4: "p4"}.get
    assert rows(second_round_order([(5, 0.9), (6, 0.9), (4, 0.95), (5, 0.9)], ids)) == [4, 6, 5]


def test_a_missing_side_is_found_and_the_order_is_deterministic(corpus):
    stub = StubStance()
    ret = SideRetriever()
    # the first round (the question's top 5) argues only the yes side
    plain = rows(diversify(QUESTION, corpus, ret, "none", 5))
    assert plain == [0, 1, 2, 3, 4] and 1 not in {side_of(p, 0.5) for p in stub.sides("", [TEXTS[r] for r in plain])}
    stub.read.clear()
    got = rows(diversify(QUESTION, corpus, ret, "rvr(read=5,keep=3,add=1)", 5, using=Using(stance_model=stub)))
    assert got == [0, 1, 2, 6, 3]  # the no side's passage after the three kept; a6 before z5 (tie, by id)
    assert "Cats should not be pets" in ret.queries  # the second round searched the negated statement
    assert rows(diversify(QUESTION, corpus, ret, "rvr(read=5,keep=3,add=2)", 5,
                          using=Using(stance_model=stub))) == [0, 1, 2, 6, 5]
    # the same ranking whatever order the retriever returns the tied passages in
    other = SideRetriever(tie_order=(6, 5))
    for _ in range(3):
        assert rows(diversify(QUESTION, corpus, other, "rvr(read=5,keep=3,add=2)", 5,
                              using=Using(stance_model=stub))) == [0, 1, 2, 6, 5]
    # a threshold no passage reaches: nothing verified, the first round as it was
    assert rows(diversify(QUESTION, corpus, ret, "rvr(threshold=0.95)", 5, using=Using(stance_model=stub))) == plain


def test_both_sides_covered_means_no_second_round(corpus):
    stub = StubStance()
    ret = SideRetriever()
    got = rows(diversify(QUESTION, corpus, ret, "%7>>rvr(read=7)", 5, using=Using(stance_model=stub)))
    assert got == [0, 1, 2, 3, 4] and ret.queries == [QUESTION.question]  # one search: the first round's


def test_after_another_stage(corpus):
    stub = StubStance()
    p = Pipeline.parse("%7>>none>>rvr(read=3,keep=1,add=1)")
    assert [s.name for s in p.stages] == ["none", "rvr"]
    got = rows(diversify(QUESTION, corpus, SideRetriever(), p, 4, using=Using(stance_model=stub)))
    assert got == [0, 6, 1, 2]
    # the defaults (the CV's choice: keep 0, add 2): both verified passages of the missing side lead
    assert rows(diversify(QUESTION, corpus, SideRetriever(), "%7>>none>>rvr(read=3)", 4,
                          using=Using(stance_model=stub))) == [6, 5, 0, 1]


def test_retrieve_verify_reads_each_row_once():
    seen = []

    def read(rs):
        seen.extend(rs)
        return np.array([[0.9, 0.05, 0.05] if r < 5 else [0.05, 0.9, 0.05] for r in rs])

    first = [(r, 1.0 - r / 10) for r in range(5)]
    out = retrieve_verify(first, read, lambda s: [(5, 0.9), (0, 0.8), (6, 0.7), (5, 0.9)], str, read=3, keep=2,
                          add=1, threshold=0.5)
    assert rows(out) == [0, 1, 5, 2, 3, 4]
    assert sorted(seen) == sorted(set(seen)) and set(seen) == {0, 1, 2, 5, 6}


def test_the_stance_network_reads_a_pair_once_over_prefetch_and_loop(corpus, monkeypatch, tmp_path):
    """The real stance model's path (memory, store, network), its network replaced by a key-word encoder: a run
    batches every pair ahead of the loop, and no (question, passage) pair reaches the network twice."""
    monkeypatch.setenv("BERDS_CACHE", str(tmp_path))
    from berds_core.stance.model import StanceModel

    model = StanceModel(store=False)
    dim = model.head_W.shape[1]
    model.head_W = np.zeros((3, dim))
    model.head_W[0, 0] = model.head_W[1, 1] = model.head_W[2, 2] = 20.0
    model.head_b = np.zeros(3)
    sent = []

    def fake_uncached(pairs, max_length=None):
        sent.extend(pairs)
        out = np.zeros((len(pairs), dim), np.float32)
        for i, (_, text) in enumerate(pairs):
            out[i, 0 if "good" in text else 1 if "bad" in text else 2] = 1.0
        return out

    monkeypatch.setattr(model, "encode_uncached", fake_uncached)
    using = Using(stance_model=model)
    p = Pipeline.parse("%7>>rvr(read=5,keep=3,add=1,depth=5)")
    other = Question("q2", "Are cats good pets?", ["yes", "no"])
    ret = SideRetriever()
    p.prefetch([QUESTION, other], corpus, ret, using, progress=False)
    batched = len(sent)
    got = [rows(p.run(Query(q, corpus, ret, 5, 7, using))) for q in (QUESTION, other)]
    assert got[0] == [0, 1, 2, 6, 3]
    assert batched > 0 and len(sent) == batched  # the loop read everything from what the prefetch encoded
    assert len(sent) == len(set(sent))  # no pair twice


def test_bad_parameters_are_one_line_errors():
    for spec, words in [("dense>>rvr(read=0)", "read must be in [1, 100]"),
                        ("dense>>rvr(threshold=1.5)", "threshold must be in [0.0, 1.0]"),
                        ("dense>>rvr(depth=x)", "depth must be an integer"),
                        ("dense>>rvr(queries=llm)", "queries must be one of sides, dataset"),
                        ("dense>>rvr(width=3)", "rvr takes read, keep, add, depth, threshold, tokens, queries, reader; not 'width'")]:
        with pytest.raises(SpecError) as e:
            Pipeline.parse(spec)
        assert words in str(e.value) and "\n" not in str(e.value)


def _cli_files(tmp_path):
    import json

    docs = [{"id": f"d{i}", "title": "Uniforms", "text": t} for i, t in enumerate([
        "School uniforms reduce bullying and peer pressure about clothes.",
        "Uniforms make mornings easier and build a sense of belonging at school.",
        "School uniforms restrict students' freedom of expression.",
        "Schools should not require uniforms: they cost families money.",
        "Zoos help endangered species survive through breeding programs."])]
    corpus, questions = tmp_path / "corpus.jsonl", tmp_path / "questions.jsonl"
    corpus.write_text("".join(json.dumps(d) + "\n" for d in docs), encoding="utf-8")
    questions.write_text(json.dumps({"id": "q1", "question": "Should schools require uniforms?",
                                     "perspectives": ["yes", "no"]}) + "\n", encoding="utf-8")
    return corpus, questions


def test_cli_retrieve_with_the_stage(tmp_path, monkeypatch, capsys):
    """``berds retrieve --pipeline 'dense>>rvr(...)'`` writes a run with the shipped stance model; a bad
    parameter is one line on stderr and exit 2, the run left unwritten."""
    import json

    from berds_core.cli import main
    from berds_core.runs import read_run

    monkeypatch.setenv("BERDS_CACHE", str(tmp_path / "cache"))
    corpus, questions = _cli_files(tmp_path)
    bad = tmp_path / "bad.jsonl"
    assert main(["retrieve", "--questions", str(questions), "--corpus", str(corpus), "--out", str(bad),
                 "--pipeline", "dense>>rvr(add=0)"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "rvr: add must be in [1, 20]" in err and not bad.exists()
    out = tmp_path / "run.jsonl"
    assert main(["retrieve", "--questions", str(questions), "--corpus", str(corpus), "--out", str(out), "--k", "4",
                 "--pipeline", "dense>>rvr(read=2,keep=1,depth=5,tokens=64)", "--encoding", "fp32", "--json",
                 "--quiet"]) == 0
    summary = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert summary["questions"] == 1 and summary["k"] == 4
    (entry,) = read_run(out)
    ids = [c["id"] for c in entry["ctxs"]]
    assert len(ids) == 4 and len(set(ids)) == 4


def test_behind_the_preset_shaped_pipeline(corpus):
    """Behind the coverage re-ranker on the stance model (the preset's shape) the stage reads that stage's
    order: there both sides are in its top 3, so nothing moves. The prefetch behind another re-ranker batches
    nothing of the stance model's (the first round is known only in the loop)."""
    stub = StubStance()
    ret = SideRetriever()
    cov = rows(diversify(QUESTION, corpus, ret, "%6>>coverage(probs=model,alpha=0.3,tokens=64)", 5,
                         using=Using(stance_model=stub)))
    both = rows(diversify(QUESTION, corpus, ret, "%6>>coverage(probs=model,alpha=0.3,tokens=64)>>rvr(read=3)", 5,
                          using=Using(stance_model=stub)))
    assert 5 in cov[:3] and both == cov
    p = Pipeline.parse("%6>>coverage(probs=model,alpha=0.3,tokens=64)>>rvr(read=3)")
    stub.read.clear()
    p.stages[1].prefetch(Batch([QUESTION], corpus, ret, Using(stance_model=stub), 6, prior=p.stages[:1]))
    assert stub.read == []


def test_source_dataset_searches_the_missing_sides_perspectives(corpus):
    """``queries=dataset``: the question's generated perspectives, each put on a side by the stance model; the
    missing side searches its perspectives instead of its statement (a side with none keeps its statement)."""
    stub = StubStance()
    q = Question("q", QUESTION.question, ["yes", "no"],
                 generated_perspectives=["Cats make bad pets", "Cats are good company", "The weather"])
    ret = SideRetriever()
    got = rows(diversify(q, corpus, ret, "rvr(queries=dataset,keep=3,add=1)", 5, using=Using(stance_model=stub)))
    assert got == [0, 1, 2, 6, 3]
    assert "Cats make bad pets" in ret.queries and "Cats should not be pets" not in ret.queries
    ret = SideRetriever()
    assert rows(diversify(QUESTION, corpus, ret, "rvr(queries=dataset,keep=3,add=1)", 5,
                          using=Using(stance_model=stub))) == [0, 1, 2, 6, 3]
    assert "Cats should not be pets" in ret.queries  # no perspectives: the statement


def test_rvr_is_a_plain_stage_and_reads_its_model_from_the_runs_using(corpus, monkeypatch):
    """Issue 64, "stages are stages": rvr is registered as the other stages are and runs through the pipeline's
    own step (its ``rerank``, a ``Hits`` that brings passages of its own); the stance model it reads comes from
    the run's ``Using``: the pipeline loads the shipped one there, in one place, when none was given."""
    import ast
    from pathlib import Path

    import berds_core.diversify.stages.context as context
    from berds_core.diversify import STAGES
    from berds_core.diversify.methods import find_method
    from berds_core.diversify.stages import RetrieveVerifyRetrieve, Stage

    assert STAGES.builds("rvr") is RetrieveVerifyRetrieve and find_method("rvr").stage == "rvr"
    assert not {"apply", "run"} & {n for cls in (Stage, *map(STAGES.builds, STAGES.names())) for n in vars(cls)}
    assert Pipeline.parse("coverage(probs=model)>>rvr(reader=index)").models() == {"stance_model", "side_reader"}
    assert Pipeline.parse("mmr>>xquad").models() == frozenset()
    given = Using(stance_model=StubStance())
    assert given.with_models({"stance_model"}) is given  # a model given is the one read; nothing loaded
    shipped = StubStance()
    monkeypatch.setattr(context, "get_stance_model", lambda: shipped)
    got = rows(diversify(QUESTION, corpus, SideRetriever(), "rvr(read=5,keep=3,add=1)", 5))
    assert got == [0, 1, 2, 6, 3] and shipped.read  # the default model, loaded by the pipeline, read by the stage
    # no stage module loads a model itself: the getters are called in stages/context.py alone
    root = Path(context.__file__).resolve().parents[1]
    callers = sorted(str(p.relative_to(root)) for p in root.rglob("*.py")
                     if {"get_stance_model", "get_side_reader"} & {n.attr if isinstance(n, ast.Attribute) else n.id
                                                                  for n in ast.walk(ast.parse(p.read_text()))
                                                                  if isinstance(n, (ast.Name, ast.Attribute))})
    assert callers == ["stages/context.py"]
