"""Corpus loaders: formats, splitting, stable ids, dedupe, hashing, bad input."""
import json

import pytest

from berds_core.corpora.memory import Corpus, corpus_from_passages, load_corpus, split_words
from berds_core.errors import InputError
from berds_core.records import Passage


def _jsonl(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def _words(n, prefix="w"):
    return " ".join(f"{prefix}{i}" for i in range(n))


# ------------------------------------------------------------------ splitting

def test_split_words_windows_of_n_words():
    text = _words(250)
    parts = split_words(text, 100)
    assert [len(p.split()) for p in parts] == [100, 100, 50]
    assert " ".join(parts) == text
    assert parts[1].split()[0] == "w100"


def test_split_words_normalises_whitespace_and_handles_blank():
    assert split_words("  a\n\tb   c ", 2) == ["a b", "c"]
    assert split_words("   ", 100) == []
    with pytest.raises(ValueError):
        split_words("a", 0)


# ------------------------------------------------------------------ JSONL

def test_jsonl_ids_kept_derived_and_suffixed_on_split(tmp_path):
    path = _jsonl(tmp_path / "docs.jsonl", [
        {"id": "d1", "title": "One", "text": "short text about cats"},
        {"text": "no id here, so the id comes from the file and line"},
        {"id": 7, "title": "Long", "text": _words(230)},
    ])
    c = load_corpus(path)
    assert c.ids == ["d1", "docs-2", "7-0", "7-1", "7-2"]
    assert c[0] == Passage("d1", "One", "short text about cats")
    assert c.titles[2:] == ["Long"] * 3
    assert [len(t.split()) for t in c.texts[2:]] == [100, 100, 30]
    assert c.index_of("7-1") == 3
    assert len(c) == 5 and c.name == "docs"


def test_passage_words_none_keeps_texts_whole(tmp_path):
    path = _jsonl(tmp_path / "c.jsonl", [{"id": "a", "text": _words(230)}])
    c = load_corpus(path, passage_words=None)
    assert c.ids == ["a"] and len(c.texts[0].split()) == 230


def test_exact_duplicate_texts_are_dropped(tmp_path):
    path = _jsonl(tmp_path / "c.jsonl", [
        {"id": "a", "text": "the same words"},
        {"id": "b", "text": "the   same\nwords"},  # same after whitespace normalisation
        {"id": "c", "text": "different words"},
    ])
    c = load_corpus(path)
    assert c.ids == ["a", "c"] and c.duplicates_dropped == 1


def test_hash_is_stable_and_content_sensitive(tmp_path):
    rows = [{"id": "a", "title": "T", "text": "alpha beta"}, {"id": "b", "text": "gamma"}]
    h1 = load_corpus(_jsonl(tmp_path / "one.jsonl", rows)).hash
    h2 = load_corpus(_jsonl(tmp_path / "two.jsonl", rows)).hash  # file name does not matter
    assert h1 == h2 and len(h1) == 40
    changed = [dict(rows[0], title="U"), rows[1]]
    assert load_corpus(_jsonl(tmp_path / "three.jsonl", changed)).hash != h1
    reordered = [rows[1], rows[0]]
    assert load_corpus(_jsonl(tmp_path / "four.jsonl", reordered)).hash != h1
    # field boundaries matter: ("ab", "c") differs from ("a", "bc")
    a = Corpus([Passage("x", "ab", "c")]).hash
    b = Corpus([Passage("x", "a", "bc")]).hash
    assert a != b


@pytest.mark.parametrize("line, field, needle", [
    ('{"id": "a"}', "text", "missing"),
    ('{"id": "a", "text": 3}', "text", "expected a string"),
    ('{"id": "a", "text": "   "}', "text", "must not be empty"),
    ('{"id": ["x"], "text": "ok"}', "id", "expected a string or integer"),
    ('{"id": "a", "title": 5, "text": "ok"}', "title", "expected a string"),
    ('{"id": "a", "text": "ok"', None, "malformed JSON"),
    ('["a", "b"]', None, "expected a JSON object"),
])
def test_jsonl_bad_line_names_file_line_field(tmp_path, line, field, needle):
    path = tmp_path / "bad.jsonl"
    path.write_text('{"id": "ok", "text": "fine"}\n' + line + "\n", encoding="utf-8")
    with pytest.raises(InputError) as err:
        load_corpus(path)
    e = err.value
    assert e.line == 2 and e.field == field and needle in e.message
    assert str(e).startswith(f"{path}:2:")


def test_duplicate_given_id_with_different_text_is_an_error(tmp_path):
    path = _jsonl(tmp_path / "c.jsonl", [{"id": "a", "text": "one"}, {"id": "a", "text": "two"}])
    with pytest.raises(InputError) as err:
        load_corpus(path)
    assert err.value.line == 2 and err.value.field == "id" and "first at line 1" in err.value.message


def test_empty_corpus_and_missing_file_and_unknown_format(tmp_path):
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n\n", encoding="utf-8")
    with pytest.raises(InputError, match="corpus is empty"):
        load_corpus(empty)
    with pytest.raises(InputError, match="file not found"):
        load_corpus(tmp_path / "nope.jsonl")
    odd = tmp_path / "c.xlsx"
    odd.write_bytes(b"x")
    with pytest.raises(InputError, match="unknown corpus format"):
        load_corpus(odd)
    not_parquet = tmp_path / "c.parquet"
    not_parquet.write_bytes(b"x")
    with pytest.raises(InputError, match="not a readable Parquet file"):
        load_corpus(not_parquet)


def test_non_utf8_file_is_an_input_error(tmp_path):
    path = tmp_path / "c.jsonl"
    path.write_bytes(b'{"id": "a", "text": "ok"}\n{"id": "b", "text": "caf\xe9"}\n')
    with pytest.raises(InputError) as err:
        load_corpus(path)
    assert err.value.line == 2 and "UTF-8" in err.value.message


# ------------------------------------------------------------------ JSON array

def test_json_array_corpus(tmp_path):
    path = tmp_path / "c.json"
    path.write_text(json.dumps([{"id": "a", "text": "one two"}, {"text": "three"}]), encoding="utf-8")
    assert load_corpus(path).ids == ["a", "c-2"]
    path.write_text(json.dumps({"text": "x"}), encoding="utf-8")
    with pytest.raises(InputError, match="JSON array"):
        load_corpus(path)


# ------------------------------------------------------------------ TSV / CSV

def test_tsv_dpr_style(tmp_path):
    path = tmp_path / "psgs.tsv"
    path.write_text("id\ttext\ttitle\n1\tAaron is a prophet\tAaron\n2\t\"quoted \"\"text\"\" here\"\tQ\n",
                    encoding="utf-8")
    c = load_corpus(path)
    assert c.ids == ["1", "2"] and c.titles == ["Aaron", "Q"]
    assert c.texts[1] == 'quoted "text" here'


def test_csv_without_id_column_and_multiline_cell(tmp_path):
    path = tmp_path / "p.csv"
    path.write_text('title,text\nA,"first line\nsecond line"\nB,other\n', encoding="utf-8")
    c = load_corpus(path)
    assert c.ids == ["p-3", "p-4"]  # derived from the physical line where the row ends
    assert c.texts[0] == "first line second line"


def test_table_bad_input(tmp_path):
    no_text = tmp_path / "a.tsv"
    no_text.write_text("id\tbody\n1\tx\n", encoding="utf-8")
    with pytest.raises(InputError) as err:
        load_corpus(no_text)
    assert (err.value.line, err.value.field) == (1, "text")
    ragged = tmp_path / "b.tsv"
    ragged.write_text("id\ttext\ttitle\n1\tfine\tT\n2\tmissing title\n", encoding="utf-8")
    with pytest.raises(InputError) as err:
        load_corpus(ragged)
    assert err.value.line == 3 and "columns" in err.value.message
    blank = tmp_path / "c.csv"
    blank.write_text("id,text\n1,\n", encoding="utf-8")
    with pytest.raises(InputError) as err:
        load_corpus(blank)
    assert (err.value.line, err.value.field) == (2, "text")
    header_only = tmp_path / "d.csv"
    header_only.write_text("id,text\n", encoding="utf-8")
    with pytest.raises(InputError, match="corpus is empty"):
        load_corpus(header_only)


# ------------------------------------------------------------------ folders

HTML = """<!DOCTYPE html><html><head><title>Nuclear power debate</title></head>
<body><nav><a href="/">Home</a> | <a href="/about">About</a></nav>
<article><h1>Nuclear power debate</h1>
<p>{body}</p><p>Supporters argue that nuclear plants produce reliable low carbon electricity
for decades while occupying very little land compared with wind and solar farms.</p></article>
<footer>Copyright 2024 Example Site. All rights reserved.</footer></body></html>"""


def test_folder_of_txt_and_html(tmp_path):
    root = tmp_path / "docs"
    (root / "sub").mkdir(parents=True)
    (root / "a.txt").write_text("Plain text file about school uniforms.", encoding="utf-8")
    body = " ".join(["Critics worry about waste storage and the cost of new reactors."] * 12)
    (root / "sub" / "page.html").write_text(HTML.format(body=body), encoding="utf-8")
    (root / "notes.md").write_text("ignored", encoding="utf-8")
    (root / ".hidden").mkdir()
    (root / ".hidden" / "x.txt").write_text("ignored too", encoding="utf-8")
    c = load_corpus(root)
    assert c.ids[0] == "a-0" and c.titles[0] == "a"
    html_ids = [i for i in c.ids if i.startswith("sub/page-")]
    assert html_ids == [f"sub/page-{k}" for k in range(len(html_ids))] and len(html_ids) >= 2
    html_text = " ".join(c.texts[1:])
    assert "waste storage" in html_text and "reliable low carbon" in html_text
    assert "Copyright" not in html_text and "About" not in html_text  # boilerplate removed
    assert c.titles[1] == "Nuclear power debate"
    assert load_corpus(root).hash == c.hash  # deterministic order and ids


def test_html_with_no_text_is_an_error_naming_the_file(tmp_path):
    root = tmp_path / "docs"
    root.mkdir()
    bad = root / "empty.html"
    bad.write_text("<html><head><script>var x = 1;</script></head><body></body></html>", encoding="utf-8")
    with pytest.raises(InputError) as err:
        load_corpus(root)
    assert err.value.path == str(bad) and err.value.field == "text"


def test_folder_without_documents(tmp_path):
    (tmp_path / "x.md").write_text("nothing", encoding="utf-8")
    with pytest.raises(InputError, match="no .txt, .html or .htm files"):
        load_corpus(tmp_path)


def test_single_text_file(tmp_path):
    path = tmp_path / "essay.txt"
    path.write_text(_words(150), encoding="utf-8")
    assert load_corpus(path).ids == ["essay-0", "essay-1"]


def test_corpus_from_passages_drops_duplicates():
    c = corpus_from_passages([Passage("a", "", "x y"), Passage("b", "", "x y"), Passage("c", "", "z")], "demo")
    assert c.ids == ["a", "c"] and c.duplicates_dropped == 1 and c.name == "demo"
