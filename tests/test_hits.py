"""One value type for a ranking (issue 54, item 3): every retriever returns ``records.Hits``, and the pipeline,
its candidates and stages, ``diversify`` and the run line pass it on without rebuilding a list of pairs."""
import pickle

import numpy as np
import pytest

from berds_core.corpora.memory import corpus_from_passages
from berds_core.diversify import Pipeline, Using, diversify
from berds_core.diversify.candidates import candidate_pool
from berds_core.diversify.pipeline import fill
from berds_core.diversify.stages import Query
from berds_core.files.build_dir import building
from berds_core.records import Hits, Passage, Question
from berds_core.retrieval import get_retriever
from berds_core.retrieval.caching import SharedSearch
from berds_core.retrieval.faiss_build import build_folder
from berds_core.retrieval.index_dir import DenseIndex
from berds_core.retrieval.index_plan import plan_index
from berds_core.retrieval.vector_shards import VectorShards
from berds_core.experiment import Searched, run
from berds_core.runs import ctxs_for, question_entry

TEXTS = ["Nuclear power plants make electricity from uranium without carbon emissions.",
         "Nuclear waste stays dangerous for thousands of years and nobody wants it stored nearby.",
         "Wind and solar power are now cheaper than new nuclear plants.",
         "School uniforms reduce bullying because students cannot judge clothes.",
         "Zoos protect endangered animals through breeding programs.",
         "A nuclear accident can make a whole region uninhabitable for decades.",
         "Uranium mining harms the land and the workers near the mines.",
         "Nuclear energy gives a steady supply when the wind does not blow."]
QUESTION = Question("q1", "Should we build more nuclear power plants?",
                    ["Nuclear power is clean energy.", "Nuclear power is too dangerous."])


@pytest.fixture(scope="module")
def corpus():
    return corpus_from_passages([Passage(f"p{i}", f"t{i}", t) for i, t in enumerate(TEXTS)], "hits")


@pytest.fixture(autouse=True)
def _cache(tmp_path, monkeypatch):
    monkeypatch.setenv("BERDS_CACHE", str(tmp_path / "cache"))


@pytest.fixture(scope="module")
def dense(corpus, tmp_path_factory):
    mp = pytest.MonkeyPatch()
    mp.setenv("BERDS_CACHE", str(tmp_path_factory.mktemp("cache")))
    try:
        yield get_retriever("dense", corpus, progress=False)
    finally:
        mp.undo()


def test_hits_is_one_read_only_ranked_list():
    h = Hits(np.array([3, 1, 2]), np.array([0.5, 0.25, 0.25], np.float32))
    assert h.rows.dtype == np.int64 and h.scores.dtype == np.float64 and len(h) == 3 and h
    assert list(h) == [(3, 0.5), (1, 0.25), (2, 0.25)] and all(type(r) is int and type(s) is float for r, s in h)
    assert h[0] == (3, 0.5) and isinstance(h[1:], Hits) and h[1:] == [(1, 0.25), (2, 0.25)] and h.top(1) == [(3, 0.5)]
    assert h.take([2, 0]) == [(2, 0.25), (3, 0.5)] and h == Hits.of(list(h)) and h != [(3, 0.5)]
    assert Hits.of(h) is h and not Hits.empty() and Hits.empty() == [] and pickle.loads(pickle.dumps(h)) == h
    with pytest.raises(ValueError):
        h.rows[0] = 9  # read-only: a ranking handed on cannot be changed under its reader
    mine = np.array([4, 5])
    Hits(mine, [1.0, 2.0])
    mine[0] = 6  # the caller's own array stays writable
    with pytest.raises(ValueError, match="2 rows but 1 scores"):
        Hits([1, 2], [0.5])
    # then: the tail's rows not already there, in its order, up to k
    tail = Hits([1, 7, 3, 8], [0.2, 0.1, 0.05, 0.01])
    assert h.then(tail, 5) == [(3, 0.5), (1, 0.25), (2, 0.25), (7, 0.1), (8, 0.01)]
    assert h.then(tail, 2) == [(3, 0.5), (1, 0.25)] and h.then(Hits.empty(), 9) == h


def test_a_float32_score_is_written_as_before(corpus, dense):
    """Run files write ``float(score)``: a float32 score widens exactly, so no written score changes."""
    raw = np.asarray(dense.embeddings) @ dense.encode([QUESTION.question])[0]
    assert raw.dtype == np.float32
    entry = question_entry(QUESTION, corpus, dense.search([QUESTION.question], 3)[0])
    assert [c["score"] for c in entry["ctxs"]] == [float(raw[corpus.ids.index(c["id"])]) for c in entry["ctxs"]]
    assert ctxs_for(corpus, [(0, np.float32(0.1))])[0]["score"] == float(np.float32(0.1))  # pairs still read


def test_every_retriever_returns_hits(corpus, dense, tmp_path):
    bm25 = get_retriever("bm25", corpus, progress=False)
    tantivy = get_retriever("bm25", corpus, progress=False, engine="tantivy")
    hnsw = get_retriever("dense", corpus, progress=False, index="hnsw")
    x = np.asarray(dense.embeddings, np.float32)
    vectors = VectorShards(tmp_path / "vec", len(corpus), corpus.hash, "synthetic", shard_rows=5)
    for i in range(vectors.n_shards):
        a, b = vectors.bounds(i)
        vectors.write(i, x[a:b])
    vectors.finish(x.shape[1])
    with building(tmp_path / "idx", "dense index") as tmp:
        build_folder(tmp, vectors, plan_index("flat", len(corpus), x.shape[1], 1 << 30), corpus=corpus,
                     encoder={"model": None, "key": "synthetic"})
    folder = DenseIndex(tmp_path / "idx", corpus, vectors=vectors)
    queries = [QUESTION.question, "zoos and animals"]
    for r in (bm25, tantivy, dense, hnsw, SharedSearch(bm25), SharedSearch(dense, depth=3)):
        got = r.search(queries, 4)
        assert [type(h) for h in got] == [Hits, Hits], r.name
        assert all(len(h) <= 4 for h in got) and r.search(queries, 0) == [[], []] and r.search([], 3) == []
        assert all(type(h) is Hits for h in r.search(queries, 0))
    q = dense.encode(queries)
    assert [type(h) for h in dense.search_vectors(q, 3)] == [Hits, Hits]
    assert [type(h) for h in folder.search(q, 3)] == [Hits, Hits]
    assert [h.rows.tolist() for h in folder.search(q, 3)] == [h.rows.tolist() for h in dense.search_vectors(q, 3)]
    # ties stay broken by row: BM25 scores every passage without a query word 0, lowest rows first
    zeros = [r for r, s in bm25.search(["uranium"], len(corpus))[0] if s == 0]
    assert zeros == sorted(zeros) and len(zeros) >= 2


class Spy:
    """A retriever that hands out the wrapped one's Hits and keeps each one it handed out."""

    def __init__(self, inner):
        self.inner, self.given = inner, []

    def __getattr__(self, name):
        return getattr(self.inner, name)

    def search(self, queries, k):
        out = self.inner.search(queries, k)
        self.given += out
        return out

    def search_vectors(self, q, k):
        out = self.inner.search_vectors(q, k)
        self.given += out
        return out


@pytest.fixture
def no_pairs(monkeypatch):
    """Every way of turning a Hits into (row, score) pairs, made to fail: what runs under it builds no list of
    pairs from a ranking (today's code built one at five places between the retriever and the run line)."""
    def refuse(*_):
        raise AssertionError("a Hits was turned into (row, score) pairs on the way to the run line")

    monkeypatch.setattr(Hits, "__iter__", refuse)
    real = Hits.__getitem__
    monkeypatch.setattr(Hits, "__getitem__", lambda self, i: real(self, i) if isinstance(i, slice) else refuse())


@pytest.mark.parametrize("spec", ["none", "%5>>none", "%5>>mmr(lam=0.5)", "%4>>mmr(lam=0.5)",
                                  "%5>>coverage(probs=similarity,alpha=0.5,source=oracle)",
                                  "%5>>xquad(lam=0.5,source=oracle,probs=retriever)", "union>>mmr"])
def test_the_ranking_stays_one_hits_from_the_retriever_to_the_run_line(corpus, dense, spec, no_pairs):
    spy = Spy(dense)
    using = Using(other_retriever=get_retriever("bm25", corpus, progress=False))
    p = Pipeline.parse(spec)
    got = p.run(Query(QUESTION, corpus, spy, 6, max(p.depth, 6), using))
    assert type(got) is Hits and len(got) == 6 and len(set(got.rows.tolist())) == 6
    if spec == "none":
        assert got is spy.given[-1]  # a pipeline that does not reorder returns the retriever's own Hits
    else:
        assert all(type(h) is Hits for h in spy.given)
    entry = question_entry(QUESTION, corpus, got)
    assert [c["id"] for c in entry["ctxs"]] == [corpus.ids[r] for r in got.rows.tolist()]
    assert [c["score"] for c in entry["ctxs"]] == got.scores.tolist()
    assert type(diversify(QUESTION, corpus, dense, spec, 6, using=using)) is Hits


def test_candidates_and_fill_take_and_give_hits(corpus, dense, no_pairs):
    pool = candidate_pool(QUESTION.question, corpus, dense, 5)
    assert type(pool) is Hits and pool.rows.tolist() == dense.search([QUESTION.question], 5)[0].rows.tolist()
    union = candidate_pool(QUESTION.question, corpus, dense, 3, "union", get_retriever("bm25", corpus, progress=False))
    assert type(union) is Hits and np.all(np.diff(union.scores) <= 0)
    filled = fill(pool[:2], QUESTION.question, dense, 4, pool[2:])
    assert type(filled) is Hits and filled.rows.tolist() == pool.rows.tolist()[:4]
    searched = fill(pool[2:3], QUESTION.question, dense, 3)  # no tail given: one search for it
    assert searched.rows.tolist() == [pool.rows[2]] + [r for r in pool.rows.tolist() if r != pool.rows[2]][:2]


def test_the_none_pipeline_writes_the_retrievers_hits(corpus, dense, no_pairs):
    entries = run([QUESTION], "none", 3, Searched(corpus, dense))
    want = dense.search([QUESTION.question], 3)[0]
    assert [c["id"] for c in entries[0]["ctxs"]] == [corpus.ids[r] for r in want.rows.tolist()]
    assert [c["score"] for c in entries[0]["ctxs"]] == want.scores.tolist()
