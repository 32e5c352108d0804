"""The embedded judge: the studio's stance model behind the judge interface (shipped weights), its rule,
names, caching through the prediction cache and the embedding store, and what the app says it measures."""
import numpy as np
import pytest

from berds_core.judges import describe_judge, get_judge

PERSP = ["Nuclear power should be expanded to fight climate change.",
         "Nuclear power should not be expanded to fight climate change."]
PASSAGES = [
    "Nuclear plants produce almost no carbon dioxide while running, and France cut its emissions by "
    "building them. Expanding nuclear power is the fastest way to decarbonise electricity.",
    "Mix the flour with two eggs and a cup of milk, then bake the cake for forty minutes at 180 degrees.",
    "Reactor accidents such as Chernobyl and Fukushima show the danger, and new plants cost billions more "
    "than wind or solar. We should not build more reactors.",
]


def _pairs():
    return [(p, s) for p in PASSAGES for s in PERSP]


def test_judge_reads_the_stance_model(tmp_path, monkeypatch):
    """The judge's probabilities are the stance model's support rule on (perspective, passage) pairs.
    What it gets right is measured out of fold in docs/stance.md (F1 0.29 on the human pairs): the
    shipped model does not reliably tell the two sides of these hand-made nuclear arguments apart, so
    only the off-topic passage's place is asserted here, and that the probabilities are the model's."""
    monkeypatch.setenv("BERDS_CACHE", str(tmp_path))
    j = get_judge("embedded")
    probs, labels = j.predict(_pairs())
    assert probs.dtype == np.float32 and labels.dtype == np.bool_ and ((probs >= 0) & (probs <= 1)).all()
    P = probs.reshape(3, 2)
    assert P[1].max() < min(P[0].max(), P[2].max())  # the recipe supports neither side as much as an argument
    rule = j.model.rule("judge")
    np.testing.assert_allclose(probs, j.model.supports([(s, p) for p, s in _pairs()]), rtol=1e-6)
    assert set(rule) >= {"temperature", "consistency", "threshold"}
    np.testing.assert_array_equal(labels, probs >= j.threshold)
    assert j.threshold == j.model.threshold("judge") and j.status()["ok"]
    assert j.name.startswith("embedded-stance-v3")
    again = get_judge("embedded")
    p2, _ = again.predict(_pairs())
    assert again.forward_calls == 0  # the prediction cache
    np.testing.assert_allclose(p2, probs, rtol=1e-6)


def test_pair_encodings_persist_in_the_embedding_store(tmp_path, monkeypatch):
    monkeypatch.setenv("BERDS_CACHE", str(tmp_path))
    from berds_core.stance import StanceModel

    a = StanceModel()
    a.supports([(s, p) for p, s in _pairs()])
    n = a.n_encoded
    assert n >= len(_pairs())  # the pairs (and, with the consistency rule, the negated perspectives)
    b = StanceModel()  # a new process would start here: the store has every encoding
    np.testing.assert_allclose(b.supports([(s, p) for p, s in _pairs()]), a.supports([(s, p) for p, s in _pairs()]))
    assert b.n_encoded == 0 and b._net is None


def test_threshold_override_changes_name_not_probs():
    a, b = get_judge("embedded"), get_judge("embedded", threshold=0.9)
    assert a.name != b.name and b.name.endswith("-t0.9") and a.cache_key == b.cache_key


def test_encodings_agree_and_are_named(tmp_path, monkeypatch):
    monkeypatch.setenv("BERDS_CACHE", str(tmp_path))
    fp32 = get_judge("embedded", encoding="fp32")
    int8 = get_judge("embedded", encoding="int8")
    assert fp32.name.startswith("embedded-stance-v3-t") and int8.name.startswith("embedded-stance-v3-int8-t")
    a, _ = fp32.predict(_pairs())
    b, _ = int8.predict(_pairs())
    np.testing.assert_allclose(a, b, atol=0.1)
    assert np.argmax(a) == np.argmax(b)


def test_bad_encoding_is_a_judge_error():
    from berds_core.judges import JudgeError

    with pytest.raises(JudgeError, match="encoding"):
        get_judge("embedded", encoding="fp8")


def test_the_app_label_says_what_it_measures():
    from berds_core.judges.embedded import judge_report

    cv = judge_report()
    assert {"f1", "precision", "recall", "kappa", "pairs"} <= set(cv)
    d = describe_judge("embedded")
    assert d["stance"] and d["label"] == "supports"
    assert f"F1 {cv['f1']:.2f}" in d["caveat"] and "out of fold" in d["caveat"]
    assert describe_judge(get_judge("embedded").name) == d  # a stored judge name reads the same
    old = describe_judge("embedded-minilm-v2-bf16-t0.22")  # runs judged by the earlier cosine judge
    assert not old["stance"] and old["label"] == "on topic"
    assert describe_judge("hf:some/model") == {"stance": True, "label": "supports", "caveat": None}
