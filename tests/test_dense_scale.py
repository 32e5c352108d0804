"""Dense at scale: index plans for a memory budget, resumable checksummed vector shards, IVF-PQ with
exact re-ranking, on-disk inverted lists, prebuilt (Pyserini-layout) index folders, DPR query encoders."""
import json
from pathlib import Path

import numpy as np
import pytest

from berds_core.files.build_dir import building
from berds_core.corpora.disk import ingest
from berds_core.corpora.memory import corpus_from_passages
from berds_core.errors import InputError
from berds_core.records import Passage
from berds_core.retrieval.faiss_build import build_folder
from berds_core.retrieval.index_dir import DenseIndex, exact_search
from berds_core.retrieval.index_plan import ivf_nlist, parse_memory, plan_index, pq_m
from berds_core.retrieval.vector_shards import ArrayVectors, VectorShards


@pytest.fixture(autouse=True)
def _cache(tmp_path, monkeypatch):
    monkeypatch.setenv("BERDS_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


def clustered(n, dim=64, topics=40, seed=0, noise=0.35):
    """Unit vectors around ``topics`` centres: the structure real passage embeddings have."""
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((topics, dim)).astype(np.float32)
    x = centres[rng.integers(0, topics, n)] + noise * rng.standard_normal((n, dim)).astype(np.float32)
    return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)


def _corpus(n):
    return corpus_from_passages([Passage(f"d{i}", "", f"passage number {i}") for i in range(n)], "synthetic")


# ------------------------------------------------------------------ plans


def test_parse_memory():
    assert parse_memory("4G") == 4 << 30 and parse_memory("512 MB") == 512 << 20 and parse_memory("1.5GiB") == 3 << 29
    assert parse_memory("1000") == 1000
    for bad in ("lots", "4Q", "0", "-1G"):
        with pytest.raises(InputError, match="--memory-budget"):
            parse_memory(bad)


def test_plans_follow_corpus_size_and_budget():
    assert ivf_nlist(1_000_000) == 1024 and ivf_nlist(21_000_000) == 4096 and ivf_nlist(2_000) == 32
    assert ivf_nlist(50) == 1 and all(n >= 39 * ivf_nlist(n) for n in (100, 2_000, 10_000))
    assert pq_m(384) == 192 and pq_m(768) == 256 and pq_m(4096) == 256 and pq_m(100) == 50
    p = plan_index("ivfpq", 1_000_000, 384, 8 << 30)
    assert (p.factory, p.nprobe, p.on_disk, p.refine) == ("IVF1024,PQ192x4fs", 64, False, 4)
    assert p.est_bytes == 1_000_000 * (96 + 8) + 1024 * 384 * 4
    assert plan_index("ivfpq", 500, 384, 8 << 30).factory == "IVF8,Flat"  # too few vectors to train codes
    small = plan_index("ivfpq", 1_000_000, 384, 50 << 20)  # 104 MB of lists > 50 MB: lists on disk
    assert small.on_disk and small.factory == "IVF1024,PQ96" and small.est_bytes == p.est_bytes  # 8-bit codes on disk
    assert plan_index("flat", 10, 8, 1).factory is None  # exact search over the vectors: no budget applies
    with pytest.raises(InputError, match="use --index ivfpq"):
        plan_index("hnsw", 21_000_000, 768, 16 << 30)
    f = plan_index("IVF16,PQ8", 10_000, 64, 1 << 30)
    assert (f.nlist, f.nprobe, f.refine) == (16, 16, 4)
    with pytest.raises(InputError, match="needs at least"):
        plan_index("IVF4096,Flat", 10_000, 64, 1 << 30)
    with pytest.raises(InputError, match="FAISS index factory"):
        plan_index("IVF,PQ", 10_000, 64, 1 << 30)
    with pytest.raises(InputError, match="cannot hold"):
        plan_index("ivfpq", 1_000_000, 384, 100_000)


# ------------------------------------------------------------------ vector shards


class CountingEncoder:
    def __init__(self, vectors, fail_after=None):
        self.vectors, self.fail_after, self.calls, self.rows = vectors, fail_after, 0, 0

    def texts_of(self, a, b):
        return list(range(a, b))

    def __call__(self, rows):
        if self.fail_after is not None and self.calls >= self.fail_after:
            raise KeyboardInterrupt  # the run is killed here
        self.calls += 1
        self.rows += len(rows)
        return self.vectors[rows[0]:rows[-1] + 1]


def test_killed_encode_resumes_at_the_first_shard_not_done(tmp_path):
    x = clustered(1000, 16)
    folder = tmp_path / "vec"
    killed = CountingEncoder(x, fail_after=3)
    shards = VectorShards(folder, 1000, "h" * 40, "enc", shard_rows=128)
    with pytest.raises(KeyboardInterrupt):
        shards.encode(killed.texts_of, killed, dim=16)
    assert killed.calls == 3 and not (folder / "complete.json").exists()
    torn = folder / ".shard-00003.999999999.1.tmp.npy"  # what a process killed while writing leaves
    torn.write_bytes(b"\x93NUMPY half")
    resumed = CountingEncoder(x)
    again = VectorShards(folder, 1000, "h" * 40, "enc", shard_rows=128).encode(resumed.texts_of, resumed, dim=16)
    assert not torn.exists()
    assert resumed.rows == 1000 - 3 * 128 and again.n_encoded == resumed.rows and again.complete
    assert np.array_equal(again.get(np.arange(1000)), x)
    assert np.array_equal(again.get([999, 0, 500]), x[[999, 0, 500]])
    done = CountingEncoder(x)
    VectorShards(folder, 1000, "h" * 40, "enc", shard_rows=128).encode(done.texts_of, done, dim=16)
    assert done.calls == 0  # complete: nothing encoded


def test_a_corrupt_shard_fails_its_checksum_and_is_encoded_again(tmp_path):
    x = clustered(600, 8)
    folder = tmp_path / "vec"
    killed = CountingEncoder(x, fail_after=3)
    with pytest.raises(KeyboardInterrupt):
        VectorShards(folder, 600, "h" * 40, "enc", shard_rows=100).encode(killed.texts_of, killed, dim=8)
    shard = folder / "shard-00001.npy"
    raw = bytearray(shard.read_bytes())
    raw[-5] ^= 0xFF  # a flipped bit in the data
    shard.write_bytes(bytes(raw))
    resumed = CountingEncoder(x)
    s = VectorShards(folder, 600, "h" * 40, "enc", shard_rows=100).encode(resumed.texts_of, resumed, dim=8)
    assert s.shards_reencoded == 1 and resumed.rows == 100 + 300
    assert np.array_equal(s.get(np.arange(600)), x)


def test_shards_of_another_corpus_are_not_reused(tmp_path):
    x = clustered(200, 8)
    enc = CountingEncoder(x)
    VectorShards(tmp_path / "v", 200, "a" * 40, "enc", shard_rows=64).encode(enc.texts_of, enc, dim=8)
    other = CountingEncoder(x)
    VectorShards(tmp_path / "v", 200, "b" * 40, "enc", shard_rows=64).encode(other.texts_of, other, dim=8)
    assert other.rows == 200


# ------------------------------------------------------------------ building and searching


def _build(tmp_path, vectors, corpus, spec, budget=1 << 30, name="idx"):
    plan = plan_index(spec, vectors.n, vectors.dim, budget)
    folder = tmp_path / name
    with building(folder, "dense index") as tmp:
        build_folder(tmp, vectors, plan, corpus=corpus, encoder={"model": None, "key": "synthetic"})
    return folder, plan


def _recall(got, want):
    return np.mean([len({r for r, _ in g} & set(w.tolist())) / len(w) for g, w in zip(got, want)])


def test_flat_is_exact_and_ivfpq_with_reranking_finds_the_neighbours(tmp_path):
    n, k = 8_000, 100
    x, q = clustered(n + 50, 32)[:n], clustered(n + 50, 32)[n:]
    corpus = _corpus(n)
    vectors = VectorShards(tmp_path / "vec", n, corpus.hash, "synthetic", shard_rows=3000)
    for i in range(vectors.n_shards):
        a, b = vectors.bounds(i)
        vectors.write(i, x[a:b])
    vectors.finish(32)
    truth = np.argsort(-(q @ x.T), axis=1)[:, :k]
    folder, _ = _build(tmp_path, vectors, corpus, "flat")
    assert not (folder / "index").exists() and (folder / "docid").read_text().split() == corpus.ids
    flat = DenseIndex(folder, corpus, vectors=vectors).search(q, k)
    assert _recall(flat, truth) == 1.0
    folder, plan = _build(tmp_path, vectors, corpus, "ivfpq", name="ivfpq")
    assert plan.factory == "IVF64,PQ16x4fs" and (folder / "index").is_file()
    ivf = DenseIndex(folder, corpus, vectors=vectors)
    assert _recall(ivf.search(q, k), truth) >= 0.95
    assert DenseIndex(folder, corpus).refine_factor == 4  # berds.json names the vectors' folder
    (tmp_path / "vec").rename(tmp_path / "moved")
    codes_only = DenseIndex(folder, corpus)  # the vectors are gone: the codes alone rank
    assert codes_only.refine_factor == 0 and _recall(codes_only.search(q, k), truth) < 1.0
    meta = json.loads((folder / "berds.json").read_text())
    assert meta["corpus"]["hash"] == corpus.hash and meta["plan"]["factory"] == "IVF64,PQ16x4fs"


def test_on_disk_inverted_lists_give_the_in_memory_results(tmp_path):
    assert plan_index("ivfpq", 3_000, 16, 40_000).factory == "IVF64,PQ4"  # ivfpq on disk: 8-bit codes
    n = 3_000
    x = clustered(n + 20, 16, seed=3)
    corpus = _corpus(n)
    vectors = ArrayVectors(x[:n])
    mem_folder, mem_plan = _build(tmp_path, vectors, corpus, "IVF32,PQ8", budget=1 << 30, name="mem")
    disk_folder, disk_plan = _build(tmp_path, vectors, corpus, "IVF32,PQ8", budget=40_000, name="disk")
    assert not mem_plan.on_disk and disk_plan.on_disk
    assert (disk_folder / "index.ivfdata").is_file() and not (disk_folder / "blocks").exists()
    a = DenseIndex(mem_folder, corpus, vectors=vectors).search(x[n:], 10)
    b = DenseIndex(disk_folder, corpus, vectors=vectors).search(x[n:], 10)
    assert [[r for r, _ in h] for h in a] == [[r for r, _ in h] for h in b]


def test_exact_search_merges_shards():
    x = clustered(1000, 16, seed=5)
    s, r = exact_search(ArrayVectors(x), x[:3], 5)
    assert r[:, 0].tolist() == [0, 1, 2] and np.all(np.diff(s, axis=1) <= 1e-6)


class _Chunked(ArrayVectors):
    """The same vectors read in chunks of ``size`` rows (as shards of another size would give them)."""

    def __init__(self, emb, size):
        super().__init__(emb)
        self.size = size

    def chunks(self, size=None, release=False):
        return super().chunks(self.size)


def test_exact_search_and_refine_break_ties_by_row_whatever_the_chunking():
    """Identical vectors score the same float32 wherever a chunk puts them, so ties go by row whatever the
    chunking (issue 63: on an AVX2-only CPU a float32 matrix product gave them scores a last bit apart by
    position). The reference scores each distinct vector once, in float64: ties are ties there by
    construction, and every score is that float64 dot product rounded to float32."""
    from berds_core.retrieval.index_dir import refine

    rng = np.random.default_rng(0)
    base = rng.normal(size=(7, 8)).astype(np.float32)
    pick = rng.integers(0, 7, size=300)
    x = base[pick]  # every vector repeated ~43 times: scores tie in blocks
    q = base[:4]
    ref = base.astype(np.float64) @ q.astype(np.float64).T  # (distinct vector, query)
    want = None
    for size in (300, 64, 17, 5):
        s, r = exact_search(_Chunked(x, size), q, 12)
        for i in range(len(q)):  # the k best by (score desc, row asc), from the full score vector
            full = ref[pick, i]
            order = np.lexsort((np.arange(len(x)), -full))[:12]
            assert r[i].tolist() == order.tolist()
            assert s[i].tolist() == full[order].astype(np.float32).tolist()
        want = r if want is None else want
        assert np.array_equal(r, want)
    cand = np.stack([rng.permutation(300)[:40] for _ in q])  # candidates in any order
    s2, r2 = refine(ArrayVectors(x), q, cand, 6)
    for i in range(len(q)):
        c = np.sort(cand[i])
        sc = ref[pick[c], i]
        top = np.lexsort((c, -sc))[:6]
        assert r2[i].tolist() == c[top].tolist()
        assert s2[i].tolist() == sc[top].astype(np.float32).tolist()


@pytest.mark.parametrize("nq", [3, 25])  # NumPy's product picks the candidates below 20 queries, FAISS's above
def test_flat_search_scores_the_same_whatever_the_shards_and_the_batch(nq):
    """A flat search, whole or split into shards (what ``--ray`` actors hold, merged by ``merge_topk``), with a
    few queries or many, in any batch: the same rows and the same float32 scores, bit for bit, ties by row;
    hundreds of tied rows at the cut make the FAISS path widen its candidates."""
    from berds_core.distributed.search import DenseSearcher
    from berds_core.retrieval import faiss_index
    from berds_core.retrieval.topk import merge_topk

    rng = np.random.default_rng(3)
    base = clustered(40, 48, seed=3)
    x = np.ascontiguousarray(base[rng.integers(0, 40, size=2000)])
    q = np.ascontiguousarray(base[rng.integers(0, 40, size=nq)] + 0.01 * rng.standard_normal((nq, 48)),
                             dtype=np.float32)
    k = 30
    s, r = faiss_index.search(faiss_index.build_index(x), "flat", q, k, emb=x)
    ref = x.astype(np.float64) @ q.astype(np.float64).T
    for i in range(nq):
        order = np.lexsort((np.arange(len(x)), -ref[:, i]))[:k]
        assert r[i].tolist() == order.tolist()
        assert s[i].tolist() == ref[order, i].astype(np.float32).tolist()
    s1, r1 = faiss_index.search(faiss_index.build_index(x), "flat", q[:1], k, emb=x)  # a batch of one
    assert r1[0].tolist() == r[0].tolist() and s1[0].tolist() == s[0].tolist()
    import tempfile
    with tempfile.TemporaryDirectory() as d:
        specs = []
        for j, (a, b) in enumerate([(0, 700), (700, 1333), (1333, 2000)]):
            np.save(f"{d}/s{j}.npy", x[a:b])
            specs.append({"path": f"{d}/s{j}.npy", "start": a})
        per_shard = DenseSearcher(specs, "flat").search(q, k)
    for i in range(nq):
        rows, scores = merge_topk([shard[i] for shard in per_shard], k)
        assert rows.tolist() == r[i].tolist() and scores.tolist() == s[i].tolist()


# ------------------------------------------------------------------ prebuilt folders (Pyserini's layout)


def _pyserini_folder(tmp_path, corpus, x, order):
    import faiss

    folder = tmp_path / "prebuilt"
    folder.mkdir()
    index = faiss.IndexFlatIP(x.shape[1])
    index.add(x[order])
    faiss.write_index(index, str(folder / "index"))
    (folder / "docid").write_text("".join(f"{corpus.ids[i]}\n" for i in order), encoding="utf-8")
    return folder


def test_a_prebuilt_folder_maps_docids_to_corpus_rows(tmp_path):
    n = 300
    x = clustered(n, 16, seed=7)
    path = tmp_path / "c.jsonl"
    path.write_text("".join(json.dumps({"id": f"doc{i}", "text": f"passage {i}"}) + "\n" for i in range(n)),
                    encoding="utf-8")
    corpus = ingest(path)
    order = np.random.default_rng(0).permutation(n)  # the index's rows are not the corpus's
    folder = _pyserini_folder(tmp_path, corpus, x, order)
    dense = DenseIndex(folder, corpus)
    hits = dense.search(x[[5, 77]], 3)
    assert [h[0][0] for h in hits] == [5, 77]
    assert len(list((Path(tmp_path) / "cache" / "indexes" / "docid-rows").iterdir())) == 1  # mapped once
    assert [h[0][0] for h in DenseIndex(folder, corpus).search(x[[9]], 1)] == [9]


def test_a_prebuilt_folder_with_ids_the_corpus_lacks_is_refused(tmp_path):
    corpus = _corpus(50)
    x = clustered(50, 8)
    folder = _pyserini_folder(tmp_path, corpus, x, np.arange(50))
    lines = (folder / "docid").read_text().splitlines()
    lines[17] = "not-in-corpus"
    (folder / "docid").write_text("\n".join(lines) + "\n")
    with pytest.raises(InputError) as err:
        DenseIndex(folder, corpus)
    assert err.value.line == 18 and "not-in-corpus" in err.value.message


def test_a_studio_folder_of_another_corpus_is_refused(tmp_path):
    corpus = _corpus(300)
    folder, _ = _build(tmp_path, ArrayVectors(clustered(300, 8)), corpus, "ivfpq")
    with pytest.raises(InputError, match="built from corpus 'synthetic'"):
        DenseIndex(folder, _corpus(299))


def _tiny_dpr(tmp_path):
    import torch
    from transformers import DPRConfig, DPRQuestionEncoder

    from tiny_models import make_tiny_tokenizer

    path = tmp_path / "tiny-dpr"
    path.mkdir()
    tok = make_tiny_tokenizer(path, extra_text="zoos uniforms nuclear energy cruel animals", chat_template=False)
    cfg = DPRConfig(vocab_size=len(tok), hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                    intermediate_size=64, max_position_embeddings=128, pad_token_id=tok.pad_token_id)
    torch.manual_seed(0)
    DPRQuestionEncoder(cfg).save_pretrained(str(path))
    return path


def test_retrieve_on_a_prebuilt_folder_with_a_dpr_query_encoder(tmp_path, capsys):
    from berds_core.cli import main
    from berds_core.retrieval.query_encoders import query_encoder
    from berds_core.runs import read_run

    model = _tiny_dpr(tmp_path)
    texts = ["zoos are cruel to animals", "school uniforms", "nuclear energy is clean", "the world of sport"]
    path = tmp_path / "c.jsonl"
    path.write_text("".join(json.dumps({"id": f"p{i}", "text": t}) + "\n" for i, t in enumerate(texts)),
                    encoding="utf-8")
    enc = query_encoder(f"dpr:{model}")
    x = enc.embed(texts)
    assert not enc.normalized and not np.allclose(np.linalg.norm(x, axis=1), 1.0)  # DPR scores unnormalised
    corpus = ingest(path)
    folder = _pyserini_folder(tmp_path, corpus, x, np.array([2, 0, 3, 1]))
    q = tmp_path / "q.jsonl"
    q.write_text("".join(json.dumps({"id": f"q{i}", "question": t, "perspectives": ["a", "b"]}) + "\n"
                         for i, t in enumerate(texts)), encoding="utf-8")
    run = tmp_path / "run.jsonl"
    code = main(["retrieve", "--index-dir", str(folder), "--corpus", str(path), "--model", f"dpr:{model}",
                 "--questions", str(q), "--k", "1", "--out", str(run), "--json", "--quiet"])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert json.loads(out)["index"].startswith("prebuilt:IndexFlat")
    assert [e["ctxs"][0]["id"] for e in read_run(run)] == ["p0", "p1", "p2", "p3"]
    # without a query encoder a prebuilt folder cannot be searched: one line, exit 2
    code = main(["retrieve", "--index-dir", str(folder), "--corpus", str(path), "--questions", str(q),
                 "--out", str(run), "--quiet"])
    err = capsys.readouterr().err
    assert code == 2 and "--model" in err and "dpr:" in err and len(err.strip().splitlines()) == 1


def test_cli_dense_ivfpq_on_a_disk_corpus_resumes_a_killed_encode(tmp_path, capsys, monkeypatch):
    from berds_core.cli import main
    from berds_core.embeddings.text_encoders import TextEncoder
    from berds_core.retrieval import vector_shards
    from berds_core.runs import read_run

    monkeypatch.setattr(vector_shards, "SHARD_ROWS", 40)
    topics = ["zoos keep wild animals in cages", "school uniforms and dress codes", "nuclear power and waste",
              "vegetarian diets and health"]
    path = tmp_path / "c.tsv"
    path.write_text("id\ttext\n" + "".join(f"{i}\t{topics[i % 4]} example {i} with more words\n" for i in range(200)),
                    encoding="utf-8")
    real = TextEncoder.encode_stream

    def dies_after_two_shards(self, parts, on_rows=None):  # either encoding path: killed at the third shard
        for n, item in enumerate(real(self, parts, on_rows)):
            if n == 2:
                raise KeyboardInterrupt
            yield item

    monkeypatch.setattr(TextEncoder, "encode_stream", dies_after_two_shards)
    argv = ["index", "--corpus", str(path), "--corpus-storage", "disk", "--retriever", "dense", "--index", "ivfpq",
            "--index-dir", str(tmp_path / "dense"), "--json", "--quiet"]
    assert main(argv) == 130  # interrupted: no index folder
    assert not (tmp_path / "dense").exists()
    assert len(list((Path(tmp_path) / "cache" / "vectors").glob("*/shard-*.json"))) == 2  # the two shards done
    monkeypatch.setattr(TextEncoder, "encode_stream", real)
    assert main(argv) == 0
    info = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert info["index_plan"]["factory"] == "IVF4,Flat" and not info["cache_hit"]  # 200 passages: no PQ
    shards = sorted(p.name for p in (Path(tmp_path) / "cache" / "vectors").glob("*/shard-*.npy"))
    assert len(shards) == 5
    q = tmp_path / "q.jsonl"
    q.write_text(json.dumps({"id": "q", "question": "Are zoos cruel to wild animals?", "perspectives": ["a", "b"]})
                 + "\n", encoding="utf-8")
    run = tmp_path / "run.jsonl"
    assert main(["retrieve", "--index-dir", str(tmp_path / "dense"), "--questions", str(q), "--k", "5", "--out",
                 str(run), "--quiet"]) == 0
    assert all("zoos" in c["text"] for c in read_run(run)[0]["ctxs"])


def test_an_index_dir_holding_another_kind_of_index_is_refused(tmp_path, monkeypatch):
    from berds_core.retrieval.dense_scale import ScaledDenseRetriever

    corpus = _corpus(300)
    vectors = ArrayVectors(clustered(300, 8))
    monkeypatch.setattr("berds_core.retrieval.query_encoders.SentenceQueryEncoder.dim", 8)
    folder = tmp_path / "idx"
    ScaledDenseRetriever(corpus, index="IVF4,Flat", index_dir=folder, vectors=vectors, progress=False)
    with pytest.raises(InputError, match="holds a IVF4,Flat index, not HNSW32,Flat"):
        ScaledDenseRetriever(corpus, index="hnsw", index_dir=folder, vectors=vectors, progress=False)
    (tmp_path / "junk").mkdir()
    (tmp_path / "junk" / "notes.txt").write_text("mine")
    with pytest.raises(InputError, match="not an index folder"):
        ScaledDenseRetriever(corpus, index="hnsw", index_dir=tmp_path / "junk", vectors=vectors, progress=False)
    assert (tmp_path / "junk" / "notes.txt").read_text() == "mine"


def _cli_error(capsys, argv) -> str:
    from berds_core.cli import main

    code = main(argv)
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1, err
    return err


def test_retrieve_from_an_index_dir_refuses_options_that_would_build_another_index(tmp_path, capsys, monkeypatch):
    """``berds retrieve --index-dir`` searches the folder as built: another --index, a --memory-budget or
    another --retriever is one line naming what the folder holds, never silently ignored."""
    from berds_core.cli import main

    corpus = _corpus(300)
    path = tmp_path / "c.jsonl"
    path.write_text("".join(json.dumps({"id": p.id, "text": p.text}) + "\n" for p in corpus), encoding="utf-8")
    from berds_core.corpora.memory import load_corpus

    loaded = load_corpus(path)
    monkeypatch.setattr("berds_core.retrieval.query_encoders.SentenceQueryEncoder.dim", 8)
    from berds_core.retrieval.dense_scale import ScaledDenseRetriever

    folder = tmp_path / "idx"
    ScaledDenseRetriever(loaded, index="IVF4,Flat", index_dir=folder, vectors=ArrayVectors(clustered(300, 8)),
                         progress=False)
    meta = json.loads((folder / "berds.json").read_text())
    meta["corpus"]["source"] = str(path)
    (folder / "berds.json").write_text(json.dumps(meta))
    q = tmp_path / "q.jsonl"
    q.write_text(json.dumps({"id": "q", "question": "passage", "perspectives": ["a", "b"]}) + "\n")
    base = ["retrieve", "--index-dir", str(folder), "--questions", str(q), "--out", str(tmp_path / "r.jsonl"),
            "--quiet"]
    err = _cli_error(capsys, base + ["--index", "hnsw"])
    assert "holds a IVF4,Flat index" in err and "not hnsw" in err and "--index" in err
    err = _cli_error(capsys, base + ["--index", "flat"])
    assert "holds a IVF4,Flat index" in err
    err = _cli_error(capsys, base + ["--memory-budget", "1G"])
    assert "--memory-budget" in err and "as it was built" in err
    err = _cli_error(capsys, base + ["--retriever", "bm25"])
    assert "holds a dense (FAISS) index, not a bm25 one" in err
    # building a BM25 index into the dense folder is refused too, and the folder is left as it was
    before = sorted((p.name, p.stat().st_size) for p in folder.iterdir())
    err = _cli_error(capsys, ["index", "--corpus", str(path), "--retriever", "bm25", "--index-dir", str(folder),
                              "--quiet"])
    assert "holds a dense (FAISS) index, not a bm25 one" in err
    assert sorted((p.name, p.stat().st_size) for p in folder.iterdir()) == before
    # a query encoder other than the one it was built with (the default embedder) is refused before any work
    from berds_core.retrieval.index_dir import IndexDirRetriever

    with pytest.raises(InputError, match="was built with 'sentence-transformers/all-MiniLM-L6-v2', not "
                                         "'someone/other-model'"):
        IndexDirRetriever(folder, loaded, "someone/other-model")
    # the folder's own kind, by its factory string, is accepted; so is leaving --index out
    from berds_core.cli import build_parser
    from berds_core.cli._retrieval import check_retriever_args as _check

    for extra in (["--index", "IVF4,Flat"], [], ["--retriever", "dense"]):
        args = build_parser().parse_args(base + extra)
        _check(args)
        assert args.retriever == "dense" and args.index in ("IVF4,Flat", "flat")


def test_a_dense_build_into_a_bm25_index_dir_is_refused_before_encoding(tmp_path, capsys, monkeypatch):
    from berds_core.cli import main
    from berds_core.embeddings.text_encoders import TextEncoder

    def no_encoding(self, *a, **kw):
        raise AssertionError("passages encoded before the folder was checked")

    monkeypatch.setattr(TextEncoder, "encode_uncached", no_encoding)
    monkeypatch.setattr(TextEncoder, "encode_stream", no_encoding)
    monkeypatch.setattr(TextEncoder, "embed", no_encoding)

    path = tmp_path / "c.jsonl"
    path.write_text("".join(json.dumps({"id": f"d{i}", "text": f"passage number {i} about zoos"}) + "\n"
                            for i in range(50)), encoding="utf-8")
    bm = tmp_path / "bm"
    assert main(["index", "--corpus", str(path), "--retriever", "bm25", "--index-dir", str(bm), "--quiet"]) == 0
    capsys.readouterr()
    before = sorted(p.name for p in bm.rglob("*"))
    err = _cli_error(capsys, ["index", "--corpus", str(path), "--retriever", "dense", "--index", "ivfpq",
                              "--index-dir", str(bm), "--quiet"])
    assert "holds a BM25 (tantivy) index, not a dense one" in err
    assert sorted(p.name for p in bm.rglob("*")) == before
    err = _cli_error(capsys, ["retrieve", "--index-dir", str(bm), "--retriever", "dense", "--questions",
                              str(path), "--out", str(tmp_path / "r.jsonl"), "--quiet"])
    assert "holds a BM25 (tantivy) index, not a dense one" in err


def test_faiss_gpu_is_used_when_present_and_the_cpu_otherwise(tmp_path, monkeypatch):
    """With a GPU FAISS sees (faked here: no GPU on CI), IVF training's k-means and the search of an in-memory
    index go to it; on-disk lists, HNSW and ``device='cpu'`` stay on the CPU; without a GPU nothing moves."""
    import faiss

    from berds_core.retrieval import faiss_index

    moved, params = [], []

    def to_gpus(index):
        moved.append(type(index).__name__)
        return index  # the CPU index stands in for its GPU copy: results must not change

    class ParameterSpace:
        def set_index_parameter(self, index, name, value):
            params.append((name, value))

    monkeypatch.setattr(faiss, "index_cpu_to_all_gpus", to_gpus, raising=False)
    monkeypatch.setattr(faiss, "GpuParameterSpace", ParameterSpace, raising=False)
    n = 3_000
    x = clustered(n + 20, 16, seed=3)
    corpus = _corpus(n)
    vectors = ArrayVectors(x[:n])
    monkeypatch.setattr(faiss_index, "gpu_count", lambda: 0)
    cpu_folder, _ = _build(tmp_path, vectors, corpus, "IVF32,PQ8", budget=1 << 30, name="cpu")
    cpu = DenseIndex(cpu_folder, corpus, vectors=vectors)
    assert moved == [] and cpu.index_gpu is None
    monkeypatch.setattr(faiss_index, "gpu_count", lambda: 1)
    gpu_folder, _ = _build(tmp_path, vectors, corpus, "IVF32,PQ8", budget=1 << 30, name="gpu")
    assert moved == ["IndexFlatL2"]  # the k-means of training
    gpu = DenseIndex(gpu_folder, corpus, vectors=vectors)
    assert gpu.index_gpu is not None and moved[-1].startswith("IndexIVF") and params == [("nprobe", gpu.nprobe)]
    assert gpu.search(x[n:], 10) == cpu.search(x[n:], 10)
    assert DenseIndex(gpu_folder, corpus, vectors=vectors, device="cpu").index_gpu is None
    disk_folder, plan = _build(tmp_path, vectors, corpus, "IVF32,PQ8", budget=40_000, name="disk")
    assert plan.on_disk and DenseIndex(disk_folder, corpus, vectors=vectors).index_gpu is None
    hnsw_folder, _ = _build(tmp_path, vectors, corpus, "hnsw", budget=1 << 30, name="hnsw")
    count = len(moved)
    assert DenseIndex(hnsw_folder, corpus, vectors=vectors).index_gpu is None and len(moved) == count


def _rss_file() -> int:
    with open("/proc/self/status") as fh:
        return next(int(line.split()[1]) * 1024 for line in fh if line.startswith("RssFile:"))


@pytest.mark.skipif(not Path("/proc/self/status").is_file(), reason="reads Linux's /proc")
def test_an_index_build_pass_holds_one_shard_of_mapped_vectors_not_all_it_read(tmp_path):
    """``chunks(release=True)`` (what an index build streams) drops each shard's pages once it moves on; the vectors
    read are the same either way. Without it, a pass over 21M vectors kept every page it touched (21 GB counted
    as the process's memory)."""
    from berds_core.retrieval.vector_shards import VectorShards

    rows, dim, per = 8 * 4096, 256, 4096  # 32 MB in 8 shards of 4 MB
    x = np.random.default_rng(0).standard_normal((rows, dim)).astype(np.float32)

    def one_pass(release: bool) -> tuple[int, np.ndarray]:
        shards = VectorShards(tmp_path / "vec", rows, "h", "k", shard_rows=per)
        if not shards.complete:
            for i in range(shards.n_shards):
                shards.write(i, x[i * per:(i + 1) * per])
            shards.finish(dim)
        before, sums = _rss_file(), []
        for start, arr in shards.chunks(release=release):
            sums.append(np.asarray(arr, np.float64).sum(axis=1))
        grew = _rss_file() - before
        del shards
        return grew, np.concatenate(sums)

    kept, a = one_pass(False)
    released, b = one_pass(True)
    assert np.array_equal(a, b) and np.allclose(a, x.sum(axis=1, dtype=np.float64))
    assert kept >= 24 << 20 and released <= 8 << 20  # all 32 MB mapped in, against at most a shard or two
    grew = {}
    for release in (False, True):
        shards = VectorShards(tmp_path / "vec", rows, "h", "k", shard_rows=per)
        before = _rss_file()
        sample = shards.get(np.arange(0, rows, 16), release=release)  # every 16th row (a page in 4): maps them all
        grew[release] = _rss_file() - before
        assert np.array_equal(sample, x[::16])
        del shards
    assert grew[False] >= 16 << 20 and grew[True] <= 8 << 20  # the training sample's gather: a shard at a time
