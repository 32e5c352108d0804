"""Development corpora and question-grouped folds (no shared data needed: the demo bundle ships)."""
import numpy as np
import pytest

from berds_core.datasets.devsets import dev_bundles, grouped_folds, question_groups
from berds_core.records import Question


def _q(i, text):
    return Question(f"q{i}", text, ["a", "b"])


def test_groups_merge_equal_and_near_duplicate_questions():
    qs = [_q(0, "Should abortion be legal?"), _q(1, "should ABORTION be legal"), _q(2, "Is golf a sport?"),
          _q(3, "Golf: is it a sport?"), _q(4, "Should zoos exist?")]
    vecs = {"Should abortion be legal?": [0, 0, 1], "should ABORTION be legal": [0, 0.6, 0.8],
            "Is golf a sport?": [1, 0, 0], "Golf: is it a sport?": [0.96, 0.28, 0], "Should zoos exist?": [0, 1, 0]}

    def embed(texts):
        return np.array([vecs[t] for t in texts], dtype=np.float32)

    g = question_groups(qs, threshold=0.9, embed=embed)
    assert g["q0"] == g["q1"] == "q0"  # same text up to case and punctuation
    assert g["q2"] == g["q3"] == "q2"  # cosine 0.96
    assert g["q4"] == "q4"
    assert question_groups(qs, threshold=1.0)["q3"] == "q3"  # text rule only


def test_folds_keep_groups_together_and_balance():
    group_of = {f"q{i}": f"g{i // 3}" for i in range(30)}  # 10 groups of 3
    group_of.update({f"x{i}": "big" for i in range(7)})
    folds = grouped_folds(group_of, n_folds=5, seed=1)
    for g in set(group_of.values()):
        assert len({folds[q] for q, gg in group_of.items() if gg == g}) == 1
    sizes = np.bincount(list(folds.values()), minlength=5)
    assert sizes.max() - sizes.min() <= 4 and sizes.sum() == 37
    assert grouped_folds(group_of, 5, seed=1) == folds  # deterministic
    with pytest.raises(ValueError):
        grouped_folds(group_of, 1)


def test_dev_bundles_demo_always_and_missing_named(tmp_path):
    bundles, missing = dev_bundles(tmp_path, ["procon", "perspectrum", "demo"])
    assert list(bundles) == ["demo"] and set(missing) == {"procon", "perspectrum"}
    assert bundles["demo"].gold
    with pytest.raises(ValueError, match="choose from"):
        dev_bundles(tmp_path, ["nope"])
