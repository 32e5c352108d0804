"""``--ray`` without a cluster: the address, no Ray import without the switch, exact shard merges,
the encode plans (the parts one process encodes) and the vllm judge's contract."""
import json
import subprocess
import sys

import numpy as np
import pytest

from berds_core.corpora.memory import Corpus, load_corpus
from berds_core.distributed import resolve_address
from berds_core.errors import InputError
from berds_core.records import Passage
from berds_core.retrieval.topk import merge_topk, top_k

from distributed_data import passage_texts, run_entries, write_corpus, write_questions


@pytest.fixture
def fresh_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("BERDS_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


# ------------------------------------------------------------------ the switch


@pytest.mark.parametrize("value", ["local", "auto", "ray://10.0.0.5:10001", "head.example:6379", "127.0.0.1:6379"])
def test_address_forms(value, monkeypatch):
    monkeypatch.delenv("BERDS_RAY_ADDRESS", raising=False)
    assert resolve_address(value) == value


@pytest.mark.parametrize("value", ["", "locale", "ray://nohost", "http://h:1", "h:port"])
def test_bad_address_is_one_line_naming_the_flag(value, monkeypatch):
    monkeypatch.delenv("BERDS_RAY_ADDRESS", raising=False)
    with pytest.raises(InputError) as e:
        resolve_address(value)
    assert "--ray" in str(e.value) and "expected local, auto" in str(e.value)


def test_address_from_the_environment(monkeypatch):
    monkeypatch.setenv("BERDS_RAY_ADDRESS", "auto")
    assert resolve_address(None) == "auto"
    assert resolve_address("local") == "local"  # the flag wins
    monkeypatch.setenv("BERDS_RAY_ADDRESS", "nonsense")
    with pytest.raises(InputError, match="BERDS_RAY_ADDRESS"):
        resolve_address(None)
    monkeypatch.delenv("BERDS_RAY_ADDRESS")
    assert resolve_address(None) is None


NO_RAY = r"""
import json, sys
from berds_core.cli import main
d = sys.argv[1]
assert main(["index", "--corpus", d + "/c.jsonl", "--quiet", "--json"]) == 0
assert main(["retrieve", "--questions", d + "/q.jsonl", "--corpus", d + "/c.jsonl", "--k", "5",
             "--out", d + "/run.jsonl", "--quiet", "--json"]) == 0
assert main(["judge", "--run", d + "/run.jsonl", "--out", d + "/judged.jsonl", "--quiet", "--json"]) == 0
assert main(["judge-eval", "--pairs", d + "/pairs.tsv", "--quiet", "--json"]) == 0
print(json.dumps(sorted(m for m in sys.modules if m == "ray" or m.startswith("ray."))))
"""


@pytest.mark.slow
def test_without_the_switch_ray_is_never_imported(tmp_path):
    write_corpus(tmp_path / "c.jsonl", 40)
    write_questions(tmp_path / "q.jsonl", 3)
    (tmp_path / "pairs.tsv").write_text("question\tid\tdocument\tperspective\tlabel\n"
                                        "q\t1\tschools should ban phones\tphones harm learning\t1\n"
                                        "q\t2\ta river runs by the farm\tphones harm learning\t0\n")
    env = {k: v for k, v in __import__("os").environ.items() if k != "BERDS_RAY_ADDRESS"}
    out = subprocess.run([sys.executable, "-c", NO_RAY, str(tmp_path)], capture_output=True, text=True,
                         timeout=600, env=env)
    assert out.returncode == 0, out.stderr[-2000:]
    assert json.loads(out.stdout.strip().splitlines()[-1]) == []


def test_shard_options_need_the_switch(tmp_path, capsys, monkeypatch):
    from berds_core.cli import main

    monkeypatch.delenv("BERDS_RAY_ADDRESS", raising=False)
    write_corpus(tmp_path / "c.jsonl", 10)
    assert main(["index", "--corpus", str(tmp_path / "c.jsonl"), "--shard-rows", "4"]) == 2
    assert "--shard-rows" in capsys.readouterr().err
    assert main(["index", "--corpus", str(tmp_path / "c.jsonl"), "--ray", "bogus"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "--ray" in err


def test_ray_refuses_diversification_before_any_work(tmp_path, capsys):
    from berds_core.cli import main

    write_corpus(tmp_path / "c.jsonl", 10)
    write_questions(tmp_path / "q.jsonl", 2)
    code = main(["retrieve", "--questions", str(tmp_path / "q.jsonl"), "--corpus", str(tmp_path / "c.jsonl"),
                 "--mmr", "0.5", "--out", str(tmp_path / "r.jsonl"), "--ray", "127.0.0.1:1"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1 and "diversification" in err
    assert not (tmp_path / "r.jsonl").exists()


# ------------------------------------------------------------------ exact top-k merges


def test_top_k_orders_by_score_then_row():
    s = np.array([0.5, 1.0, 0.5, 0.0, 1.0, 0.5, 0.0], np.float32)
    rows, scores = top_k(s, 4)
    assert rows.tolist() == [1, 4, 0, 2] and scores.tolist() == [1.0, 1.0, 0.5, 0.5]
    rows, _ = top_k(s, 10, offset=100)
    assert rows.tolist() == [101, 104, 100, 102, 105, 103, 106]
    assert top_k(s, 0)[0].size == 0


@pytest.mark.parametrize("seed", range(5))
def test_merging_shard_top_k_equals_top_k_of_the_whole(seed):
    rng = np.random.default_rng(seed)
    s = rng.integers(0, 6, size=500).astype(np.float32)  # many ties, as in BM25
    for size in (1, 7, 64, 499, 500):
        parts = [top_k(s[a:a + size], 20, offset=a) for a in range(0, len(s), size)]
        got = merge_topk(parts, 20)
        want = top_k(s, 20)
        assert got[0].tolist() == want[0].tolist() and got[1].tolist() == want[1].tolist()


def test_bm25_shards_merged_equal_one_index(tmp_path, fresh_cache):
    """Row shards of the BM25 score matrix (global statistics), each scored by bm25s' kernel and cut to
    its top-k, merge into the one-process ranking: same rows, same float scores, ties included."""
    from berds_core.distributed.search import BM25Searcher, bm25_shards
    from berds_core.retrieval import get_retriever

    texts = passage_texts(300, words=6) + ["clocks clocks energy", "the of and"]
    corpus = Corpus([Passage(str(i), "", t) for i, t in enumerate(texts)])
    r = get_retriever("bm25", corpus, progress=False)
    queries = ["school tax energy", "river farm farm forest", "the of and", "zzz unknown words", "clocks"]
    whole = r.search(queries, 60)
    for rows in (1, 37, 128, 302):
        shards = bm25_shards(r, tmp_path / f"bm25-{rows}", rows)
        assert shards.complete and shards.n_shards == -(-302 // rows)
        searcher = BM25Searcher(shards.specs(), str(np.dtype(r.model.dtype)), str(np.dtype(r.model.int_dtype)))
        per_shard = searcher.search(r.query_ids(queries), 60)
        for j, want in enumerate(whole):
            got_rows, got_scores = merge_topk([sh[j] for sh in per_shard], 60)
            assert list(zip(got_rows.tolist(), got_scores.tolist())) == want
    assert [s for _, s in whole[2]] == [0.0] * 60 and [i for i, _ in whole[2]] == list(range(60))


@pytest.mark.slow
def test_dense_shards_merged_equal_one_index(tmp_path, fresh_cache):
    """Vector shards searched with the one-process call and merged: the rows of DenseRetriever over the
    whole corpus, in its order. Scores: the same floats with FAISS (20 queries or more, any shard size)
    and with one shard; with NumPy (fewer queries) over several shards, OpenBLAS' small-matrix kernels
    may round a shard's product differently in the last bit (~1e-7)."""
    from berds_core.distributed.index import _vector_shards, write_vector_shards
    from berds_core.distributed.search import DenseSearcher
    from berds_core.embeddings.text_encoders import embed_text
    from berds_core.retrieval import get_retriever

    corpus = load_corpus(write_corpus(tmp_path / "c.jsonl", 2100, words=6))
    r = get_retriever("dense", corpus, progress=False)
    texts = [embed_text(p) for p in corpus]
    queries = passage_texts(30, words=5, seed=9)
    for few in (queries[:3], queries):  # < 20 queries: NumPy matmul; >= 20: FAISS
        whole = r.search(few, 25)
        q = r.encode(few)
        for rows in (300, 1024, 2048, 2100):
            vec = _vector_shards(tmp_path / f"d{rows}", corpus, r.text_encoder.key, rows)
            write_vector_shards(vec, texts, r.text_encoder.key)
            assert np.array_equal(np.concatenate([np.load(s["path"]) for s in vec.specs()]), r.embeddings)
            per_shard = DenseSearcher(vec.specs(), "flat").search(q, 25)
            for j, want in enumerate(whole):
                got_rows, got_scores = merge_topk([sh[j] for sh in per_shard], 25)
                assert got_rows.tolist() == [i for i, _ in want]
                if len(few) >= 20 or rows >= len(corpus):
                    assert got_scores.tolist() == [s for _, s in want]
                else:
                    np.testing.assert_allclose(got_scores, [s for _, s in want], rtol=0, atol=1e-6)


def test_a_torn_vector_shard_is_written_again(tmp_path, fresh_cache):
    from berds_core.distributed.index import _vector_shards, write_vector_shards
    from berds_core.embeddings.text_encoders import embed_text, text_encoder

    corpus = load_corpus(write_corpus(tmp_path / "c.jsonl", 50, words=5))
    te = text_encoder()
    texts = [embed_text(p) for p in corpus]
    te.embed(texts)
    vec = _vector_shards(tmp_path / "v", corpus, te.key, 16)
    assert write_vector_shards(vec, texts, te.key) == 4 and vec.complete
    assert write_vector_shards(vec, texts, te.key) == 0  # complete: nothing to do
    (vec.folder / "complete.json").unlink()
    with open(vec.path(2), "r+b") as fh:  # a flipped byte: the checksum no longer holds
        fh.seek(-3, 2)
        fh.write(b"\x00\x01\x02")
    assert vec.todo() == [2]
    assert write_vector_shards(vec, texts, te.key) == 1 and vec.ok(2)
    assert not list(vec.folder.glob(".*tmp*"))


# ------------------------------------------------------------------ encode plans = one process's parts


def _record_parts(monkeypatch):
    from berds_core.embeddings.text_encoders import TextEncoder

    calls = []  # the texts of each part that went to the model (either encoding path: embeddings.pipeline)
    orig = TextEncoder.encode_stream

    def spy(self, parts, on_rows=None):
        def seen():
            for key, texts in parts:
                calls.append(list(texts))
                yield key, texts

        return orig(self, seen(), on_rows)

    monkeypatch.setattr(TextEncoder, "encode_stream", spy)
    return calls


@pytest.mark.slow
def test_embedded_judge_copy_scores_a_chunk_like_the_original(tmp_path, fresh_cache, monkeypatch):
    """What a Ray actor gets: a pickled copy of the embedded judge (its weights, no encoder or memory travels)
    that loads its own encoder and scores a chunk of pairs bit for bit as the original does."""
    import pickle

    import numpy as np

    from berds_core.cli._ray import run_pairs
    from berds_core.judges import get_judge

    judge = get_judge("embedded")
    pairs = run_pairs(run_entries(3, 6, perspectives=2), judge)
    blob = pickle.dumps(judge)
    assert len(blob) < 100_000  # weights and rules, not a model
    a = judge._score(pairs)
    monkeypatch.setenv("BERDS_CACHE", str(tmp_path / "actor-cache"))  # the actor's node: an empty store
    copy = pickle.loads(blob)
    before = copy.encoder.n_encoded
    b = copy._score(pairs)
    assert copy.encoder.n_encoded > before  # it computed them itself
    assert a.shape == (len(pairs),) and np.array_equal(a, b)


@pytest.mark.slow
def test_corpus_plan_lists_the_parts_dense_indexing_encodes(tmp_path, fresh_cache, monkeypatch):
    import berds_core.distributed.plan as plan_mod
    import berds_core.embeddings.text_encoders as es
    from berds_core.distributed.plan import corpus_plan
    from berds_core.embeddings.text_encoders import embed_text, text_encoder
    from berds_core.retrieval import get_retriever

    monkeypatch.setattr(es, "CHUNK", 64)
    monkeypatch.setattr(plan_mod, "CHUNK", 64)
    corpus = load_corpus(write_corpus(tmp_path / "c.jsonl", 150, words=5))
    texts = [embed_text(p) for p in corpus]
    text_encoder().embed(texts[10:30])  # some already in the store
    plan = corpus_plan(text_encoder().key, texts)
    calls = _record_parts(monkeypatch)
    get_retriever("dense", corpus, progress=False)
    assert plan.parts == calls and [len(p) for p in calls] == [64, 64, 2] and plan.stored == 20


@pytest.mark.slow
def test_store_plan_lists_the_row_ranges_one_process_encodes_for_a_disk_corpus(tmp_path, fresh_cache, monkeypatch):
    """A corpus in the on-disk store: one process encodes each vector shard's rows in one call; the plan
    lists those ranges (texts read by nobody), leaving out the shards already written."""
    import berds_core.retrieval.vector_shards as vector_shards
    from berds_core.corpora.disk import ingest
    from berds_core.distributed.plan import store_plan
    from berds_core.embeddings.text_encoders import text_encoder
    from berds_core.retrieval import get_retriever
    from berds_core.retrieval.vector_shards import VectorShards, vectors_folder

    monkeypatch.setattr(vector_shards, "SHARD_ROWS", 40)
    corpus = ingest(write_corpus(tmp_path / "c.jsonl", 130, words=5))
    calls = _record_parts(monkeypatch)
    get_retriever("dense", corpus, progress=False)
    key = text_encoder().key
    done = VectorShards(vectors_folder(corpus, key), len(corpus), corpus.hash, key, 40)
    assert done.complete and store_plan(done).parts == [] and store_plan(done).stored == 130
    fresh = VectorShards(tmp_path / "other", len(corpus), corpus.hash, key, 40)
    plan = store_plan(fresh)
    assert [(a, b) for _, a, b in plan.parts] == [(0, 40), (40, 80), (80, 120), (120, 130)]
    assert [list(corpus.texts[a:b]) for _, a, b in plan.parts] == calls
    fresh.write(1, np.zeros((40, 4), np.float32))  # a shard already written (and checked) is left out
    assert [i for i, _, _ in store_plan(fresh).parts] == [0, 2, 3] and store_plan(fresh).stored == 40


# ------------------------------------------------------------------ the vllm judge


def test_vllm_judge_asks_what_the_other_llm_judges_ask():
    from berds_core.judges import BERDS_EVALUATOR_ADAPTER, BERDS_EVALUATOR_MODEL, get_judge, parse_spec

    v = get_judge("vllm")
    o = get_judge("berds-evaluator:http://127.0.0.1:9")
    assert (v.model_id, v.adapter_id) == (BERDS_EVALUATOR_MODEL, BERDS_EVALUATOR_ADAPTER)
    assert parse_spec("vllm") == ("vllm", {"model": BERDS_EVALUATOR_MODEL, "adapter": BERDS_EVALUATOR_ADAPTER})
    doc, persp = "Phones distract pupils in class.", "Schools should ban phones."
    assert v.messages(doc, persp) == o.messages(doc, persp)  # the paper's prompt, system turn dropped
    req = v.request(doc, persp)
    assert req["model"] == BERDS_EVALUATOR_ADAPTER and req["sampling_params"]["max_tokens"] == 1
    assert v.engine_kwargs()["enable_lora"] and v.engine_kwargs()["max_lora_rank"] == 64
    assert v.name.startswith("vllm-") and v.name != o.name
    g = get_judge("vllm:my/model", decode="generate", system="keep")
    assert g.adapter_id is None and "model" not in g.request(doc, persp)
    assert g.sampling_params() == {"temperature": 0.0, "max_tokens": 16}


def test_vllm_judge_reads_an_engine_row():
    from berds_core.judges import get_judge

    v = get_judge("vllm")
    lp = {9: {"logprob": -0.2, "rank": 1, "decoded_token": "▁Yes"}, 4: {"logprob": -1.9, "rank": 2, "decoded_token": "No"}}
    want = 1 / (1 + np.exp(-1.9 + 0.2))
    assert v.probability({"logprobs": [lp], "generated_text": "Yes"}) == pytest.approx(want)
    assert v.probability({"logprobs": [list(lp.items())], "generated_text": "Yes"}) == pytest.approx(want)
    only_yes = {9: {"logprob": -0.1, "rank": 1, "decoded_token": "Yes"}}
    assert v.probability({"logprobs": [only_yes], "generated_text": ""}) == 1.0
    assert v.probability({"logprobs": None, "generated_text": "No."}) == 0.0
    gen = get_judge("vllm", decode="generate")
    assert gen.probability({"generated_text": "Yes, it does."}) == 1.0


def test_vllm_judge_without_ray_or_vllm_is_one_line(tmp_path, capsys, monkeypatch):
    from berds_core.cli import main
    from berds_core.runs import write_run

    monkeypatch.delenv("BERDS_RAY_ADDRESS", raising=False)
    write_run(tmp_path / "r.jsonl", run_entries(1, 2))
    args = ["judge", "--run", str(tmp_path / "r.jsonl"), "--judge", "vllm", "--out", str(tmp_path / "j.jsonl")]
    assert main(args) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "--ray" in err
    # with --ray but no vLLM here: one line before any cluster is asked (this address answers nothing)
    assert main(args + ["--ray", "127.0.0.1:1"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "vLLM" in err and "ray[llm]" in err
    assert not (tmp_path / "j.jsonl").exists()


@pytest.mark.parametrize("address,env", [("127.0.0.1:1", None), ("auto", "127.0.0.1:1"), ("ray://127.0.0.1:1", None)])
def test_an_address_that_answers_nothing_is_one_line_at_once(address, env, tmp_path, capsys, monkeypatch):
    """ray.init waits minutes for an address that answers nothing; the CLI probes it first."""
    pytest.importorskip("ray")
    from berds_core.cli import main

    if env:
        monkeypatch.setenv("RAY_ADDRESS", env)
    write_corpus(tmp_path / "c.jsonl", 10)
    t0 = __import__("time").perf_counter()
    assert main(["index", "--corpus", str(tmp_path / "c.jsonl"), "--retriever", "dense", "--ray", address]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "--ray: cannot reach Ray" in err and ":1" in err
    assert __import__("time").perf_counter() - t0 < 60


@pytest.mark.slow
def test_hnsw_graph_per_shard(tmp_path, fresh_cache):
    """--index hnsw: one graph per vector shard (what the graph-building Ray task writes), searched per
    shard and merged: k hits per query, nearly all of the exact top-k."""
    from berds_core.distributed.index import _build_graph, _vector_shards, write_vector_shards
    from berds_core.distributed.search import DenseSearcher
    from berds_core.files.shard_files import ShardSet
    from berds_core.embeddings.text_encoders import embed_text
    from berds_core.retrieval import get_retriever

    corpus = load_corpus(write_corpus(tmp_path / "c.jsonl", 600, words=6))
    r = get_retriever("dense", corpus, progress=False)
    vec = _vector_shards(tmp_path / "d", corpus, r.text_encoder.key, 256)
    write_vector_shards(vec, [embed_text(p) for p in corpus], r.text_encoder.key)
    ident = {**vec.ident, "kind": "hnsw"}
    for spec in vec.specs():
        assert _build_graph(spec, str(tmp_path / "d" / "hnsw"), vec.n, vec.shard_rows, ident) == spec["shard"]
    graphs = ShardSet(tmp_path / "d" / "hnsw", vec.n, vec.shard_rows, "faiss", ident)
    assert graphs.todo() == []
    specs = [{**s, "index": g["path"]} for s, g in zip(vec.specs(), graphs.specs())]
    queries = passage_texts(25, words=5, seed=4)
    exact = r.search(queries, 10)
    per_shard = DenseSearcher(specs, "hnsw").search(r.encode(queries), 10)
    overlap = []
    for j, want in enumerate(exact):
        rows, _ = merge_topk([sh[j] for sh in per_shard], 10)
        assert len(rows) == 10
        overlap.append(len(set(rows.tolist()) & {i for i, _ in want}) / 10)
    assert np.mean(overlap) > 0.9


@pytest.mark.parametrize("kind, why", [("ivfpq", "with --ray: expected flat, hnsw or a FAISS IVF factory string"),
                                        ("IVFx,Flat", "expected flat, hnsw or a FAISS IVF factory string"),
                                        ("IVF64,PQ7", "FAISS cannot build 'IVF64,PQ7'")])
def test_index_kind_checked_before_any_work(kind, why, tmp_path, capsys, monkeypatch):
    """With --ray, ``--index`` takes flat, hnsw or a FAISS IVF factory string (one process's ``ivfpq`` plan is
    not on the Ray path); anything else is one line before Ray is reached (the address answers nothing)."""
    from berds_core.cli import main

    monkeypatch.delenv("BERDS_RAY_ADDRESS", raising=False)
    corpus = write_corpus(tmp_path / "c.jsonl", 5)
    assert main(["index", "--corpus", str(corpus), "--retriever", "dense", "--index", kind,
                 "--ray", "127.0.0.1:1"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--index" in err[0] and why in err[0], err


def test_ray_that_cannot_start_is_one_line(tmp_path):
    """``--ray local`` where Ray cannot start (here: an unusable RAY_TMPDIR; on a loaded machine, a raylet
    that does not register in Ray's 30 s, a bare Exception) exits 2 with one line naming --ray."""
    pytest.importorskip("ray")
    import os

    corpus = write_corpus(tmp_path / "c.jsonl", 3)
    env = {**os.environ, "RAY_TMPDIR": "/proc/berds-no-such-dir", "BERDS_CACHE": str(tmp_path / "cache")}
    env.pop("BERDS_RAY_ADDRESS", None)
    p = subprocess.run([sys.executable, "-m", "berds_core", "index", "--corpus", str(corpus), "--retriever", "dense",
                        "--ray", "local", "--quiet"], capture_output=True, text=True, timeout=300, env=env)
    assert p.returncode == 2 and "Traceback" not in p.stderr, p.stderr[-2000:]
    assert p.stderr.strip().splitlines()[-1].startswith("berds index: error: --ray: cannot start Ray at 'local'")


@pytest.mark.parametrize("opt", [["--memory-budget", "1G"], ["--nprobe", "8"], ["--index-dir", "idx"]])
def test_one_process_index_options_with_ray_are_one_line(opt, tmp_path, capsys, monkeypatch):
    """--memory-budget, --nprobe and --index-dir plan one process's index; with --ray they are refused in one
    line before Ray is reached (the address answers nothing), nothing written."""
    from berds_core.cli import main

    monkeypatch.delenv("BERDS_RAY_ADDRESS", raising=False)
    monkeypatch.chdir(tmp_path)
    corpus = write_corpus(tmp_path / "c.jsonl", 5)
    assert main(["index", "--corpus", str(corpus), "--retriever", "dense", "--index", "IVF64,Flat", *opt,
                 "--ray", "127.0.0.1:1"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and opt[0] in err[0] and "one-process option" in err[0], err
    assert not (tmp_path / "idx").exists()


# ------------------------------------------------------------------ Ray Client's server start


SERVER_TRACEBACK = ("Initialization failure from server:\nTraceback (most recent call last):\n  File \"proxier.py\", "
                    "line 766, in Datapath\n    raise RuntimeError(\nRuntimeError: Starting Ray client server failed. "
                    "See ray_client_server_23000.err for detailed logs.\n")


class _ClientRay:
    """What ``_init_client`` calls of Ray: ``init`` fails with the errors given, in turn, then connects."""

    def __init__(self, errors):
        self.errors, self.inits, self.shutdowns = list(errors), 0, 0

    def init(self, address, **opts):
        self.inits += 1
        if self.errors:
            raise self.errors.pop(0)

    def shutdown(self):
        self.shutdowns += 1


def test_the_servers_own_error_is_in_the_one_line():
    from berds_core.distributed.runtime import _first_line

    line = _first_line(ConnectionAbortedError(SERVER_TRACEBACK))
    assert line == ("Initialization failure from server: RuntimeError: Starting Ray client server failed. See "
                    "ray_client_server_23000.err for detailed logs.")
    assert _first_line(ConnectionError("refused\nmore")) == "refused" and _first_line(OSError()) == "OSError"


def test_a_client_server_that_failed_to_start_is_tried_again(monkeypatch, capsys):
    from berds_core.distributed import runtime

    monkeypatch.setattr("time.sleep", lambda s: None)
    fake = _ClientRay([ConnectionAbortedError(SERVER_TRACEBACK)] * 2)
    runtime._init_client(fake, "ray://127.0.0.1:10001", {})
    assert (fake.inits, fake.shutdowns) == (3, 2)
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 2 and "trying again (3 of 3)" in err[1] and "Starting Ray client server failed" in err[1]

    fake = _ClientRay([ConnectionAbortedError(SERVER_TRACEBACK)] * 3)  # three failures: the last one is raised
    with pytest.raises(ConnectionAbortedError):
        runtime._init_client(fake, "ray://127.0.0.1:10001", {})
    assert fake.inits == 3

    fake = _ClientRay([ConnectionError("version mismatch"), None])  # any other error: at once, no retry
    with pytest.raises(ConnectionError):
        runtime._init_client(fake, "ray://127.0.0.1:10001", {})
    assert fake.inits == 1
