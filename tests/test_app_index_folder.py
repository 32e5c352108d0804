"""The app on a large prebuilt index: Playground and Evaluate open an index folder and read passages by row.

The corpus has more passages than the warm-up pre-encodes (so nothing reads it
whole on purpose), and every way of reading a disk corpus whole is made to
fail while the pages run.
"""
from __future__ import annotations

import html
import json
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("streamlit")
from streamlit.testing.v1 import AppTest  # noqa: E402

from berds_core.studio.warmup import WARM_MAX_PASSAGES  # noqa: E402
from test_app_pages import wait_warm  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
TIMEOUT = 600  # a page run may wait for the one-off warm-up
QUESTIONS = [
    {"id": "q1", "question": "Should schools ban homework?",
     "perspectives": ["Homework harms sleep.", "Homework builds practice."]},
    {"id": "q2", "question": "Are zoos cruel to animals?",
     "perspectives": ["Zoos are cruel.", "Zoos protect species."]},
]
TOPICAL = [("hw1", "Sleep", "Teenagers lose sleep over homework every night and schools should ban it"),
           ("hw2", "Practice", "Homework builds practice in mathematics and should stay in schools"),
           ("zoo1", "Cruel", "Keeping wild animals in zoos is cruel and causes them stress"),
           ("zoo2", "Species", "Zoos protect endangered species through breeding programs")]


@pytest.fixture(scope="module")
def big(tmp_path_factory):
    """A corpus of more passages than the warm-up pre-encodes, ingested, and its BM25 index folder."""
    from berds_core.cli import main

    d = tmp_path_factory.mktemp("bigcorpus")
    rng = np.random.default_rng(0)
    words = [f"filler{i}" for i in range(3000)]
    corpus = d / "psgs.tsv"
    with open(corpus, "w", encoding="utf-8") as fh:
        fh.write("id\ttext\ttitle\n")
        for pid, title, text in TOPICAL:
            fh.write(f"{pid}\t{text}\t{title}\n")
        for i in range(WARM_MAX_PASSAGES + 500):
            fh.write(f"f{i}\t{' '.join(rng.choice(words, 12))}\tFiller\n")
    qf = d / "questions.jsonl"
    qf.write_text("".join(json.dumps(q) + "\n" for q in QUESTIONS), encoding="utf-8")
    folder = d / "bm25-index"
    assert main(["index", "--corpus", str(corpus), "--corpus-storage", "disk", "--index-dir", str(folder),
                 "--quiet"]) == 0
    return qf, corpus, folder


@pytest.fixture()
def entry(tmp_path_factory) -> str:
    path = tmp_path_factory.mktemp("entry") / "app_entry.py"
    path.write_text(f"import runpy, sys\nsys.path.insert(0, {str(ROOT)!r})\n"
                    f"runpy.run_path({str(ROOT / 'app.py')!r}, run_name='__main__')\n")
    return str(path)


@pytest.fixture()
def no_whole_reads(monkeypatch):
    """Reading a disk corpus whole (streaming every batch, iterating it or a column) fails the test."""
    from berds_core.corpora import disk

    def refuse(*a, **k):
        raise AssertionError("the whole corpus was read")

    for name in ("iter_batches", "__iter__"):
        monkeypatch.setattr(disk.DiskCorpus, name, refuse)
    monkeypatch.setattr(disk._Column, "__iter__", refuse)


def _configure(at, qf, folder, encoder: str = "", corpus: str = ""):
    at.selectbox(key="sb_dataset").set_value("File path").run()
    at.text_input(key="sb_dataset_path").set_value(str(qf)).run()
    at.selectbox(key="sb_corpus").set_value("File path").run()
    at.text_input(key="sb_corpus_path").set_value(corpus).run()  # empty: the corpus the folder names
    at.radio(key="sb_retriever").set_value("index folder").run()
    at.text_input(key="sb_index_dir").set_value(str(folder)).run()
    if encoder:
        at.text_input(key="sb_query_encoder").set_value(encoder).run()
    return at


def test_playground_and_evaluate_on_a_prebuilt_bm25_folder(big, entry, monkeypatch, tmp_path_factory, no_whole_reads):
    monkeypatch.setenv("BERDS_DATA_ROOTS", str(tmp_path_factory.getbasetemp()))
    qf, corpus, folder = big
    at = AppTest.from_file(entry, default_timeout=TIMEOUT)
    at.run()
    _configure(at, qf, folder)
    cfg = at.session_state["config"]
    assert cfg.retriever == f"index:{folder}" and "index bm25-index" in cfg.label()
    at.switch_page(str(ROOT / "pages/playground.py"))
    at.run()
    wait_warm(at)
    md = "\n".join(m.value for m in at.markdown)
    assert md.count('data-testid="passage-card"') > 0
    assert "Teenagers lose sleep over homework" in md  # the first question's passages, fetched by row
    at.switch_page(str(ROOT / "pages/evaluate.py"))
    at.run()
    at.button(key="ev_run").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert len(at.dataframe) == 1


def test_a_folder_outside_the_allowed_roots_is_refused(big, entry, monkeypatch, tmp_path):
    qf, corpus, folder = big
    monkeypatch.setenv("BERDS_DATA_ROOTS", str(tmp_path))  # the data is elsewhere now
    local_q = tmp_path / "q.jsonl"
    local_q.write_text(qf.read_text(), encoding="utf-8")
    at = AppTest.from_file(entry, default_timeout=TIMEOUT)
    at.run()
    _configure(at, local_q, folder)
    at.switch_page(str(ROOT / "pages/playground.py"))
    at.run()
    assert not at.exception
    errors = [html.unescape(e.value) for e in at.error]
    assert any(e.startswith("index folder:") and "outside the folders this app may open" in e for e in errors), errors


def test_playground_on_a_pyserini_layout_folder_with_a_typed_query_encoder(entry, monkeypatch, tmp_path):
    import faiss

    from berds_core.embeddings.text_encoders import text_encoder

    monkeypatch.setenv("BERDS_DATA_ROOTS", str(tmp_path))
    corpus = tmp_path / "c.jsonl"
    corpus.write_text("".join(json.dumps({"id": pid, "title": t, "text": x}) + "\n" for pid, t, x in TOPICAL),
                      encoding="utf-8")
    qf = tmp_path / "q.jsonl"
    qf.write_text("".join(json.dumps(q) + "\n" for q in QUESTIONS), encoding="utf-8")
    x = text_encoder().embed([t for _, _, t in TOPICAL])
    folder = tmp_path / "prebuilt"
    folder.mkdir()
    index = faiss.IndexFlatIP(x.shape[1])
    index.add(x[::-1].copy())
    faiss.write_index(index, str(folder / "index"))
    (folder / "docid").write_text("".join(f"{pid}\n" for pid, _, _ in TOPICAL[::-1]), encoding="utf-8")
    at = AppTest.from_file(entry, default_timeout=TIMEOUT)
    at.run()
    _configure(at, qf, folder, encoder="all-MiniLM-L6-v2", corpus=str(corpus))
    at.switch_page(str(ROOT / "pages/playground.py"))
    at.run()
    wait_warm(at)
    md = "\n".join(m.value for m in at.markdown)
    assert "Teenagers lose sleep over homework" in md or "Homework builds practice" in md
