"""BM25 on disk with tantivy: ranking like bm25s, the same `--retriever bm25`, caching, faults."""
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from berds_core.cli import main
from berds_core import corpora
from berds_core.corpora.disk import DiskCorpus, ingest
from berds_core.corpora.memory import corpus_from_passages
from berds_core.errors import InputError
from berds_core.records import Passage
from berds_core.retrieval import bm25_engine, get_retriever
from berds_core.retrieval import tantivy_bm25
from berds_core.retrieval.bm25 import BM25Retriever, _Analyzer
from berds_core.retrieval.tantivy_bm25 import TantivyBM25Retriever, analyzer
from berds_core.runs import read_run

DOCS = [
    ("p1", "Uniforms", "School uniforms reduce bullying and peer pressure about clothes."),
    ("p2", "Uniforms", "School uniforms restrict students' freedom of expression."),
    ("p3", "Zoos", "Zoos help endangered species survive through breeding programs."),
    ("p4", "Zoos", "Keeping wild animals in zoos is cruel and causes stress."),
    ("p5", "Energy", "Nuclear power is a low carbon source of reliable electricity."),
    ("p6", "Energy", "Nuclear waste stays dangerous for thousands of years."),
    ("p7", "Energy", "Solar panels and wind turbines are cheaper than new nuclear plants."),
    ("p8", "Diet", "A vegetarian diet lowers the risk of heart disease."),
]
QUERIES = ["Should schools require uniforms?", "Are zoos cruel to animals?", "Is nuclear energy dangerous?",
           "the of and", "vegetarian heart"]


@pytest.fixture(autouse=True)
def _cache(tmp_path, monkeypatch):
    monkeypatch.setenv("BERDS_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


def _corpus():
    return corpus_from_passages([Passage(*d) for d in DOCS], "toy")


def _jsonl(path, docs=DOCS):
    path.write_text("".join(json.dumps({"id": i, "title": t, "text": x}) + "\n" for i, t, x in docs), encoding="utf-8")
    return path


def test_analyzer_gives_bm25s_tokens():
    text = "The Running dogs' owner's cars, I think, weren't at 3 o'clock in Zürich (naïve café; co-op 42)"
    assert analyzer().analyze(text) == _Analyzer().analyze([text])[0]


def test_rankings_match_bm25s_on_a_small_corpus():
    c = _corpus()
    t, s = TantivyBM25Retriever(c, progress=False), BM25Retriever(c, progress=False)
    queries = [q for q in QUERIES if q != "the of and"]
    for q, a, b in zip(queries, t.search(queries, 3), s.search(queries, 3)):
        assert [r for r, _ in a][:1] == [r for r, _ in b][:1], q
    assert t.search(["the of and"], 5) == [[]]  # stop words only: nothing matches (bm25s lists zero scores)
    hits = t.search(["nuclear"], 10)[0]
    assert {c.ids[r] for r, _ in hits} == {"p5", "p6", "p7"} and hits == sorted(hits, key=lambda h: -h[1])
    assert t.search(QUERIES[:1], 0) == [[]] and t.search([], 3) == []


def test_ties_are_ordered_by_row_whatever_order_the_index_holds_them_in(monkeypatch):
    """Equal scores come lowest row first, as bm25s gives them, also when tantivy holds the documents in another
    order (its threads place them as they go); the k-th place goes to the lowest tied row."""
    texts = ["Nuclear power plants make electricity.", "Zoos keep animals.", "Electricity power plants make nuclear.",
             "School uniforms.", "Plants make nuclear power electricity.", "Power plants make nuclear electricity."]
    c = corpus_from_passages([Passage(f"d{i}", "", t) for i, t in enumerate(texts)], "ties")
    real = tantivy_bm25.text_batches
    monkeypatch.setattr(tantivy_bm25, "text_batches", lambda corpus, size=1: reversed(list(real(corpus, 1))))
    assert len(c) == len(texts)  # the same words in another order: four passages with one score
    t = TantivyBM25Retriever(c, progress=False, cache=False, threads=1)  # documents added last row first
    assert t.search(["nuclear plants"], 4)[0].rows.tolist() == [0, 2, 4, 5]
    assert t.search(["nuclear plants"], 2)[0].rows.tolist() == [0, 2]
    assert t.search(["nuclear plants"], 3)[0].rows.tolist() == BM25Retriever(c, progress=False).search(
        ["nuclear plants"], 3)[0].rows.tolist() == [0, 2, 4]


def test_index_is_cached_on_disk_and_reopened(_cache):
    c = _corpus()
    first = TantivyBM25Retriever(c, progress=False)
    assert not first.cache_hit and (first.cache_path / "berds.json").is_file()
    assert first.cache_path.name.startswith("toy-" + c.hash[:20])
    again = TantivyBM25Retriever(c, progress=False)
    assert again.cache_hit and again.search(QUERIES, 3) == first.search(QUERIES, 3)


def test_engine_follows_where_the_corpus_lives(tmp_path):
    path = _jsonl(tmp_path / "c.jsonl")
    disk, mem = ingest(path), _corpus()
    assert bm25_engine(disk) == "tantivy" and bm25_engine(mem) == "bm25s"  # on disk / small, in memory
    assert bm25_engine(mem, "tantivy") == "tantivy"
    big = corpus_from_passages([Passage(f"b{i}", "", f"text {i}") for i in range(5_000)], "big")
    assert bm25_engine(big) == "tantivy"  # from 5,000 passages tantivy is faster in memory too
    r = get_retriever("bm25", disk, progress=False)
    assert r.engine == "tantivy" and disk.ids[r.search(["zoos cruel"], 1)[0][0][0]] == "p4"
    with pytest.raises(ValueError, match="BM25 engine"):
        bm25_engine(mem, "lucene")


def test_a_folder_built_from_another_corpus_is_refused(tmp_path):
    folder = tmp_path / "bm25"
    TantivyBM25Retriever(_corpus(), progress=False, folder=folder)
    other = corpus_from_passages([Passage("x", "", "another corpus entirely")], "other")
    with pytest.raises(InputError, match="built from another corpus"):
        TantivyBM25Retriever(other, progress=False, folder=folder)


def test_ctrl_c_during_the_build_leaves_no_index_that_loads(monkeypatch, _cache):
    c = _corpus()
    real = tantivy_bm25.text_batches

    def interrupted(corpus, size=10_000):
        yield from real(corpus, 3)
        raise KeyboardInterrupt

    monkeypatch.setattr(tantivy_bm25, "text_batches", interrupted)
    with pytest.raises(KeyboardInterrupt):
        TantivyBM25Retriever(c, progress=False)
    indexes = Path(_cache) / "indexes"
    assert not indexes.exists() or list(indexes.iterdir()) == []
    monkeypatch.setattr(tantivy_bm25, "text_batches", real)
    r = TantivyBM25Retriever(c, progress=False)
    assert not r.cache_hit and r.search(["zoos"], 1)[0]


def test_a_full_disk_during_the_build_is_one_input_error(monkeypatch, _cache):
    def full(*a, **k):
        raise OSError(28, "No space left on device")
        yield  # pragma: no cover

    monkeypatch.setattr(tantivy_bm25, "text_batches", full)
    with pytest.raises(InputError, match="cannot write the BM25 index: no space left on the device"):
        TantivyBM25Retriever(_corpus(), progress=False)
    assert list((Path(_cache) / "indexes").iterdir()) == []


def _index(capsys, argv):
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def test_cli_index_and_retrieve_on_a_disk_corpus(tmp_path, capsys):
    corpus = _jsonl(tmp_path / "c.jsonl")
    q = tmp_path / "q.jsonl"
    q.write_text(json.dumps({"id": "q1", "question": "Are zoos cruel?", "perspectives": ["yes", "no"]}) + "\n",
                 encoding="utf-8")
    code, out, _ = _index(capsys, ["index", "--corpus", str(corpus), "--corpus-storage", "disk", "--json", "--quiet"])
    info = json.loads(out)
    assert code == 0 and info["engine"] == "tantivy" and info["corpus_storage"] == "disk"
    assert info["passages"] == len(DOCS) and not info["cache_hit"]
    run = tmp_path / "run.jsonl"
    code, out, _ = _index(capsys, ["retrieve", "--corpus", str(corpus), "--corpus-storage", "disk", "--questions",
                                   str(q), "--k", "2", "--out", str(run), "--json", "--quiet"])
    info2 = json.loads(out)
    assert code == 0 and info2["cache_hit"] and info2["hash"] == info["hash"]
    entry = read_run(run)[0]
    assert entry["ctxs"][0]["id"] == "p4" and entry["corpus"] == {"name": "c", "hash": info["hash"]}


def test_cli_index_dir_builds_there_and_retrieve_opens_it(tmp_path, capsys):
    corpus = _jsonl(tmp_path / "c.jsonl")
    q = tmp_path / "q.jsonl"
    q.write_text(json.dumps({"id": "q1", "question": "nuclear waste", "perspectives": ["a", "b"]}) + "\n",
                 encoding="utf-8")
    folder = tmp_path / "bm25-index"
    code, out, _ = _index(capsys, ["index", "--corpus", str(corpus), "--index-dir", str(folder), "--json", "--quiet"])
    assert code == 0 and json.loads(out)["cache_path"] == str(folder) and (folder / "berds.json").is_file()
    run = tmp_path / "run.jsonl"
    # the corpus comes from the folder's description; the kind (bm25) too
    code, out, err = _index(capsys, ["retrieve", "--index-dir", str(folder), "--questions", str(q), "--k", "1",
                                     "--out", str(run), "--json", "--quiet"])
    assert code == 0, err
    assert json.loads(out)["engine"] == "tantivy" and read_run(run)[0]["ctxs"][0]["id"] == "p6"
    other = _jsonl(tmp_path / "other.jsonl", DOCS[:3])
    code, _, err = _index(capsys, ["retrieve", "--index-dir", str(folder), "--corpus", str(other), "--questions",
                                   str(q), "--out", str(run), "--quiet"])
    assert code == 2 and "built from another corpus" in err and len(err.strip().splitlines()) == 1


def test_cli_changed_corpus_is_indexed_again_never_mixed(tmp_path, capsys):
    corpus = _jsonl(tmp_path / "c.jsonl")
    argv = ["index", "--corpus", str(corpus), "--corpus-storage", "disk", "--json", "--quiet"]
    first = json.loads(_index(capsys, argv)[1])
    _jsonl(corpus, DOCS[:4] + [("p5", "Energy", "Geothermal heat is steady.")] + DOCS[5:])
    second = json.loads(_index(capsys, argv)[1])
    assert second["hash"] != first["hash"] and not second["cache_hit"] and second["cache_path"] != first["cache_path"]


def _limited(limit_bytes):
    def pre():
        import resource

        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit_bytes, limit_bytes))
    return pre


def test_full_disk_while_indexing_exits_2_and_removes_the_half_built_index(tmp_path, _cache):
    corpus = tmp_path / "c.tsv"
    corpus.write_text("id\ttext\n" + "".join(f"{i}\tpassage {i} " + " ".join(f"w{(i * j) % 5003}" for j in range(80))
                                             + "\n" for i in range(6000)), encoding="utf-8")
    ingest(corpus)  # the store fits; the index will not
    env = {**os.environ, "BERDS_CACHE": str(_cache)}
    proc = subprocess.run([sys.executable, "-m", "berds_core", "index", "--corpus", str(corpus), "--corpus-storage",
                           "disk", "--quiet"], env=env, capture_output=True, text=True,
                          preexec_fn=_limited(300 * 1024), timeout=300)
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "cannot write the BM25 index" in lines[0], proc.stderr
    assert [p for p in (Path(_cache) / "indexes").iterdir()] == []
    assert isinstance(corpora.open_corpus(corpus, storage="disk"), DiskCorpus)  # the corpus store is intact


def test_index_built_while_ingesting_equals_one_built_afterwards(tmp_path, _cache):
    from berds_core.retrieval.tantivy_bm25 import IngestIndexer

    path = _jsonl(tmp_path / "c.jsonl")
    with IngestIndexer() as feed:
        corpus = corpora.open_corpus(path, storage="disk", on_batch=feed)
        published = feed.finish(corpus)
    assert published is not None and (published / "berds.json").is_file()
    streamed = TantivyBM25Retriever(corpus, progress=False)
    assert streamed.cache_hit and streamed.cache_path == published
    after = TantivyBM25Retriever(corpus, progress=False, folder=tmp_path / "after")
    assert streamed.search(QUERIES, 5) == after.search(QUERIES, 5)
    with IngestIndexer() as feed:  # the store exists now: nothing streams, nothing is published
        again = corpora.open_corpus(path, storage="disk", on_batch=feed)
        assert feed.finish(again) is None
    assert sorted(p.name for p in (Path(_cache) / "indexes").iterdir()) == [published.name]


@pytest.mark.parametrize("fault", ["ctrl-c", "bad row"])
def test_a_failed_ingest_leaves_neither_store_nor_index(tmp_path, _cache, fault):
    from berds_core.retrieval.tantivy_bm25 import IngestIndexer

    rows = [("p%d" % i, "", f"passage {i} about zoos") for i in range(30)]
    if fault == "bad row":
        rows[20] = ("p20", "", " ")
    path = _jsonl(tmp_path / "c.jsonl", rows)

    def feed_then_fail(feed):
        def on_batch(batch):
            feed(batch)
            if fault == "ctrl-c":
                raise KeyboardInterrupt
        return on_batch

    with pytest.raises(KeyboardInterrupt if fault == "ctrl-c" else InputError):
        with IngestIndexer() as feed:
            corpora.open_corpus(path, storage="disk", on_batch=feed_then_fail(feed))
    for sub in ("indexes", "corpora"):
        folder = Path(_cache) / sub
        assert not folder.exists() or list(folder.iterdir()) == [], sub


@pytest.mark.parametrize("storage", ["disk", "memory"])
def test_unwritable_cache_while_indexing_is_one_line_naming_the_cache(tmp_path, storage):
    from test_cli_newcomer import read_only

    corpus = _jsonl(tmp_path / "c.jsonl")
    with read_only(tmp_path / "cache") as cache:
        env = {**os.environ, "BERDS_CACHE": str(cache)}
        proc = subprocess.run([sys.executable, "-m", "berds_core", "index", "--corpus", str(corpus),
                               "--corpus-storage", storage, "--quiet"], env=env, capture_output=True, text=True,
                              timeout=300)
        assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
        assert "BERDS_CACHE" in proc.stderr and "not writable" in proc.stderr
        assert list(cache.iterdir()) == []
