"""The golden-output comparator: it must see every change a refactoring could make, and only those."""
from golden_harness import compare, scrub


def _run(*pairs):
    return {"ctxs": [{"id": i, "score": s} for i, s in pairs]}


def test_same_result_has_no_difference():
    a = {"json": {"mrecall@5": 0.5, "n": 14}, "files": {"r.jsonl": {"run": [_run(("p1", 3.0), ("p2", 2.0))]}}}
    assert compare(a, a) == []


def test_a_changed_metric_a_missing_key_and_a_new_key_show():
    diffs = compare({"json": {"mrecall@5": 0.5, "old": 1}}, {"json": {"mrecall@5": 0.51, "new": 2}})
    assert len(diffs) == 3
    assert any("mrecall@5" in d for d in diffs) and any("missing" in d for d in diffs) and any("new" in d for d in diffs)


def test_float_noise_passes_but_a_real_change_does_not():
    assert compare({"x": 0.123456}, {"x": 0.1234561}) == []
    assert compare({"x": 0.1234}, {"x": 0.1236}) != []
    assert compare({"x": True}, {"x": 1}) != []  # a label is not a number


def test_a_printed_probability_may_move_one_unit_of_its_last_digit_and_no_more():
    """issue 52: a TSV cell printed to 6 places on an AVX2 CPU's fp32 kernels ("0.455616" -> "0.455615")."""
    assert compare({"p": "0.455616"}, {"p": "0.455615"}) == []
    assert compare({"p": "0.455616"}, {"p": "0.455618"}) != []
    assert compare({"p": "0.43"}, {"p": "0.44"}) != []  # a figure printed to 2 places is not rounding noise
    assert compare({"p": "0.4556"}, {"p": "0.455616"}) != [] and compare({"p": "yes"}, {"p": "no"}) != []


def test_ranking_order_matters_except_within_a_tie():
    want = _run(("p1", 3.0), ("p2", 2.0), ("p3", 1.0))
    assert compare(want, _run(("p2", 2.0), ("p1", 3.0), ("p3", 1.0))) != []
    tie = _run(("p1", 3.0), ("p2", 2.0), ("p3", 2.0 + 1e-7), ("p4", 1.0))
    assert compare(tie, _run(("p1", 3.0), ("p3", 2.0), ("p2", 2.0), ("p4", 1.0))) == []
    assert compare(tie, _run(("p1", 3.0), ("p2", 2.0), ("p5", 2.0), ("p4", 1.0))) != []


def test_judge_verdicts_inside_passages_are_compared():
    want = {"ctxs": [{"id": "p1", "score": 1.0, "j-preds": [True, False]}]}
    got = {"ctxs": [{"id": "p1", "score": 1.0, "j-preds": [True, True]}]}
    assert compare(want, got) != []


def test_scrub_drops_timings_and_writes_the_temporary_folder():
    got = scrub({"seconds": 1.2, "build_seconds": 3, "cache_hit": True, "out": "/tmp/x/r.jsonl", "/tmp/x/a": 1,
                 "updated_at": "2026", "k": 10}, "/tmp/x")
    assert got == {"out": "{tmp}/r.jsonl", "{tmp}/a": 1, "k": 10}


def test_operator_encoding_applies_to_every_auto_encoder(monkeypatch):
    import pytest

    from berds_core.embeddings.models import resolve_encoding

    monkeypatch.setenv("BERDS_ENCODING", "fp32")
    assert resolve_encoding(None, "cpu") == "fp32" and resolve_encoding("auto", "cpu") == "fp32"
    assert resolve_encoding("int8", "cpu") == "int8"  # an explicit choice still wins
    monkeypatch.setenv("BERDS_ENCODING", "fp8")
    with pytest.raises(ValueError, match="BERDS_ENCODING"):
        resolve_encoding(None, "cpu")
