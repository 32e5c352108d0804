"""The side reader on stored vectors (issue 48, "pay for reading once"): the shipped weights load with their
shapes and training record, a passage's probabilities do not depend on the batch it is read in, each passage's
vector is read (and its reading computed) once per corpus, and the ``probs=index`` / ``reader=index`` options
through the pipeline and ``berds retrieve``."""
import json
import zlib

import numpy as np
import pytest

from berds_core.corpora.memory import corpus_from_passages
from berds_core.diversify import Using, diversify
from berds_core.diversify.coverage import coverage_rerank
from berds_core.diversify.index_sides import index_side_probs, passage_sides
from berds_core.diversify.stages import blend_relevance
from berds_core.records import Passage, Question
from berds_core.stance.side_reader import ARRAYS, WEIGHTS, SideReader, get_side_reader

DIM, RANK, HIDDEN = 8, 5, 4


def random_reader(seed=0) -> SideReader:
    g = np.random.default_rng(seed)
    shapes = {"V": (DIM, RANK), "c": (RANK,), "U": (DIM, RANK), "d": (RANK,), "W1": (3 * RANK, HIDDEN),
              "b1": (HIDDEN,), "W2": (HIDDEN, 3), "b2": (3,)}
    return SideReader(arrays={k: g.normal(size=shapes[k]) for k in ARRAYS}, meta={"version": f"test-{seed}"})


class CountingEmbedder:
    """A deterministic text -> unit vector map (an ``encode`` object, as the stages accept); counts texts."""

    def __init__(self):
        self.texts = []

    def encode(self, texts, **_):
        self.texts += list(texts)
        out = []
        for t in texts:
            v = np.random.default_rng(zlib.crc32(t.encode())).normal(size=DIM)  # not hash(): salted per process
            out.append(v / np.linalg.norm(v))
        return np.array(out, dtype=np.float32)


class Retriever:
    name = "stub"

    def __init__(self, n):
        self.n = n

    def search(self, queries, k):
        return [[(r, 1.0 - 0.01 * r) for r in range(min(k, self.n))] for _ in queries]


TEXTS = [f"passage number {i} about cats" for i in range(12)]
QUESTION = Question("q", "Should cats be pets?", ["yes", "no"])


@pytest.fixture
def corpus():
    return corpus_from_passages([Passage(f"p{i}", "", t) for i, t in enumerate(TEXTS)])


def test_the_shipped_reader_loads_with_its_shapes_and_record():
    r = get_side_reader()
    assert r is get_side_reader() and r.path == WEIGHTS
    assert r.dim == 384 and r.arrays["U"].shape == (384, r.rank) and r.arrays["W2"].shape[1] == 3
    assert r.meta["version"] == "side_reader_v1" and r.meta["excluded_fold"] is None and r.meta["examples"] > 10000
    assert "oof" in r.meta and "data" in r.meta
    g = np.random.default_rng(1)
    P = g.normal(size=(7, 384))
    P /= np.linalg.norm(P, axis=1, keepdims=True)
    out = r.probs(P, P[0], P[1])
    assert out.shape == (7, 3) and np.allclose(out.sum(axis=1), 1.0) and (out >= 0).all()


def test_bad_weights_files_say_what_is_wrong(tmp_path):
    with pytest.raises(FileNotFoundError, match="side reader weights not found"):
        SideReader(tmp_path / "none.npz")
    np.savez(tmp_path / "other.npz", V=np.zeros((2, 2)), meta=json.dumps({}))
    with pytest.raises(ValueError, match="not a side reader weights file"):
        SideReader(tmp_path / "other.npz")
    arrays = dict(random_reader().arrays, W2=np.zeros((HIDDEN + 1, 3)))
    with pytest.raises(ValueError, match="inconsistent side reader shapes"):
        SideReader(arrays=arrays)
    with pytest.raises(ValueError, match="dimension"):
        random_reader().question_side(np.zeros(DIM + 1), np.zeros(DIM + 1))


def test_the_same_probabilities_in_any_batch():
    r = random_reader()
    g = np.random.default_rng(2)
    P, y, n = g.normal(size=(33, DIM)), g.normal(size=DIM), g.normal(size=DIM)
    whole = r.probs(P, y, n)
    assert np.array_equal(np.vstack([r.probs(P[i:i + 1], y, n) for i in range(len(P))]), whole)
    assert np.array_equal(np.vstack([r.probs(P[i:i + 5], y, n) for i in range(0, len(P), 5)]), whole)
    assert np.array_equal(r.probs(P[::-1], y, n), whole[::-1])
    # swapping the side statements swaps nothing else: the reading is a function of (passage, yes, no)
    assert not np.array_equal(r.probs(P, n, y), whole)


def test_each_passage_is_read_once_per_corpus(corpus):
    r, emb = random_reader(), CountingEmbedder()
    first = index_side_probs(QUESTION.question, corpus, [0, 1, 2, 3], emb, None, r)
    again = index_side_probs(QUESTION.question, corpus, [2, 3, 4, 0], emb, None, r)
    cache = passage_sides(r, corpus, emb)
    assert cache.computed == 5 and sorted(cache.rows) == [0, 1, 2, 3, 4]
    passages_read = [t for t in emb.texts if t in TEXTS]
    assert sorted(passages_read) == sorted(TEXTS[:5])  # each stored vector fetched once
    assert np.array_equal(again[[0, 1, 3]], first[[2, 3, 0]])
    assert index_side_probs("", corpus, [0], emb, None, r) is None  # no side statements: nothing to read


def test_coverage_probs_index_is_the_coverage_reranker_on_the_readers_probabilities(corpus):
    r, emb = random_reader(3), CountingEmbedder()
    ret = Retriever(len(corpus))
    got = [row for row, _ in diversify(QUESTION, corpus, ret, "%10>>coverage(probs=index,alpha=0.2,mix=0.5)", 5,
                                       using=Using(embedder=emb, side_reader=r))]
    rows = list(range(10))
    P = index_side_probs(QUESTION.question, corpus, rows, emb, None, r)
    scores = np.array([1.0 - 0.01 * i for i in rows])
    want = coverage_rerank(blend_relevance(scores, P, 0.5), P[:, :2], 5, 0.2)
    assert got == want and len(set(got)) == 5


def test_rvr_reader_index_runs_no_network(corpus, monkeypatch):
    import berds_core.diversify.stages.context as context

    monkeypatch.setattr(context, "get_stance_model", lambda: (_ for _ in ()).throw(AssertionError("network")))
    r, emb = random_reader(4), CountingEmbedder()
    ret = Retriever(len(corpus))
    spec = "%10>>rvr(reader=index,read=5,depth=8,threshold=0.0,add=2)"
    out = [row for row, _ in diversify(QUESTION, corpus, ret, spec, 6, using=Using(embedder=emb, side_reader=r))]
    again = [row for row, _ in diversify(QUESTION, corpus, ret, spec, 6, using=Using(embedder=emb, side_reader=r))]
    assert out == again and len(out) == 6 and len(set(out)) == 6


def test_cli_retrieve_with_probs_index(tmp_path, monkeypatch, capsys):
    """``berds retrieve --pipeline 'dense%20>>coverage(probs=index,...)'`` with the shipped reader on a tiny
    corpus; a bad option value is one line and exit 2."""
    from berds_core.cli import main
    from berds_core.runs import read_run

    monkeypatch.setenv("BERDS_CACHE", str(tmp_path / "cache"))
    corpus, questions = tmp_path / "corpus.jsonl", tmp_path / "questions.jsonl"
    texts = ["Cats make loyal, calm companions at home.", "Cats should not be pets: they kill wild birds.",
             "Keeping cats indoors harms their welfare.", "Cats reduce stress for their owners.",
             "The weather is mild today.", "Pet cats are a joy to live with."]
    corpus.write_text("".join(json.dumps({"id": f"c{i}", "title": "", "text": t}) + "\n"
                              for i, t in enumerate(texts)), encoding="utf-8")
    questions.write_text(json.dumps({"id": "q", "question": "Should cats be pets?",
                                     "perspectives": ["yes", "no"]}) + "\n", encoding="utf-8")
    bad = tmp_path / "bad.jsonl"
    assert main(["retrieve", "--questions", str(questions), "--corpus", str(corpus), "--out", str(bad),
                 "--pipeline", "dense>>coverage(probs=vectors)"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "probs must be one of" in err and not bad.exists()
    out = tmp_path / "run.jsonl"
    for spec in ("dense%20>>coverage(probs=index,alpha=0.2)", "dense>>rvr(reader=index,read=3,depth=5)"):
        assert main(["retrieve", "--questions", str(questions), "--corpus", str(corpus), "--out", str(out),
                     "--k", "4", "--pipeline", spec, "--encoding", "fp32", "--json", "--quiet"]) == 0
        capsys.readouterr()
        (entry,) = read_run(out)
        ids = [c["id"] for c in entry["ctxs"]]
        assert len(ids) == 4 and len(set(ids)) == 4
    # the flags say the same: --rerank coverage --rerank-probs index ranks as its pipeline does
    runs = {}
    for name, argv in (("flags", ["--retriever", "dense", "--rerank", "coverage", "--rerank-probs", "index",
                                  "--candidates", "20", "--alpha", "0.2"]),
                       ("spec", ["--pipeline", "dense%20>>coverage(probs=index,alpha=0.2)"])):
        path = tmp_path / f"{name}.jsonl"
        assert main(["retrieve", "--questions", str(questions), "--corpus", str(corpus), "--out", str(path),
                     "--k", "4", "--encoding", "fp32", "--json", "--quiet", *argv]) == 0
        runs[name] = json.loads(capsys.readouterr().out)
        runs[name]["ids"] = [c["id"] for c in read_run(path)[0]["ctxs"]]
    assert runs["flags"]["ids"] == runs["spec"]["ids"]
    assert "coverage(probs=index" in runs["flags"]["diversify"]["pipeline"]


def test_corpora_opened_and_evicted_from_many_threads_at_once(monkeypatch):
    """Two page sessions opening a fifth corpus at once both evict the oldest: unlocked, the second pop of
    the same key raised KeyError. A cache whose pop yields to other threads makes that interleaving likely."""
    import threading
    import time

    import berds_core.diversify.index_sides as index_sides

    class SlowPop(dict):
        def pop(self, key, *default):
            time.sleep(0.002)  # another thread runs between choosing the oldest key and removing it
            return super().pop(key, *default)

    r, emb = random_reader(), CountingEmbedder()
    monkeypatch.setattr(r, "readings", SlowPop())

    class Corpus:
        def __init__(self, h):
            self.hash = h

    errors, got = [], {}

    def open_many(t):
        try:
            for i in range(12):
                c = Corpus(f"c{t}-{i}")
                got[(t, i)] = passage_sides(r, c, emb).reader is r
        except Exception as e:  # noqa: BLE001 - the test reports what a thread raised
            errors.append(repr(e))

    threads = [threading.Thread(target=open_many, args=(t,)) for t in range(6)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert errors == []
    assert all(got.values()) and len(got) == 72  # every thread got its corpus's cache
    assert len(r.readings) <= index_sides._MAX_CORPORA  # the readings are kept on the reader, a few corpora


class _Stance:
    """A stance model stand-in: fixed P(yes), P(no), P(off) per passage; records what it reads."""

    def __init__(self, n, seed=7):
        self.P = np.random.default_rng(seed).dirichlet([1, 1, 1], n)
        self.read, self.batched = [], []

    def sides(self, question, passages, max_length=None):
        assert max_length == 112
        self.read += list(passages)
        return np.array([self.P[TEXTS.index(p)] for p in passages])

    def encode(self, pairs, progress=False, max_length=None):
        self.batched += [p for _, p in pairs]


def test_the_side_reader_shortlists_and_the_stance_model_verifies_only_what_it_reads(corpus):
    """``coverage(probs=index)`` then ``coverage(probs=model,read=4)``: the side reader orders the candidates
    by coverage, the stance model reads only the first 4 of that order and re-ranks them, the rest follow (the
    bench's shortlist row, ``bench/diversity.py``)."""
    from berds_core.diversify import Pipeline

    r, emb, stance = random_reader(5), CountingEmbedder(), _Stance(len(TEXTS))
    ret = Retriever(len(corpus))
    spec = "%12>>coverage(probs=index,alpha=0.3)>>coverage(probs=model,alpha=0.1,keep=1,mix=0.5,tokens=112,read=4)"
    using = Using(embedder=emb, side_reader=r, stance_model=stance)
    got = [row for row, _ in diversify(QUESTION, corpus, ret, spec, 8, using=using)]
    rows = list(range(12))
    scores = np.array([1.0 - 0.01 * i for i in rows])
    R = index_side_probs(QUESTION.question, corpus, rows, emb, None, r)
    first = coverage_rerank(scores, R[:, :2], 8, 0.3)
    P = stance.P[first[:4]]
    head = coverage_rerank(blend_relevance(scores[first[:4]], P, 0.5), P[:, :2], 4, 0.1, keep=1)
    assert got == [first[i] for i in head] + first[4:8]
    assert sorted(stance.read) == sorted(TEXTS[i] for i in first[:4])  # four reads, the side reader's first four
    assert first[:4] != rows[:4]  # (the side reader did move something into the reads)
    # batched ahead of the loop: only the first `read` of the retriever's order when nothing reorders before it;
    # after the side reader (vector operations), the side reader's first `read` when the run's k is known
    # (the stages before it rank to k), nothing when it is not
    Pipeline.parse("%12>>coverage(probs=model,tokens=112,read=4)").prefetch([QUESTION], corpus, ret, using, False)
    assert stance.batched == TEXTS[:4]
    Pipeline.parse(spec).prefetch([QUESTION], corpus, ret, using, False)
    assert stance.batched == TEXTS[:4]
    stance.batched = []
    Pipeline.parse(spec).prefetch([QUESTION], corpus, ret, using, False, k=8)
    assert stance.batched == [TEXTS[i] for i in first[:4]]  # what the loop reads, in one batch
    # a stage before it that calls the stance model per candidate is not run twice: it reads per question
    stance.batched = []
    Pipeline.parse("%12>>coverage(probs=model,tokens=112)>>coverage(probs=model,tokens=112,read=4)").prefetch(
        [QUESTION], corpus, ret, using, False, k=8)
    assert stance.batched == TEXTS[:12]  # the first stage's batch only
    # without read, it batches every candidate (what it reads is among them, whatever the stages before it do)
    stance.batched = []
    Pipeline.parse("%12>>coverage(probs=index)>>coverage(probs=model,tokens=112)").prefetch(
        [QUESTION], corpus, ret, using, False, k=8)
    assert stance.batched == TEXTS[:12]
    with pytest.raises(Exception, match="read is for probs=model"):
        Pipeline.parse("%12>>coverage(probs=index,read=4)")
