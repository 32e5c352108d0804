"""bench/diversity.py's selection rule (what every fold's knobs are chosen by): the best macro MRecall@5
among settings whose Precision@5 is not below plain dense's on any corpus; then the macro fallback."""
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
from diversity import select  # noqa: E402

CORPORA = np.array(["a", "a", "b", "b"])


def _setting(mr, p):
    """settings rows: questions x (MR@5, P@5, MR@10, P@10) from per-question MR@5 and P@5 lists."""
    return np.array([[m, q, m, q] for m, q in zip(mr, p)], dtype=float)


def test_select_needs_precision_on_every_corpus():
    dense = _setting([0, 0, 0, 0], [0.5, 0.5, 0.5, 0.5])
    s_loses_b = _setting([1, 1, 1, 1], [0.9, 0.9, 0.3, 0.3])    # best MRecall, macro P up, corpus b's P down
    s_holds = _setting([1, 0, 1, 0], [0.5, 0.5, 0.5, 0.5])      # less MRecall, no corpus loses precision
    s_holds_more = _setting([1, 1, 1, 0], [0.6, 0.5, 0.5, 0.5])
    S = np.stack([s_loses_b, s_holds, s_holds_more])
    idx = np.arange(4)
    assert select(S, dense, CORPORA, idx) == 2
    # on corpus a alone, the first setting is fine
    assert select(S, dense, CORPORA, np.array([0, 1])) == 0


def test_select_falls_back_to_macro_precision_then_to_the_sum():
    dense = _setting([0, 0, 0, 0], [0.5, 0.5, 0.5, 0.5])
    s1 = _setting([1, 1, 1, 1], [0.9, 0.9, 0.3, 0.3])   # macro P 0.6 >= 0.5: allowed by the fallback
    s2 = _setting([1, 1, 0, 0], [0.4, 0.4, 0.4, 0.4])   # every P down
    assert select(np.stack([s2, s1]), dense, CORPORA, np.arange(4)) == 1
    s3 = _setting([0, 0, 0, 0], [0.45, 0.45, 0.45, 0.45])
    # nothing keeps precision: best MRecall@5 + Precision@5 (s2: 0.5 + 0.4 against s3: 0 + 0.45)
    assert select(np.stack([s3, s2]), dense, CORPORA, np.arange(4)) == 1


def test_select_ties_go_to_the_first_setting():
    dense = _setting([0, 0, 0, 0], [0.5, 0.5, 0.5, 0.5])
    s = _setting([1, 0, 1, 0], [0.5, 0.5, 0.5, 0.5])
    assert select(np.stack([s, s.copy()]), dense, CORPORA, np.arange(4)) == 0


def test_the_bench_row_ranks_as_the_product_does():
    """The stance-model row of the bench and ``diversify(..., "%N>>coverage(probs=model,...)")`` (the preset's path)
    give the same top 10 for the same candidates and stance probabilities, at every keep / alpha / mix."""
    from diversity import K, QuestionCtx, _stance_model

    from berds_core.corpora.memory import corpus_from_passages
    from berds_core.diversify import Using, diversify
    from berds_core.records import Passage, Question

    rng = np.random.default_rng(3)
    n = 30
    scores = np.sort(rng.uniform(0.2, 0.9, n))[::-1]
    probs = rng.dirichlet([1, 1, 1], n)
    corpus = corpus_from_passages([Passage(str(i), "", f"passage {i}") for i in range(n)])

    class Retriever:
        name = "list"

        def search(self, queries, k):
            return [[(i, float(scores[i])) for i in range(min(k, n))] for _ in queries]

    class Stance:
        def sides(self, question, passages):
            return np.array([probs[int(p.split()[-1])] for p in passages])

    qc = QuestionCtx(corpus=None, question=None, fold=0, dense_rows=np.arange(n), dense_scores=scores,
                     bm25_rows=np.arange(n), bm25_scores=scores, qv=np.zeros(1),
                     stance={i: probs[i] for i in range(n)})
    q = Question("q", "Is it so?", ["yes", "no"])
    for keep in (0, 2):
        for alpha in (0.1, 0.5):
            for mix in (0.0, 1.0):
                for cands in (10, 20):
                    bench = [int(r) for r in _stance_model(qc, "dense", cands, alpha, mix, keep)]
                    product = [r for r, _ in diversify(q, corpus, Retriever(),
                                                       f"%{cands}>>coverage(probs=model,alpha={alpha},mix={mix},"
                                                       f"keep={keep})", K, using=Using(stance_model=Stance()))]
                    assert bench == product, (keep, alpha, mix, cands)


def test_the_oracle_row_covers_every_perspective_it_can():
    """The oracle re-ranker of the dense top N puts one passage per perspective first (dense order), then the
    other supporting passages, then the rest: MRecall@5 and Precision@5 at the ceiling of re-ranking N."""
    from diversity import QuestionCtx, _oracle

    from berds_core.eval.measures import mrecall_at_k, precision_at_k

    n = 12
    labels = np.zeros((n, 2), bool)
    labels[[0, 1, 2], 0] = True  # the dense top 3 all argue side 0
    labels[9, 1] = True  # side 1 first appears at dense rank 10
    labels[11, 1] = True  # and at rank 12: outside a top-10 oracle
    qc = QuestionCtx(corpus=None, question=None, fold=0, dense_rows=np.arange(n), dense_scores=np.linspace(1, 0, n),
                     bm25_rows=np.arange(n), bm25_scores=np.zeros(n), qv=np.zeros(1))
    qc.labels = lambda rows: labels[np.asarray(rows, int)]
    top = _oracle(qc, 10)
    assert top[:2].tolist() == [0, 9] and top[2:4].tolist() == [1, 2] and len(top) == 10
    L = labels[top]
    assert mrecall_at_k(L, 5) == 1 and precision_at_k(L, 5) == 4 / 5
    assert mrecall_at_k(labels[:10], 5) == 0  # plain dense misses side 1 in its top 5


def _fake_question(n=30, seed=3):
    """A bench context over n candidates in dense order, its stance probabilities at the preset's cut
    (``stance_at``) and its side reader's (``side_read``), with the product's pieces reading the same."""
    from diversity import QuestionCtx

    from berds_core.corpora.memory import corpus_from_passages
    from berds_core.records import Passage

    rng = np.random.default_rng(seed)
    scores = np.sort(rng.uniform(0.2, 0.9, n))[::-1]
    probs = rng.dirichlet([1, 1, 1], n)
    side = rng.dirichlet([1, 1, 1], n)
    corpus = corpus_from_passages([Passage(str(i), "", f"passage {i}") for i in range(n)])
    qc = QuestionCtx(corpus=None, question=None, fold=0, dense_rows=np.arange(n), dense_scores=scores,
                     bm25_rows=np.arange(n), bm25_scores=scores, qv=np.zeros(1),
                     stance_at={(112, i): probs[i] for i in range(n)}, side_read={i: side[i] for i in range(n)})
    return qc, corpus, scores, probs


def test_a_ranking_of_fewer_than_k_is_filled_with_dense_order_as_the_product_fills_it():
    """The preset's row re-ranks the dense top 6; ``berds retrieve`` puts dense's next passages below them
    (``pipeline.fill``), and so does the bench now (its @10 figures counted ranks 7-10 as empty before)."""
    from diversity import K, _budget_preset, filled

    from berds_core.diversify import Using, diversify
    from berds_core.records import Question

    qc, corpus, scores, probs = _fake_question()

    class Retriever:
        name = "list"

        def search(self, queries, k):
            return [[(i, float(scores[i])) for i in range(min(k, len(scores)))] for _ in queries]

    class Stance:
        def sides(self, question, passages, max_length=None):
            assert max_length == 112
            return np.array([probs[int(p.split()[-1])] for p in passages])

    q = Question("q", "Is it so?", ["yes", "no"])
    for alpha in (0.1, 0.5):
        for mix in (0.5, 1.0):
            six = _budget_preset(qc, (6, 112), alpha, mix)
            assert len(six) == 6
            bench = filled(qc, six).tolist()
            assert len(bench) == K and bench[6:] == [r for r in range(30) if r not in set(six.tolist())][:4]
            product = [r for r, _ in diversify(q, corpus, Retriever(),
                                               f"%6>>coverage(probs=model,alpha={alpha},mix={mix},tokens=112)", K,
                                               using=_using(Stance()))]
            assert bench == product, (alpha, mix)
    assert filled(qc, np.arange(12)).tolist() == list(range(K))  # a full ranking is only cut


def _using(stance):
    from berds_core.diversify.stages import Using

    return Using(stance_model=stance)


def test_the_shortlist_row_reads_only_its_budget_and_brings_in_the_side_readers_picks():
    """The shortlist row: the side reader orders the dense top N by coverage, the stance model reads only the
    first ``budget[0]`` of that order (a read outside it is a KeyError here), the rest follow; with the side
    reader's relevance weight 1 its order is dense's and the row is the preset's row."""
    from diversity import K, _budget_preset, _shortlist, filled

    qc, *_ = _fake_question()
    # the side reader sees every candidate of the dense top 20 on the yes side except rank 15, on the no side
    qc.side_read = {i: np.array([0.9, 0.05, 0.05]) for i in range(30)}
    qc.side_read[15] = np.array([0.05, 0.9, 0.05])
    read = {(112, i): qc.stance_at[(112, i)] for i in range(30)}
    for first_alpha in (0.3, 1.0):
        qc.memo.clear()
        picked = _shortlist(qc, 20, first_alpha, (6, 112), 0, 0.1, 0.5)
        assert len(picked) == K
        order = qc.memo[("shortlist", 20, first_alpha)][0]
        qc.stance_at = {(112, int(r)): read[(112, int(r))] for r in order[:6]}  # only what it may read
        assert _shortlist(qc, 20, first_alpha, (6, 112), 0, 0.1, 0.5).tolist() == picked.tolist()
        assert sorted(picked[:6].tolist()) == sorted(order[:6].tolist())
        assert picked[6:].tolist() == order[6:K].tolist()
        qc.stance_at = read
        # the side reader's pick from rank 15 is read (and with relevance weight 1, dense's top 6 are)
        assert (15 in order[:6].tolist()) == (first_alpha < 1.0)
    assert _shortlist(qc, 20, 1.0, (6, 112), 0, 0.1, 0.5).tolist() == \
        filled(qc, _budget_preset(qc, (6, 112), 0.1, 0.5)).tolist()
