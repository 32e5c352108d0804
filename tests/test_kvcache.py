"""One key-value SQLite cache base (``berds_core.files.kvcache``) under the judge predictions, the
generated texts and the embeddings: files written by the code before the base existed load as they
are, and files written now have the same tables (so the earlier code reads them too)."""
from __future__ import annotations

import sqlite3
import threading

import numpy as np
import pytest

from berds_core.files.cache import text_hash
from berds_core.embeddings.text_encoders import EmbeddingStore
from berds_core.files.kvcache import KeyValueCache
from berds_core.generators.base import GenerationCache
from berds_core.judges.base import PredictionCache

# The tables and inserts of the three caches as the code before the base wrote them (verbatim).
OLD = {
    "preds": ("CREATE TABLE IF NOT EXISTS preds (judge TEXT, passage TEXT, perspective TEXT, prob REAL,"
              " PRIMARY KEY (judge, passage, perspective))", "INSERT OR REPLACE INTO preds VALUES (?, ?, ?, ?)"),
    "gen": ("CREATE TABLE IF NOT EXISTS gen (generator TEXT, request TEXT, text TEXT,"
            " PRIMARY KEY (generator, request))", "INSERT OR REPLACE INTO gen VALUES (?, ?, ?)"),
    "emb": ("CREATE TABLE IF NOT EXISTS emb (model TEXT, text TEXT, vec BLOB, PRIMARY KEY (model, text))",
            "INSERT OR REPLACE INTO emb VALUES (?, ?, ?)"),
}


def old_file(path, table, rows):
    conn = sqlite3.connect(str(path))
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute(OLD[table][0])
    conn.executemany(OLD[table][1], rows)
    conn.commit()
    conn.close()


def schema(path, table):
    conn = sqlite3.connect(str(path))
    try:
        return conn.execute("SELECT sql FROM sqlite_master WHERE name=?", (table,)).fetchone()[0]
    finally:
        conn.close()


def test_old_prediction_cache_loads(tmp_path):
    path = tmp_path / "predictions.sqlite"
    keys = [(text_hash(f"passage {i}"), text_hash(f"perspective {i % 7}")) for i in range(1000)]
    old_file(path, "preds", [("judge-a", a, b, i / 1000) for i, (a, b) in enumerate(keys)])
    cache = PredictionCache(path)
    got = cache.get_many("judge-a", keys + [("missing", "pair")])  # more pairs than one SELECT asks
    assert got == {k: i / 1000 for i, k in enumerate(keys)}
    assert cache.get_many("judge-b", keys) == {} and cache.count("judge-a") == 1000
    cache.put_many("judge-a", [(keys[0], np.float32(0.25))])
    assert cache.get_many("judge-a", keys[:1]) == {keys[0]: 0.25}


def test_old_generation_cache_loads(tmp_path):
    path = tmp_path / "generations.sqlite"
    rows = [("hf:tiny", text_hash(f"request {i}"), f"answer {i} ✓") for i in range(700)]
    old_file(path, "gen", rows)
    cache = GenerationCache(path)
    got = cache.get_many("hf:tiny", [r[1] for r in rows] + ["nope"])
    assert got == {r[1]: r[2] for r in rows}


def test_old_embedding_store_loads(tmp_path):
    path = tmp_path / "embeddings.sqlite"
    rng = np.random.default_rng(0)
    vecs = {text_hash(f"t{i}"): rng.standard_normal(8).astype(np.float32) for i in range(600)}
    old_file(path, "emb", [("m|fp32|128", h, v.tobytes()) for h, v in vecs.items()])
    store = EmbeddingStore(path)
    got = store.get_many("m|fp32|128", list(vecs))
    assert set(got) == set(vecs)
    assert all(got[h].dtype == np.float32 and np.array_equal(got[h], v) for h, v in vecs.items())
    assert store.count() == 600 and store.count("other") == 0


@pytest.mark.parametrize("cls, table, item", [
    (PredictionCache, "preds", (("p", "s"), 0.5)),
    (GenerationCache, "gen", ("r", "text")),
    (EmbeddingStore, "emb", ("h", np.ones(4, np.float32))),
])
def test_new_files_have_the_old_tables(tmp_path, cls, table, item):
    """A file the base writes is the table the earlier code made (same SQL), so both read each other's files."""
    old_path, new_path = tmp_path / "old.sqlite", tmp_path / "new.sqlite"
    old_file(old_path, table, [])
    cls(new_path).put_many("ns", [item])
    assert schema(new_path, table) == schema(old_path, table)
    conn = sqlite3.connect(str(new_path))
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert conn.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0] == 1
    conn.close()


def test_shared_is_one_object_per_class_and_path(tmp_path):
    a = PredictionCache.shared(tmp_path / "x.sqlite")
    assert PredictionCache.shared(tmp_path / "x.sqlite") is a
    assert PredictionCache.shared(tmp_path / "y.sqlite") is not a
    assert GenerationCache.shared(tmp_path / "g.sqlite") is not a


def test_threads_share_one_connection(tmp_path):
    class Counts(KeyValueCache):
        table, namespace, keys, value, value_type = "counts", "ns", ("k",), "v", "INTEGER"

    cache = Counts(tmp_path / "c.sqlite")
    wrong = []

    def write(t):
        for i in range(50):
            cache.put_many(f"t{t}", [(str(i), i * t)])
            if cache.get_many(f"t{t}", [str(i)]) != {str(i): i * t}:
                wrong.append((t, i))

    threads = [threading.Thread(target=write, args=(t,)) for t in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert not wrong and cache.count() == 200 and cache.count("t3") == 50
