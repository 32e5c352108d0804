"""The embedded judge: shipped weights, MiniLM features, passage reuse, caching."""
import numpy as np
import pytest

from berds_core.judges import get_judge
from berds_core.judges.embedded import WEIGHTS, load_head
from berds_core.judges.features import FEATURES, Featurizer, content_stems, negation_count

PERSP = ["Nuclear power should be expanded to fight climate change.",
         "Nuclear power should not be expanded because it is dangerous and expensive."]
PASSAGES = [
    "Nuclear plants produce almost no carbon dioxide while running, and France cut its emissions by "
    "building them. Expanding nuclear power is the fastest way to decarbonise electricity.",
    "Mix the flour with two eggs and a cup of milk, then bake the cake for forty minutes at 180 degrees.",
    "Reactor accidents such as Chernobyl and Fukushima show the danger, and new plants cost billions more "
    "than wind or solar. We should not build more reactors.",
]


def test_weights_ship_small_and_complete():
    assert WEIGHTS.exists() and WEIGHTS.stat().st_size < 3_000_000
    head = load_head()
    assert set(head["features"]) <= set(FEATURES)
    assert head["coef"].shape == (len(head["features"]),) and 0.0 < float(head["threshold"]) < 1.0
    assert head["rel_w"].shape == (768,)
    meta = head["meta"]
    assert meta["cv"]["n"] == meta["human_pairs"] and "f1" in meta["cv"]


def test_feature_helpers():
    assert content_stems("The countries are running") == {"countri", "run"}
    assert negation_count("It is not good and we can't stop") == 2


def test_features_shape_and_sense():
    f = Featurizer(rel_head=(load_head()["rel_w"], float(load_head()["rel_b"])))
    pairs = [(p, s) for p in PASSAGES for s in PERSP]
    X = f.features(pairs)
    assert X.shape == (6, len(FEATURES)) and np.isfinite(X).all()
    cos = X[:, FEATURES.index("cos")]
    assert cos[0] > cos[2] + 0.2 and cos[4] > cos[2] + 0.2  # on-topic passages beat the cake recipe
    assert X[1, FEATURES.index("s_neg")] == 1 and X[0, FEATURES.index("s_neg")] == 0
    assert ((-1 <= X[:, :6]) & (X[:, :6] <= 1.0001)).all()


def test_passage_encoded_once_and_reused(monkeypatch):
    f = Featurizer()
    seen = []
    orig = f._encode

    def spy(texts):
        seen.extend(texts)
        return orig(texts)

    monkeypatch.setattr(f, "_encode", spy)
    pairs = [(p, s) for p in PASSAGES for s in PERSP]
    f.features(pairs)
    assert sorted(seen) == sorted(PASSAGES + PERSP)  # 5 encodings for 6 pairs
    f.features(pairs[:2])
    assert len(seen) == 5  # in-memory reuse across calls


def test_judge_predicts_and_ranks():
    j = get_judge("embedded")
    probs, labels = j.predict([(p, PERSP[0]) for p in PASSAGES])
    assert probs.dtype == np.float32 and labels.dtype == np.bool_
    assert ((probs >= 0) & (probs <= 1)).all()
    assert probs[0] > probs[1]  # the pro-nuclear passage over the recipe
    np.testing.assert_array_equal(labels, probs >= j.threshold)
    assert j.status()["ok"] and j.name.startswith("embedded-minilm-v2")
    again = get_judge("embedded")
    p2, _ = again.predict([(p, PERSP[0]) for p in PASSAGES])
    assert again.forward_calls == 0
    np.testing.assert_allclose(p2, probs, rtol=1e-6)


def test_threshold_override_changes_name_not_probs():
    a, b = get_judge("embedded"), get_judge("embedded", threshold=0.9)
    assert a.name != b.name and b.name.endswith("-t0.9") and a.cache_key == b.cache_key


def test_encodings_agree_and_are_named():
    pairs = [(p, s) for p in PASSAGES for s in PERSP]
    fp32 = get_judge("embedded", encoding="fp32")
    int8 = get_judge("embedded", encoding="int8")
    assert fp32.name.startswith("embedded-minilm-v2-t") and int8.name.startswith("embedded-minilm-v2-int8-t")
    a, _ = fp32.predict(pairs)
    b, _ = int8.predict(pairs)
    np.testing.assert_allclose(a, b, atol=0.05)
    assert np.argmin(a[::2]) == np.argmin(b[::2]) == 1  # both put the recipe last


def test_bad_encoding_is_a_judge_error():
    from berds_core.judges import JudgeError

    with pytest.raises(JudgeError, match="encoding"):
        get_judge("embedded", encoding="fp8")


# ---------------------------------------------------------------- fast path, embedding store, wordllama
def _pairs():
    return [(p, s) for p in PASSAGES for s in PERSP]


def test_sentence_fast_path_matches_token_path():
    head = load_head()
    rel = (head["rel_w"].astype(np.float32), float(head["rel_b"]))
    full = Featurizer(rel_head=rel, store=False).features(_pairs())
    fast_f = Featurizer(rel_head=rel, needed=["cos", "rel", "p_len"], store=False)
    fast = fast_f.features(_pairs())
    for name in ("cos", "rel", "p_len"):
        i = FEATURES.index(name)
        np.testing.assert_allclose(fast[:, i], full[:, i], atol=1e-4)
    assert not fast[:, FEATURES.index("maxsim_mean")].any()  # token-level features not computed
    assert fast_f._cache == {} and fast_f.n_encoded == 5


def test_embedding_store_reuses_passages_across_featurizers(tmp_path, monkeypatch):
    monkeypatch.setenv("BERDS_CACHE", str(tmp_path))
    a = Featurizer(needed=["cos"])
    xa = a.features(_pairs())
    assert a.n_encoded == 5 and (tmp_path / "embeddings" / "embeddings.sqlite").exists()
    from berds_core.embeddings import store as embed_store

    embed_store._shared.cache_clear()  # new process-like state: nothing in memory
    b = Featurizer(needed=["cos"])
    xb = b.features(_pairs() + [(PASSAGES[0], "A brand new perspective about reactors.")])
    assert b.n_encoded == 1  # only the new perspective went through MiniLM
    np.testing.assert_allclose(xb[:6], xa, atol=1e-6)
    c = Featurizer(needed=["cos"], encoding="int8")  # another precision is another key
    c.features(_pairs()[:1])
    assert c.n_encoded == 2


def test_judge_uses_only_head_features_and_store(tmp_path, monkeypatch):
    monkeypatch.setenv("BERDS_CACHE", str(tmp_path))
    j = get_judge("embedded")
    assert j.featurizer.needed == j.head["features"]
    j.predict(_pairs())
    n = j.featurizer.n_encoded
    j2 = get_judge("embedded", threshold=0.3)  # same cache key: predictions served from the cache
    j2.predict(_pairs())
    assert j2.forward_calls == 0 and n == 5


def test_wordllama_loads_offline_from_the_package():
    import os

    from berds_core.judges.features import load_wordllama

    assert os.environ.get("HF_HUB_OFFLINE") == "1"
    wl = load_wordllama()
    e = wl.embed([PERSP[0], PASSAGES[0], PASSAGES[1]], norm=True)
    assert e.shape == (3, 256)
    assert e[0] @ e[1] > e[0] @ e[2]  # nuclear passage closer than the cake recipe
    f = Featurizer(needed=["cos", "w_cos"], store=False)
    X = f.features([(PASSAGES[0], PERSP[0]), (PASSAGES[1], PERSP[0])])
    w = X[:, FEATURES.index("w_cos")]
    assert w[0] > w[1] and np.isclose(w[0], e[0] @ e[1], atol=1e-5)


def test_judge_and_dense_retrieval_share_one_embedding_per_passage(tmp_path, monkeypatch):
    """The judge reads the same 128-token vectors the dense retriever stored: judging retrieved passages encodes
    only the perspectives."""
    from berds_core.corpus import corpus_from_passages
    from berds_core.embeddings.store import MAX_TOKENS
    from berds_core.records import Passage
    from berds_core.retrieval import get_retriever

    monkeypatch.setenv("BERDS_CACHE", str(tmp_path))
    j = get_judge("embedded")
    assert j.head["max_seq_length"] == MAX_TOKENS == j.featurizer.model.max_seq_length
    corpus = corpus_from_passages([Passage(f"p{i}", "A title", t) for i, t in enumerate(PASSAGES)])
    r = get_retriever("dense", corpus, progress=False, encoding=j.encoding)
    assert r.text_encoder.key == j.featurizer.store_key and r.n_encoded == len(PASSAGES)
    j.predict(_pairs())
    assert j.featurizer.n_encoded == len(PERSP)  # passages came from the store, not the model
    long_text = " ".join(["reactors"] * 20 + ["cake"] * 400)
    cut = Featurizer(needed=["cos"], store=False, max_seq_length=128, encoding=j.encoding)
    full = Featurizer(needed=["cos"], store=False, max_seq_length=256, encoding=j.encoding)
    a = cut.sentence_embeddings([long_text])[long_text]
    b = full.sentence_embeddings([long_text])[long_text]
    assert float(a @ b) < 0.999  # the text really was cut at a different place
    assert cut.store_key.endswith("msl128") and full.store_key.endswith("msl256")
