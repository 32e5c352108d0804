"""scripts/train_stance.py's cross-validation plumbing: folds that keep groups whole and spread every source,
a model never trained twice (the lock), and the nested choices on out-of-fold outputs."""
import fcntl
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))
import train_stance  # noqa: E402


def test_folds_keep_groups_whole_and_spread_each_source():
    source = {f"h{i}": "human" for i in range(15)}
    source.update({f"p{i}": "perspectrum" for i in range(100)})
    group = {q: q for q in source}
    group["p1"] = group["p2"] = group["h0"] = "p1"  # a near-duplicate group across sources
    fold = train_stance.stratified_folds(group, source, 5, seed=0)
    assert set(fold) == set(source)
    assert fold["p1"] == fold["p2"] == fold["h0"]
    per = [sum(1 for q in source if source[q] == "human" and fold[q] == f) for f in range(5)]
    assert per == [3, 3, 3, 3, 3]  # the rare source first, dealt evenly
    sizes = [sum(1 for q in fold if fold[q] == f) for f in range(5)]
    assert max(sizes) - min(sizes) <= 2
    assert train_stance.stratified_folds(group, source, 5, seed=0) == fold  # seeded


def test_a_model_being_trained_elsewhere_is_seen(tmp_path):
    path = tmp_path / "fold0-abc.npz"
    assert not train_stance._locked(path)
    with open(path.with_name(path.name + ".lock"), "a") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        assert train_stance._locked(path)
    assert not train_stance._locked(path)


def test_nested_rules_come_from_the_other_folds_only():
    """Each held-out fold's rule is the one chosen on the other folds: changing a fold's outputs changes
    every other fold's rule input but never its own."""
    rng = np.random.default_rng(0)
    n = 60
    human = [{"qid": f"h{i % 10}", "label": int(i % 4 == 0)} for i in range(n)]
    ds = {"preset_pairs": [{"qid": f"h{i % 10}", "label": i % 3, "corpus": "c"} for i in range(n)],
          "t2_pairs": [{"qid": f"h{i % 10}", "label": i % 2} for i in range(n)], "human_pairs": human}
    folds = {"fold": {f"h{i}": i % 5 for i in range(10)}}
    Z = {k: rng.normal(size=(n, 3)) for k in ("preset", "t2", "t2_neg", "judge", "judge_neg")}
    for i, p in enumerate(human):
        Z["judge"][i, 0] += 2.0 * p["label"]
    base = [train_stance.rules_on(ds, Z, train_stance.indices(ds, folds, lambda g, f=f: g != f)) for f in range(5)]
    Z2 = {k: v.copy() for k, v in Z.items()}
    held = [i for i, p in enumerate(human) if folds["fold"][p["qid"]] == 0]
    Z2["judge"][held] = -Z2["judge"][held]  # fold 0's outputs turned upside down
    again = [train_stance.rules_on(ds, Z2, train_stance.indices(ds, folds, lambda g, f=f: g != f)) for f in range(5)]
    assert again[0] == base[0]  # fold 0's own rule never looked at fold 0
    assert any(again[f]["judge"] != base[f]["judge"] for f in range(1, 5))


def _synthetic(n=80, seed=0):
    rng = np.random.default_rng(seed)
    qids = [f"perspectrum-{i}" for i in range(10)]
    ds = {"preset_pairs": [{"qid": qids[i % 10], "label": i % 3, "corpus": "c"} for i in range(n)],
          "t2_pairs": [{"qid": qids[i % 10], "label": i % 2} for i in range(n)],
          "human_pairs": [{"qid": qids[i % 10], "label": int(i % 4 == 0)} for i in range(n)],
          "demo_pairs": [{"qid": qids[i % 10], "label": int(i % 3 == 0), "demo_round": i % 2 == 0} for i in range(n)]}
    folds = {"fold": {q: i % 5 for i, q in enumerate(qids)}}
    Z = {k: rng.normal(size=(n, 3)) for k in ("preset", "t2", "t2_neg", "judge", "judge_neg", "demo", "demo_neg")}
    for i, p in enumerate(ds["human_pairs"]):
        Z["judge"][i, 0] += 1.5 * p["label"]
    return ds, folds, Z


def test_figures_from_some_folds_leave_the_others_out():
    """With fold models for folds 0 and 1 only, every figure and every choice reads those folds' questions:
    the (meaningless) outputs of the other folds change nothing."""
    ds, folds, Z = _synthetic()
    rep = train_stance.evaluate_nested(ds, folds, Z, [0, 1])
    inside = [i for i, p in enumerate(ds["human_pairs"]) if folds["fold"][p["qid"]] in (0, 1)]
    assert rep["scored_folds"] == [0, 1] and set(rep["rules_per_fold"]) == {"0", "1"}
    assert rep["judge"]["pairs"] == len(inside) and rep["t2"]["all"]["pairs"] == len(inside)
    assert rep["preset_candidates"]["pooled"]["questions"] == 4
    assert rep["judge_demo"]["all demo pairs"]["pairs"] == len(inside)
    # fold 0's rule is chosen on fold 1 alone, the shipped one on folds 0 and 1
    assert rep["rules_per_fold"]["0"] == train_stance.rules_on(ds, Z, train_stance.indices(ds, folds, lambda g: g == 1))
    assert rep["shipped_rules"] == train_stance.rules_on(ds, Z, train_stance.indices(ds, folds, lambda g: g < 2))
    Z2 = {k: v.copy() for k, v in Z.items()}
    outside = [i for i, p in enumerate(ds["human_pairs"]) if folds["fold"][p["qid"]] >= 2]
    for k in Z2:
        Z2[k][outside] = 10 * np.random.default_rng(1).normal(size=(len(outside), 3))
    assert train_stance.evaluate_nested(ds, folds, Z2, [0, 1]) == rep
    full = train_stance.evaluate_nested(ds, folds, Z)
    assert full["scored_folds"] == [0, 1, 2, 3, 4] and full["judge"]["pairs"] == len(ds["human_pairs"])
    assert "Folds scored: 0, 1" in train_stance.markdown(rep)


def test_cosine_baseline_threshold_comes_from_the_other_folds():
    """The earlier judge's figures are measured as the stance model's: a threshold per held-out fold chosen on
    the other scored folds; a fold whose cosines are shifted keeps its threshold, so its decisions move."""
    ds, folds, _ = _synthetic(n=100)
    y = np.array([p["label"] for p in ds["human_pairs"]])
    cos = 0.2 + 0.3 * y + 0.05 * np.random.default_rng(0).normal(size=len(y))
    rep = train_stance.cosine_baseline(ds, folds, [0, 1, 2, 3, 4], cos)
    assert rep["pairs"] == 100 and rep["f1"] > 0.9 and rep["auc"] > 0.99
    shifted = cos.copy()
    held = np.array([folds["fold"][p["qid"]] == 0 for p in ds["human_pairs"]])
    shifted[held] += 0.5  # fold 0 above every threshold learnt elsewhere: all predicted positive
    worse = train_stance.cosine_baseline(ds, folds, [0, 1, 2, 3, 4], shifted)
    assert worse["f1"] < rep["f1"] and worse["recall"] == rep["recall"]
    part = train_stance.cosine_baseline(ds, folds, [0, 1], cos)
    assert part["pairs"] == int(sum(folds["fold"][p["qid"]] in (0, 1) for p in ds["human_pairs"]))


def test_cached_dataset_is_read_without_the_data_folder_only_when_asked(tmp_path):
    """``fit --cached-dataset`` (a GPU machine without the data folder) reads work/dataset.json as written
    here, if its examples version is this script's; without the flag a missing data folder is a changed
    stamp, and a cache of another version is refused with a one-line error."""
    import json

    import pytest

    ex = {"qid": "q1", "source": "procon", "target": "t", "text": "x", "allowed": [0], "weight": 1.0,
          "kind": "claim"}
    d = {"stamp": {"version": train_stance.EXAMPLES_VERSION, "data": [["a.json", 3]]}, "questions": {"q1": "Q?"},
         "source_of": {"q1": "procon"}, "examples": [ex]}
    (tmp_path / "dataset.json").write_text(json.dumps(d))
    got = train_stance.load_dataset(tmp_path / "no-data", tmp_path, progress=False, trust_cache=True)
    assert got["examples"][0].allowed == (0,) and got["questions"] == {"q1": "Q?"}
    d["stamp"]["version"] = "v0"
    (tmp_path / "dataset.json").write_text(json.dumps(d))
    with pytest.raises(SystemExit, match="examples version 'v0'"):
        train_stance.load_dataset(tmp_path / "no-data", tmp_path, progress=False, trust_cache=True)
    with pytest.raises(SystemExit, match="not found"):
        train_stance.load_dataset(tmp_path / "no-data", tmp_path / "empty", progress=False, trust_cache=True)
