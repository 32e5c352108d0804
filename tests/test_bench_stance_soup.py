"""bench/stance_soup.py: the soup of two fold models is exactly the mean of their merged LoRA updates and heads,
and the bench skips cleanly without finished cv folders."""
import json
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
from stance_soup import main, side_right, soup_arrays  # noqa: E402


def _weights(tmp_path, name, seed, **config):
    g = np.random.default_rng(seed)
    arrays = {"lora_A:enc.q": g.normal(size=(4, 8)).astype(np.float16),
              "lora_B:enc.q": g.normal(size=(8, 4)).astype(np.float16),
              "lora_A:enc.o": g.normal(size=(4, 6)).astype(np.float16),
              "lora_B:enc.o": g.normal(size=(8, 4)).astype(np.float16),
              "head_W": g.normal(size=(3, 8)).astype(np.float32), "head_b": g.normal(size=3).astype(np.float32),
              "config": np.array(json.dumps({"version": "v9", "lora_r": 4, **config})), "meta": np.array(json.dumps({"n": seed}))}
    np.savez(tmp_path / name, **arrays)
    return np.load(tmp_path / name)


def test_the_soup_merges_to_the_mean_of_the_two_updates(tmp_path):
    a, b = _weights(tmp_path, "a.npz", 1), _weights(tmp_path, "b.npz", 2)
    s = soup_arrays(a, b)
    for m in ("enc.q", "enc.o"):
        A, B = s["lora_A:" + m], s["lora_B:" + m]
        assert A.shape[0] == B.shape[1] == 8  # the two ranks side by side
        want = (a["lora_B:" + m].astype(np.float32) @ a["lora_A:" + m].astype(np.float32)
                + b["lora_B:" + m].astype(np.float32) @ b["lora_A:" + m].astype(np.float32)) / 2
        np.testing.assert_allclose(B @ A, want, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(s["head_W"], (a["head_W"] + b["head_W"]) / 2)
    np.testing.assert_allclose(s["head_b"], (a["head_b"] + b["head_b"]) / 2)
    assert json.loads(str(s["config"])) == {"version": "soup-v9", "lora_r": 4}  # a store key of its own
    assert str(s["meta"]) == str(a["meta"])


def test_two_networks_of_other_configs_make_no_soup(tmp_path):
    a, b = _weights(tmp_path, "a.npz", 1), _weights(tmp_path, "b.npz", 2, lora_alpha=8)
    with pytest.raises(ValueError, match="lora_alpha differ"):
        soup_arrays(a, b)


def test_side_is_the_larger_of_the_first_two_logits():
    Z = np.array([[2.0, 1.0, 9.0], [0.0, 0.5, -1.0], [1.0, 3.0, 0.0]])
    assert side_right(Z, np.array([0, 1, 0])).tolist() == [True, True, False]


def test_skips_without_finished_cv_folders(tmp_path, capsys):
    assert main(["--runs", str(tmp_path / "a"), str(tmp_path / "b")]) == 0
    assert "is not a finished cv stage" in capsys.readouterr().err
