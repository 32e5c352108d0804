"""The perspective-coverage re-ranker on hand-made probabilities, and presets."""
import numpy as np
import pytest

from berds_core.diversify import PRESETS, Using, coverage_rerank, diversify, get_preset, similarity_probs
from berds_core.records import Question

from test_mmr import BagEmbedder, FakeCorpus, FakeRetriever

SCORES = np.array([1.0, 0.95, 0.9, 0.6, 0.5])
# the top three all support perspective 0; only candidate 3 supports perspective 1
PROBS = np.array([[0.9, 0.0], [0.9, 0.0], [0.8, 0.1], [0.0, 0.9], [0.1, 0.1]])


def test_greedy_coverage_pulls_up_the_uncovered_perspective():
    assert coverage_rerank(SCORES, PROBS, 2, alpha=0.5) == [0, 3]
    # after both are covered (uncovered mass ~0.01 and ~0.09), relevance decides
    assert coverage_rerank(SCORES, PROBS, 4, alpha=0.5) == [0, 3, 1, 2]


def test_alpha_one_is_the_retriever_order_alpha_zero_pure_coverage():
    assert coverage_rerank(SCORES, PROBS, 5, alpha=1.0) == [0, 1, 2, 3, 4]
    # pure coverage, first pick: expected gains .45, .45, .45, .45, .1 -> tie -> most relevant (0)
    assert coverage_rerank(SCORES, PROBS, 2, alpha=0.0) == [0, 3]


def test_ties_broken_by_relevance_then_rank():
    scores = np.array([0.5, 0.9, 0.9, 0.2])
    probs = np.zeros((4, 2))
    # all objectives tie at alpha 0 -> relevance order, equal relevance -> lower index
    assert coverage_rerank(scores, probs, 4, alpha=0.0) == [1, 2, 0, 3]


def test_expected_coverage_is_probabilistic():
    # expected gains: 0.25, 0.25, 0.3 -> candidate 2 first; then 0 (0.25) before 1 (same gain, lower rank)
    probs = np.array([[0.5, 0.0], [0.5, 0.0], [0.0, 0.6]])
    assert coverage_rerank(np.ones(3), probs, 3, alpha=0.0) == [2, 0, 1]
    # weights: perspective 0 matters 9x more
    assert coverage_rerank(np.ones(3), probs, 2, alpha=0.0, weights=[0.9, 0.1]) == [0, 1]


def test_keep_fixes_the_retrievers_top_and_counts_what_it_covers():
    # keep 0: the uncovered perspective comes second
    assert coverage_rerank(SCORES, PROBS, 3, alpha=0.5, keep=0) == [0, 3, 1]
    # keep 2: candidates 0 and 1 stay first, then the greedy picks candidate 3 for perspective 1
    assert coverage_rerank(SCORES, PROBS, 3, alpha=0.5, keep=2) == [0, 1, 3]
    # what the kept ones cover counts: candidate 0 (kept) covers perspective 1, so the next pick is
    # candidate 2 (perspective 0, objective .3 * .9 + .35 * .9 = .585), not candidate 1 (perspective 1
    # again: .3 * .95 + .35 * .9 * .1 = .317; it would win with .6 if the kept coverage were ignored)
    probs = np.array([[0.0, 0.9], [0.0, 0.9], [0.9, 0.0], [0.0, 0.0], [0.0, 0.0]])
    assert coverage_rerank(SCORES, probs, 3, alpha=0.3, keep=1) == [0, 2, 1]
    # keep >= k: the retriever's order
    assert coverage_rerank(SCORES, PROBS, 3, alpha=0.0, keep=5) == [0, 1, 2]
    with pytest.raises(ValueError):
        coverage_rerank(SCORES, PROBS, 3, keep=-1)


def test_bad_input():
    with pytest.raises(ValueError):
        coverage_rerank(SCORES, PROBS[:3], 2)
    with pytest.raises(ValueError):
        coverage_rerank(SCORES, PROBS, 2, alpha=-0.1)
    assert coverage_rerank(SCORES, np.zeros((5, 0)), 3) == [0, 1, 2]
    assert coverage_rerank([], np.zeros((0, 2)), 3) == []


def test_similarity_probs_soft_assignment():
    cand = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    persp = np.array([[1.0, 0.0], [0.0, 1.0]])
    P = similarity_probs(cand, persp, temperature=0.05)
    assert np.allclose(P.sum(axis=1), 1.0)
    assert P[0, 0] > 0.99 and P[1, 1] > 0.99 and np.allclose(P[2], [0.5, 0.5])
    assert similarity_probs(cand, np.zeros((0, 2))).shape == (3, 0)


class StubJudge:
    """A judge with the shared interface: probability = 1 when the perspective's key word is in the passage."""
    name = "stub"

    def __init__(self):
        self.calls = 0

    def predict(self, pairs):
        self.calls += 1
        probs = np.array([1.0 if p.split()[0] in t else 0.0 for t, p in pairs])
        return probs, probs >= 0.5


TEXTS = ["cats are great pets and great friends", "cats are great pets and loyal friends",
         "cats are great pets but cause allergies", "dogs bark", "fish swim"]
Q = Question("q1", "are cats great pets?", ["friends: cats are friends", "allergies: cats cause allergies"])


def test_diversify_coverage_with_a_judge():
    corpus = FakeCorpus(TEXTS)
    ret = FakeRetriever(corpus)
    judge = StubJudge()
    got = diversify(Q, corpus, ret, "coverage", 2, judge=judge, using=Using(perspectives=["friends", "allergies"]))
    assert [r for r, _ in got] == [0, 2]
    assert judge.calls == 1
    # without perspectives there is nothing to cover: retriever order
    assert [r for r, _ in diversify(Q, corpus, ret, "coverage", 2, judge=judge, using=Using(perspectives=[]))] == [0, 1]
    # "rerank" is an alias used by the app
    assert diversify(Q, corpus, ret, "rerank", 2, judge=judge, using=Using(perspectives=["friends", "allergies"])) == got


def test_diversify_coverage_with_embedding_similarity():
    corpus = FakeCorpus(TEXTS)
    ret = FakeRetriever(corpus)
    emb = BagEmbedder("cats are great pets and friends loyal but cause allergies dogs bark fish swim".split())
    got = diversify(Q, corpus, ret, "%3>>coverage(probs=similarity,alpha=0.3)", 2, embedder=emb,
                    using=Using(perspectives=["loyal friends", "cause allergies"]))
    assert [r for r, _ in got] == [0, 2]  # c1 is a second "friends" passage; c2 the only "allergies" one


def test_preset_is_offline_and_runs():
    p = get_preset("diverse")
    assert [s.name for s in p.stages] == ["coverage"] and p.stages[0].probs == "model"  # no oracle perspectives
    assert "diverse" in PRESETS
    with pytest.raises(ValueError):
        get_preset("nope")
    corpus = FakeCorpus(TEXTS)
    emb = BagEmbedder("cats are great pets and friends loyal but cause allergies dogs bark fish swim".split())
    got = diversify(Q, corpus, FakeRetriever(corpus), "preset", 3, embedder=emb)
    assert len(got) == 3 and len({r for r, _ in got}) == 3


# --- berds retrieve diversification options ------------------------------

import json  # noqa: E402

from berds_core.cli import main  # noqa: E402
from berds_core.runs import read_run  # noqa: E402

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
]


@pytest.fixture
def cli_files(tmp_path):
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text("".join(json.dumps(d) + "\n" for d in DOCS), encoding="utf-8")
    questions = tmp_path / "questions.jsonl"
    questions.write_text("".join(json.dumps(q) + "\n" for q in QUESTIONS), encoding="utf-8")
    return tmp_path, str(corpus), str(questions)


def _retrieve(capsys, tmp, corpus, questions, *extra):
    out = tmp / "run.jsonl"
    code = main(["retrieve", "--questions", questions, "--corpus", corpus, "--retriever", "bm25", "--k", "2",
                 "--out", str(out), "--json", "--quiet", *extra])
    cap = capsys.readouterr()
    return code, cap, out


def test_cli_retrieve_qe_and_mmr(cli_files, capsys):
    tmp, corpus, questions = cli_files
    code, cap, out = _retrieve(capsys, tmp, corpus, questions)
    assert code == 0
    assert [c["id"] for c in read_run(out)[0]["ctxs"]] == ["u1", "u2"]  # near-duplicates on top
    code, cap, out = _retrieve(capsys, tmp, corpus, questions, "--qe", "dataset")
    assert code == 0, cap.err
    assert json.loads(cap.out)["diversify"] == {"method": "qe", "pipeline": "qe"}  # source=dataset: the default
    assert [c["id"] for c in read_run(out)[0]["ctxs"]] == ["u1", "u3"]  # one per generated perspective
    code, cap, out = _retrieve(capsys, tmp, corpus, questions, "--mmr", "0.5")
    assert code == 0, cap.err
    ids = [c["id"] for c in read_run(out)[0]["ctxs"]]
    assert ids[0] == "u1" and ids[1] != "u2"  # the duplicate is pushed down
    res = json.loads(cap.out)
    assert res["diversify"] == {"method": "mmr", "pipeline": "mmr(lam=0.5)"}


def test_cli_retrieve_rerank_and_preset(cli_files, capsys):
    tmp, corpus, questions = cli_files
    code, cap, out = _retrieve(capsys, tmp, corpus, questions, "--rerank", "coverage",
                               "--perspectives-from", "dataset", "--alpha", "0.3")
    assert code == 0, cap.err
    assert [c["id"] for c in read_run(out)[0]["ctxs"]][1] != "u2"
    # --keep 2: the retriever's top 2 (the near-duplicates) stay on top whatever the re-ranker prefers
    code, cap, out = _retrieve(capsys, tmp, corpus, questions, "--rerank", "coverage", "--perspectives-from",
                               "dataset", "--alpha", "0.3", "--keep", "2")
    assert code == 0, cap.err
    assert [c["id"] for c in read_run(out)[0]["ctxs"]] == ["u1", "u2"] and json.loads(cap.out)["diversify"]["pipeline"] == "coverage(alpha=0.3,keep=2)"
    code, cap, out = _retrieve(capsys, tmp, corpus, questions, "--preset", "diverse")
    assert code == 0, cap.err
    res = json.loads(cap.out)
    assert res["retriever"].startswith(get_preset("diverse").retriever) and res["diversify"]["preset"] == "diverse"
    assert res["diversify"]["pipeline"] == str(get_preset("diverse"))  # the saved pipeline itself, tokens=112 too
    assert len(read_run(out)[0]["ctxs"]) == 2


@pytest.mark.parametrize("extra, field", [
    (["--mmr", "1.5"], "--mmr"),
    (["--mmr", "0.5", "--qe", "dataset"], "--qe"),
    (["--qe", "llm"], "--qe-llm"),
    (["--alpha", "0.3"], "--alpha"),
    (["--rerank", "coverage", "--alpha", "2"], "--alpha"),
    (["--mmr", "0.5", "--candidates", "0"], "--candidates"),
    (["--keep", "1"], "--keep"),
    (["--mmr", "0.5", "--keep", "1"], "--keep"),
    (["--rerank", "xquad", "--keep", "1"], "--keep"),
    (["--preset", "diverse", "--keep", "1"], "--keep"),
    (["--rerank", "coverage", "--keep", "-1"], "--keep"),
])
def test_cli_retrieve_bad_diversify_options(cli_files, capsys, extra, field):
    tmp, corpus, questions = cli_files
    code, cap, out = _retrieve(capsys, tmp, corpus, questions, *extra)
    assert code == 2 and cap.out == "" and field in cap.err and cap.err.count("\n") == 1
    assert not out.exists()


def test_stance_probs_centres_the_yes_no_difference():
    from berds_core.diversify import stance_probs

    yes, no = np.array([1.0, 0.2, 0.0]), np.array([1.0, -0.2, 0.0])
    # all candidates lean "yes" in raw similarity; centring splits them by relative leaning
    cand = np.array([[1.0, 0.3, 0.0], [1.0, 0.1, 0.0], [1.0, 0.2, 0.0], [1.0, 0.0, 0.0]])
    P = stance_probs(cand, yes, no, temperature=0.01)
    assert np.allclose(P.sum(axis=1), 1.0)
    assert P[0, 0] > 0.9 and P[3, 1] > 0.9  # most and least "yes"-leaning
    assert np.argsort(-P[:, 0]).tolist() == [0, 2, 1, 3]
    assert stance_probs(np.zeros((0, 3)), yes, no).shape == (0, 2)


def test_diversify_coverage_stance_mode_pairs_first_two_perspectives():
    corpus = FakeCorpus(TEXTS)
    ret = FakeRetriever(corpus)
    emb = BagEmbedder("cats are great pets and friends loyal but cause allergies dogs bark fish swim".split())
    got = diversify(Q, corpus, ret, "%5>>coverage(probs=stance,alpha=0.3)", 2, embedder=emb,
                    using=Using(perspectives=["loyal friends", "cause allergies"]))
    # leanings centred on the median (the unrelated passages, d = 0): c0, c1 "yes", c2 "no"
    assert [r for r, _ in got] == [0, 2]
    # auto: two perspectives -> the stance pair
    assert diversify(Q, corpus, ret, "%5>>coverage(alpha=0.3)", 2, embedder=emb,
                     using=Using(perspectives=["loyal friends", "cause allergies"])) == got
    with pytest.raises(ValueError):
        diversify(Q, corpus, ret, "coverage(probs=bogus)", 2, embedder=emb, using=Using(perspectives=["a", "b"]))
    with pytest.raises(ValueError):
        diversify(Q, corpus, ret, "coverage(probs=judge)", 2, embedder=emb, using=Using(perspectives=["a", "b"]))


def test_cli_rerank_guided_by_an_hf_judge_end_to_end(cli_files, capsys, tmp_path):
    """--rerank coverage --rerank-judge hf:<model>: the judge scores every candidate against the offline yes- and
    no-side of the question, the re-ranker orders by those probabilities, and the pairs land in the judge cache
    (a second run asks the model nothing). Tiny random Llama built here."""
    from tiny_models import make_tiny_causal_lm

    from berds_core.diversify import coverage_rerank
    from berds_core.datasets.sides import yes_no_sides
    from berds_core.judges import get_judge

    model = make_tiny_causal_lm(tmp_path / "m", extra_text=" ".join(d["text"] for d in DOCS) + " uniforms require")
    tmp, corpus, questions = cli_files
    code, cap, out = _retrieve(capsys, tmp, corpus, questions, "--rerank", "coverage", "--rerank-judge",
                               f"hf:{model}", "--alpha", "0.2", "--candidates", "5")
    assert code == 0, cap.err
    res = json.loads(cap.out)
    assert res["diversify"]["judge"] == f"hf:{model}" and res["diversify"]["method"] == "coverage"
    got = [c["id"] for c in read_run(out)[0]["ctxs"]]
    # the same ranking computed by hand from the judge's probabilities over the BM25 top 5
    judge = get_judge(f"hf:{model}")
    sides = [s for s in yes_no_sides(QUESTIONS[0]["question"]) if s]
    assert len(sides) == 2
    from berds_core.corpora.memory import load_corpus
    from berds_core.retrieval import get_retriever

    c = load_corpus(corpus)
    hits = get_retriever("bm25", c, progress=False).search([QUESTIONS[0]["question"]], 5)[0]
    from berds_core.judges import passage_text

    probs, _ = judge.predict([(passage_text(c[r], judge), s) for r, _ in hits for s in sides])
    assert judge.forward_calls == 0  # every pair was cached by the run
    order = coverage_rerank(np.array([s for _, s in hits]), np.asarray(probs).reshape(len(hits), 2), 2, 0.2)
    assert got == [c[hits[i][0]].id for i in order]
