"""A corpus folder on the REAL two-node Ray cluster (the module cluster of ``test_distributed_cluster``): its
shards read in parallel by Ray tasks into the on-disk store, the dense index built without the corpus
texts on the driver, and ``--quiet`` keeping Ray's own lines off stderr. No mock of Ray.

What one process gives is the reference every time: the same store (manifest hash, rows, ids), the same
one-line error for a bad record, the same vectors bit for bit and the same exact-search rankings.
"""
import gzip
import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from distributed_data import passage_texts, write_corpus, write_questions
from test_distributed_cluster import berds, cluster, ray_tmpdir  # noqa: F401 - the module's cluster fixtures

pytest.importorskip("ray")
pytestmark = [pytest.mark.slow, pytest.mark.timeout(1500)]


def write_shards(root: Path, *, bad_third: bool = False) -> Path:
    """Three shards of three formats: ids given and derived (no id, a blank id, a null id), a text repeated
    across shards (dropped: the store keeps the first), one long text split into passages. ``bad_third``:
    the Parquet shard's fourth row has a blank text."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    root.mkdir()
    texts = passage_texts(600, words=10, seed=5)
    with gzip.open(root / "a.jsonl.gz", "wt", encoding="utf-8") as fh:
        for i, t in enumerate(texts[:250]):
            rec = {"text": t} if i % 7 == 3 else {"id": f"a{i}", "title": f"A {i % 5}", "text": t}
            fh.write(json.dumps(rec) + "\n")
    with open(root / "b.tsv", "w", encoding="utf-8") as fh:
        fh.write("id\ttitle\ttext\n")
        for i, t in enumerate(texts[250:450]):
            pid = "" if i % 9 == 4 else f"b{i}"
            if i == 10:
                t = texts[20]  # the same text as a.jsonl.gz's record 20: dropped
            if i == 11:
                t = " ".join(passage_texts(15, words=10, seed=9))  # 150 words: two passages
            fh.write(f"{pid}\tB\t{t}\n")
    ids = [None if i % 11 == 5 else f"c{i}" for i in range(150)]
    rows = texts[450:600]
    if bad_third:
        rows = [*rows[:3], "   ", *rows[4:]]
    pq.write_table(pa.table({"id": ids, "title": ["C"] * 150, "text": rows}), root / "c.parquet", row_group_size=40)
    return root


def store_rows(folder: Path) -> list[tuple]:
    con = sqlite3.connect(str(Path(folder) / "passages.sqlite"))
    try:
        return con.execute("SELECT row, id, title, text, shard, line FROM passages ORDER BY row").fetchall()
    finally:
        con.close()


def manifest(folder: Path) -> dict:
    m = json.loads((Path(folder) / "manifest.json").read_text())
    return {k: v for k, v in m.items() if k not in ("seconds", "created")}


def test_ingest_with_ray_equals_one_process(cluster, tmp_path):
    """``berds corpus ingest --ray``: the store one process builds (manifest and hash, every row with its id,
    title, text, shard and line); duplicates dropped and ids derived the same way."""
    corpus = write_shards(tmp_path / "shards")
    got = {}
    for mode, addr in (("one", None), ("ray", cluster)):
        got[mode], _ = berds(["corpus", "ingest", "--corpus", str(corpus)], tmp_path / f"cache-{mode}",
                             ray_address=addr)
    one, rr = got["one"], got["ray"]
    assert rr["ray"]["ingested"] is True and rr["ray"]["nodes"] == 2 and "ray" not in one
    assert rr["duplicates_dropped"] == one["duplicates_dropped"] == 1 and rr["shards"] == 3
    assert rr["passages"] == one["passages"] == 600 and rr["hash"] == one["hash"]
    assert manifest(rr["store"]) == manifest(one["store"])
    rows = store_rows(rr["store"])
    assert rows == store_rows(one["store"])
    ids = [r[1] for r in rows]
    assert "a-4" in ids and "b-6" in ids and "c-6" in ids and "b11-0" in ids and "b11-1" in ids  # derived
    again, _ = berds(["corpus", "ingest", "--corpus", str(corpus)], tmp_path / "cache-ray", ray_address=cluster)
    assert again["ray"] == {"address": cluster, "ingested": False}  # found complete: no Ray started


@pytest.mark.ray_driver
def test_parallel_reader_in_small_batches_and_a_bad_third_shard(cluster, tmp_path, monkeypatch):
    """The reader itself, batches of 7 records (so each shard task streams many, paused by backpressure)
    and a window of 2 shards: the same store. A bad record in the third shard: the one-line error of one
    process, through the CLI too (exit 2, nothing on stdout), and no store left behind."""
    import ray

    from berds_core.corpora.disk import ingest
    from berds_core.distributed.ingest import shard_batches
    from berds_core.distributed.runtime import ray_session
    from berds_core.errors import InputError

    corpus = write_shards(tmp_path / "shards")
    bad = write_shards(tmp_path / "bad", bad_third=True)
    monkeypatch.setenv("BERDS_CACHE", str(tmp_path / "cache-api"))
    one = ingest(corpus, tmp_path / "one")
    with pytest.raises(InputError) as one_err:
        ingest(bad, tmp_path / "one-bad")
    assert str(one_err.value) == f"{bad / 'c.parquet'}:4: field 'text': must not be empty"
    ray.init(address=cluster)
    try:
        with ray_session(cluster, progress=False) as session:
            def reader(shards):
                return shard_batches(session, shards, window=2, batch_rows=7)

            rr = ingest(corpus, tmp_path / "ray", reader=reader)
            with pytest.raises(InputError) as rr_err:
                ingest(bad, tmp_path / "ray-bad", reader=reader)
    finally:
        ray.shutdown()
    assert rr.hash == one.hash and store_rows(rr.folder) == store_rows(one.folder)
    assert str(rr_err.value) == str(one_err.value)
    assert not (tmp_path / "ray-bad").exists() and not (tmp_path / "one-bad").exists()
    assert not list(tmp_path.glob(".ray-bad*"))

    lines = {}
    for mode, addr in (("one", None), ("ray", cluster)):
        cache = tmp_path / f"cache-{mode}"
        _, p = berds(["corpus", "ingest", "--corpus", str(bad)], cache, check=False, ray_address=addr)
        assert p.returncode == 2 and p.stdout == "" and "Traceback" not in p.stderr
        lines[mode] = p.stderr.strip().splitlines()
        corpora = cache / "corpora"
        assert not corpora.exists() or not any(corpora.iterdir())
    assert lines["ray"] == lines["one"] == [f"berds corpus: error: {bad / 'c.parquet'}:4: field 'text': "
                                            "must not be empty"]


def one_process_vectors(cache: Path) -> np.ndarray:
    (folder,) = (cache / "vectors").iterdir()
    assert json.loads((folder / "complete.json").read_text())["n"] > 0
    return np.concatenate([np.load(p) for p in sorted(folder.glob("shard-*.npy"))])


@pytest.mark.ray_driver
def test_dense_index_over_the_disk_corpus_never_reads_its_texts_on_the_driver(cluster, tmp_path, monkeypatch,
                                                                               capsys):
    """``index --retriever dense --ray`` over the folder ingested into the disk store: the encoder actors read
    their rows from the store (on both nodes), the driver reads no passage text at all (a probe on every
    way of reading the store in this process), the vectors equal one process's bit for bit, and
    ``retrieve --ray`` ranks exactly as one process does."""
    import berds_core.retrieval.vector_shards as vector_shards
    from berds_core.cli import main
    from berds_core.corpora.disk import DiskCorpus

    corpus = write_shards(tmp_path / "shards")
    questions = write_questions(tmp_path / "questions.jsonl", 21)
    monkeypatch.setattr(vector_shards, "SHARD_ROWS", 128)  # one process encodes 128 rows a call: 5 parts
    opts = ["--corpus", str(corpus), "--corpus-storage", "disk", "--retriever", "dense", "--quiet", "--json"]
    run = ["retrieve", "--questions", str(questions), *opts, "--k", "25"]

    monkeypatch.setenv("BERDS_CACHE", str(tmp_path / "cache-one"))
    assert main(["index", *opts]) == 0
    assert main([*run, "--out", str(tmp_path / "one.jsonl")]) == 0
    capsys.readouterr()

    read = []
    real_iter, real_get_many, real_getitem = DiskCorpus.iter_batches, DiskCorpus.get_many, DiskCorpus.__getitem__

    def iter_batches(self, *a, **k):
        for b in real_iter(self, *a, **k):
            read.append(len(b))
            yield b

    def get_many(self, rows):
        read.append(len(rows))
        return real_get_many(self, rows)

    def getitem(self, row):
        read.append(1)
        return real_getitem(self, row)

    monkeypatch.setattr(DiskCorpus, "iter_batches", iter_batches)
    monkeypatch.setattr(DiskCorpus, "get_many", get_many)
    monkeypatch.setattr(DiskCorpus, "__getitem__", getitem)
    monkeypatch.setenv("BERDS_CACHE", str(tmp_path / "cache-ray"))
    assert main(["index", *opts, "--shard-rows", "100", "--ray", cluster]) == 0
    info = json.loads(capsys.readouterr().out)
    assert read == []  # the ingest reads the shard files; the index reads no text on the driver
    enc = info["ray"]["encode"]
    assert info["ray"]["ingested"] is True and info["passages"] == 600
    assert enc["parts"] == 5 and enc["encoded"] == 600 and enc["nodes_used"] == 2
    assert info["ray"]["shards"] == 6 and info["ray"]["shards_written"] == 6

    ray_vecs = np.concatenate([np.load(p) for p in sorted(Path(info["cache_path"], "vectors").glob("shard-*.npy"))])
    one = one_process_vectors(tmp_path / "cache-one")
    assert ray_vecs.shape == one.shape == (600, 384)
    np.testing.assert_array_equal(ray_vecs, one)  # the same parts as one process: bit for bit

    assert main([*run, "--shard-rows", "100", "--out", str(tmp_path / "ray.jsonl"), "--ray", cluster]) == 0
    res = json.loads(capsys.readouterr().out)
    assert res["ray"]["ingested"] is False and res["ray"]["encode"]["encoded"] == 0
    one_run = [json.loads(x) for x in (tmp_path / "one.jsonl").read_text().splitlines()]
    ray_run = [json.loads(x) for x in (tmp_path / "ray.jsonl").read_text().splitlines()]
    assert len(ray_run) == len(one_run) == 21
    for a, b in zip(one_run, ray_run):
        assert [c["id"] for c in b["ctxs"]] == [c["id"] for c in a["ctxs"]]
        np.testing.assert_allclose([c["score"] for c in b["ctxs"]], [c["score"] for c in a["ctxs"]], atol=1e-5)

    # --shard-rows equal to the one-process shard size: the index's vectors ARE the one-process shards
    # (written once, no copy), and a one-process index over the same cache then encodes nothing
    monkeypatch.setenv("BERDS_CACHE", str(tmp_path / "cache-shared"))
    read.clear()  # the retrieve above read its hits' texts for the run file
    assert main(["index", *opts, "--shard-rows", "128", "--ray", cluster]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["ray"]["encode"]["encoded"] == 600 and info["ray"]["shards"] == 5
    assert info["ray"]["shards_written"] == 5 and not (Path(info["cache_path"]) / "vectors").exists()
    assert Path(info["ray"]["vectors"]).parent == tmp_path / "cache-shared" / "vectors"
    np.testing.assert_array_equal(one_process_vectors(tmp_path / "cache-shared"), one)
    assert read == []  # as above: the driver read no text for the index
    assert main([*run, "--shard-rows", "128", "--out", str(tmp_path / "shared.jsonl"), "--ray", cluster]) == 0
    assert json.loads(capsys.readouterr().out)["ray"]["encode"]["encoded"] == 0
    shared_run = [json.loads(x) for x in (tmp_path / "shared.jsonl").read_text().splitlines()]
    assert [[c["id"] for c in r["ctxs"]] for r in shared_run] == [[c["id"] for c in r["ctxs"]] for r in one_run]
    mtimes = {p: p.stat().st_mtime_ns for p in Path(info["ray"]["vectors"]).iterdir()}
    assert main(["index", *opts]) == 0  # one process, the same cache: the vectors are there
    capsys.readouterr()
    assert {p: p.stat().st_mtime_ns for p in Path(info["ray"]["vectors"]).iterdir()} == mtimes

    # BM25 over the disk corpus: tantivy's index on the driver, as without --ray (the same run file)
    bm25 = ["retrieve", "--questions", str(questions), "--corpus", str(corpus), "--corpus-storage", "disk",
            "--retriever", "bm25", "--k", "15", "--quiet", "--json"]
    assert main([*bm25, "--out", str(tmp_path / "bm25-ray.jsonl"), "--ray", cluster]) == 0
    assert "tantivy" in json.loads(capsys.readouterr().out)["ray"]["note"]
    monkeypatch.setenv("BERDS_CACHE", str(tmp_path / "cache-one"))
    assert main([*bm25, "--out", str(tmp_path / "bm25-one.jsonl")]) == 0
    for a, b in zip(*(map(json.loads, (tmp_path / f"bm25-{m}.jsonl").read_text().splitlines()) for m in ("one", "ray"))):
        assert [c["score"] for c in b["ctxs"]] == [c["score"] for c in a["ctxs"]]
        # the same ranking up to ties: tantivy orders equal scores by its segments, which its indexing
        # threads fill in no fixed order (two one-process builds differ there too)
        assert untied(b["ctxs"]) == untied(a["ctxs"])


def untied(ctxs: list[dict]) -> list[str]:
    """The ids of a ranking whose score no other passage of it shares, above the cut (the last score may
    be shared with passages the top-k left out)."""
    from collections import Counter

    n = Counter(c["score"] for c in ctxs)
    return [c["id"] for c in ctxs if n[c["score"]] == 1 and c["score"] != ctxs[-1]["score"]]


# What stays on stderr under --quiet, and is not Ray's Python logging: transformers' weight-loading bar of
# the driver's encoder, and one line of Ray's C++ core worker (ERROR level, so written to stderr by a sink
# whose level Ray does not let one set apart from its log files) each time Ray Data starts an actor pool
# whose constructor arguments it put in the object store (ray-project/ray#53727). Silencing that one would
# take RAY_BACKEND_LOG_LEVEL=fatal, which also drops real C++ errors from the log files of the raylet and
# GCS that --ray local starts.
NOT_RAY_PYTHON = ("Loading weights", "core_worker.cc")


def test_quiet_json_with_ray_local_prints_only_the_json(tmp_path):
    """``index --ray local --quiet --json``: one JSON line on stdout and none of Ray's Python log lines on
    stderr, not even the "Token authentication is enabled ..." warning ``ray.init`` logs when it starts
    an instance (see NOT_RAY_PYTHON for the two kinds of line that remain)."""
    corpus = write_corpus(tmp_path / "corpus.jsonl", 40, words=8)
    env = {**os.environ, "BERDS_CACHE": str(tmp_path / "cache")}
    env.pop("BERDS_RAY_ADDRESS", None)
    env.pop("RAY_AUTH_MODE", None)
    p = subprocess.run([sys.executable, "-m", "berds_core", "index", "--corpus", str(corpus), "--retriever", "dense",
                        "--ray", "local", "--quiet", "--json"], capture_output=True, text=True, timeout=900, env=env)
    assert p.returncode == 0, p.stderr[-3000:]
    assert len(p.stdout.splitlines()) == 1 and json.loads(p.stdout)["ray"]["address"] == "local"
    assert "Token authentication" not in p.stderr
    rest = [ln for ln in p.stderr.splitlines() if ln.strip() and not any(k in ln for k in NOT_RAY_PYTHON)]
    assert rest == []
