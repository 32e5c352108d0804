"""The fast encoding path (issue 42, ``berds_core.embeddings.pipeline``): tokenizer threads overlapped with the
model through a bounded queue, length-sorted batches, vectors streamed to the on-disk shards.

Correctness against the old path (``store.encode_normalized``: ``SentenceTransformer.encode``) on tiny
sentence encoders built here from a config (BERT with a WordPiece tokenizer, RoBERTa with a byte-level BPE
whose tokens hold whitespace) and on the packaged all-MiniLM-L6-v2 over a few hundred demo passages:
plain batching (the CPU's) gives the old path's vectors bit for bit; token batching (CUDA's) gives them
within float rounding (cosine >= 0.9999 per passage). Speed is measured by ``bench/encoder_gpu.py``, never
asserted here.
"""
from __future__ import annotations

import dataclasses
import json
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from berds_core.embeddings import pipeline as pl
from berds_core.embeddings.pipeline import EncodePipeline, PipelineOptions, batches, resolve_path, windows
from berds_core.embeddings.text_encoders import TextEncoder, encode_normalized
from berds_core.retrieval.vector_shards import VectorShards
from tiny_models import make_tiny_sentence_encoder

ROOT = Path(__file__).resolve().parents[1]
CPU = PipelineOptions.for_device("cpu")
# small windows, batches and budgets, two tokenizer threads: many windows, batches and queue turns on few texts
SMALL_PLAIN = dataclasses.replace(CPU, max_rows=8, window=32, first_window=8, workers=2)
SMALL_TOKENS = dataclasses.replace(PipelineOptions.for_device("cuda"), token_budget=400, max_rows=16, window=40,
                                   first_window=8, workers=2)


def varied_texts(n: int, seed: int = 0) -> list[str]:
    """Texts of every length from empty to well past the tiny models' 48 tokens, with the cases a tokenizer
    can trip on: leading / trailing whitespace, upper case, accents, punctuation, unknown words, duplicates."""
    rng = np.random.default_rng(seed)
    words = ("nuclear power cuts carbon emissions but leaves waste School uniforms reduce bullying Zoos breed "
             "endangered species Taxes on sugar change what children drink école «quotes» — 42 qqqzz !").split()
    out = []
    for i in range(n):
        t = " ".join(rng.choice(words, int(rng.integers(0, 70))))
        if i % 7 == 1:
            t = "  " + t + "\t"
        if i % 11 == 2:
            t = t.upper()
        out.append(t)
    return out + ["", " ", out[3], "Short."]


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    """Tiny random sentence encoders (fp32, CPU), built once: bert (WordPiece, mean, normalised), roberta
    (byte-level BPE, padding id 1), bert-cls (CLS pooling, not normalised)."""
    from sentence_transformers import SentenceTransformer

    root = tmp_path_factory.mktemp("tiny-encoders")
    paths = {"bert": make_tiny_sentence_encoder(root / "bert", "bert"),
             "roberta": make_tiny_sentence_encoder(root / "roberta", "roberta", seed=1),
             "bert-cls": make_tiny_sentence_encoder(root / "bert-cls", "bert", seed=2, pooling="cls",
                                                    normalize=False)}
    return {name: (p, SentenceTransformer(str(p), device="cpu")) for name, p in paths.items()}


# ------------------------------------------------------------------ batching


def test_windows_double_up_to_the_full_window():
    assert windows(10_000, 1024, 8192) == [(0, 1024), (1024, 3072), (3072, 7168), (7168, 10_000)]
    assert windows(20_000, 1024, 4096)[-3:] == [(11264, 15360), (15360, 19456), (19456, 20_000)]
    assert windows(0, 8, 8) == []
    assert windows(5, 8, 4) == [(0, 4), (4, 5)]  # a first window larger than the full one is cut to it


def test_token_batches_are_longest_first_under_the_budget():
    rng = np.random.default_rng(0)
    lens = rng.integers(1, 300, 1000)
    lens[7] = 5000  # longer than the budget: a batch of its own
    got = batches(lens, 4096, 64)
    assert sorted(np.concatenate(got).tolist()) == list(range(1000))  # every row once
    assert got[0].tolist() == [7]
    for b in got:
        longest = int(lens[b].max())
        assert longest == lens[b[0]] and len(b) <= 64 and (len(b) == 1 or len(b) * longest <= 4096)
    firsts = [int(lens[b[0]]) for b in got]
    assert firsts == sorted(firsts, reverse=True)


def test_plain_batching_cuts_the_plain_paths_order_into_whole_batches(tiny):
    pipe = EncodePipeline(tiny["bert"][1], SMALL_PLAIN)
    texts = varied_texts(100)
    wins = pipe.part_windows(texts)
    order = np.concatenate([rows for _, rows in wins])
    assert order.tolist() == pl.plain_order(texts).tolist()  # SentenceTransformer.encode's order
    assert [len(rows) for _, rows in wins][:3] == [8, 16, 32] and all(len(r) % 8 == 0 for _, r in wins[:-1])
    assert all(w == [texts[i] for i in rows] for w, rows in wins)


def test_options_and_paths_are_checked():
    with pytest.raises(ValueError, match="batching"):
        PipelineOptions(batching="sorted")
    with pytest.raises(ValueError, match="workers"):
        PipelineOptions(workers=0)
    assert PipelineOptions.for_device("cuda").batching == "tokens" and CPU.batching == "plain"
    assert CPU.max_rows == 64 and PipelineOptions.for_device("cpu", 32).max_rows == 32


def test_the_path_follows_the_device_and_the_environment(monkeypatch):
    monkeypatch.delenv("BERDS_ENCODE_PATH", raising=False)
    assert resolve_path(None, "cuda") == "fast" and resolve_path("auto", "cuda:1") == "fast"
    assert resolve_path(None, "cpu") == pl.CPU_DEFAULT_PATH and resolve_path(None, "mps") == "plain"
    assert resolve_path("plain", "cuda") == "plain" and resolve_path("fast", "cpu") == "fast"
    monkeypatch.setenv("BERDS_ENCODE_PATH", "fast")
    assert resolve_path(None, "cpu") == "fast" and resolve_path("plain", "cpu") == "plain"
    monkeypatch.setenv("BERDS_ENCODE_PATH", "quick")
    with pytest.raises(ValueError, match="BERDS_ENCODE_PATH must be one of auto, fast, plain"):
        resolve_path(None, "cpu")
    with pytest.raises(ValueError, match="encode path must be one of"):
        resolve_path("turbo", "cpu")


def test_fp16_is_an_accelerator_precision(monkeypatch):
    from berds_core.embeddings.models import resolve_encoding

    monkeypatch.delenv("BERDS_ENCODING", raising=False)
    assert resolve_encoding("fp16", "cuda") == "fp16" and resolve_encoding(None, "cuda") == "fp32"
    with pytest.raises(ValueError, match="fp16 encoding runs on accelerators only"):
        resolve_encoding("fp16", "cpu")
    monkeypatch.setenv("BERDS_ENCODING", "fp16")  # the operator's GPU choice does not apply to the CPU
    assert resolve_encoding(None, "cuda") == "fp16" and resolve_encoding(None, "cpu") == "fp32"


# ------------------------------------------------------------------ the old path's vectors


@pytest.mark.parametrize("name", ["bert", "roberta", "bert-cls"])
def test_plain_batching_gives_the_old_paths_vectors_bit_for_bit(tiny, name):
    st = tiny[name][1]
    texts = varied_texts(300)
    for opts in (CPU, SMALL_PLAIN):
        want = encode_normalized(st, texts, batch_size=opts.max_rows)
        got = EncodePipeline(st, opts).encode(texts)
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("name", ["bert", "roberta", "bert-cls"])
def test_token_batching_gives_the_old_paths_vectors_within_rounding(tiny, name):
    st = tiny[name][1]
    texts = varied_texts(300, seed=1)
    want = encode_normalized(st, texts)
    for opts in (SMALL_TOKENS, dataclasses.replace(SMALL_TOKENS, token_budget=65_536, max_rows=1024, window=8192)):
        got = EncodePipeline(st, opts).encode(texts)
        assert got.shape == want.shape and got.dtype == np.float32
        cos = (got * want).sum(1)
        assert cos.min() >= 0.9999, (name, float(cos.min()))
        assert np.abs(got - want).max() < 1e-5  # fp32: only the padding of the batches differs
        np.testing.assert_allclose(np.linalg.norm(got, axis=1), 1.0, atol=1e-5)


def test_bf16_token_batching_stays_within_bf16_noise(tiny):
    import copy

    import torch

    st = copy.deepcopy(tiny["bert"][1]).to(torch.bfloat16)
    texts = varied_texts(200, seed=2)
    want = encode_normalized(st, texts)
    np.testing.assert_array_equal(EncodePipeline(st, CPU).encode(texts), want)  # plain batching: the same bits
    cos = (EncodePipeline(st, SMALL_TOKENS).encode(texts) * want).sum(1)
    assert cos.min() >= 0.999, float(cos.min())  # bf16 rounding of other batch shapes (MiniLM: >= 0.9999)


def demo_texts(n: int) -> list[str]:
    out = []
    for name in ("corpus_a.jsonl", "corpus_b.jsonl"):
        out += [json.loads(line)["text"] for line in (ROOT / "berds_core" / "demo" / name).open(encoding="utf-8")]
    return out[:n]


@pytest.mark.slow
def test_minilm_on_three_hundred_passages_equals_the_old_path():
    """The packaged all-MiniLM-L6-v2 at the studio's 128 tokens, 300 demo passages, each cut to 3 to 112 words
    so batches pad differently on the two paths: fp32 and bf16, token batching within rounding of the old
    path (cosine >= 0.9999 per passage; seen: fp32 0.9999999, bf16 0.99997), plain batching identical."""
    from berds_core.embeddings.models import load_encoder

    texts = [" ".join(t.split()[:3 + (i * 37) % 110]) for i, t in enumerate(demo_texts(300))]
    assert len(texts) == 300 and len({len(t.split()) for t in texts}) > 80
    for enc in ("fp32", "bf16"):
        st = load_encoder(None, "cpu", enc, 128)
        want = encode_normalized(st, texts)
        fast = EncodePipeline(st, dataclasses.replace(PipelineOptions.for_device("cuda"), workers=2)).encode(texts)
        cos = (fast * want).sum(1)
        assert cos.min() >= 0.9999, (enc, float(cos.min()))
        if enc == "fp32":
            assert np.abs(fast - want).max() < 1e-5
        np.testing.assert_array_equal(EncodePipeline(st, CPU).encode(texts), want)


# ------------------------------------------------------------------ the stream


def test_parts_stream_in_order_and_encode_as_they_would_alone(tiny):
    pipe = EncodePipeline(tiny["roberta"][1], SMALL_TOKENS)
    texts = varied_texts(120, seed=3)
    parts = [("a", texts[:50]), ("empty", []), ("one", texts[50:51]), ("b", texts[51:])]
    seen = []
    out = list(pipe.stream(iter(parts), on_rows=seen.append))
    assert [k for k, _ in out] == ["a", "empty", "one", "b"]
    assert sum(seen) == len(texts) and max(seen) <= SMALL_TOKENS.max_rows
    for (key, got), (_, part) in zip(out, parts):
        assert got.shape == (len(part), pipe.dim)
        np.testing.assert_array_equal(got, pipe.encode(part))  # a part's batches depend on the part alone


def _pipeline_threads() -> list[str]:
    return [t.name for t in threading.enumerate() if t.name.startswith(("berds-tokenize", "berds-encode-feed"))]


def test_a_failing_reader_raises_and_leaves_no_thread(tiny):
    pipe = EncodePipeline(tiny["bert"][1], SMALL_PLAIN)

    def parts():
        yield "a", varied_texts(30)
        raise OSError("corpus store unreadable")

    got = []
    with pytest.raises(OSError, match="corpus store unreadable"):
        for key, vecs in pipe.stream(parts()):
            got.append(key)
    assert got == ["a"] and not _pipeline_threads()


def test_stopping_early_stops_the_feeder_and_the_tokenizers(tiny):
    pipe = EncodePipeline(tiny["bert"][1], SMALL_TOKENS)
    read = []

    def parts():  # endless: the bounded queue must hold the feeder back
        for i in range(10_000):
            read.append(i)
            yield i, varied_texts(20, seed=i)

    stream = pipe.stream(parts())
    assert next(stream)[0] == 0
    time.sleep(0.3)
    assert len(read) < 20  # queued ahead: a few windows, not the whole input
    stream.close()
    assert not _pipeline_threads()


# ------------------------------------------------------------------ models the fast path refuses


def test_a_model_with_a_default_prompt_goes_the_plain_way(tiny, tmp_path, capsys):
    from sentence_transformers import SentenceTransformer

    path = make_tiny_sentence_encoder(tmp_path / "prompted", "bert", seed=3)
    cfg = path / "config_sentence_transformers.json"
    data = json.loads(cfg.read_text())
    data.update(prompts={"query": "query: ", "document": ""}, default_prompt_name="query")
    cfg.write_text(json.dumps(data))
    with pytest.raises(ValueError, match="default prompt"):
        EncodePipeline(SentenceTransformer(str(path), device="cpu"))
    te = TextEncoder(str(path), "cpu", "fp32", 48, store=False, path="fast")
    texts = varied_texts(20)
    assert te.pipeline is None and "the plain encoding path (the model has a default prompt)" in capsys.readouterr().err
    np.testing.assert_array_equal(te.encode_uncached(texts), encode_normalized(te.encoder, texts))


def test_a_tokenizer_that_does_not_match_the_model_is_refused(tiny):
    import copy

    st = copy.deepcopy(tiny["bert"][1])
    real = st.preprocess if hasattr(st, "preprocess") else st.tokenize

    def shifted(texts):  # the model's own preprocessing, changed so that no text transform matches it
        f = dict(real(texts))
        f["input_ids"] = f["input_ids"].clone()
        f["input_ids"][:, 1] += 1
        return f

    st.preprocess = st.tokenize = shifted
    with pytest.raises(ValueError, match="does not give the model's own tokens"):
        EncodePipeline(st)


# ------------------------------------------------------------------ TextEncoder, shards, Ray


def test_text_encoder_paths_give_the_same_stored_vectors(tiny, tmp_path, monkeypatch):
    monkeypatch.setenv("BERDS_CACHE", str(tmp_path / "cache"))
    path = str(tiny["bert"][0])
    texts = varied_texts(150, seed=4)
    vecs, progress = {}, {}
    for p in ("plain", "fast"):
        te = TextEncoder(path, "cpu", "fp32", 48, store=False, path=p, batch_size=16)
        assert te.path == p and (te.pipeline is not None) == (p == "fast")
        vecs[p] = te.embed(texts)
        seen = []
        te2 = TextEncoder(path, "cpu", "fp32", 48, store=False, path=p, batch_size=16)
        again = te2.embed(texts, on_progress=lambda d, t: seen.append((d, t)))
        if p == "fast":  # progress per batch, the batches unchanged (the plain path encodes in steps for it)
            np.testing.assert_array_equal(again, vecs[p])
        progress[p] = seen
    np.testing.assert_array_equal(vecs["fast"], vecs["plain"])
    uniq = len(set(texts))
    for seen in progress.values():
        assert seen[-1] == (uniq, uniq) and [d for d, _ in seen] == sorted(d for d, _ in seen)
    assert len(progress["fast"]) > 2


def test_vector_shards_are_written_while_the_next_shard_is_encoded(tiny, tmp_path, monkeypatch):
    """The writer thread takes a finished shard and the encoder goes on: shard i's write waits (here) until
    the vectors of shard i + 1 have come out of the encoder, which a write inside the loop would never allow."""
    te = TextEncoder(str(tiny["bert"][0]), "cpu", "fp32", 48, store=False, path="fast", options=SMALL_TOKENS)
    texts = varied_texts(250, seed=5)
    n, rows = len(texts), 64
    encoded = {i: threading.Event() for i in range(8)}
    real_write = VectorShards.write

    def stream(parts):
        for i, vecs in te.encode_stream(parts):
            encoded[i].set()
            yield i, vecs

    def slow_write(self, i, vectors):
        if i + 1 < self.n_shards:
            assert encoded[i + 1].wait(30), f"shard {i + 1} was not encoded while shard {i} was being written"
        real_write(self, i, vectors)

    monkeypatch.setattr(VectorShards, "write", slow_write)
    shards = VectorShards(tmp_path / "vec", n, "h" * 40, "tiny", shard_rows=rows)
    shards.encode(lambda a, b: texts[a:b], stream=stream, dim=32)
    assert shards.complete and shards.n_encoded == n and shards.n_shards == 4
    want = encode_normalized(te.encoder, texts)
    cos = (shards.get(np.arange(n)) * want).sum(1)
    assert cos.min() >= 0.9999


def test_a_failed_shard_write_stops_the_run_and_keeps_the_shards_written(tiny, tmp_path, monkeypatch):
    te = TextEncoder(str(tiny["bert"][0]), "cpu", "fp32", 48, store=False, path="fast")
    texts = varied_texts(200, seed=6)
    real_write = VectorShards.write

    def failing(self, i, vectors):
        if i == 1:
            raise OSError(28, "No space left on device")
        real_write(self, i, vectors)

    monkeypatch.setattr(VectorShards, "write", failing)
    shards = VectorShards(tmp_path / "vec", len(texts), "h" * 40, "tiny", shard_rows=64)
    with pytest.raises(OSError, match="No space left"):
        shards.encode(lambda a, b: texts[a:b], stream=te.encode_stream, dim=32)
    assert not shards.complete and shards.shard_ok(0) and not (tmp_path / "vec" / "shard-00001.json").exists()
    assert not _pipeline_threads()
    monkeypatch.setattr(VectorShards, "write", real_write)
    again = VectorShards(tmp_path / "vec", len(texts), "h" * 40, "tiny", shard_rows=64)
    again.encode(lambda a, b: texts[a:b], stream=te.encode_stream, dim=32)
    assert again.complete and again.n_encoded == len(texts) - 64  # resumed after shard 0
    want = np.concatenate([te.encode_uncached(texts[a:a + 64]) for a in range(0, len(texts), 64)])  # shard by shard
    np.testing.assert_array_equal(again.get(np.arange(len(texts))), want)


def test_the_encoder_spec_carries_the_asked_path_to_the_actors(tiny, monkeypatch):
    from berds_core.distributed.plan import EncoderSpec

    monkeypatch.delenv("BERDS_ENCODE_PATH", raising=False)
    te = TextEncoder(str(tiny["bert"][0]), "cpu", "fp32", 48, store=False)
    assert te.path_asked == "auto" and EncoderSpec.of(te).kwargs()["path"] == "auto"  # a GPU actor: fast
    monkeypatch.setenv("BERDS_ENCODE_PATH", "fast")
    te = TextEncoder(str(tiny["bert"][0]), "cpu", "fp32", 48, store=False)
    assert EncoderSpec.of(te).kwargs()["path"] == "fast"


@pytest.mark.slow
@pytest.mark.ray_driver  # ray.init here: in a pytest child process (ray_harness), so a Ray crash fails only this test
def test_a_ray_encode_actor_takes_the_fast_path_and_gives_one_process_vectors(tiny, tmp_path):
    """A real local Ray instance: an ``EncodeActor`` built as the pool builds it (the spec's path), its parts
    back in order, the vectors one process's fast path gives."""
    ray = pytest.importorskip("ray")
    from berds_core.distributed.encode import EncodeActor

    class Probe(EncodeActor):  # defined here: Ray ships it by value
        def uses(self):
            return self.te.path, self.te.pipeline is not None

    texts = varied_texts(90, seed=7)
    spec = {"model": str(tiny["bert"][0]), "encoding": "fp32", "max_seq_length": 48, "batch_size": 16,
            "path": "fast"}
    import shutil
    import tempfile

    ray_dir = tempfile.mkdtemp(prefix="berds-ray-", dir="/tmp")  # short: Unix socket paths are limited
    ray.init(num_cpus=1, include_dashboard=False, log_to_driver=False, _temp_dir=ray_dir,
             runtime_env={"env_vars": {"PYTHONPATH": str(ROOT)}})
    try:
        actor = ray.remote(Probe).remote(**spec)
        assert ray.get(actor.uses.remote()) == ("fast", True)
        batch = {"part": np.array([0, 1]), "texts": np.array([texts[:40], texts[40:]], dtype=object)}
        out = ray.get(actor.__call__.remote(batch))
    finally:
        ray.shutdown()
        shutil.rmtree(ray_dir, ignore_errors=True)
    assert out["part"].tolist() == [0, 1]
    te = TextEncoder(spec["model"], "cpu", "fp32", 48, store=False, path="fast", batch_size=16)
    for j, part in enumerate((texts[:40], texts[40:])):
        got = np.frombuffer(out["vecs"][j], np.float32).reshape(-1, int(out["dim"][j]))
        np.testing.assert_array_equal(got, te.encode_uncached(part))
