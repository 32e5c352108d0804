"""The coverage re-ranker's ``model`` mode (the ``diverse`` preset's path): the stance model's P(yes side),
P(no side) pull the other side up; candidates from the retriever or the union of dense and BM25."""
import numpy as np
import pytest

from berds_core.corpora.memory import corpus_from_passages
from berds_core.diversify import Using, blend_relevance, candidate_pool, diversify
from berds_core.records import Passage, Question


class StubStance:
    """P(yes), P(no), P(off) by key words in the passage string (the stance model's ``sides`` interface)."""

    def __init__(self):
        self.calls = []

    def sides(self, question, passages):
        self.calls.append(len(passages))
        out = []
        for p in passages:
            out.append([0.9, 0.05, 0.05] if "good" in p else [0.05, 0.9, 0.05] if "bad" in p else [0.02, 0.02, 0.96])
        return np.array(out)


class ListRetriever:
    name = "list"

    def __init__(self, scores):
        self.scores = scores

    def search(self, queries, k):
        self.searches = getattr(self, "searches", 0) + 1
        return [sorted(enumerate(self.scores), key=lambda t: -t[1])[:k] for _ in queries]


def test_coverage_model_mode_pulls_up_the_other_side():
    texts = ["cats are good", "cats are good pets", "cats are very good", "cats are bad", "weather today"]
    corpus = corpus_from_passages([Passage(str(i), "", t) for i, t in enumerate(texts)])
    ret = ListRetriever([1.0, 0.99, 0.98, 0.9, 0.95])
    q = Question("q", "Are cats good?", ["yes", "no"])
    stub = StubStance()
    got = [r for r, _ in diversify(q, corpus, ret, "%5>>coverage(probs=model,alpha=0.3)", 2,
                                   using=Using(stance_model=stub))]
    assert got == [0, 3] and stub.calls == [5]
    # alpha 1: the retriever's order
    assert [r for r, _ in diversify(q, corpus, ret, "%5>>coverage(probs=model,alpha=1.0)", 3,
                                    using=Using(stance_model=stub))] == [0, 1, 2]
    # mix 0: relevance is P(on the question): the off-topic passage drops below every on-topic one
    got = [r for r, _ in diversify(q, corpus, ret, "%5>>coverage(probs=model,alpha=1.0,mix=0.0)", 5,
                                   using=Using(stance_model=stub))]
    assert got[-1] == 4
    # keep 1: the retriever's first stays; the re-ranker fills below it (here the "no" side comes next);
    # keep 2: the first two stay and both argue "yes", so the third rank goes to the "no" side
    assert [r for r, _ in diversify(q, corpus, ret, "%5>>coverage(probs=model,alpha=0.3,keep=1)", 2,
                                    using=Using(stance_model=stub))] == [0, 3]
    assert [r for r, _ in diversify(q, corpus, ret, "%5>>coverage(probs=model,alpha=0.3,keep=2)", 3,
                                    using=Using(stance_model=stub))] == [0, 1, 3]
    assert [r for r, _ in diversify(q, corpus, ret, "%5>>coverage(probs=model,alpha=0.3,keep=0)", 3,
                                    using=Using(stance_model=stub))] == [0, 3, 1]
    # k above candidates: the retriever's top 3 (0, 1, 3) are re-ranked, its order follows (2, then 4)
    stub.calls.clear()
    ret2 = ListRetriever([1.0, 0.99, 0.9, 0.98, 0.5])
    got = [r for r, _ in diversify(q, corpus, ret2, "%3>>coverage(probs=model,alpha=0.3,keep=1)", 5,
                                   using=Using(stance_model=stub))]
    assert got == [0, 3, 1, 2, 4] and stub.calls == [3] and ret2.searches == 1  # one search for both parts
    with pytest.raises(ValueError):
        blend_relevance([1.0], np.zeros((1, 3)), 1.5)
    with pytest.raises(ValueError):
        diversify(q, corpus, ret, "coverage(probs=nope)", 2)


def test_union_pool_adds_bm25_candidates_scored_by_dense(tmp_path, monkeypatch):
    from berds_core.retrieval import get_retriever

    monkeypatch.setenv("BERDS_CACHE", str(tmp_path))
    texts = ["Nuclear reactors split uranium atoms to make electricity.",
             "Atomic energy plants are carbon free.", "Zyxwv is a rare token that only BM25 matches exactly.",
             "A recipe for lemon cake.", "Wind turbines turn in the breeze."]
    corpus = corpus_from_passages([Passage(str(i), "", t) for i, t in enumerate(texts)])
    dense = get_retriever("dense", corpus, progress=False)
    bm25 = get_retriever("bm25", corpus, progress=False)
    q = "zyxwv gardening"
    got = candidate_pool(q, corpus, dense, 2, "retriever")
    assert got == dense.search([q], 2)[0] and got.rows.dtype == np.int64 and got.scores.dtype == np.float64
    with pytest.raises(ValueError, match="needs a bm25 retriever beside the run's dense one"):
        candidate_pool(q, corpus, dense, 2, "union")  # the caller opens the second retriever: no stage does
    union = candidate_pool(q, corpus, dense, 2, "union", bm25)
    rows, scores = union.rows, union.scores
    want = {r for r, _ in dense.search([q], 2)[0]} | {r for r, _ in bm25.search([q], 2)[0]}
    assert set(rows.tolist()) == want and 2 in want and len(rows) == len(want) >= 2
    assert (np.diff(scores) <= 1e-9).all()
    qv = dense.encode([q])[0]
    np.testing.assert_allclose(scores, np.asarray(dense.embeddings)[rows] @ qv, atol=1e-6)
    rows_b = candidate_pool(q, corpus, bm25, 2, "union", dense).rows  # from the BM25 side: the same set
    assert set(rows_b.tolist()) == set(rows.tolist())
    with pytest.raises(ValueError):
        candidate_pool("x", corpus, dense, 1, "everything")
