"""xQuAD and PM-2 on hand-made probabilities, P(d | aspect) from a retriever, through diversify() and the CLI."""
import json

import numpy as np
import pytest

from berds_core.diversify import METHODS, Pipeline, Using, diversify, pm2, retrieval_probs, xquad
from berds_core.records import Question

from test_coverage_rerank import StubJudge, TEXTS, _retrieve, cli_files  # noqa: F401  (fixture)
from test_mmr import FakeCorpus, FakeRetriever

SCORES = np.array([1.0, 0.9, 0.8, 0.7])
# c0 serves aspect 0 only, c1 mostly 0, c2 only aspect 1, c3 both halfway
P = np.array([[1.0, 0.0], [0.8, 0.2], [0.0, 0.6], [0.5, 0.5]])


def xquad_textbook(scores, probs, k, lam):
    """xQuAD as Santos et al. write it, one candidate at a time (uniform P(a|q), P(d|q) = score / max)."""
    rel = np.asarray(scores, float) / max(scores)
    chosen = []
    for _ in range(min(k, len(rel))):
        best, best_val = None, None
        for d in range(len(rel)):
            if d in chosen:
                continue
            div = sum(probs[d][a] / probs.shape[1] * np.prod([1 - probs[s][a] for s in chosen])
                      for a in range(probs.shape[1]))
            val = (1 - lam) * rel[d] + lam * div
            if best is None or val > best_val + 1e-12 or (abs(val - best_val) <= 1e-12 and rel[d] > rel[best]):
                best, best_val = d, val
        chosen.append(best)
    return chosen


def test_xquad_hand_example():
    # lam 0.5, step 1: c0 .5 + .25*1 = .75, c1 .45 + .25 = .70, c2 .4 + .15 = .55, c3 .35 + .25 = .60 -> c0
    # step 2 (aspect 0 served): c1 .45 + .25*.2 = .50, c2 .4 + .25*.6 = .55, c3 .35 + .25*.5 = .475 -> c2
    # step 3 (aspect 1 left .4): c1 .45 + .25*.2*.4 = .47, c3 .35 + .25*.5*.4 = .40 -> c1
    assert xquad(SCORES, P, 4, lam=0.5) == [0, 2, 1, 3]
    assert xquad(SCORES, P, 4, lam=0.0) == [0, 1, 2, 3]  # relevance only
    assert xquad(SCORES, P, 4, lam=0.5) == xquad_textbook(SCORES, P, 4, 0.5)
    with pytest.raises(ValueError):
        xquad(SCORES, P, 2, lam=1.2)


@pytest.mark.parametrize("seed", range(4))
def test_xquad_kernel_equals_the_textbook_loop(seed):
    rng = np.random.default_rng(seed)
    scores = np.sort(rng.random(30))[::-1] + 0.01
    probs = rng.random((30, 3)) * (rng.random((30, 3)) < 0.4)
    for lam in (0.2, 0.5, 0.9):
        assert xquad(scores, probs, 8, lam) == xquad_textbook(scores, probs, 8, lam)


def test_pm2_hand_example():
    # lam 0.5, v = (.5, .5). Step 1: seats (0, 0), quotients (.5, .5), aspect 0 (first);
    #   obj = .25 P0 + .25 P1: c0 .25, c1 .25, c2 .15, c3 .25 -> tie, most relevant c0; seats (1, 0)
    # step 2: quotients (.5/3, .5/1) -> aspect 1; obj = .25 P1 + .0833 P0: c1 .1167, c2 .15, c3 .1667 -> c3;
    #   seats += (.5, .5) -> (1.5, .5)
    # step 3: quotients (.125, .25) -> aspect 1; obj = .125 P1 + .0625 P0: c1 .075, c2 .075 -> tie -> c1
    assert pm2(SCORES, P, 4, lam=0.5) == [0, 3, 1, 2]
    # lam 1: serve the aspect whose turn it is: c0 (aspect 0), c2 (aspect 1: .6 > .5), then aspect 0: c1
    assert pm2(SCORES, P, 4, lam=1.0) == [0, 2, 1, 3]
    # passages serving no aspect take no seat and go by relevance
    assert pm2(SCORES, np.zeros((4, 2)), 3) == [0, 1, 2]
    assert pm2(SCORES, np.zeros((4, 0)), 2) == [0, 1]
    # proportionality: weights (.75, .25) give aspect 0 three turns of four
    probs = np.array([[1, 0], [1, 0], [1, 0], [0, 1], [0, 1], [0, 1]], float)
    assert pm2(np.ones(6), probs, 4, lam=1.0, weights=[0.75, 0.25]) == [0, 1, 3, 2]
    with pytest.raises(ValueError):
        pm2(SCORES, P[:2], 2)


Q = Question("q1", "are cats great pets?", ["friends", "allergies"])
ASPECTS = ["loyal friends", "cause allergies"]


def test_retrieval_probs_min_max_per_aspect():
    corpus = FakeCorpus(TEXTS)
    ret = FakeRetriever(corpus)
    # "are cats great pets loyal friends": overlaps c1 6, c0 5, c2 4, c3 0, c4 0 -> (x - 0) / 6
    # "are cats great pets cause allergies": c2 6, c0 4, c1 4, c3 0, c4 0
    got = retrieval_probs(Q.question, ASPECTS, ret, [0, 1, 2, 3, 4], depth=5)
    assert got == pytest.approx(np.array([[5 / 6, 4 / 6], [1, 4 / 6], [4 / 6, 1], [0, 0], [0, 0]]))
    # depth 3: each aspect's own top 3 is the scale (min 4 -> 0); candidates beyond it get 0
    got = retrieval_probs(Q.question, ASPECTS, ret, [0, 1, 2], depth=3)
    assert got == pytest.approx(np.array([[0.5, 0.0], [1.0, 0.0], [0.0, 1.0]]))
    assert retrieval_probs(Q.question, ["", "  "], ret, [0, 1], depth=3).shape == (2, 0)


def test_diversify_xquad_and_pm2():
    corpus = FakeCorpus(TEXTS)
    ret = FakeRetriever(corpus)
    assert {"xquad", "pm2"} <= set(METHODS)
    assert [r for r, _ in diversify(Q, corpus, ret, "none", 2)] == [0, 1]  # two "friends" passages
    # relevance (1, 1, 1, 0, 0); P as in the test above. xQuAD lam .5: step 1 c0 .875, c1 = c2 = .9167 -> c1;
    # step 2 (friends nearly served, allergies 1/3 left): c0 .5556, c2 .5833 -> c2
    got = diversify(Q, corpus, ret, "%5>>xquad(lam=0.5)", 2, using=Using(perspectives=ASPECTS))
    assert [r for r, _ in got] == [1, 2]
    assert got[0][1] == 4.0  # scores stay the retriever's
    assert [r for r, _ in diversify(Q, corpus, ret, "%5>>pm2(lam=0.5)", 2, using=Using(perspectives=ASPECTS))] == [1, 2]
    assert [r for r, _ in diversify(Q, corpus, ret, "xquad(lam=0.0)", 2, using=Using(perspectives=ASPECTS))] == [0, 1]
    # aspects from a perspective source (oracle: the gold perspectives) and the tuned default lambda
    assert len(diversify(Q, corpus, ret, "xquad(source=oracle)", 3)) == 3
    # P(d | aspect) from a judge: c0, c1 support "friends", c2 "allergies"
    judge = StubJudge()
    got = diversify(Q, corpus, ret, "xquad(lam=0.5,probs=judge)", 2, judge=judge,
                    using=Using(perspectives=["friends", "allergies"]))
    assert [r for r, _ in got] == [0, 2] and judge.calls == 1
    with pytest.raises(ValueError, match="needs a judge"):
        diversify(Q, corpus, ret, "pm2(probs=judge)", 2, using=Using(perspectives=ASPECTS))
    with pytest.raises(ValueError, match="probs must be one of retriever, judge"):
        diversify(Q, corpus, ret, "pm2(probs=bogus)", 2, using=Using(perspectives=ASPECTS))
    assert [r for r, _ in diversify(Q, corpus, ret, "pm2", 2, using=Using(perspectives=[]))] == [0, 1]


@pytest.mark.slow
def test_cli_retrieve_xquad_and_pm2(cli_files, capsys):  # noqa: F811
    from berds_core.runs import read_run

    tmp, corpus, questions = cli_files
    for method in ("xquad", "pm2"):
        code, cap, out = _retrieve(capsys, tmp, corpus, questions, "--rerank", method, "--perspectives-from", "dataset",
                                   "--lambda", "0.8")
        assert code == 0, cap.err
        div = json.loads(cap.out)["diversify"]
        stage = Pipeline.parse(div["pipeline"]).stages[0]
        assert div["method"] == method and (stage.name, stage.lam, stage.source, stage.probs) == (
            method, 0.8, "dataset", "retriever")
        ids = [c["id"] for c in read_run(out)[0]["ctxs"]]
        # one bullying passage and the expression one, not the two bullying near-duplicates plain BM25 returns
        assert "u3" in ids and len(set(ids) & {"u1", "u2"}) == 1
    code, cap, out = _retrieve(capsys, tmp, corpus, questions, "--rerank", "xquad", "--aspect-probs", "judge",
                               "--rerank-judge", "embedded", "--perspectives-from", "dataset")
    assert code == 0, cap.err and json.loads(cap.out)["diversify"]["judge"] == "embedded"


@pytest.mark.parametrize("extra, field", [
    (["--rerank", "xquad", "--lambda", "1.5"], "--lambda"),
    (["--rerank", "pm2", "--alpha", "0.3"], "--alpha"),
    (["--rerank", "xquad", "--aspect-probs", "judge"], "--rerank-judge"),
    (["--rerank", "xquad", "--rerank-judge", "embedded"], "--rerank-judge"),
    (["--rerank", "coverage", "--lambda", "0.3"], "--lambda"),
    (["--lambda", "0.3"], "--lambda"),
])
def test_cli_retrieve_bad_xquad_options(cli_files, capsys, extra, field):  # noqa: F811
    tmp, corpus, questions = cli_files
    code, cap, out = _retrieve(capsys, tmp, corpus, questions, *extra)
    assert code == 2 and cap.out == "" and field in cap.err and cap.err.count("\n") == 1
    assert not out.exists()
