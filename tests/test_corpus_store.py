"""The on-disk corpus store: same passages as in memory, manifest, bad rows, Ctrl-C, full disk, changed files."""
import gzip
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from berds_core.corpora import disk
from berds_core.corpora.hashset import HashRuns
from berds_core import corpora
from berds_core.corpora import open_corpus
from berds_core.corpora.disk import DiskCorpus, ingest
from berds_core.corpora.memory import load_corpus
from berds_core.errors import InputError
from berds_core.records import Passage


@pytest.fixture(autouse=True)
def _cache(tmp_path, monkeypatch):
    monkeypatch.setenv("BERDS_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


def _words(n, prefix="w"):
    return " ".join(f"{prefix}{i}" for i in range(n))


def _jsonl(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


ROWS = [
    {"id": "a", "title": "A", "text": "first passage text"},
    {"text": "no id: derived from file and line"},
    {"id": 7, "title": "Long", "text": _words(230)},  # splits into 7-0, 7-1, 7-2
    {"id": "dup-text", "text": "first passage text"},  # same text as 'a': dropped
    {"id": "b", "title": " padded title ", "text": "  odd\twhitespace \n here  "},
    {"id": "c", "text": _words(100, "v")},  # exactly 100 words: one passage
]


def _store_files(cache):
    root = Path(cache) / "corpora"
    return sorted(p.name for p in root.iterdir()) if root.is_dir() else []


def test_ingest_gives_the_in_memory_passages_ids_and_hash(tmp_path):
    path = _jsonl(tmp_path / "docs.jsonl", ROWS)
    mem = load_corpus(path)
    disk = ingest(path)
    assert isinstance(disk, DiskCorpus)
    assert len(disk) == len(mem) == 7 and list(disk) == list(mem)
    assert disk.hash == mem.hash and disk.duplicates_dropped == mem.duplicates_dropped == 1
    m = disk.manifest
    assert (m["name"], m["passages"], m["records"], m["bytes"]) == ("docs", 7, 6, path.stat().st_size)
    assert m["hash"] == mem.hash and m["shards"][0]["path"] == str(path)
    # reading by row, by id, in batches, lazily by column
    assert disk[2] == mem[2] and disk[-1] == mem[-1]
    assert disk.get_many([3, 0, 3]) == [mem[3], mem[0], mem[3]]
    assert disk.index_of("7-1") == mem.index_of("7-1") == 3
    assert disk.rows_of(["b", "nope", "a"]) == [mem.index_of("b"), None, 0]
    assert disk.texts[1] == mem.texts[1] and disk.ids[1:3] == mem.ids[1:3] and list(disk.titles) == mem.titles
    assert [len(b) for b in disk.iter_batches(3)] == [3, 3, 1]
    assert disk.source_line(mem.index_of("b")) == (str(path), 5)
    with pytest.raises(KeyError):
        disk.index_of("nope")
    with pytest.raises(IndexError):
        disk[7]


def test_ingest_across_batches_and_shards_equals_memory(tmp_path, monkeypatch):
    monkeypatch.setattr("berds_core.files.corpus_readers.BATCH_ROWS", 3)
    root = tmp_path / "shards"
    root.mkdir()
    _jsonl(root / "part-0.jsonl", ROWS[:3])
    (root / "part-1.jsonl.gz").write_bytes(gzip.compress("".join(json.dumps(r) + "\n" for r in ROWS[3:] + [
        {"id": "e", "text": "first passage text"}]).encode()))  # a duplicate text in another shard
    mem, disk = load_corpus(root), ingest(root)
    assert list(disk) == list(mem) and disk.hash == mem.hash and disk.duplicates_dropped == 2


def test_ingest_takes_its_batches_from_any_reader_in_shard_order(tmp_path, _cache):
    """``ingest(reader=...)``: batches from elsewhere (a cluster's read tasks) make the same store; a reader
    that goes back to an earlier shard is refused, and nothing stays."""
    from berds_core.files.corpus_readers import read_shard

    root = tmp_path / "shards"
    root.mkdir()
    _jsonl(root / "part-0.jsonl", ROWS[:3])
    (root / "part-1.jsonl").write_text("", encoding="utf-8")  # a shard without records
    _jsonl(root / "part-2.jsonl", ROWS[3:] + [{"text": "last one"}])
    seen = []

    def small_batches(shards):
        for s_no, shard in enumerate(shards):
            for batch in read_shard(shard, 1):
                seen.append(s_no)
                yield s_no, batch

    one = ingest(root, tmp_path / "one")
    other = ingest(root, tmp_path / "other", reader=small_batches)
    assert seen == [0, 0, 0, 2, 2, 2, 2]
    assert list(other) == list(one) and other.hash == one.hash and other.duplicates_dropped == 1
    assert {k: v for k, v in other.manifest.items() if k not in ("seconds", "created")} == \
        {k: v for k, v in one.manifest.items() if k not in ("seconds", "created")}

    def backwards(shards):
        yield from ((2 - s_no, b) for s_no, b in small_batches(shards))

    with pytest.raises(RuntimeError, match="went back"):
        ingest(root, tmp_path / "bad", reader=backwards)
    assert not (tmp_path / "bad").exists()


def test_hash_collisions_never_drop_a_passage_or_fake_a_duplicate_id(tmp_path, monkeypatch):
    path = _jsonl(tmp_path / "c.jsonl", ROWS)
    monkeypatch.setattr("berds_core.corpora.disk.hash", lambda s: 42, raising=False)  # every text and id "collides"
    disk = ingest(path)
    assert list(disk) == list(load_corpus(path)) and disk.duplicates_dropped == 1


def test_hash_runs_find_every_earlier_row():
    runs = HashRuns()
    for a in range(0, 1000, 100):
        runs.add(list(range(a, a + 100)), list(range(a, a + 100)))
    runs.add([5, 5], [2000, 2001])  # a key seen before, twice more
    assert len(runs) == 1002 and len(runs.runs) < 6  # runs were merged
    got = runs.candidates([5, 999, 5000])
    assert sorted(got[0]) == [5, 2000, 2001] and got[1] == [999] and 2 not in got


@pytest.mark.parametrize("batch_rows", [2, 1000])
def test_duplicate_id_is_an_error_naming_both_lines_and_nothing_stays(tmp_path, _cache, monkeypatch, batch_rows):
    monkeypatch.setattr("berds_core.files.corpus_readers.BATCH_ROWS", batch_rows)
    path = _jsonl(tmp_path / "c.jsonl", [{"id": "a", "text": "one"}, {"id": "b", "text": "two"},
                                         {"id": "c", "text": "three"}, {"id": "a", "text": "four"}])
    with pytest.raises(InputError) as err:
        ingest(path)
    assert err.value.line == 4 and err.value.field == "id" and "first at line 1" in err.value.message
    assert _store_files(_cache) == []  # no store, no temporary folder


def test_malformed_row_leaves_nothing_half_built(tmp_path, _cache):
    path = tmp_path / "psgs.tsv"
    path.write_text("id\ttext\ttitle\n" + "".join(f"{i}\tpassage {i}\tT\n" for i in range(1, 3000))
                    + "3000\tonly two columns\n", encoding="utf-8")
    with pytest.raises(InputError) as err:
        ingest(path)
    assert err.value.line == 3001 and "columns" in err.value.message
    assert _store_files(_cache) == []


def test_ctrl_c_during_ingest_leaves_no_store_and_the_next_run_builds(tmp_path, _cache, monkeypatch):
    path = _jsonl(tmp_path / "c.jsonl", [{"text": f"passage {i}"} for i in range(50)])
    real = disk.read_shard

    def interrupted(shard, batch_rows=10):
        for i, batch in enumerate(real(shard, 10)):
            if i == 2:
                raise KeyboardInterrupt
            yield batch

    monkeypatch.setattr(disk, "read_shard", interrupted)
    with pytest.raises(KeyboardInterrupt):
        ingest(path)
    assert _store_files(_cache) == []
    monkeypatch.setattr(disk, "read_shard", real)
    assert len(ingest(path)) == 50


def test_a_killed_ingest_leaves_only_a_temporary_folder_that_the_next_one_removes(tmp_path, _cache):
    path = _jsonl(tmp_path / "c.jsonl", [{"text": f"passage {i}"} for i in range(20)])
    folder, _ = disk.store_folder(path, 100)
    stale = folder.parent / f".{folder.name}.tmp-999999999-1"  # a process that is gone
    stale.mkdir(parents=True)
    (stale / "passages.sqlite").write_bytes(b"half")
    with pytest.raises(InputError, match="not a complete corpus store"):
        DiskCorpus(stale)
    ingest(path)
    assert not stale.exists() and (folder / "manifest.json").is_file()


def test_changed_file_makes_a_new_store_and_removes_the_old(tmp_path, _cache):
    path = _jsonl(tmp_path / "c.jsonl", [{"id": "a", "text": "alpha beta"}, {"id": "b", "text": "gamma"}])
    first = ingest(path)
    st = path.stat()
    path.write_text(path.read_text().replace("gamma", "delta"), encoding="utf-8")  # same size
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))  # and the same modification time
    second = ingest(path)
    assert second.hash != first.hash and second[1].text == "delta"
    assert second.folder != first.folder and not first.folder.exists()


def test_open_corpus_picks_memory_or_disk(tmp_path, monkeypatch):
    path = _jsonl(tmp_path / "c.jsonl", ROWS)
    assert not isinstance(open_corpus(path), DiskCorpus)  # small: memory
    monkeypatch.setattr(corpora, "DISK_MIN_BYTES", 10)  # what open_corpus reads
    disk = open_corpus(path)
    assert isinstance(disk, DiskCorpus) and open_corpus(disk.folder).hash == disk.hash  # a store folder opens as is
    assert not isinstance(open_corpus(path, storage="memory"), DiskCorpus)
    txt = tmp_path / "docs"
    txt.mkdir()
    (txt / "a.txt").write_text("a document", encoding="utf-8")
    assert not isinstance(open_corpus(txt), DiskCorpus)  # not streamable: memory, whatever its size
    with pytest.raises(InputError, match="on-disk corpus store reads"):
        open_corpus(txt, storage="disk")


def test_passage_words_none_keeps_texts_whole_on_disk(tmp_path):
    path = _jsonl(tmp_path / "c.jsonl", [{"id": "a", "text": _words(230)}, {"id": "b", "text": " x  y "}])
    disk = ingest(path, passage_words=None)
    assert list(disk) == list(load_corpus(path, passage_words=None))
    assert disk[1] == Passage("b", "", "x y")


def _limited(limit_bytes):
    def pre():
        import resource

        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # writes past the limit fail with EFBIG instead
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit_bytes, limit_bytes))
    return pre


def test_full_disk_while_ingesting_exits_2_with_one_line_and_removes_the_store(tmp_path, _cache):
    path = tmp_path / "psgs.tsv"
    path.write_text("id\ttext\ttitle\n" + "".join(f"{i}\tpassage number {i} {_words(60)}\tT\n"
                                                  for i in range(1, 4000)), encoding="utf-8")
    env = {**os.environ, "BERDS_CACHE": str(_cache)}
    proc = subprocess.run([sys.executable, "-m", "berds_core", "corpus", "ingest", "--corpus", str(path), "--quiet"],
                          env=env, capture_output=True, text=True, preexec_fn=_limited(256 * 1024), timeout=300)
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "cannot write the corpus store" in lines[0] and "removed" in lines[0]
    assert _store_files(_cache) == []


@pytest.mark.slow
def test_sigint_during_ingest_exits_130_and_leaves_no_store(tmp_path, _cache):
    path = tmp_path / "psgs.tsv"
    with open(path, "w", encoding="utf-8") as fh:
        fh.write("id\ttext\ttitle\n")
        for i in range(1, 200_001):
            fh.write(f"{i}\tpassage {i} about things w{i % 977} w{i % 131}\tT\n")
    env = {**os.environ, "BERDS_CACHE": str(_cache)}
    proc = subprocess.Popen([sys.executable, "-m", "berds_core", "corpus", "ingest", "--corpus", str(path), "--quiet"],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    corpora = Path(_cache) / "corpora"
    deadline = time.time() + 120
    while time.time() < deadline and not (corpora.is_dir() and any(p.name.startswith(".") for p in corpora.iterdir())):
        time.sleep(0.05)
    time.sleep(0.3)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    if proc.returncode == 0:
        pytest.skip("the ingest finished before the signal arrived")
    assert proc.returncode == 130, err
    assert _store_files(_cache) == []


def test_the_no_split_shortcut_agrees_with_splitting():
    import random

    from berds_core.corpora.disk import _normalised

    rng = random.Random(0)
    alphabet = ["a", "b", " ", "  ", "\t", "\n", "\xa0", "\u2028", "\u3000", "\x1c", "é", "\u200b", "x y"]
    for _ in range(5000):
        t = "".join(rng.choice(alphabet) for _ in range(rng.randint(1, 8)))
        if _normalised(t):
            assert " ".join(t.split()) == t, repr(t)


def test_hash_runs_stay_sorted_and_small():
    import numpy as np

    rng = np.random.default_rng(0)
    runs, keys = HashRuns(), []
    for a in range(0, 50_000, 5_000):
        k = rng.integers(0, 2 ** 63, 5_000, dtype=np.uint64)
        keys.append(k)
        runs.add(k, np.arange(a, a + 5_000))
    keys = np.concatenate(keys)
    for k, r in runs.runs:
        assert np.all(k[:-1] <= k[1:]) and np.array_equal(keys[r], k)  # sorted, each key with its row
    assert runs.nbytes == 12 * 50_000  # 8-byte keys, 4-byte rows
