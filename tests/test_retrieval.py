"""BM25 and dense retrieval on a small hand-made corpus; cache reuse; HNSW; runs."""
import json

import numpy as np
import pytest

from berds_core.corpora.memory import Corpus
from berds_core.records import Passage, Question
from berds_core.retrieval import get_retriever
from berds_core.experiment import Searched, run
from berds_core.retrieval import dense as dense_mod  # noqa: F401
from berds_core.retrieval.dense import DenseRetriever
from berds_core.retrieval import faiss_index

PASSAGES = [
    ("nuc", "Nuclear", "Nuclear power plants generate electricity from uranium fission without carbon emissions."),
    ("uni", "Uniforms", "School uniforms reduce bullying because students cannot judge each other's clothes."),
    ("veg", "Diet", "A vegetarian diet lowers the risk of heart disease and helps the environment."),
    ("min", "Wages", "Raising the minimum wage lifts workers out of poverty but may cost some jobs."),
    ("gun", "Guns", "Stricter gun control laws are linked to fewer firearm deaths in many countries."),
    ("vid", "Games", "Violent video games have not been shown to cause aggression in teenagers."),
    ("dst", "Clocks", "Daylight saving time shifts clocks forward an hour each spring to save energy."),
    ("zoo", "Zoos", "Zoos protect endangered animals through breeding programs and conservation research."),
    ("cap", "Death penalty", "Capital punishment does not deter murder more than life imprisonment does."),
    ("soc", "Social media", "Social media platforms harm teenagers' mental health and sleep."),
]
QUERIES = {
    "nuc": "Should we build more nuclear power plants?",
    "uni": "Do school uniforms reduce bullying?",
    "gun": "Does gun control reduce firearm deaths?",
    "zoo": "Are zoos good for endangered animals?",
    "cap": "Does the death penalty deter murder?",
}


@pytest.fixture
def corpus():
    return Corpus([Passage(*p) for p in PASSAGES], "hand")


@pytest.fixture
def fresh_cache(tmp_path, monkeypatch):
    path = tmp_path / "cache"
    monkeypatch.setenv("BERDS_CACHE", str(path))
    return path


def _top1(retriever, corpus):
    hits = retriever.search(list(QUERIES.values()), 3)
    return [corpus.ids[h[0][0]] for h in hits]


# ------------------------------------------------------------------ BM25

def test_bm25_right_passage_ranks_first(corpus, fresh_cache):
    r = get_retriever("bm25", corpus, progress=False)
    assert r.name == "bm25" and r.embedder_name is None
    assert _top1(r, corpus) == list(QUERIES)
    hits = r.search(["nuclear uranium"], 3)[0]
    assert len(hits) == 3 and hits[0][1] > hits[1][1] >= hits[2][1]


def test_bm25_stems_and_drops_stopwords(corpus, fresh_cache):
    r = get_retriever("bm25", corpus, progress=False)
    # "breeding" -> "breed", "conserving" -> "conserv" (Snowball), stop words ignored
    assert corpus.ids[r.search(["the breeds and conserving"], 1)[0][0][0]] == "zoo"
    only_stop = r.search(["the of and"], 2)[0]
    assert len(only_stop) == 2 and all(s == 0.0 for _, s in only_stop)


def test_bm25_scores_equal_stock_bm25s(corpus, fresh_cache):
    import bm25s
    import Stemmer

    texts = corpus.texts + ["clocks clocks clocks energy", "a b c", "the teenagers teenagers sleep"]
    big = Corpus([Passage(str(i), "", t) for i, t in enumerate(texts)])
    ours = get_retriever("bm25", big, progress=False, cache=False)
    stemmer = Stemmer.Stemmer("english")
    ref = bm25s.BM25()
    ref.index(bm25s.tokenize(texts, stopwords="en", stemmer=stemmer, show_progress=False), show_progress=False)
    queries = ["clocks energy teenagers", "gun deaths laws", "heart disease diet environment"]
    rows, scores = ref.retrieve(bm25s.tokenize(queries, stopwords="en", stemmer=stemmer, return_ids=False,
                                               show_progress=False), k=5, show_progress=False)
    got = ours.search(queries, 5)
    np.testing.assert_allclose([[s for _, s in h] for h in got], scores, rtol=1e-5)
    for h, rr, ss in zip(got, rows, scores):
        assert [r for r, s in h if s > 0][:1] == [r for r, s in zip(rr, ss) if s > 0][:1]


def test_bm25_cache_reused_and_keyed_by_corpus(corpus, fresh_cache):
    first = get_retriever("bm25", corpus, progress=False)
    assert not first.cache_hit and first.cache_path.is_dir()
    second = get_retriever("bm25", corpus, progress=False)
    assert second.cache_hit and second.cache_path == first.cache_path
    assert second.search(list(QUERIES.values()), 4) == first.search(list(QUERIES.values()), 4)
    other = Corpus(corpus.passages[:5], "half")
    third = get_retriever("bm25", other, progress=False)
    assert not third.cache_hit and third.cache_path != first.cache_path


def test_bm25_corrupt_cache_is_rebuilt(corpus, fresh_cache):
    first = get_retriever("bm25", corpus, progress=False)
    (first.cache_path / "berds.json").write_text("{not json")
    again = get_retriever("bm25", corpus, progress=False)
    assert not again.cache_hit and _top1(again, corpus) == list(QUERIES)


def test_k_is_clamped_and_empty_inputs(corpus, fresh_cache):
    r = get_retriever("bm25", corpus, progress=False)
    assert len(r.search(["nuclear"], 100)[0]) == len(corpus)
    assert r.search([], 5) == []
    with pytest.raises(ValueError):
        get_retriever("bm25", corpus, "some-model")
    with pytest.raises(ValueError):
        get_retriever("splade", corpus)


# ------------------------------------------------------------------ dense

def test_dense_right_passage_ranks_first(corpus, fresh_cache):
    r = get_retriever("dense", corpus, progress=False, encoding="fp32")
    assert r.embedder_name == "sentence-transformers/all-MiniLM-L6-v2"
    assert r.name.startswith("dense:")
    assert _top1(r, corpus) == list(QUERIES)
    hits = r.search(["nuclear energy"], 10)[0]
    scores = [s for _, s in hits]
    assert scores == sorted(scores, reverse=True) and -1.0 <= scores[-1] <= scores[0] <= 1.0001


@pytest.mark.parametrize("encoding", ["int8", "bf16"])
def test_fast_encodings_keep_ranking_and_are_cached_separately(corpus, fresh_cache, encoding):
    fp = get_retriever("dense", corpus, progress=False, encoding="fp32")
    fast = get_retriever("dense", corpus, progress=False, encoding=encoding)
    assert fast.encoding == encoding and fast.cache_path != fp.cache_path and fast.name.endswith("+" + encoding)
    assert _top1(fast, corpus) == list(QUERIES)
    emb = np.asarray(fast.embeddings)
    assert emb.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(emb, axis=1), 1.0, rtol=1e-5)  # re-normalised in float32
    cos = np.sum(np.asarray(fp.embeddings) * emb, axis=1)
    assert cos.min() > 0.95  # close to fp32
    assert not np.allclose(fp.embeddings, emb, atol=1e-6)  # and really a different encoder


def test_auto_encoding_choice(monkeypatch):
    """issue 52: fp32, the reference, whatever the CPU; bf16 and int8 only when asked."""
    from berds_core.embeddings import models as embed

    monkeypatch.delenv("BERDS_ENCODING", raising=False)
    for fast_bf16 in (True, False):
        monkeypatch.setattr(embed, "cpu_has_fast_bf16", lambda v=fast_bf16: v)
        assert embed.resolve_encoding(None, "cpu") == "fp32" and embed.resolve_encoding("auto", "cpu") == "fp32"
    assert embed.resolve_encoding("bf16", "cpu") == "bf16" and embed.resolve_encoding("int8", "cpu") == "int8"
    monkeypatch.setenv("BERDS_ENCODING", "int8")
    assert embed.resolve_encoding(None, "cpu") == "int8"
    monkeypatch.delenv("BERDS_ENCODING")
    assert embed.resolve_encoding(None, "cuda") == "fp32" and embed.resolve_encoding("bf16", "cuda") == "bf16"
    assert embed.resolve_encoding("fp32", "cpu") == "fp32"
    with pytest.raises(ValueError, match="CPU only"):
        embed.resolve_encoding("int8", "cuda")
    with pytest.raises(ValueError, match="encoding must be one of"):
        embed.resolve_encoding("fp8", "cpu")


def _count_encodes(monkeypatch):
    from berds_core.embeddings import text_encoders as embed_store

    calls = []  # texts per part that went to the model (either encoding path: embeddings.pipeline)
    real = embed_store.TextEncoder.encode_stream

    def counting(self, parts, on_rows=None):
        def seen():
            for key, texts in parts:
                calls.append(len(texts))
                yield key, texts

        return real(self, seen(), on_rows)

    monkeypatch.setattr(embed_store.TextEncoder, "encode_stream", counting)
    return calls


def _new_process(monkeypatch):
    """Forget every in-memory encoder, as a new process would (the on-disk store stays)."""
    from berds_core.embeddings import text_encoders as embed_store

    embed_store._shared.cache_clear()


def test_dense_second_build_loads_without_encoding(corpus, fresh_cache, monkeypatch):
    calls = _count_encodes(monkeypatch)
    first = get_retriever("dense", corpus, progress=False, encoding="fp32")
    assert not first.cache_hit and first.n_encoded == len(corpus) and sum(calls) == len(corpus)
    assert (fresh_cache / "embeddings" / "embeddings.sqlite").is_file()
    _new_process(monkeypatch)
    calls.clear()
    second = get_retriever("dense", corpus, progress=False, encoding="fp32")
    assert second.cache_hit and second.n_encoded == 0 and calls == []
    np.testing.assert_array_equal(second.embeddings, first.embeddings)
    assert second.search([QUERIES["zoo"]], 3) == first.search([QUERIES["zoo"]], 3)
    assert calls == [1]  # only the query was encoded (then stored: the second search needed nothing)


def test_dense_embeddings_are_the_store_keyed_by_model_precision_length(corpus, fresh_cache, monkeypatch):
    from berds_core.files.cache import text_hash
    from berds_core.embeddings.text_encoders import MAX_TOKENS, embedding_store

    r = get_retriever("dense", corpus, progress=False, encoding="fp32")
    assert r.text_encoder.key == f"sentence-transformers/all-MiniLM-L6-v2|fp32|msl{MAX_TOKENS}"
    assert r.max_seq_length == MAX_TOKENS == r.encoder.max_seq_length
    got = embedding_store().get_many(r.text_encoder.key, [text_hash(p.text) for p in corpus])
    assert len(got) == len(corpus)  # the text (not title + text) is what is embedded
    np.testing.assert_allclose(np.stack([got[text_hash(p.text)] for p in corpus]), r.embeddings, atol=1e-7)
    calls = _count_encodes(monkeypatch)
    longer = DenseRetriever(corpus, progress=False, encoding="fp32", max_seq_length=256)
    assert longer.text_encoder.key.endswith("msl256") and sum(calls) == len(corpus)  # another length, other vectors


def test_dense_interrupted_build_resumes_from_the_store(corpus, fresh_cache, monkeypatch):
    from berds_core.embeddings import text_encoders as embed_store

    monkeypatch.setattr(embed_store, "CHUNK", 4)
    real = embed_store.TextEncoder.encode_stream

    def failing(self, parts, on_rows=None):  # killed while the second chunk's texts are read (either path)
        def reading():
            for n, part in enumerate(parts):
                if n == 1:
                    raise KeyboardInterrupt
                yield part

        return real(self, reading(), on_rows)

    monkeypatch.setattr(embed_store.TextEncoder, "encode_stream", failing)
    with pytest.raises(KeyboardInterrupt):
        get_retriever("dense", corpus, progress=False, encoding="fp32")
    monkeypatch.setattr(embed_store.TextEncoder, "encode_stream", real)
    _new_process(monkeypatch)
    resumed = get_retriever("dense", corpus, progress=False, encoding="fp32")
    assert not resumed.cache_hit and resumed.n_encoded == len(corpus) - 4  # the first chunk was kept
    assert _top1(resumed, corpus) == list(QUERIES)


def test_dense_changed_corpus_encodes_only_new_passages(corpus, fresh_cache, monkeypatch):
    from berds_core.corpora.memory import corpus_from_passages
    from berds_core.records import Passage

    get_retriever("dense", corpus, progress=False, encoding="fp32")
    _new_process(monkeypatch)
    calls = _count_encodes(monkeypatch)
    bigger = corpus_from_passages(list(corpus) + [Passage("new", "", "Rockets carry satellites into orbit.")])
    again = get_retriever("dense", bigger, progress=False, encoding="fp32")
    assert not again.cache_hit and again.n_encoded == 1 and calls == [1]
    assert again.search(["satellites in orbit"], 1)[0][0][0] == len(bigger) - 1


def test_hnsw_option_matches_exact_search(corpus, fresh_cache):
    flat = get_retriever("dense", corpus, progress=False, encoding="fp32")
    hnsw = get_retriever("dense", corpus, progress=False, index="hnsw", encoding="fp32")
    assert hnsw.cache_hit  # embeddings shared with the flat index (one store)
    assert hnsw.name.endswith("+hnsw") and type(hnsw._cpu_index).__name__ == "IndexHNSWFlat"
    assert any(p.name.startswith("hnsw-") for p in hnsw.cache_path.iterdir())
    queries = list(QUERIES.values())
    assert [[r for r, _ in h] for h in hnsw.search(queries, 5)] == [[r for r, _ in h] for h in flat.search(queries, 5)]
    with pytest.raises(ValueError):
        get_retriever("dense", corpus, index="ivf")


def test_hnsw_on_random_vectors_has_high_recall():
    rng = np.random.default_rng(0)
    emb = rng.standard_normal((3000, 32)).astype(np.float32)
    emb /= np.linalg.norm(emb, axis=1, keepdims=True)
    q = emb[:50] + 0.1 * rng.standard_normal((50, 32)).astype(np.float32)
    _, exact = faiss_index.search(faiss_index.build_index(emb, "flat"), "flat", q, 10)
    _, approx = faiss_index.search(faiss_index.build_index(emb, "hnsw"), "hnsw", q, 10)
    recall = np.mean([len(set(a) & set(b)) / 10 for a, b in zip(exact, approx)])
    assert recall > 0.9


def test_flat_index_moves_to_gpu_only_when_faiss_has_one(monkeypatch):
    import faiss

    index = faiss_index.build_index(np.eye(4, dtype=np.float32), "flat")
    assert faiss_index.to_device(index, "flat", None) is index  # this build has no GPU
    moved = []
    monkeypatch.setattr(faiss_index, "gpu_count", lambda: 1)
    monkeypatch.setattr(faiss, "index_cpu_to_all_gpus", lambda ix: moved.append(ix) or "gpu-index", raising=False)
    assert faiss_index.to_device(index, "flat", "cuda") == "gpu-index" and moved == [index]
    assert faiss_index.to_device(index, "flat", "cpu") is index
    assert faiss_index.to_device(index, "hnsw", "cuda") is index


def _tiny_model(path):
    """A random-weight BERT sentence-transformer built from a config (no download)."""
    from sentence_transformers import SentenceTransformer, models
    from transformers import BertConfig, BertModel, BertTokenizerFast

    words = sorted({w.lower().strip(".,'?") for _, _, t in PASSAGES for w in t.split()} | set(
        w.lower().strip("?") for q in QUERIES.values() for w in q.split()))
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + words
    src = path / "src"
    src.mkdir(parents=True)
    (src / "vocab.txt").write_text("\n".join(vocab) + "\n", encoding="utf-8")
    BertTokenizerFast(vocab_file=str(src / "vocab.txt")).save_pretrained(src)
    cfg = BertConfig(vocab_size=len(vocab), hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                     intermediate_size=64, max_position_embeddings=128)
    import torch

    torch.manual_seed(0)
    BertModel(cfg).save_pretrained(src)
    st = SentenceTransformer(modules=[models.Transformer(str(src), max_seq_length=64),
                                      models.Pooling(32, pooling_mode="mean")])
    out = path / "tiny-st"
    st.save(str(out))
    return out


def test_dense_with_any_model_path_and_int8(corpus, fresh_cache, tmp_path):
    model = _tiny_model(tmp_path)
    r = get_retriever("dense", corpus, str(model), progress=False, encoding="fp32")
    assert r.embedder_name == str(model) and np.asarray(r.embeddings).shape == (len(corpus), 32)
    np.testing.assert_allclose(np.linalg.norm(r.embeddings, axis=1), 1.0, rtol=1e-5)
    # the embeddings are the model's own (normalised) sentence embeddings
    from sentence_transformers import SentenceTransformer

    direct = SentenceTransformer(str(model), device="cpu").encode(corpus.texts[:3], normalize_embeddings=True)
    np.testing.assert_allclose(np.asarray(r.embeddings)[:3], direct, atol=1e-5)
    hits = r.search([corpus.texts[4]], len(corpus))[0]
    assert sorted(row for row, _ in hits) == list(range(len(corpus)))
    for enc in ("int8", "bf16"):
        q = get_retriever("dense", corpus, str(model), progress=False, encoding=enc)
        assert q.cache_path != r.cache_path and np.asarray(q.embeddings).shape == (len(corpus), 32)
        assert not np.allclose(q.embeddings, r.embeddings, atol=1e-6)


# ------------------------------------------------------------------ runs

def test_plain_run_entries(corpus, fresh_cache):
    r = get_retriever("bm25", corpus, progress=False)
    qs = [Question("q1", QUERIES["gun"], ["Gun control saves lives", "Gun control does not"], subset="procon"),
          Question("q2", QUERIES["zoo"], ["a", "b"])]
    entries = run(qs, "none", 3, Searched(corpus, r))
    assert [e["id"] for e in entries] == ["q1", "q2"]
    e = entries[0]
    assert e["question"] == QUERIES["gun"] and e["perspectives"][0] == "Gun control saves lives"
    assert e["subset"] == "procon" and "subset" not in entries[1]
    assert len(e["ctxs"]) == 3 and e["ctxs"][0] == {"id": "gun", "title": "Guns", "text": PASSAGES[4][2],
                                                    "score": e["ctxs"][0]["score"]}
    assert entries[1]["ctxs"][0]["id"] == "zoo"
    assert run([], "none", 3, Searched(corpus, r)) == []


def test_small_batch_exact_path_equals_faiss_flat():
    rng = np.random.default_rng(1)
    emb = rng.standard_normal((500, 16)).astype(np.float32)
    emb /= np.linalg.norm(emb, axis=1, keepdims=True)
    q = rng.standard_normal((3, 16)).astype(np.float32)
    index = faiss_index.build_index(emb, "flat")
    s1, r1 = faiss_index.search(index, "flat", q, 7, emb=emb)
    s2, r2 = faiss_index.search(index, "flat", q, 7)
    np.testing.assert_array_equal(r1, r2)
    np.testing.assert_allclose(s1, s2, rtol=1e-5)
    assert (np.diff(s1, axis=1) <= 0).all()


# ------------------------------------------------------------------ the registry, the options, the protocol

def test_retrievers_come_from_one_registry_with_one_options_object(corpus, fresh_cache):
    """issue 39: one registry (``RETRIEVERS``), the build options in one ``IndexOptions``, every retriever with
    the whole protocol (``cache_hit``, ``cache_path``, ``build_seconds`` that the CLI reads)."""
    from berds_core.retrieval import RETRIEVERS, IndexOptions
    from berds_core.retrieval.base import Retriever, SearchBase
    from berds_core.specs import SpecError

    assert RETRIEVERS.names() == ["bm25", "dense", "static", "index"]
    with pytest.raises(SpecError, match=r"unknown retriever 'sparse'; choose from: bm25, dense, static, index\[:<folder>"):
        get_retriever("sparse", corpus)
    opts = IndexOptions(progress=False, engine="bm25s")
    by_options = get_retriever("bm25", corpus, options=opts)
    by_keywords = get_retriever("bm25", corpus, progress=False, engine="bm25s")
    assert by_options.engine == by_keywords.engine == "bm25s"
    assert by_options.search(["nuclear uranium"], 3) == by_keywords.search(["nuclear uranium"], 3)
    with pytest.raises(ValueError, match="bm25 takes no model"):
        get_retriever("bm25", corpus, options=opts, model="all-MiniLM-L6-v2")
    for r in (by_options, get_retriever("dense", corpus, progress=False)):
        assert isinstance(r, SearchBase) and isinstance(r, Retriever)
        for attr in ("name", "embedder_name", "cache_hit", "cache_path", "build_seconds"):
            assert hasattr(r, attr), (r, attr)


def test_the_shared_search_preamble(corpus, fresh_cache):
    """No queries: no lists; k beyond the corpus: every passage; k below 1: an empty list per query
    (``SearchBase.search``, the same for every retriever)."""
    for kind in ("bm25", "dense"):
        r = get_retriever(kind, corpus, progress=False)
        assert r.search([], 5) == []
        assert r.search(["nuclear", "zoo"], 0) == [[], []]
        assert [len(h) for h in r.search(["nuclear", "zoo"], 50)] == [len(corpus), len(corpus)]
