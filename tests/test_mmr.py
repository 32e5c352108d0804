"""MMR pinned on hand-made examples, and the vectorised kernel against the textbook loop."""
import numpy as np
import pytest

from berds_core.diversify import METHODS, diversify, mmr, mmr_reference, normalize_scores
from berds_core.records import Passage, Question

# c0 and c1 are near-duplicates, c2 is different, c3 is a weaker near-duplicate of c2
EMB = np.array([[1.0, 0.0, 0.0], [1.0, 0.05, 0.0], [0.0, 1.0, 0.0], [0.0, 1.0, 0.1]])
SCORES = np.array([10.0, 9.0, 8.0, 5.0])


def test_mmr_hand_example():
    # lam 0.5: first the best (c0); then c1 = .5*.9 - .5*cos(c1,c0)~.999 < 0 while c2 = .5*.8 - 0 = .4
    assert mmr(SCORES, EMB, 2, lam=0.5) == [0, 2]
    # third: c1: .45 - .5*.9988 = -.049; c3: .25 - .5*.995 = -.2475 -> c1
    assert mmr(SCORES, EMB, 4, lam=0.5) == [0, 2, 1, 3]
    # lam 0.95: relevance dominates, c1 (0.855 - 0.05*0.9988 = 0.805) beats c2 (0.76)
    assert mmr(SCORES, EMB, 2, lam=0.95) == [0, 1]


def test_mmr_lambda_extremes():
    assert mmr(SCORES, EMB, 4, lam=1.0) == [0, 1, 2, 3]
    # lam 0: the first pick is a full tie (all objectives 0) -> lowest rank; then pure novelty
    assert mmr(SCORES, EMB, 2, lam=0.0) == [0, 2]


def test_mmr_ties_go_to_lowest_original_rank():
    emb = np.array([[1.0, 0.0], [0.0, 1.0], [0.0, 1.0], [1.0, 0.0]])
    scores = np.array([1.0, 0.5, 0.5, 0.5])
    # c1, c2, c3 tie on relevance; c1 and c2 are orthogonal to c0, c3 a duplicate
    # after c0, c1: c2 duplicates c1 and c3 duplicates c0 -> equal objectives -> c2 (lower rank)
    assert mmr(scores, emb, 3, lam=0.5) == [0, 1, 2]
    assert mmr_reference(scores, emb, 3, lam=0.5) == [0, 1, 2]
    # identical candidates: exact ties everywhere -> rank order
    assert mmr(np.ones(5), np.ones((5, 3)), 5, lam=0.7) == [0, 1, 2, 3, 4]


def test_sim1_is_score_over_max_and_scale_free():
    assert normalize_scores([4.0, 2.0, 1.0]).tolist() == [1.0, 0.5, 0.25]
    # negative scores (distances): min-max, order kept
    assert normalize_scores([-1.0, -2.0, -3.0]).tolist() == [1.0, 0.5, 0.0]
    assert normalize_scores([2.0, 2.0]).tolist() == [1.0, 1.0]
    assert mmr(SCORES * 37.0, EMB, 4, lam=0.5) == mmr(SCORES, EMB, 4, lam=0.5)


def test_mmr_k_bounds_and_errors():
    assert mmr(SCORES, EMB, 10, lam=0.5) == [0, 2, 1, 3]  # k > n: all candidates
    assert mmr(SCORES, EMB, 0) == []
    assert mmr([], np.zeros((0, 3)), 5) == []
    with pytest.raises(ValueError):
        mmr(SCORES, EMB, 2, lam=1.5)
    with pytest.raises(ValueError):
        mmr(SCORES, EMB[:3], 2)


@pytest.mark.parametrize("seed", range(5))
def test_vectorised_equals_reference(seed):
    rng = np.random.default_rng(seed)
    scores = np.sort(rng.random(40))[::-1] * 20
    emb = rng.normal(size=(40, 8))
    for lam in (0.3, 0.75, 0.9):
        assert mmr(scores, emb, 10, lam) == mmr_reference(scores, emb, 10, lam)


# --- through the engine API --------------------------------------------

class FakeCorpus:
    def __init__(self, texts):
        self.passages = [Passage(str(i), "", t) for i, t in enumerate(texts)]
        self.hash = "fake-" + str(abs(hash(tuple(texts))))

    def __len__(self):
        return len(self.passages)

    def __getitem__(self, i):
        return self.passages[i]


class FakeRetriever:
    """Scores by word overlap; ties by row (deterministic)."""
    name = "overlap"

    def __init__(self, corpus):
        self.corpus = corpus

    def search(self, queries, k):
        out = []
        for q in queries:
            qw = set(q.lower().replace("?", "").split())
            sc = [(i, float(len(qw & set(p.text.lower().split())))) for i, p in enumerate(self.corpus.passages)]
            sc.sort(key=lambda t: (-t[1], t[0]))
            out.append(sc[:k])
        return out


class BagEmbedder:
    """Bag-of-words 'embedder' with an encode() like SentenceTransformer's."""
    def __init__(self, vocab):
        self.vocab = {w: i for i, w in enumerate(vocab)}

    def encode(self, texts, **kw):
        out = np.zeros((len(texts), len(self.vocab)))
        for r, t in enumerate(texts):
            for w in t.lower().split():
                if w in self.vocab:
                    out[r, self.vocab[w]] += 1
        n = np.linalg.norm(out, axis=1, keepdims=True)
        return out / np.where(n > 0, n, 1)


TEXTS = ["cats are great pets and great friends", "cats are great pets and loyal friends",
         "cats cause allergies and shed fur", "dogs bark", "fish swim"]


def test_diversify_mmr_uses_embedder_and_candidates():
    corpus = FakeCorpus(TEXTS)
    ret = FakeRetriever(corpus)
    emb = BagEmbedder("cats are great pets and friends loyal cause allergies shed fur dogs bark fish swim".split())
    q = Question("q1", "are cats great pets?", ["yes", "no"])
    plain = diversify(q, corpus, ret, "none", 2)
    assert [r for r, _ in plain] == [0, 1]
    got = diversify(q, corpus, ret, "%3>>mmr(lam=0.3)", 2, embedder=emb)
    assert [r for r, _ in got] == [0, 2]  # the near-duplicate c1 gives way to the allergy passage
    # from the whole corpus, the unrelated (score 0) but novel passages win at this lambda
    assert [r for r, _ in diversify(q, corpus, ret, "mmr(lam=0.3)", 2, embedder=emb)] == [0, 3]
    assert got[0][1] == plain[0][1]  # scores are the retriever's
    assert [r for r, _ in diversify(q, corpus, ret, "mmr(lam=1.0)", 2, embedder=emb)] == [0, 1]
    with pytest.raises(ValueError):
        diversify(q, corpus, ret, "bogus", 2)
    assert set(METHODS) >= {"none", "mmr", "qe", "coverage", "preset"}
