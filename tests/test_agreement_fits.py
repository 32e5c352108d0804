"""The Agreement page fits each annotator model once per change of the labels (cached on the labels' version),
and reads the labels, the pairs, the gold and the judges' answers once per request for everything it draws.

The fits are counted where they happen (``reliability._fit``, wrapped so the real fit still runs) and the
labels the models read are seen in the store's own statements (``Database.set_trace``): a rerun with no new
label fits nothing and does not read the model's labels again; a rerun after a new label fits both models once
more, reading the labels once. The report, the annotators' table and the downloads share one request's reads
(:class:`berds_core.lab.request_reads.RequestReads`), which answer as the store does.
"""
from __future__ import annotations

from collections import OrderedDict
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from berds_core.lab import reliability
from berds_core.lab.access import Actor, Lab
from berds_core.lab.agreement import agreement_report, distinct_judges
from berds_core.lab.exports import WHAT, export_rows
from berds_core.lab.request_reads import RequestReads
from berds_core.lab.store import SKIP, Pair, Store

ROOT = Path(__file__).resolve().parents[1]
MODEL_LABELS_SQL = "SELECT pair_id, annotator, kind, task_set FROM assignments"  # what model_labels reads first


@pytest.fixture()
def db(annotation_db_path):
    path = annotation_db_path
    with Store(path) as s:
        s.add_pairs([Pair(f"p{i}", f"Question {i}?", f"document {i}", f"perspective {i}", question_id=f"q{i % 5}")
                     for i in range(30)])
        s.tasks.create("round", {a: [f"p{i}" for i in range(30)] for a in ("ann", "ben", "cat")})
        for a, off in (("ann", 0), ("ben", 1), ("cat", 2)):
            for i in range(24):
                s.label(a, f"p{i}", int((i + off) % 3 == 0))
        s.set_judge_preds("judgeX", {f"p{i}": (0.1 + 0.02 * i, i % 2) for i in range(30)})
    return path


@pytest.fixture()
def fits(monkeypatch):
    """Each real fit, by method (the fit itself runs); the in-memory caches start empty."""
    got = []
    real = reliability._fit

    def counted(rows, method, seed):
        got.append(method)
        return real(rows, method, seed)

    monkeypatch.setattr(reliability, "_fit", counted)
    monkeypatch.setattr(reliability, "_MEMO", OrderedDict())
    monkeypatch.setattr(reliability, "_FITS", OrderedDict())
    return got


def _run(at, store) -> list[str]:
    seen: list[str] = []
    store.set_trace(seen.append)
    try:
        at.run()
    finally:
        store.set_trace(None)
    assert not at.exception
    return seen


def test_models_are_fitted_once_per_change_of_the_labels(db, fits):
    from studio_ui.lab_ui import get_store

    at = AppTest.from_file(str(ROOT / "pages" / "agreement.py"), default_timeout=120)
    at.query_params["tab"] = "Annotators"  # the tab that reports both models' competence, besides the exports
    at.run()
    assert not at.exception
    assert sorted(fits) == ["dawid-skene", "mace"]  # each model once, though three places read them
    store = get_store(str(db))
    fits.clear()
    seen = _run(at, store)  # a rerun, no new label
    assert fits == []
    assert not [s for s in seen if s.startswith(MODEL_LABELS_SQL)]  # the labels were not read for the models
    with Store(db) as s:
        s.label("ann", "p25", 1)
    seen = _run(at, store)
    assert sorted(fits) == ["dawid-skene", "mace"]
    assert len([s for s in seen if s.startswith(MODEL_LABELS_SQL)]) == 1
    fits.clear()
    with Store(db) as s:  # an undo changes the version: the labels are read again, and are those fitted first
        s.undo("ann")
    seen = _run(at, store)
    assert len([s for s in seen if s.startswith(MODEL_LABELS_SQL)]) == 1 and fits == []
    seen = _run(at, store)
    assert not [s for s in seen if s.startswith(MODEL_LABELS_SQL)] and fits == []


# the whole-store reads a request shares (what each statement starts with)
WHOLE_READS = {"labels": "SELECT l.* FROM labels l", "pairs": "SELECT pair_id, question, document",
               "gold": "SELECT pair_id, label FROM gold", "reference": "SELECT pair_id, label FROM reference_labels",
               "judge answers": "SELECT pair_id, prob, label FROM judge_preds WHERE judge", "judges":
               "SELECT DISTINCT judge FROM judge_preds"}


def _counts(seen: list[str]) -> dict[str, int]:
    return {k: sum(s.startswith(v) for s in seen) for k, v in WHOLE_READS.items()}


@pytest.mark.parametrize("tab", ["Paper table", "Annotators"])
def test_the_page_reads_the_labels_once_per_request(db, fits, tab):
    """The report, the models, the annotators' table and the six downloads of one run read each table once (the
    page read the labels three times and the pairs six times a run); the next request reads them again."""
    from studio_ui.lab_ui import get_store

    at = AppTest.from_file(str(ROOT / "pages" / "agreement.py"), default_timeout=120)
    at.query_params["tab"] = tab
    at.run()
    assert not at.exception
    store = get_store(str(db))
    seen = _run(at, store)
    assert _counts(seen) == dict.fromkeys(WHOLE_READS, 1), seen
    fits.clear()
    with Store(db) as s:
        s.label("ben", "p27", 1)
    seen = _run(at, store)  # a new request: read afresh, once
    assert _counts(seen) == dict.fromkeys(WHOLE_READS, 1), seen
    assert sorted(fits) == ["dawid-skene", "mace"]  # and the new label reached the models


def test_request_reads_answer_as_the_store(annotation_db_path):
    """Every read a request shares gives what the store gives (order included), and the report and every export
    built on them are the store's."""
    with Store(annotation_db_path) as s:
        s.add_pairs([Pair(f"p{i}", f"Question {i % 4}?", f"document {i}", f"perspective {i}", question_id=f"q{i % 4}",
                          subset=("a", "b")[i % 2], side=("support", "oppose")[i % 3 == 0]) for i in range(20)])
        s.tasks.create("round", {a: [f"p{i}" for i in range(20)] for a in ("zed", "amy", "bob")})
        for a, off in (("zed", 0), ("amy", 1), ("bob", 2)):
            for i in range(16):
                s.label(a, f"p{i}", SKIP if (i + off) % 7 == 0 else int((i + off) % 3 == 0), unsure=i % 5 == 0)
        s.set_judge_preds("judgeX", {f"p{i}": (0.05 * i, int(i > 9)) for i in range(20)})
        s.set_judge_preds("judgeY", {f"p{i}": (None, i % 2) for i in range(12)})
        s.set_reference_labels({"p1": 1, "p2": 0, "p17": 1})
        s.adjudicate("p3", 1, "amy")
        r = RequestReads(s)
        for who in (None, "zed", "amy", "nobody"):
            for skips in (True, False):
                assert r.labels(who, include_skips=skips) == s.labels(who, include_skips=skips)
        assert r.pairs() == s.pairs()
        for ids in (["p3", "p1", "p3", "nope", "p19"], [], [f"p{i}" for i in range(19, -1, -1)]):
            assert r.pairs(ids) == s.pairs(ids)
        assert (r.gold(), r.reference_labels(), r.judges()) == (s.gold(), s.reference_labels(), s.judges())
        assert r.judge_preds("judgeY") == s.judge_preds("judgeY") and r.labels_version() == s.labels_version()
        assert distinct_judges(r) == distinct_judges(s)
        # only the reads it caches: nothing else reaches the store through it (issue 64: no silent forwarding)
        assert not hasattr(r, "assignments") and not hasattr(r, "label") and r.store is s
        assert RequestReads.of(r) is r and RequestReads.of(s).store is s
        assert agreement_report(r, "judgeX", n_boot=50) == agreement_report(s, "judgeX", n_boot=50)
        for what in WHAT:
            assert export_rows(r, what=what, include_skips=True, judge="judgeX") == \
                export_rows(s, what=what, include_skips=True, judge="judgeX"), what


def test_a_request_s_own_writes_are_read_back(annotation_db_path):
    """A per-request Lab's label, undo and adjudication are in what it reads next in the same request."""
    with Store(annotation_db_path) as s:
        s.add_pairs([Pair(f"p{i}", "Q?", f"d{i}", f"v{i}", question_id="q") for i in range(4)])
        s.tasks.create("round", {"ann": ["p0", "p1", "p2", "p3"]})
        lab = Lab(s, Actor("ann", "admin"), per_request=True)
        assert lab.export_rows("labels") == []
        lab.label("p0", 1)
        assert [r["id"] for r in lab.export_rows("labels")] == ["p0"]
        lab.undo()
        assert lab.export_rows("labels") == []
        assert lab.export_rows("gold") == []
        lab.adjudicate("p1", 0)
        assert [(r["id"], r["label"]) for r in lab.export_rows("gold")] == [("p1", 0)]
