"""ArgKP as a studio dataset: ``berds import argkp``, the KPA 2021 track-1 mAP (checked against a hand-worked
example) and ``berds kpa-match``'s predictions file; bad input is one line naming file, line and field."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from berds_core.cli import main
from berds_core.datasets.argkp import candidate_pairs, read_split
from berds_core.datasets.human_pairs import read_pairs
from berds_core.eval.kpa_track1 import track1_map

T1, T2 = "Homework should be banned", "Golf is a sport"


def write_split(folder: Path, name: str = "dev", labels: bool = True) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"arguments_{name}.csv").write_text(
        "arg_id,argument,topic,stance\n"
        f'a1,"Homework takes time from play, sports and family.",{T1},1\n'
        f"a2,Children are tired after school.,{T1},1\n"
        f"a3,Homework builds discipline.,{T1},-1\n"
        f"a4,Homework makes pupils responsible.,{T1},-1\n"
        f"b1,Golf needs fitness and skill.,{T2},1\n")  # a (topic, stance) of one argument: no mAP
    (folder / f"key_points_{name}.csv").write_text(
        "key_point_id,key_point,topic,stance\n"
        f"k1,Homework takes away free time,{T1},1\n"
        f"k2,Students are exhausted,{T1},1\n"
        f"k3,Homework teaches responsibility,{T1},-1\n"
        f"g1,Golf is physically demanding,{T2},1\n")
    if labels:
        (folder / f"labels_{name}.csv").write_text(
            "arg_id,key_point_id,label\na1,k1,1\na1,k2,0\na2,k2,1\na3,k3,1\na4,k3,0\nb1,g1,1\n")
    return folder


def run_cli(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_track1_map_equals_a_hand_worked_example():
    """Topic t, pro: six arguments, the top int(6 * 0.5) = 3 by their best key point's score are kept:
    a1 (0.9, label 0), a2 (0.8, label 1), a3 (0.7, undecided). Strict labels 0, 1, 0: AP = P@2 = 1/2.
    Relaxed labels 0, 1, 1: AP = (1/2)(1/2) + (1/2)(2/3) = 7/12. Topic t, con: b1 (0.6, 1), b2 (0.4, 1): top
    1 is b1, AP 1. mAP strict = (1/2 + 1) / 2 = 0.75; relaxed = (7/12 + 1) / 2 = 19/24. a5's key point kx is
    not in the key points file (ignored: its best is k1 at 0.05); a6 has no prediction (a dummy, score 0)."""
    args = {a: {"topic": "t", "stance": 1} for a in ("a1", "a2", "a3", "a4", "a5", "a6")}
    args.update({b: {"topic": "t", "stance": -1} for b in ("b1", "b2")})
    preds = {"a1": {"k1": 0.9, "k2": 0.2}, "a2": {"k1": 0.3, "k2": 0.8}, "a3": {"k1": 0.7},
             "a4": {"k2": 0.1}, "a5": {"kx": 0.99, "k1": 0.05}, "b1": {"k3": 0.6}, "b2": {"k3": 0.4}}
    labels = {("a1", "k1"): 0, ("a1", "k2"): 1, ("a2", "k2"): 1, ("a4", "k2"): 1, ("a5", "k1"): 1,
              ("b1", "k3"): 1, ("b2", "k3"): 1}
    m = track1_map(preds, args, ["k1", "k2", "k3"], labels)
    assert m["map_strict"] == pytest.approx(0.75)
    assert m["map_relaxed"] == pytest.approx(19 / 24)
    assert m["groups"] == 2 and m["undecided"] == 1
    # a better score for the undecided a3 than for a2 moves a2's positive to rank 3 in the strict figure
    m2 = track1_map({**preds, "a3": {"k1": 0.85}}, args, ["k1", "k2", "k3"], labels)
    assert m2["map_strict"] == pytest.approx((1 / 3 + 1) / 2)


def test_read_split_and_candidates(tmp_path):
    s = read_split(write_split(tmp_path / "kp"), "dev")
    assert len(s.arguments) == 5 and s.labels[("a1", "k1")] == 1
    # every argument against every key point of its topic and stance
    assert sorted(candidate_pairs(s)) == [("a1", "k1"), ("a1", "k2"), ("a2", "k1"), ("a2", "k2"), ("a3", "k3"),
                                          ("a4", "k3"), ("b1", "g1")]


def test_import_argkp_writes_the_pair_format(tmp_path, capsys):
    src = write_split(tmp_path / "kp")
    code, out, err = run_cli(capsys, "import", "argkp", src, "--out", tmp_path / "o", "--json")
    assert code == 0, err
    rep = json.loads(out)
    assert rep["splits"]["argkp_dev.tsv"] == {"pairs": 6, "matching": 4, "arguments": 5, "key_points": 4}
    rows = read_pairs(tmp_path / "o" / "argkp_dev.tsv")
    r = next(r for r in rows if r["id"] == "a1|k1")
    assert (r["question"], r["document"], r["perspective"], r["label"], r["arg_id"], r["key_point_id"]) == (
        T1, "Homework takes time from play, sports and family.", "Homework takes away free time", "1", "a1", "k1")
    # not replaced without --force
    code, _, err = run_cli(capsys, "import", "argkp", src, "--out", tmp_path / "o")
    assert code == 2 and "already exists" in err


@pytest.mark.parametrize("fix, where", [
    (lambda d: (d / "labels_dev.csv").write_text("arg_id,key_point_id,label\na1,k1,yes\n"),
     "labels_dev.csv:2: field 'label'"),
    (lambda d: (d / "labels_dev.csv").write_text("arg_id,key_point_id,label\nzz,k1,1\n"),
     "labels_dev.csv:2: field 'arg_id'"),
    (lambda d: (d / "arguments_dev.csv").write_text(f"arg_id,argument,topic,stance\na1,x,{T1},2\n"),
     "arguments_dev.csv:2: field 'stance'"),
    (lambda d: (d / "key_points_dev.csv").write_text("key_point_id,topic,stance\n"),
     "key_points_dev.csv:1: field 'key_point'"),
])
def test_bad_input_is_one_line_naming_file_line_field(tmp_path, capsys, fix, where):
    src = write_split(tmp_path / "kp")
    fix(src)
    code, out, err = run_cli(capsys, "import", "argkp", src, "--out", tmp_path / "o")
    assert code == 2 and where in err and len(err.strip().splitlines()) == 1, err
    assert not (tmp_path / "o").exists()
    code, _, err = run_cli(capsys, "kpa-match", "--data", src, "--split", "dev", "--out", tmp_path / "p.json")
    assert code == 2 and where in err, err
    assert not (tmp_path / "p.json").exists()


@pytest.mark.slow
def test_kpa_match_writes_the_tasks_predictions_file(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("BERDS_CACHE", str(tmp_path / "cache"))
    src = write_split(tmp_path / "kp")
    out = tmp_path / "preds.json"
    code, stdout, err = run_cli(capsys, "kpa-match", "--data", src, "--split", "dev", "--judge", "embedded",
                                "--encoding", "fp32", "--out", out, "--json", "--quiet")
    assert code == 0, err
    preds = json.loads(out.read_text())
    assert {a: sorted(k) for a, k in preds.items()} == {"a1": ["k1", "k2"], "a2": ["k1", "k2"], "a3": ["k3"],
                                                        "a4": ["k3"], "b1": ["g1"]}
    assert all(0.0 <= v <= 1.0 for kps in preds.values() for v in kps.values())
    rep = json.loads(stdout)
    s = read_split(src, "dev")
    assert rep["map_strict"] == pytest.approx(track1_map(preds, s.arguments, s.key_points, s.labels)["map_strict"])
    assert rep["groups"] == 2 and rep["groups_skipped"] == 1
    # a split without labels: predictions only
    write_split(tmp_path / "kp", "test", labels=False)
    code, stdout, err = run_cli(capsys, "kpa-match", "--data", src, "--split", "test", "--judge", "embedded",
                                "--encoding", "fp32", "--out", tmp_path / "t.json", "--json", "--quiet")
    assert code == 0 and "map_strict" not in json.loads(stdout), err


def test_match_logit_is_log_odds_of_class_zero():
    import numpy as np

    from berds_core.judges.cross_encoder import match_logits

    L = np.array([[2.0, 0.0, -1.0], [0.0, 1.0, 1.0]])
    p = np.exp(L) / np.exp(L).sum(1, keepdims=True)
    assert np.allclose(match_logits(L), np.log(p[:, 0] / (p[:, 1] + p[:, 2])))


@pytest.mark.slow
def test_the_argkp_judge_scores_through_the_cache_and_says_what_it_reads(tmp_path, monkeypatch):
    from berds_core.judges import describe_judge, get_judge
    from berds_core.judges.cross_encoder import CE_WEIGHTS, HEAD_WEIGHTS

    if not (CE_WEIGHTS.exists() and HEAD_WEIGHTS.exists()):
        pytest.skip("the argkp judge's weights are not built")
    monkeypatch.setenv("BERDS_CACHE", str(tmp_path / "cache"))
    j = get_judge("argkp", encoding="fp32")
    assert j.name.startswith("argkp-ce-") and j.band[0] <= j.threshold <= j.band[1]
    pairs = [("Homework takes time away from play, sport and family.", "Homework takes away free time"),
             ("Golf needs fitness and skill.", "Homework takes away free time")]
    p, lab = j.predict(pairs)
    assert p.shape == (2,) and ((0 <= p) & (p <= 1)).all() and lab.dtype == bool
    j2 = get_judge("argkp", encoding="fp32")
    p2, _ = j2.predict(pairs)  # a new judge reads the cache
    assert (p2 == p).all() and j2.forward_calls == 0
    assert describe_judge(j)["stance"] and describe_judge(j.name)["caveat"].startswith("The offline ArgKP judge")


def test_get_judge_passes_the_argkp_candidate_files(tmp_path):
    """``get_judge("argkp", cross_encoder=..., weights=...)`` (bench/argkp_dev.py's candidates) reads those
    files: a missing network is one clear error naming it, and another network is another judge (cache)."""
    import shutil

    from berds_core.judges import JudgeError, get_judge
    from berds_core.judges.cross_encoder import CE_WEIGHTS, HEAD_WEIGHTS

    if not (CE_WEIGHTS.exists() and HEAD_WEIGHTS.exists()):
        pytest.skip("the argkp judge's weights are not built")
    with pytest.raises(JudgeError, match="nope.npz"):
        get_judge("argkp", cross_encoder=str(tmp_path / "nope.npz"))
    other = tmp_path / "other.npz"
    shutil.copyfile(CE_WEIGHTS, other)
    with open(other, "ab") as fh:  # same network, other bytes: named apart in the cache
        fh.write(b"\0")
    a, b = get_judge("argkp", encoding="fp32"), get_judge("argkp", encoding="fp32", cross_encoder=str(other),
                                                           weights=str(HEAD_WEIGHTS))
    assert b.ce_path == other and a.name != b.name
