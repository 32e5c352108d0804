"""The embedded judge: a calibrated cosine head (shipped weights) gated on the question's topic, with an unsure
band; its names, caching through the prediction cache and the embedding store, and what the app says it
measures."""
import numpy as np
import pytest

from berds_core.judges import describe_judge, gate, get_judge, judge_passages, judge_run
from berds_core.judges.calibration import NO, UNSURE, YES, best_f1_threshold, ece, threshold_band, verdicts

QUESTION = "Is nuclear power a good solution to climate change?"
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


def test_judge_is_the_calibrated_cosine_of_the_shipped_weights(tmp_path, monkeypatch):
    """P(supports) is the shipped head of the cosine of the encoder's (dense retrieval's) vectors; the recipe,
    on no side and no topic, scores lowest; labels are the threshold's; a second judge reads the cache."""
    monkeypatch.setenv("BERDS_CACHE", str(tmp_path))
    j = get_judge("embedded")
    probs, labels = j.predict(_pairs())
    assert probs.dtype == np.float32 and labels.dtype == np.bool_ and ((probs >= 0) & (probs <= 1)).all()
    P = probs.reshape(3, 2)
    assert P[1].max() < min(P[0].max(), P[2].max())
    enc = j.encoder
    cos = np.array([float(enc.embed([d])[0] @ enc.embed([s])[0]) for d, s in _pairs()])
    np.testing.assert_allclose(probs, j.probabilities(cos), rtol=1e-5)
    np.testing.assert_array_equal(labels, probs >= j.threshold)
    assert j.name.startswith("embedded-cos-v5") and j.status()["ok"]
    again = get_judge("embedded")
    p2, _ = again.predict(_pairs())
    assert again.forward_calls == 0  # the prediction cache
    np.testing.assert_allclose(p2, probs, rtol=1e-6)


def test_passage_vectors_are_the_stores(tmp_path, monkeypatch):
    """The judge embeds a passage once, in the one embedding store dense retrieval and MMR read."""
    monkeypatch.setenv("BERDS_CACHE", str(tmp_path))
    j = get_judge("embedded", encoding="fp32")
    j.predict(_pairs())
    from berds_core.embeddings.text_encoders import text_encoder

    te = text_encoder(None, encoding="fp32")
    assert te is j.encoder
    before = te.n_encoded
    te.embed(PASSAGES + PERSP)
    assert te.n_encoded == before  # nothing encoded twice


def test_topicality_gate_zeroes_passages_off_the_question(tmp_path, monkeypatch):
    monkeypatch.setenv("BERDS_CACHE", str(tmp_path))
    j = get_judge("embedded")
    on = j.topical(QUESTION, PASSAGES)
    assert on.tolist() == [True, False, True]
    raw, _ = judge_passages(j, PASSAGES, PERSP)
    P, L = judge_passages(j, PASSAGES, PERSP, QUESTION)
    assert (P[1] == 0).all() and not L[1].any()  # the recipe supports nothing
    np.testing.assert_allclose(P[[0, 2]], raw[[0, 2]])
    entry = {"question": QUESTION, "perspectives": PERSP, "ctxs": [{"id": str(i), "title": "", "text": t}
                                                                   for i, t in enumerate(PASSAGES)]}
    judge_run([entry], j, progress=False)
    assert entry["ctxs"][1][j.name + "-probs"] == [0.0, 0.0] and entry["ctxs"][1][j.name + "-preds"] == [False, False]
    # a judge without a gate (LLM judges) is left as it is
    none = gate(type("J", (), {"topical": lambda self, q, d: None})(), QUESTION, PASSAGES, raw, raw > 0)
    np.testing.assert_array_equal(none[0], raw)


def test_unsure_band_holds_the_threshold_and_decides_three_ways():
    j = get_judge("embedded")
    lo, hi = j.band
    assert 0 < lo <= j.threshold <= hi < 1
    v = verdicts([lo - 0.01, lo, j.threshold, hi - 1e-6, hi, 0.99], j.band, j.threshold)
    assert v.tolist() == [NO, UNSURE, UNSURE, UNSURE, YES, YES]
    assert verdicts([0.2, 0.7], None, 0.5).tolist() == [NO, YES]  # no band: the threshold decides


def test_calibration_measures_on_known_cases():
    y = np.array([0, 0, 1, 1])
    assert ece(y, np.array([0.0, 0.0, 1.0, 1.0])) == 0.0
    assert ece(y, np.array([0.5] * 4)) == 0.0  # right on average in its one bin
    assert ece(y, np.array([1.0, 1.0, 0.0, 0.0])) == pytest.approx(1.0)
    assert best_f1_threshold(y, np.array([0.1, 0.2, 0.8, 0.9])) == pytest.approx(0.8)
    lo, hi = threshold_band(np.array([0, 1] * 10), np.linspace(0, 1, 20), np.repeat(np.arange(10), 2))
    assert 0 <= lo <= hi <= 1


def test_threshold_override_changes_name_not_probs():
    a, b = get_judge("embedded"), get_judge("embedded", threshold=0.9)
    assert a.name != b.name and b.name.endswith("-t0.9") and a.cache_key == b.cache_key


def test_encodings_agree_and_are_named(tmp_path, monkeypatch):
    monkeypatch.setenv("BERDS_CACHE", str(tmp_path))
    fp32 = get_judge("embedded", encoding="fp32")
    int8 = get_judge("embedded", encoding="int8")
    assert fp32.name.startswith("embedded-cos-v5-t") and int8.name.startswith("embedded-cos-v5-int8-t")
    a, _ = fp32.predict(_pairs())
    b, _ = int8.predict(_pairs())
    np.testing.assert_allclose(a, b, atol=0.05)


def test_bad_encoding_and_bad_weights_are_judge_errors(tmp_path):
    from berds_core.judges import JudgeError

    with pytest.raises(JudgeError, match="encoding"):
        get_judge("embedded", encoding="fp8")
    from berds_core.judges.embedded import EmbeddedJudge

    with pytest.raises(JudgeError, match="missing"):
        EmbeddedJudge(weights=str(tmp_path / "none.npz"))
    bad = tmp_path / "bad.npz"
    np.savez(bad, meta=np.array('{"head": {}}'))
    with pytest.raises(JudgeError, match="unreadable"):
        EmbeddedJudge(weights=str(bad))


def test_the_shipped_judge_meets_its_bar_and_the_app_says_what_it_measures():
    """The shipped weights' out-of-fold report (scripts/train_one_side_judge.py, issue 62): the medians over the
    five fold assignments beat v4's (each pair alone) on F1 and kappa, calibrated (ECE at most 0.05), saying
    "supports" closer to the people's rate; the app's label and caveat are printed from that report."""
    from berds_core.judges.embedded import judge_report, load_head, WEIGHTS

    cv, med = judge_report(), judge_report(part="median")
    oof = load_head(str(WEIGHTS))["oof"]
    v4 = oof["v4"]["median"]
    assert med["f1"] > v4["f1"] and med["kappa"] > v4["kappa"] and med["ece"] <= 0.05
    human = cv["human_rate"]
    assert abs(med["positive_rate"] - human) < abs(v4["positive_rate"] - human)
    assert "in-sample" not in oof["stance_reads"]  # the stance model's reads of these questions are out of fold
    assert len(oof["fold_seeds"]) == 5
    d = describe_judge("embedded")
    assert not d["stance"] and d["label"] == "close"
    assert f"F1 {cv['f1']:.2f}" in d["caveat"] and "out of fold" in d["caveat"].lower() and "cannot" in d["caveat"]
    assert f"F1 {med['f1']:.2f}" in d["caveat"] and "at most one" in d["caveat"]
    assert describe_judge(get_judge("embedded").name) == d  # a stored judge name reads the same
    old = describe_judge("embedded-minilm-v2-bf16-t0.22")  # runs judged by the earlier cosine judge
    assert not old["stance"] and old["label"] == "on topic"
    assert describe_judge("embedded-stance-v3-bf16-t0.45")["stance"]  # runs judged by the stance model
    assert describe_judge("hf:some/model") == {"stance": True, "label": "supports", "caveat": None}


def test_the_confident_policy_counts_only_pairs_above_the_band_and_threshold_counts_the_stored_decisions():
    """Under ``confident`` a pair inside the judge's band (recorded in the run line) counts as not supporting;
    under ``threshold`` (the default) the stored ``-preds`` count as they are."""
    from berds_core.experiment import DEFAULT_POLICY, policy_entries, score
    from berds_core.runs import label_matrix, set_band, set_judgments

    j = get_judge("embedded")
    lo, hi = j.band
    e = {"id": "q", "question": QUESTION, "perspectives": PERSP, "ctxs": [{"id": "a", "text": "x"}, {"id": "b", "text": "y"}]}
    probs = np.array([[hi + 0.01, (lo + hi) / 2], [lo - 0.01, j.threshold]])
    set_judgments(e, j.name, probs >= j.threshold, probs)
    set_band(e, j.name, j.band)
    assert e[f"{j.name}-band"] == [round(lo, 6), round(hi, 6)] and e[f"{j.name}-policy"] == "threshold"
    (c,), unsure = policy_entries([e], j.name, "confident")
    assert unsure == 1 + int((lo + hi) / 2 >= j.threshold)  # the threshold's supports inside the band
    assert label_matrix(c, judge=j.name).tolist() == [[True, False], [False, False]]
    assert label_matrix(e, judge=j.name).tolist() == [[True, (lo + hi) / 2 >= j.threshold], [False, True]]  # untouched
    (t,), none = policy_entries([e], j.name, "threshold")
    assert t is e and none == 0
    assert DEFAULT_POLICY == "threshold"
    assert score([e], judge=j.name).policy == "threshold"
    assert score([e], judge=j.name).mean("precision@1") == 1.0
    assert score([e], judge=j.name, policy="confident").per_question["mrecall@5"].tolist() == [0.0]
    assert score([e], judge=j.name, policy="threshold").per_question["mrecall@5"].tolist() == [1.0]
