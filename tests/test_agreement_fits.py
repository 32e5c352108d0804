"""The Agreement page fits each annotator model once per change of the labels (cached on the labels' version).

The fits are counted where they happen (``reliability._fit``, wrapped so the real fit still runs) and the
labels the models read are seen in the store's own statements (``Database.set_trace``): a rerun with no new
label fits nothing and does not read the model's labels again; a rerun after a new label fits both models once
more, reading the labels once.
"""
from __future__ import annotations

from collections import OrderedDict
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from berds_core.lab import reliability
from berds_core.lab.store import Pair, Store

ROOT = Path(__file__).resolve().parents[1]
MODEL_LABELS_SQL = "SELECT pair_id, annotator, kind, task_set FROM assignments"  # what model_labels reads first


@pytest.fixture()
def db(annotation_db_path):
    path = annotation_db_path
    with Store(path) as s:
        s.add_pairs([Pair(f"p{i}", f"Question {i}?", f"document {i}", f"perspective {i}", question_id=f"q{i % 5}")
                     for i in range(30)])
        s.create_task_set("round", {a: [f"p{i}" for i in range(30)] for a in ("ann", "ben", "cat")})
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
