"""Streaming corpus readers: DPR's psgs_w100.tsv, JSONL(.gz), CSV, Parquet, folders of shards, bad rows."""
import gzip
import json

import pytest

from berds_core.files.corpus_readers import list_shards, read_corpus, read_shard
from berds_core.corpora.memory import load_corpus
from berds_core.errors import InputError

DPR_HEAD = "id\ttext\ttitle\n"


def _dpr_rows(n, start=1):
    # DPR's layout: the text column is quoted (internal quotes doubled), titles as they are
    return "".join(f'{i}\t"Passage {i} says ""hello"" to word{i % 7} and more words here"\tTitle {i % 3}\n'
                   for i in range(start, start + n))


def test_psgs_w100_tsv_layout_ids_as_given_and_batches(tmp_path):
    path = tmp_path / "psgs_w100.tsv"
    path.write_text(DPR_HEAD + _dpr_rows(25), encoding="utf-8")
    batches = list(read_shard(list_shards(path)[0], batch_rows=10))
    assert [len(b) for b in batches] == [10, 10, 5]
    assert batches[0].ids[:3] == ["1", "2", "3"] and batches[-1].ids[-1] == "25"
    assert batches[0].texts[0] == 'Passage 1 says "hello" to word1 and more words here'
    assert batches[0].titles[:3] == ["Title 1", "Title 2", "Title 0"]
    assert batches[0].lines[:2] == [2, 3]  # the header is line 1
    assert batches[-1].bytes_done == path.stat().st_size
    assert batches[-1].to_dict()["id"] == ["21", "22", "23", "24", "25"]
    c = load_corpus(path)
    assert c.ids[:2] == ["1", "2"] and c.name == "psgs_w100" and len(c) == 25


def test_gzipped_tsv_and_jsonl_read_like_plain(tmp_path):
    plain = tmp_path / "a.tsv"
    plain.write_text(DPR_HEAD + _dpr_rows(12), encoding="utf-8")
    gz = tmp_path / "b.tsv.gz"
    gz.write_bytes(gzip.compress(plain.read_bytes()))
    assert load_corpus(gz).hash == load_corpus(plain).hash
    assert load_corpus(gz).name == "b"
    rows = [{"id": f"d{i}", "title": "T", "text": f"text number {i}"} for i in range(5)]
    jl = tmp_path / "c.jsonl.gz"
    jl.write_bytes(gzip.compress("".join(json.dumps(r) + "\n" for r in rows).encode()))
    assert load_corpus(jl).ids == [f"d{i}" for i in range(5)]


def test_parquet_shard_with_integer_ids(tmp_path):
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    path = tmp_path / "part.parquet"
    pq.write_table(pa.table({"id": [10, 11, 12], "title": ["A", None, "C"], "text": ["one two", "three", "four"]}),
                   path, row_group_size=2)
    batches = list(read_shard(list_shards(path)[0], batch_rows=2))
    assert [b.ids for b in batches] == [["10", "11"], ["12"]]
    assert batches[0].titles == ["A", ""] and batches[0].lines == [1, 2]
    assert load_corpus(path).ids == ["10", "11", "12"]


@pytest.mark.parametrize("table, field, needle", [
    ({"id": [1, 2], "text": ["fine", None]}, "text", "missing"),
    ({"id": [1, 2], "text": ["fine", "  "]}, "text", "must not be empty"),
])
def test_parquet_bad_row_names_file_row_and_field(tmp_path, table, field, needle):
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    path = tmp_path / "bad.parquet"
    pq.write_table(pa.table(table), path)
    with pytest.raises(InputError) as err:
        load_corpus(path)
    assert (err.value.line, err.value.field) == (2, field) and needle in err.value.message
    assert str(err.value).startswith(f"{path}:2:")


def test_parquet_without_text_or_with_numbers_as_text(tmp_path):
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    path = tmp_path / "x.parquet"
    pq.write_table(pa.table({"id": [1], "body": ["no text column"]}), path)
    with pytest.raises(InputError, match="no 'text' column"):
        load_corpus(path)
    pq.write_table(pa.table({"text": [1.5]}), path)
    with pytest.raises(InputError) as err:
        load_corpus(path)
    assert err.value.field == "text" and "string column" in err.value.message


def test_folder_of_shards_in_order_with_relative_path_ids(tmp_path):
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    root = tmp_path / "corpus"
    (root / "sub").mkdir(parents=True)
    (root / "b.jsonl.gz").write_bytes(gzip.compress(b'{"text": "from the gzipped shard"}\n'))
    (root / "a.jsonl").write_text('{"text": "first shard first line"}\n{"id": "x", "text": "given id"}\n',
                                  encoding="utf-8")
    pq.write_table(pa.table({"text": ["parquet row"]}), root / "sub" / "c.parquet")
    (root / ".hidden.jsonl").write_text('{"text": "skipped"}\n', encoding="utf-8")
    shards = list_shards(root)
    assert [s.base_id for s in shards] == ["a", "b", "sub/c"]
    c = load_corpus(root)
    assert c.ids == ["a-1", "x", "b-1", "sub/c-1"]
    assert c.name == "corpus"
    assert sum(len(b) for b in read_corpus(root)) == 4


def test_folder_mixing_shards_and_documents_is_an_error(tmp_path):
    (tmp_path / "a.jsonl").write_text('{"text": "x"}\n', encoding="utf-8")
    (tmp_path / "b.txt").write_text("a document", encoding="utf-8")
    with pytest.raises(InputError, match="mixes corpus shards"):
        load_corpus(tmp_path)


def test_bad_row_deep_in_a_big_tsv_names_file_line_and_field(tmp_path):
    path = tmp_path / "psgs.tsv"
    body = _dpr_rows(5000)
    bad = "5001\t\tEmpty text\n"
    path.write_text(DPR_HEAD + body + bad + _dpr_rows(10, start=5002), encoding="utf-8")
    with pytest.raises(InputError) as err:
        for _ in read_corpus(path, batch_rows=1000):
            pass
    assert (err.value.line, err.value.field) == (5002, "text")
    assert str(err.value).startswith(f"{path}:5002: field 'text':")


def test_corrupt_gzip_and_bad_utf8_name_the_line(tmp_path):
    good = gzip.compress(b'{"text": "a"}\n' * 50)
    path = tmp_path / "c.jsonl.gz"
    path.write_bytes(good[: len(good) // 2])
    with pytest.raises(InputError, match="corrupt gzip data"):
        load_corpus(path)
    raw = tmp_path / "d.tsv"
    raw.write_bytes(b"id\ttext\n1\tok\n2\tcaf\xe9\n")
    with pytest.raises(InputError) as err:
        load_corpus(raw)
    assert err.value.line == 3 and "UTF-8" in err.value.message


def test_jsonl_line_numbers_count_only_newlines(tmp_path):
    # U+2028 inside a JSON string is not a line break: the bad record is on line 2
    path = tmp_path / "c.jsonl"
    path.write_text('{"text": "a\u2028b"}\n{"id": "x"}\n', encoding="utf-8")
    with pytest.raises(InputError) as err:
        load_corpus(path)
    assert err.value.line == 2 and err.value.field == "text"
