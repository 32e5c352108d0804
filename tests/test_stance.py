"""The stance cross-encoder: training, export of LoRA factors, loading by merging, caching, and the re-ranker's
``model`` mode. Training runs on a tiny random BERT built here (no download); the shipped weights are checked
for shape, size and their report."""
import sys
from pathlib import Path

import numpy as np
import pytest

from berds_core.corpus import corpus_from_passages
from berds_core.diversify import blend_relevance, candidate_pool, diversify
from berds_core.diversify.stance import WEIGHTS, StanceModel, load_weights, stance_text
from berds_core.records import Passage, Question

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))
import train_stance  # noqa: E402

EXAMPLES = [
    ("q1", "Should cats be pets?", "Cats are loving pets that help lonely people.", 0),
    ("q1", "Should cats be pets?", "Cats kill birds and should not be kept as pets.", 1),
    ("q1", "Should cats be pets?", "The stock market fell on Tuesday.", 2),
    ("q2", "Should cars be banned?", "Cars pollute the air and should be banned from cities.", 0),
    ("q2", "Should cars be banned?", "Cars give people freedom and should not be banned.", 1),
    ("q2", "Should cars be banned?", "A recipe for lemon cake.", 2),
]


def _tiny_base(path: Path) -> Path:
    from transformers import BertConfig, BertModel, BertTokenizerFast

    words = sorted({w.lower().strip(".,?") for _, q, t, _ in EXAMPLES for w in (q + " " + t).split()})
    path.mkdir(parents=True, exist_ok=True)
    (path / "vocab.txt").write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *words]) + "\n")
    BertTokenizerFast(vocab_file=str(path / "vocab.txt")).save_pretrained(path)
    import torch

    torch.manual_seed(0)
    BertModel(BertConfig(vocab_size=len(words) + 5, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                         intermediate_size=64, max_position_embeddings=64)).save_pretrained(path)
    return path


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    base = _tiny_base(tmp_path_factory.mktemp("tiny-bert"))
    opts = dict(train_stance.DEFAULTS, layers=2, lora_r=2, max_length=32, epochs=60.0, batch_size=6, lr=1e-2)
    net = train_stance.train_network(EXAMPLES, base=str(base), progress=None, **opts)
    path = train_stance.export_weights(net, train_stance.model_config(dict(opts, version="t1")), {"test": True},
                                       tmp_path_factory.mktemp("w") / "stance.npz")
    return base, net, path, opts


def _net_probs(net, base, pairs, max_length):
    import torch
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(base))
    enc = tok([q for q, _ in pairs], [p for _, p in pairs], truncation="only_second", max_length=max_length,
              padding=True, return_tensors="pt")
    with torch.inference_mode():
        return torch.softmax(net(**enc), -1).numpy()


def test_training_learns_the_examples_and_export_roundtrips(trained):
    base, net, path, opts = trained
    pairs = [(q, t) for _, q, t, _ in EXAMPLES]
    direct = _net_probs(net, base, pairs, opts["max_length"])
    labels = [e[3] for e in EXAMPLES]
    correct = direct[np.arange(len(labels)), labels]
    assert correct.mean() > 0.55 and (direct.argmax(1) == labels).sum() >= 4  # it learns (chance: 1/3)
    w = load_weights(path)
    assert w["config"]["layers"] == 2 and w["config"]["lora_alpha"] == 4 and w["meta"] == {"test": True}
    assert len(w["lora"]) == 2 * 6  # query, key, value, attention output, intermediate, output per layer
    model = StanceModel(path, base=str(base), encoding="fp32", cache=False)
    merged = model.probs_many(pairs)
    np.testing.assert_allclose(merged, direct, atol=2e-3)  # LoRA merged into the base == the trained network
    assert model.name == "stance-t1" and model.n_scored == len(pairs)
    q8 = StanceModel(path, base=str(base), encoding="int8", cache=False)
    p8 = q8.probs(pairs[0][0], [p for _, p in pairs[:3]])
    assert p8.shape == (3, 3) and np.allclose(p8.sum(1), 1.0) and q8.name == "stance-t1-int8"


def test_predictions_are_cached_per_model_name(trained, tmp_path, monkeypatch):
    base, _, path, _ = trained
    monkeypatch.setenv("BERDS_CACHE", str(tmp_path))
    pairs = [(q, t) for _, q, t, _ in EXAMPLES]
    m = StanceModel(path, base=str(base), encoding="fp32")
    a = m.probs_many(pairs + pairs[:2])
    assert m.n_scored == len(pairs)  # duplicates scored once
    again = StanceModel(path, base=str(base), encoding="fp32")
    b = again.probs_many(pairs[::-1])
    assert again.n_scored == 0 and again._net is None  # all from the cache, the network never loaded
    np.testing.assert_allclose(b, a[:len(pairs)][::-1], atol=1e-6)
    assert np.allclose(a.sum(1), 1.0, atol=1e-5)


def test_examples_from_a_bundle():
    from berds_core.datasets import load_demo

    b = load_demo()
    ex = train_stance.stance_examples(b, {q.id: list(range(20)) for q in b.questions}, negatives=2)
    labels = [e[3] for e in ex]
    assert set(labels) == {0, 1, 2} and labels.count(2) <= 2 * len(b.questions)
    q = b.questions[0]
    gold = b.gold[q.id]
    row = {p.id: p for p in b.passages}
    for qid, question, text, label in ex:
        if qid == q.id and label < 2:
            pid = next(pid for pid in gold if stance_text(row[pid]) == text)
            assert train_stance.side_of(q, gold[pid]) == label
    # a perspective without a stance, or both sides at once, gives no example
    assert train_stance.side_of(Question("x", "?", ["a", "b", "c"], stances=["support", "oppose", None]), {2}) is None
    assert train_stance.side_of(Question("x", "?", ["a", "b"], stances=["support", "oppose"]), {0, 1}) is None


def test_stance_text_uses_the_title():
    assert stance_text(Passage("p", "Cats help", "Studies show...")) == "Cats help. Studies show..."
    assert stance_text({"title": "", "text": "x"}) == "x"


def test_shipped_weights_are_small_and_documented():
    assert WEIGHTS.exists() and WEIGHTS.stat().st_size < 3_000_000
    w = load_weights()
    cfg = w["config"]
    assert cfg["classes"] == ["yes", "no", "off"] and cfg["layers"] >= 1 and cfg["max_length"] >= 32
    assert set(w["meta"]["trained_on"]) <= {"procon", "perspectrum", "demo"}
    assert "development" in w["meta"]["data"]


class StubStance:
    """P(yes), P(no), P(off) by key words in the passage string."""

    def __init__(self):
        self.calls = []

    def probs(self, question, passages):
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
    got = [r for r, _ in diversify(q, corpus, ret, "coverage", 2, coverage_probs="model", alpha=0.3,
                                   stance_model=stub, candidates=5)]
    assert got == [0, 3] and stub.calls == [5]
    # alpha 1: the retriever's order
    assert [r for r, _ in diversify(q, corpus, ret, "coverage", 3, coverage_probs="model", alpha=1.0,
                                    stance_model=stub, candidates=5)] == [0, 1, 2]
    # mix 0: relevance is P(on the question): the off-topic passage drops below every on-topic one
    got = [r for r, _ in diversify(q, corpus, ret, "coverage", 5, coverage_probs="model", alpha=1.0, mix=0.0,
                                   stance_model=stub, candidates=5)]
    assert got[-1] == 4
    # keep 1: the retriever's first stays; the re-ranker fills below it (here the "no" side comes next);
    # keep 2: the first two stay and both argue "yes", so the third rank goes to the "no" side
    assert [r for r, _ in diversify(q, corpus, ret, "coverage", 2, coverage_probs="model", alpha=0.3, keep=1,
                                    stance_model=stub, candidates=5)] == [0, 3]
    assert [r for r, _ in diversify(q, corpus, ret, "coverage", 3, coverage_probs="model", alpha=0.3, keep=2,
                                    stance_model=stub, candidates=5)] == [0, 1, 3]
    assert [r for r, _ in diversify(q, corpus, ret, "coverage", 3, coverage_probs="model", alpha=0.3, keep=0,
                                    stance_model=stub, candidates=5)] == [0, 3, 1]
    # k above candidates: the retriever's top 3 (0, 1, 3) are re-ranked, its order follows (2, then 4)
    stub.calls.clear()
    ret2 = ListRetriever([1.0, 0.99, 0.9, 0.98, 0.5])
    got = [r for r, _ in diversify(q, corpus, ret2, "coverage", 5, coverage_probs="model", alpha=0.3, keep=1,
                                   stance_model=stub, candidates=3)]
    assert got == [0, 3, 1, 2, 4] and stub.calls == [3] and ret2.searches == 1  # one search for both parts
    with pytest.raises(ValueError):
        blend_relevance([1.0], np.zeros((1, 3)), 1.5)
    with pytest.raises(ValueError):
        diversify(q, corpus, ret, "coverage", 2, coverage_probs="nope")


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
    rows, scores = candidate_pool(q, corpus, dense, 2, "retriever")
    assert rows.tolist() == [r for r, _ in dense.search([q], 2)[0]]
    rows, scores = candidate_pool(q, corpus, dense, 2, "union")
    want = {r for r, _ in dense.search([q], 2)[0]} | {r for r, _ in bm25.search([q], 2)[0]}
    assert set(rows.tolist()) == want and 2 in want and len(rows) == len(want) >= 2
    assert (np.diff(scores) <= 1e-9).all()
    qv = dense.encode([q])[0]
    np.testing.assert_allclose(scores, np.asarray(dense.embeddings)[rows] @ qv, atol=1e-6)
    rows_b, _ = candidate_pool(q, corpus, bm25, 2, "union")  # from the BM25 side: the same set
    assert set(rows_b.tolist()) == set(rows.tolist())
    with pytest.raises(ValueError):
        candidate_pool("x", corpus, dense, 1, "everything")
