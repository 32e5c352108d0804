"""One embedding per passage: the store keyed by (model, precision, max tokens, text hash), shared by dense
retrieval, MMR's Sim2, the coverage re-ranker and the embedded judge."""
import numpy as np
import pytest

from berds_core.embeddings import text_encoders as embed_store
from berds_core.files.cache import text_hash
from berds_core.corpora.memory import corpus_from_passages
from berds_core.embeddings.text_encoders import MAX_TOKENS, EmbeddingStore, TextEncoder, embed_text, store_key, text_encoder
from berds_core.records import Passage, Question

TEXTS = ["Nuclear power cuts carbon emissions.", "Reactors are expensive and risky.",
         "A recipe for lemon cake.", "Wind farms are cheap to run."]


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("BERDS_CACHE", str(tmp_path))
    return tmp_path


@pytest.fixture
def count(monkeypatch):
    calls = []  # the texts of each part that went to the model (either encoding path)
    real = TextEncoder.encode_stream

    def counting(self, parts, on_rows=None):
        def seen():
            for key, texts in parts:
                calls.append(list(texts))
                yield key, texts

        return real(self, seen(), on_rows)

    monkeypatch.setattr(TextEncoder, "encode_stream", counting)
    return calls


def test_store_roundtrip_and_keys(tmp_path):
    s = EmbeddingStore(tmp_path / "e.sqlite")
    v = np.arange(4, dtype=np.float32)
    s.put_many("m|int8|msl128", [("h1", v)])
    assert s.get_many("m|int8|msl128", ["h1", "h2"]).keys() == {"h1"}
    assert s.get_many("m|fp32|msl128", ["h1"]) == {}  # another precision is another key
    np.testing.assert_array_equal(s.get_many("m|int8|msl128", ["h1"])["h1"], v)
    assert s.count() == 1 and store_key(None, "int8", 128) == "sentence-transformers/all-MiniLM-L6-v2|int8|msl128"


def test_text_encoder_memory_then_store_then_model(cache, count):
    te = text_encoder(encoding="fp32")
    assert te.max_seq_length == MAX_TOKENS and te.encoder.max_seq_length == MAX_TOKENS
    a = te.embed(TEXTS + TEXTS[:1])
    assert a.shape == (5, 384) and np.allclose(np.linalg.norm(a, axis=1), 1.0, atol=1e-5)
    assert sum(len(c) for c in count) == 4  # duplicates encoded once
    np.testing.assert_array_equal(a[0], a[4])
    te.embed(TEXTS)
    assert sum(len(c) for c in count) == 4  # memory
    embed_store._shared.cache_clear()  # a new process: empty memory, same disk
    b = text_encoder(encoding="fp32").embed(TEXTS[::-1])
    assert sum(len(c) for c in count) == 4  # the store
    np.testing.assert_array_equal(b, a[:4][::-1])
    stored = embed_store.embedding_store().get_many(te.key, [text_hash(t) for t in TEXTS])
    assert len(stored) == 4 and (cache / "embeddings" / "embeddings.sqlite").is_file()


def test_one_encoding_for_dense_mmr_coverage_and_judge(cache, count):
    """The dense index encodes the corpus once; MMR, the coverage re-ranker (stance and similarity modes) and
    the embedded judge then encode nothing but short texts (sides, perspectives) they had not seen."""
    from berds_core.diversify import Using, diversify
    from berds_core.judges import get_judge
    from berds_core.retrieval import get_retriever

    corpus = corpus_from_passages([Passage(f"p{i}", f"Title {i}", t) for i, t in enumerate(TEXTS)])
    judge = get_judge("embedded")
    dense = get_retriever("dense", corpus, progress=False, encoding=judge.encoding)
    assert sum(len(c) for c in count) == len(TEXTS)
    encoded = {t for c in count for t in c}
    assert encoded == set(TEXTS)  # the passage text, no title (embed_text)
    q = Question("q", "Should we build nuclear power plants?", ["We should build them", "We should not"])
    count.clear()
    diversify(q, corpus, dense, "mmr(lam=0.5)", 3)
    diversify(q, corpus, dense, "coverage(probs=stance,source=offline)", 3)
    diversify(q, corpus, dense, "coverage(probs=similarity)", 3, using=Using(perspectives=q.perspectives))
    diversify(q, corpus, dense, "coverage", 3, judge=judge, using=Using(perspectives=q.perspectives))
    seen = [t for c in count for t in c]
    assert not set(seen) & set(TEXTS)  # no passage encoded again
    assert set(seen) <= {q.question, *q.perspectives, "We should build nuclear power plants",
                         "We should not build nuclear power plants"}
    # a BM25 run's MMR reads the same store (no model run for passages the dense index stored)
    count.clear()
    bm25 = get_retriever("bm25", corpus, progress=False)
    embed_store._shared.cache_clear()
    diversify(q, corpus, bm25, "mmr(lam=0.5)", 3)
    assert not {t for c in count for t in c} & set(TEXTS)


def test_embed_text_is_the_text():
    assert embed_text(Passage("a", "A title", "the text")) == "the text"
    assert embed_text({"title": "T", "text": "x"}) == "x"


def test_loaded_embedder_maps_to_the_shared_store(cache, count):
    from berds_core.diversify.vectors import get_text_encoder
    from berds_core.embeddings.models import load_embedder

    assert get_text_encoder(load_embedder(None)) is text_encoder()
    assert get_text_encoder(None) is text_encoder()
