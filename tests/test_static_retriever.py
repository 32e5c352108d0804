"""Issue 67: a static (model2vec) first stage and the encoder's re-read (``static%N>>reread``).

The quick tests run on a static model built from a config (all-MiniLM-L6-v2's tokenizer and its input word
embeddings cut to 64 dimensions, saved as sentence-transformers saves a ``StaticEmbedding``): what the studio
does with any static folder. The slow ones distil the real one with ``berds models distill`` (its own
environment, made once per machine: ``$BERDS_DISTILL_VENV``, default ``~/.cache/berds-distill-venv``) and run
it through the CLI and the pages.
"""
from __future__ import annotations

import hashlib
import json
import os
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from berds_core.cli import main
from berds_core.corpora.memory import corpus_from_passages
from berds_core.datasets import load_demo
from berds_core.diversify import Pipeline
from berds_core.embeddings.models import model_key, resolve_model
from berds_core.embeddings.static_folder import is_static, static_meta
from berds_core.embeddings.text_encoders import TextEncoder, text_encoder
from berds_core.experiment import Searched, rankings
from berds_core.retrieval import get_retriever

MINILM = resolve_model(None)
sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_app_pages import entry  # noqa: E402,F401  (the app's entry script, a fixture)
from static_models import make_static  # noqa: E402


@pytest.fixture(scope="module")
def static_path(tmp_path_factory) -> Path:
    return make_static(tmp_path_factory.mktemp("static") / "tiny-static-64d")


@pytest.fixture(scope="module")
def demo():
    b = load_demo()
    q = b.questions[0]
    by_id = {p.id: p for p in b.passages}
    pool = corpus_from_passages([by_id[i] for i in b.pools[q.id]], f"demo:{q.id}") if b.pools else \
        corpus_from_passages(b.passages, "demo")
    return b, q, pool


def test_a_static_folder_is_recognised_named_and_encoded_unstored_in_fp32(static_path, monkeypatch):
    assert is_static(static_path) and not is_static(MINILM) and not is_static(static_path / "nope")
    assert model_key(str(static_path)) == "static:tiny-static-64d"  # its folder name: no install path in keys
    monkeypatch.setenv("BERDS_ENCODING", "bf16")  # the operator's precision is for transformers
    te = text_encoder(str(static_path))
    assert te.encoding == "fp32" and te.path == "plain" and te.store is False
    assert te.key == "static:tiny-static-64d|fp32|msl128"
    v = te.embed(["Chess is a sport.", "Chess is a sport."])
    assert v.shape == (2, 64) and np.allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-6)


def test_static_vectors_do_not_depend_on_the_batch_or_the_thread_count(static_path):
    import torch

    texts = [f"passage {i}: " + " ".join(["debate", "school", "uniform", "energy", "tax"][: 1 + i % 5]) * (1 + i % 7)
             for i in range(300)]
    te = TextEncoder(str(static_path), store=False)
    alone = np.stack([te.encode_uncached([t])[0] for t in texts[:20]])
    threads = torch.get_num_threads()
    try:
        torch.set_num_threads(1)
        one = te.encode_uncached(texts)
        torch.set_num_threads(2)
        two = te.encode_uncached(texts[::-1])[::-1]
    finally:
        torch.set_num_threads(threads)
    assert np.array_equal(one, two) and np.array_equal(one[:20], alone)



def _awkward_texts(n: int = 1500) -> list[str]:
    """Texts where a tokenizer could differ from its pieces: accents, CJK, emoji, special-token look-alikes, words over
    WordPiece's 100 characters, control and other white space, and texts past the 512-token cut."""
    import random

    parts = ["a", "Chess", "is", "ΟΔΟΣ", "İstanbul", "straße", "ﬁne", "東京都", "😀", "[CLS]", "[SEP]x", "y[MASK]", "e\u0301",
             "\u0301x", "x" * 120, "ab\x1ccd", "\x00", "\ufffd", "\u200b", "tab\there", "nb\xa0sp", "\u3000", "don't",
             "U.S.A.", "«quote»", "مرحبا", "\r\n", "##ing", "", "\u2028", "\x85", "Ⅻ", "ǅ"]
    seps = [" ", " ", " ", "  ", "\t", "\n", "\xa0", ""]
    rng = random.Random(0)
    texts = ["".join(rng.choice(parts) + rng.choice(seps) for _ in range(rng.randint(0, 700 if i % 10 == 0 else 60)))
             for i in range(n)]
    return texts + [" leading", "trailing ", "x " * 600, "a", "", "   "]


def test_the_lookup_path_gives_sentence_transformers_bits_and_zeros_for_a_text_with_no_token(static_path, monkeypatch):
    from berds_core.embeddings import static_encode
    from berds_core.embeddings.static_encode import PieceIds, encode_static, static_module
    from berds_core.embeddings.text_encoders import encode_normalized

    texts = _awkward_texts()
    te = TextEncoder(str(static_path), store=False)
    module = static_module(te.encoder)
    assert module is not None and static_module(TextEncoder(MINILM).encoder) is None
    assert static_encode.splits_on_spaces(module.tokenizer)  # MiniLM's BERT tokenizer: ids of pieces
    plain = encode_normalized(te.encoder, texts, 64)  # SentenceTransformer.encode
    fast = te.encode_uncached(texts)
    assert np.array_equal(fast[:-2], plain[:-2])  # bit for bit, the long texts cut where the tokenizer cuts
    assert not fast[-2:].any() and not np.nan_to_num(plain[-2:]).any()  # no token: zeros (plain: 0 or NaN)
    assert np.array_equal(encode_static(te.encoder, texts, 7), fast) and encode_static(te.encoder, [], 8).shape == (0, 64)
    static_encode._pieces[module] = small = PieceIds(module.tokenizer, limit=40)  # a full store: the rest per batch
    assert np.array_equal(encode_static(te.encoder, texts, 100), fast) and len(small.row) == small.n_rows == 40
    static_encode._pieces.clear()
    monkeypatch.setattr(static_encode, "splits_on_spaces", lambda tokenizer: False)  # another tokenizer: whole texts
    assert np.array_equal(encode_static(te.encoder, texts, 100), fast) and static_encode.piece_ids(module) is None
    static_encode._pieces.clear()


def test_threads_sharing_a_model_get_the_vectors_one_thread_gets(static_path):
    """One piece store per model serves every thread (the Playground's sessions): batches appending new pieces
    at once must not write over each other's rows."""
    from concurrent.futures import ThreadPoolExecutor

    from berds_core.embeddings import static_encode
    from berds_core.embeddings.static_encode import encode_static, static_module

    te = TextEncoder(str(static_path), store=False)
    parts = [[f"t{p} w{p}x{i} " + " ".join(f"v{(p * 7 + i * j) % 997}q{p}" for j in range(30)) for i in range(400)]
             for p in range(6)]  # each part brings thousands of pieces no other part has
    alone = [encode_static(te.encoder, part, 16) for part in parts]
    static_encode._pieces.pop(static_module(te.encoder), None)  # a fresh store, filled by six threads at once
    with ThreadPoolExecutor(6) as pool:
        together = list(pool.map(lambda part: encode_static(te.encoder, part, 16), parts))
    assert all(np.array_equal(a, b) for a, b in zip(alone, together))
    static_encode._pieces.clear()


def test_the_static_retriever_is_dense_on_the_static_model(static_path, demo):
    _, q, pool = demo
    r = get_retriever("static", pool, model=str(static_path), progress=False)
    assert r.name == "static:tiny-static-64d" and r.embedder_name == "static:tiny-static-64d"
    hits = r.search([q.question], 5)[0]
    assert len(hits) == 5
    emb = text_encoder(str(static_path)).embed([pool.texts[int(i)] for i in range(len(pool))])
    qv = text_encoder(str(static_path)).embed([q.question])[0]
    expect = np.argsort(-(emb.astype(np.float64) @ qv.astype(np.float64)), kind="stable")[:5]
    assert list(hits.rows) == [int(i) for i in expect]


def test_reread_of_every_passage_is_the_dense_ranking_and_each_candidate_is_encoded_once(static_path, demo):
    b, _, pool = demo
    qs = [q for q in b.questions if not b.pools or q.id in b.pools][:1]
    static = get_retriever("static", pool, model=str(static_path), progress=False)
    dense = get_retriever("dense", pool, progress=False)
    n = len(pool)
    reread = rankings(qs, Pipeline.parse(f"static%{n}>>reread"), 10, Searched(pool, static))
    plain = rankings(qs, Pipeline.parse("none"), 10, Searched(pool, dense))
    assert [list(h.rows) for h in reread] == [list(h.rows) for h in plain]
    assert [list(h.scores) for h in reread] == [list(h.scores) for h in plain]  # the same exact cosine
    # a shallow first stage: the encoder reads only its candidates (stored: a second run encodes nothing)
    fresh = corpus_from_passages([replace(pool[i], text=pool[i].text + " (reread)") for i in range(len(pool))],
                                 "demo:reread-once")  # texts no encoder has met
    st = get_retriever("static", fresh, model=str(static_path), progress=False)
    te = text_encoder(None)
    before = te.n_encoded
    first = rankings(qs, Pipeline.parse("static%8>>reread"), 5, Searched(fresh, st))
    read = te.n_encoded - before
    assert 0 < read <= 8 + len(qs)  # at most the 8 candidates (and the question)
    again = rankings(qs, Pipeline.parse("static%8>>reread"), 5, Searched(fresh, st))
    assert te.n_encoded - before == read and [list(h.rows) for h in again] == [list(h.rows) for h in first]
    top8 = set(int(r) for r in st.search([qs[0].question], 8)[0].rows)
    assert set(int(r) for r in first[0].rows) <= top8


def test_static_on_an_on_disk_corpus_writes_vector_shards_and_an_index_folder_it_opens_again(static_path, tmp_path):
    """The scale path (an on-disk corpus: vectors in resumable shards, a FAISS folder) takes the static model."""
    from berds_core.corpora.disk import ingest

    demo_dir = Path(__file__).resolve().parents[1] / "berds_core" / "demo"
    disk = ingest(demo_dir / "corpus_a.jsonl", tmp_path / "store", passage_words=None)
    folder = tmp_path / "static-index"
    built = get_retriever("static", disk, model=str(static_path), progress=False, index_dir=str(folder))
    meta = json.loads((folder / "berds.json").read_text())
    assert meta["encoder"]["key"] == "static:tiny-static-64d|fp32|msl128" and meta["vectors"]
    question = "Should school uniforms be mandatory?"
    again = get_retriever(f"index:{folder}", disk, model=str(static_path), progress=False)
    assert list(again.search([question], 5)[0].rows) == list(built.search([question], 5)[0].rows)
    mem_corpus = corpus_from_passages(list(disk), "a")
    mem = get_retriever("static", mem_corpus, model=str(static_path), progress=False)
    assert list(mem.search([question], 5)[0].rows) == list(built.search([question], 5)[0].rows)
    # the two stages with BM25 (tantivy) beside: the union scores the folder's candidates from its vector shards,
    # the same figures as the in-memory vectors, so both re-read the same passages
    from berds_core.diversify import Using
    from berds_core.records import Question

    q = [Question(id="u", question=question, perspectives=["a", "b"])]
    spec = Pipeline.parse("static%10>>union>>reread")
    on_disk = rankings(q, spec, 5, Searched(disk, built), using=Using(other_retriever=get_retriever("bm25", disk)))
    in_mem = rankings(q, spec, 5, Searched(mem_corpus, mem),
                      using=Using(other_retriever=get_retriever("bm25", mem_corpus, progress=False,
                                                                engine="tantivy")))  # the disk corpus's engine
    assert [disk[int(r)].id for r in on_disk[0].rows] == [mem_corpus[int(r)].id for r in in_mem[0].rows]


def test_a_union_over_a_folder_that_kept_no_vectors_says_so():
    from berds_core.diversify.candidates import row_vectors

    class NoVectors:  # a prebuilt folder opened without its passage vectors (its query encoder may be DPR's)
        name = "dense:dpr+prebuilt"

        def search_vectors(self, q, k):
            raise AssertionError("not reached")

    with pytest.raises(ValueError, match="kept none"):
        row_vectors(NoVectors(), np.array([0, 1]))


def test_no_static_model_is_one_line_naming_the_verb_to_run(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("BERDS_CACHE", str(tmp_path / "cache"))
    demo_dir = Path(__file__).resolve().parents[1] / "berds_core" / "demo"
    code = main(["retrieve", "--questions", str(demo_dir / "questions_a.jsonl"), "--corpus",
                 str(demo_dir / "corpus_a.jsonl"), "--retriever", "static", "--out", str(tmp_path / "r.jsonl")])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and "berds models distill" in err[0], err
    assert not (tmp_path / "r.jsonl").exists()


# ------------------------------------------------------------------ the real distillation (slow)

def _digest(folder: Path) -> dict:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.iterdir())}


@pytest.fixture(scope="module")
def distilled(tmp_path_factory):
    """``berds models distill`` into the session's cache (where ``--retriever static`` finds it)."""
    os.environ.setdefault("BERDS_DISTILL_VENV", str(Path.home() / ".cache" / "berds-distill-venv"))
    out = tmp_path_factory.mktemp("distill")
    code = main(["models", "distill", "--json", "--quiet"])
    assert code == 0
    return out


@pytest.mark.slow
def test_distill_writes_the_same_bytes_twice_and_records_its_source(distilled, tmp_path, capsys):
    capsys.readouterr()
    assert main(["models", "list", "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    (model,) = [m for m in listed["models"] if m["path"] == listed["default"]]
    default = Path(listed["default"])
    meta = static_meta(default)
    assert meta["source"] == "sentence-transformers/all-MiniLM-L6-v2" and meta["dims"] == 256
    assert meta["vocabulary"] > 20_000 and meta["model2vec"] == "0.10.0" and meta["transformers"].startswith("5.3")
    assert model["weights_sha256"] == hashlib.sha256((default / "model.safetensors").read_bytes()).hexdigest()
    assert str(MINILM) not in (default / "config.json").read_text()  # no install path in the folder
    assert main(["models", "distill", "--out", str(tmp_path / "again"), "--json"]) == 0
    again = _digest(tmp_path / "again")
    first = _digest(default)
    meta_again = json.loads((tmp_path / "again" / "berds_static.json").read_text())
    assert meta_again.pop("name") == "again" and meta.pop("name") == default.name and meta_again == meta
    assert {k: v for k, v in again.items() if k != "berds_static.json"} == \
        {k: v for k, v in first.items() if k != "berds_static.json"}


@pytest.mark.slow
def test_the_cli_ranks_with_the_distilled_model_and_the_reread_matches_dense(distilled, tmp_path, capsys):
    demo_dir = Path(__file__).resolve().parents[1] / "berds_core" / "demo"
    base = ["retrieve", "--questions", str(demo_dir / "questions_a.jsonl"), "--corpus",
            str(demo_dir / "corpus_a.jsonl"), "--k", "5", "--json", "--quiet"]
    runs = {}
    for name, extra in {"static": ["--retriever", "static"], "dense": ["--retriever", "dense"],
                        "reread": ["--pipeline", "static%280>>reread"]}.items():
        capsys.readouterr()
        assert main([*base, *extra, "--out", str(tmp_path / f"{name}.jsonl")]) == 0, capsys.readouterr().err
        info = json.loads(capsys.readouterr().out)
        runs[name] = [[c["id"] for c in json.loads(line)["ctxs"]]
                      for line in (tmp_path / f"{name}.jsonl").read_text().splitlines()]
        if name != "dense":
            assert info["retriever"] == "static:all-MiniLM-L6-v2-256d"
    assert runs["reread"] == runs["dense"]  # all 280 passages re-read: the encoder's own ranking
    assert runs["static"] != runs["dense"]


@pytest.mark.slow
def test_the_playground_and_evaluate_rank_with_the_static_retriever(distilled, entry):
    pytest.importorskip("streamlit")
    from test_app_pages import _md, _open, wait_warm
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(entry, default_timeout=600)
    at.run()
    at.radio(key="sb_retriever").set_value("static").run()
    at = wait_warm(_open(at, "pages/playground.py"))
    assert not at.error, [e.value for e in at.error]
    md = _md(at)
    k = at.slider(key="pg_k").value
    assert md.count('data-testid="passage-card"') == 4 * k and "MRecall@%d<b>" % k in md
    at = _open(at, "pages/evaluate.py")
    at.button(key="ev_run").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    (table,) = at.dataframe
    assert "all questions" in set(table.value["subset"])
    (runs,) = at.session_state["eval_runs"].values()
    b = load_demo()
    by_id = {p.id: p for p in b.passages}
    qid, entry_ = next(iter(runs.items()))
    q = next(q for q in b.questions if q.id == qid)
    pool = corpus_from_passages([by_id[i] for i in b.pools[qid]], f"demo:{qid}")
    hits = get_retriever("static", pool, progress=False).search([q.question], len(entry_["ctxs"]))[0]
    assert [c["id"] for c in entry_["ctxs"]] == [pool[int(r)].id for r in hits.rows]  # the static ranking


@pytest.mark.slow
def test_the_playground_says_what_to_run_when_no_static_model_is_distilled(entry, tmp_path, monkeypatch):
    """The page's one line names the verb; once a static model is where the retriever looks, the same session
    ranks with it (nothing remembers that it was missing)."""
    pytest.importorskip("streamlit")
    from berds_core.embeddings.static import default_static_model
    from test_app_pages import _md, _open, wait_warm
    from streamlit.testing.v1 import AppTest

    monkeypatch.setenv("BERDS_CACHE", str(tmp_path / "cache"))  # nothing distilled here
    at = AppTest.from_file(entry, default_timeout=600)
    at.run()
    at.radio(key="sb_retriever").set_value("static").run()
    at = _open(at, "pages/playground.py")
    assert not at.exception, [e.value for e in at.exception]
    errors = [e.value for e in at.error]
    assert errors and any("berds models distill" in e for e in errors), errors
    make_static(default_static_model())  # as `berds models distill` would leave it (a model built from a config)
    at = wait_warm(_open(at, "pages/playground.py"))
    assert not at.error, [e.value for e in at.error]
    assert _md(at).count('data-testid="passage-card"') == 4 * at.slider(key="pg_k").value
