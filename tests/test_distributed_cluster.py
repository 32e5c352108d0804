"""``--ray`` on a REAL Ray cluster of two nodes on this machine (``ray.cluster_utils.Cluster``: a head and a
second node, one CPU each, so actors and tasks run in processes of both nodes). No mock of Ray.

Ray binds its nodes to this machine's own address (it refuses the loopback for a node), so the
cluster stays on this machine. The cluster is started once for the module and stopped at its end
(the test that SIGKILLs an actor gets a cluster of its own); each test stops what it starts (the CLI's ``--ray local`` stops its own instance).

No Ray driver runs in the pytest process (``ray_harness``): the cluster lives in a child process, the CLI runs as
a subprocess, and a test whose body is a driver (``ray.init``, ``ray_session``, ``main(... --ray)``) is marked
``ray_driver`` and runs in a pytest child process; a crash there fails that test with Ray's logs, not the run.
"""
import contextlib
import csv
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from distributed_data import run_entries, write_corpus, write_questions
from ray_harness import from_parent, in_child, ray_logs, two_nodes

pytest.importorskip("ray")
pytestmark = [pytest.mark.slow, pytest.mark.timeout(1500)]

TESTS = Path(__file__).parent


@pytest.fixture(scope="module", autouse=True)
def ray_tmpdir():
    """Ray's session files (logs, sockets) of this module's clusters and ``--ray local`` instances in a
    folder of their own, removed at the end (short: Unix socket paths are limited to 107 bytes). A test run
    in a child process (``ray_driver``) uses its parent's folder."""
    import shutil
    import tempfile

    if in_child():
        yield os.environ["RAY_TMPDIR"]
        return
    path = tempfile.mkdtemp(prefix="berds-ray-", dir="/tmp")
    old = os.environ.get("RAY_TMPDIR")
    os.environ["RAY_TMPDIR"] = path
    try:
        yield path
    finally:
        if old is None:
            os.environ.pop("RAY_TMPDIR", None)
        else:
            os.environ["RAY_TMPDIR"] = old
        shutil.rmtree(path, ignore_errors=True)


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


CLIENT_PORT = {}


@pytest.fixture(scope="module")
def cluster(ray_tmpdir):
    """The module's one cluster: a head (with a Ray Client server, for ray://) and a second node."""
    if in_child():
        yield from_parent("cluster")
        return
    port = _free_port()
    with two_nodes(port) as address:
        CLIENT_PORT["port"] = port
        yield address


@pytest.fixture
def cluster_to_damage(ray_tmpdir):
    """A two-node cluster of the test's own, for a test that SIGKILLs Ray's processes: whatever the kill
    leaves behind (an actor restarting, a lease held) cannot reach the module's cluster and the tests
    after it."""
    if in_child():
        yield from_parent("cluster_to_damage")
        return
    with two_nodes() as address:
        yield address


def berds(args, cache, *, check=True, ray_address=None):
    """``berds ... --json --quiet`` in a subprocess with its own cache; returns (parsed JSON, process)."""
    env = {**os.environ, "BERDS_CACHE": str(cache)}
    env.pop("BERDS_RAY_ADDRESS", None)
    if ray_address:
        args = [*args, "--ray", ray_address]
    t0 = time.time()
    p = subprocess.run([sys.executable, "-m", "berds_core", *args, "--json", "--quiet"], capture_output=True,
                       text=True, timeout=900, env=env)
    if check:
        assert p.returncode == 0, p.stderr[-3000:] + (ray_logs(t0) if ray_address else "")
        lines = p.stdout.splitlines()
        assert len(lines) == 1, p.stdout[-2000:]  # --json: one JSON object on stdout and nothing else
        return json.loads(lines[0]), p
    return None, p


def pairs_tsv(run: Path, out: Path, n: int) -> Path:
    rows = []
    for e in map(json.loads, run.read_text().splitlines()):
        for c in e["ctxs"]:
            for p in e["perspectives"]:
                rows.append([e["question"], c["id"], c["text"], p, str(len(rows) % 2)])
    with open(out, "w", newline="") as fh:
        w = csv.writer(fh, delimiter="\t", lineterminator="\n")
        w.writerow(["question", "id", "document", "perspective", "label"])
        w.writerows(rows[:n])
    return out


def store_vectors(cache: Path, key: str) -> dict:
    import sqlite3

    con = sqlite3.connect(str(cache / "embeddings" / "embeddings.sqlite"))
    try:
        return {h: np.frombuffer(v, np.float32) for h, v in con.execute("SELECT text, vec FROM emb WHERE model=?", (key,))}
    finally:
        con.close()


def test_four_verbs_on_two_nodes_equal_one_process(cluster, tmp_path):
    """index, retrieve (dense and BM25), judge and judge-eval through the two-node cluster write what one
    process writes, byte for byte; the encoder pool and the shard searchers worked on both nodes."""
    corpus = write_corpus(tmp_path / "corpus.jsonl", 2300, words=10)
    questions = write_questions(tmp_path / "questions.jsonl", 24)  # >= 20 questions: FAISS scores
    out = {}
    for mode, addr in (("one", None), ("ray", cluster)):
        cache, d = tmp_path / f"cache-{mode}", tmp_path / mode
        d.mkdir()
        shard = ["--shard-rows", "512"] if addr else []
        idx, _ = berds(["index", "--corpus", str(corpus), "--retriever", "dense", *shard], cache, ray_address=addr)
        dense, _ = berds(["retrieve", "--questions", str(questions), "--corpus", str(corpus), "--retriever", "dense",
                          "--k", "30", "--out", str(d / "dense.jsonl"), *shard], cache, ray_address=addr)
        bm25, _ = berds(["retrieve", "--questions", str(questions), "--corpus", str(corpus), "--retriever", "bm25",
                         "--k", "60", "--out", str(d / "bm25.jsonl"), *shard], cache, ray_address=addr)
        judged, _ = berds(["judge", "--run", str(d / "dense.jsonl"), "--out", str(d / "judged.jsonl")], cache,
                          ray_address=addr)
        tsv = pairs_tsv(tmp_path / "one" / "dense.jsonl", d / "pairs.tsv", 400)
        ev, _ = berds(["judge-eval", "--pairs", str(tsv), "--out", str(d / "eval.tsv")], cache, ray_address=addr)
        out[mode] = {"index": idx, "dense": dense, "bm25": bm25, "judge": judged, "eval": ev, "dir": d, "cache": cache}
    one, rr = out["one"], out["ray"]
    for name in ("dense.jsonl", "bm25.jsonl", "judged.jsonl", "eval.tsv"):
        assert (rr["dir"] / name).read_bytes() == (one["dir"] / name).read_bytes(), name
    for key in ("n", "accuracy", "f1", "kappa", "positive_rate", "judge"):
        assert rr["eval"][key] == one["eval"][key]
    # what ran where: both nodes encoded (3 parts of at most 1024 texts) and searched (5 shards, 2 actors)
    enc = rr["index"]["ray"]["encode"]
    assert rr["index"]["ray"]["nodes"] == 2 and enc["parts"] == 3 and enc["encoded"] == 2300
    assert enc["nodes_used"] == 2
    assert rr["index"]["ray"]["shards"] == 5
    assert rr["dense"]["ray"]["nodes_used"] == 2 and rr["bm25"]["ray"]["nodes_used"] == 2
    assert rr["dense"]["ray"]["encode"]["encoded"] == 0  # the index was built: nothing encoded again
    assert rr["judge"]["ray"]["mode"] == "judge" and rr["judge"]["ray"]["chunks"] >= 1  # judge actors (stance model)
    # the vectors: the shards hold what one process stored, bit for bit
    from berds_core.files.cache import text_hash

    shards = sorted(Path(rr["index"]["cache_path"], "vectors").glob("shard-*.npy"))
    ray_vecs = np.concatenate([np.load(p) for p in shards])
    texts = [json.loads(line)["text"] for line in corpus.read_text().splitlines()]
    stored = store_vectors(one["cache"], _store_key(one["cache"]))
    np.testing.assert_array_equal(ray_vecs, np.stack([stored[text_hash(t)] for t in texts]))


def _store_key(cache: Path) -> str:
    import sqlite3

    con = sqlite3.connect(str(cache / "embeddings" / "embeddings.sqlite"))
    try:
        keys = [k for (k,) in con.execute("SELECT DISTINCT model FROM emb")]
    finally:
        con.close()
    keys = [k for k in keys if not k.startswith("stance-")]  # the embedded judge's pair encodings aside
    assert len(keys) == 1, keys
    return keys[0]


def test_static_first_stage_on_two_nodes_equals_one_process(cluster, tmp_path):
    """issue 67: ``berds index`` and ``retrieve --retriever static`` (a static model in each cache where the
    retriever looks for the distilled one: here one built from a config, tests/static_models.py) through the
    two-node cluster write what one process writes, byte for byte, the static vectors encoded by its pool; the
    re-read (a pipeline) is refused with --ray in one line, as every diversification is."""
    from berds_core.embeddings.static import default_name
    from berds_core.embeddings.models import model_key
    from static_models import make_static

    corpus = write_corpus(tmp_path / "corpus.jsonl", 2300, words=10)
    questions = write_questions(tmp_path / "questions.jsonl", 24)
    out = {}
    for mode, addr in (("one", None), ("ray", cluster)):
        cache, d = tmp_path / f"cache-{mode}", tmp_path / mode
        d.mkdir()
        make_static(cache / "static" / default_name(model_key(None), 256))
        shard = ["--shard-rows", "512"] if addr else []
        idx, _ = berds(["index", "--corpus", str(corpus), "--retriever", "static", *shard], cache, ray_address=addr)
        res, _ = berds(["retrieve", "--questions", str(questions), "--corpus", str(corpus), "--retriever", "static",
                        "--k", "30", "--out", str(d / "static.jsonl"), *shard], cache, ray_address=addr)
        assert idx["retriever"] == res["retriever"] == "static:all-MiniLM-L6-v2-256d", (idx, res)
        out[mode] = {"index": idx, "dir": d}
    assert (out["ray"]["dir"] / "static.jsonl").read_bytes() == (out["one"]["dir"] / "static.jsonl").read_bytes()
    # every passage encoded through the cluster's encoder pool (a static model is so quick that one node's actor
    # may take every part before the other starts: which node encoded is not asserted)
    assert out["ray"]["index"]["ray"]["encode"]["encoded"] == 2300 and out["ray"]["index"]["ray"]["nodes"] == 2
    # the two stages with --ray: refused in one line (a pipeline that re-ranks runs in one process)
    _, p = berds(["retrieve", "--questions", str(questions), "--corpus", str(corpus), "--pipeline",
                  "static%40>>reread", "--k", "10", "--out", str(tmp_path / "x.jsonl")], tmp_path / "cache-ray",
                 check=False, ray_address=cluster)
    assert p.returncode == 2 and "does not combine with diversification" in p.stderr  # said, not run wrongly


def test_demo_bundle_encode_and_judge_ray_local_equals_no_ray(tmp_path):
    """The demo bundle: dense index, retrieval and the embedded judge through ``--ray local`` (a Ray
    instance started for each command and stopped after) and through no Ray: the same files."""
    subprocess.run([sys.executable, "-m", "berds_core", "import", "demo", "--out", str(tmp_path / "demo")],
                   check=True, capture_output=True, timeout=300)
    demo = tmp_path / "demo"
    for mode, addr in (("one", None), ("ray", "local")):
        cache, d = tmp_path / f"cache-{mode}", tmp_path / mode
        d.mkdir()
        info, _ = berds(["index", "--corpus", str(demo / "corpus.jsonl"), "--retriever", "dense"], cache,
                        ray_address=addr)
        berds(["retrieve", "--questions", str(demo / "questions.jsonl"), "--corpus", str(demo / "corpus.jsonl"),
               "--retriever", "dense", "--k", "20", "--out", str(d / "dense.jsonl")], cache, ray_address=addr)
        judged, _ = berds(["judge", "--run", str(d / "dense.jsonl"), "--judge", "embedded",
                           "--out", str(d / "judged.jsonl")], cache, ray_address=addr)
        if addr:
            n = len((demo / "corpus.jsonl").read_text(encoding="utf-8").splitlines())
            assert info["ray"]["address"] == "local" and info["ray"]["encode"]["encoded"] == n
            assert judged["ray"]["mode"] == "judge" and judged["ray"]["pairs_left"] > 0
    for name in ("dense.jsonl", "judged.jsonl"):
        assert (tmp_path / "ray" / name).read_bytes() == (tmp_path / "one" / name).read_bytes(), name
    assert b"-probs" in (tmp_path / "ray" / "judged.jsonl").read_bytes()


def _executing(actor: str = "EncodeActor") -> list[int]:
    """The worker processes of this module's clusters (their RAY_TMPDIR: not another job's on this machine) that
    execute an ``actor`` of a Ray Data pool."""
    import psutil

    pids = []
    for p in psutil.process_iter(["cmdline"]):
        title = " ".join(p.info["cmdline"] or [])
        if f"MapBatches({actor})" in title and ".submit" in title:
            with contextlib.suppress(psutil.Error):
                if p.environ().get("RAY_TMPDIR") == os.environ["RAY_TMPDIR"]:
                    pids.append(p.pid)
    return pids


@pytest.mark.ray_driver
def test_worker_killed_mid_judging_changes_nothing(cluster_to_damage, tmp_path, monkeypatch):
    """SIGKILL an actor process while it scores a chunk of a judging job (the embedded judge: the stance
    model on the chunk's pairs): Ray restarts it and scores the chunk again; labels and probabilities equal
    one process's bit for bit."""
    import psutil
    import ray

    from berds_core.cli._ray import run_pairs
    from berds_core.distributed.judge import judge_on_cluster
    from berds_core.distributed.runtime import ray_session
    from berds_core.judges import get_judge, judge_run
    from berds_core.runs import label_matrix

    entries = run_entries(12, 128, perspectives=1, words=10)  # 1,536 pairs: 3 chunks of 512

    def probs_of(es, name):
        return [np.array([c[f"{name}-probs"] for c in e["ctxs"]]) for e in es]

    monkeypatch.setenv("BERDS_CACHE", str(tmp_path / "one"))
    one = judge_run(json.loads(json.dumps(entries)), get_judge("embedded"), progress=False)

    monkeypatch.setenv("BERDS_CACHE", str(tmp_path / "ray"))
    judge = get_judge("embedded")
    mine = json.loads(json.dumps(entries))
    ray.init(address=cluster_to_damage)
    result, errors, killed = {}, [], []

    def job():
        try:
            with ray_session(cluster_to_damage, progress=False) as session:
                result.update(judge_on_cluster(session, judge, run_pairs(mine, judge)))
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    t = threading.Thread(target=job)
    t.start()
    try:
        deadline = time.time() + 600
        while t.is_alive() and not killed and time.time() < deadline:
            pids = _executing("JudgeActor")
            if pids:
                os.kill(pids[0], signal.SIGKILL)
                killed.append(pids[0])
            time.sleep(0.2)
        t.join(timeout=900)
    finally:
        ray.shutdown()
    assert not errors, errors
    assert killed, "no judge actor was seen working"
    assert not psutil.pid_exists(killed[0]) or psutil.Process(killed[0]).status() == psutil.STATUS_ZOMBIE
    assert result["mode"] == "judge" and result["chunks"] == 3 and result["sent"] == 1536
    judge_run(mine, judge, progress=False)  # every pair is in the prediction cache now
    for a, b in zip(probs_of(one, judge.name), probs_of(mine, judge.name)):
        assert np.array_equal(a, b)
    assert [label_matrix(e, judge=judge.name).tolist() for e in one] == \
        [label_matrix(e, judge=judge.name).tolist() for e in mine]


@pytest.mark.ray_driver
def test_interrupted_job_resumes_and_writes_its_file_once(cluster, tmp_path, monkeypatch, capsys):
    """A retrieve job stopped after its first encoded part leaves no run file; run again, it encodes only
    what was not committed, and writes the one-process file. A torn vector shard is written again."""
    import berds_core.distributed.encode as enc
    from berds_core.cli import main

    corpus = write_corpus(tmp_path / "corpus.jsonl", 2300, words=10)
    questions = write_questions(tmp_path / "questions.jsonl", 24)
    args = ["retrieve", "--questions", str(questions), "--corpus", str(corpus), "--retriever", "dense", "--k", "20",
            "--shard-rows", "1000", "--quiet", "--json"]
    berds([a for a in args if a not in ("--shard-rows", "1000", "--quiet", "--json")] +
          ["--out", str(tmp_path / "one.jsonl")], tmp_path / "cache-one")

    monkeypatch.setenv("BERDS_CACHE", str(tmp_path / "cache-ray"))
    real_store = enc.embedding_store

    class StopAfterFirstPart:
        calls = 0

        def put_many(self, key, items):
            StopAfterFirstPart.calls += 1
            if StopAfterFirstPart.calls > 1:
                raise KeyboardInterrupt
            real_store().put_many(key, items)

    monkeypatch.setattr(enc, "embedding_store", lambda: StopAfterFirstPart())
    out = tmp_path / "ray.jsonl"
    assert main([*args, "--out", str(out), "--ray", cluster]) == 130
    assert not out.exists() and not list(tmp_path.glob(".ray.jsonl*"))
    capsys.readouterr()
    monkeypatch.setattr(enc, "embedding_store", real_store)
    assert main([*args, "--out", str(out), "--ray", cluster]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["ray"]["encode"]["already_stored"] == 1024 and info["ray"]["encode"]["encoded"] == 2300 - 1024
    assert out.read_bytes() == (tmp_path / "one.jsonl").read_bytes()

    folder = Path(info["ray"]["folder"]) / "vectors"
    (folder / "shard-00001.json").unlink()  # as if killed between the .npy and its .json
    (folder / "complete.json").unlink()
    assert main([*args, "--out", str(out), "--ray", cluster]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["ray"]["encode"]["encoded"] == 0 and info["ray"]["shards_written"] == 1
    assert out.read_bytes() == (tmp_path / "one.jsonl").read_bytes()


def test_any_judge_backend_runs_in_the_actor_pool(cluster, tmp_path):
    """An hf: judge (a tiny random Mistral + LoRA built here) in the two-node cluster's judge actor pool: the
    probabilities in the prediction cache equal one process's bit for bit; judged pairs are not sent."""
    import sqlite3

    from berds_core.runs import write_run
    from tiny_models import make_tiny_causal_lm, make_tiny_lora_adapter

    model = make_tiny_causal_lm(tmp_path / "m", arch="mistral", seed=3)
    adapter = make_tiny_lora_adapter(model, tmp_path / "lora")
    write_run(tmp_path / "run.jsonl", run_entries(4, 25, perspectives=2, words=8))
    tsv = pairs_tsv(tmp_path / "run.jsonl", tmp_path / "pairs.tsv", 200)
    spec = ["--judge", f"hf:{model}+{adapter}", "--device", "cpu"]
    caches = {}
    for mode, addr in (("one", None), ("ray", cluster)):
        caches[mode] = tmp_path / f"cache-{mode}"
        res, _ = berds(["judge-eval", "--pairs", str(tsv), *spec, "--out", str(tmp_path / f"{mode}.tsv")],
                       caches[mode], ray_address=addr)
        if addr:
            assert res["ray"]["mode"] == "judge" and res["ray"]["sent"] == 200 and res["ray"]["chunks"] == 4
            # which node's actor takes the 4 chunks is the scheduler's (an actor still loading the model when the
            # other has finished gets none: a loaded clean-clone run saw 1); that the judge pool spreads over both
            # nodes is asserted with the embedded judge (test_ray_client_and_auto_from_the_environment)
            assert res["ray"]["nodes_used"] in (1, 2) and res["ray"]["workers"] >= 1
    assert (tmp_path / "ray.tsv").read_bytes() == (tmp_path / "one.tsv").read_bytes()

    def cached(cache):
        con = sqlite3.connect(str(cache / "judges" / "predictions.sqlite"))
        try:
            return dict(((p, s), prob) for p, s, prob in con.execute("SELECT passage, perspective, prob FROM preds"))
        finally:
            con.close()

    one, rr = cached(caches["one"]), cached(caches["ray"])
    assert len(one) == 200 and one == rr  # float64 values, compared exactly
    again, _ = berds(["judge-eval", "--pairs", str(tsv), *spec], caches["ray"], ray_address=cluster)
    assert again["ray"] == {"address": cluster, "started": False, "pairs_left": 0, "sent": 0}


def test_a_judge_failing_on_a_worker_is_one_line(cluster, tmp_path):
    """An openai: judge whose server answers nothing fails inside its actor: the command exits 2 with one
    line naming --judge (not a Ray traceback) and writes nothing."""
    from berds_core.runs import write_run

    write_run(tmp_path / "run.jsonl", run_entries(2, 3, perspectives=1))
    out = tmp_path / "judged.jsonl"
    _, p = berds(["judge", "--run", str(tmp_path / "run.jsonl"), "--judge", "openai:m@http://127.0.0.1:1/v1",
                  "--retries", "0", "--timeout", "2", "--out", str(out)], tmp_path / "cache", check=False,
                 ray_address=cluster)
    assert p.returncode == 2 and p.stdout == ""
    last = p.stderr.strip().splitlines()[-1]
    assert last.startswith("berds judge: error: --judge:") and "Traceback" not in p.stderr
    assert not out.exists()


@pytest.mark.ray_driver
def test_ivf_trained_on_a_sample_and_filled_shard_by_shard(cluster, tmp_path):
    """An IVF index on the cluster: trained once on a sample read from the vector shards (a Ray task), each
    shard's lists filled by a Ray task; searching the shards and merging gives exactly what one index
    holding every shard's lists (FAISS's own merge) gives; a lost shard of lists is filled again alone;
    and ``index``/``retrieve --ray --index IVF..`` through the CLI."""
    import faiss
    import ray

    from berds_core.distributed.index import IVF_NPROBE, DenseShards, build_ivf
    from berds_core.distributed.runtime import ray_session
    from berds_core.distributed.search import search_dense
    from berds_core.files.shard_files import ShardSet, save_npy

    rng = np.random.default_rng(0)
    n, dim, rows = 3000, 32, 1000
    x = rng.standard_normal((n, dim)).astype(np.float32)
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    q = rng.standard_normal((30, dim)).astype(np.float32)
    vec = ShardSet(tmp_path / "idx" / "vectors", n, rows, "npy", {"corpus_hash": "h", "encoder": "e"})
    for i in range(vec.n_shards):
        save_npy(vec, i, x[i * rows:(i + 1) * rows], dim=dim)
    vec.finish(dim=dim)
    factory = "IVF64,Flat"
    assert IVF_NPROBE < 64  # approximate: not every list is searched
    ray.init(address=cluster)
    try:
        with ray_session(cluster, progress=False) as session:
            lists, built = build_ivf(session, vec, tmp_path / "idx", factory)
            assert built == 1 + 3 and lists.complete
            hits, where = search_dense(session, DenseShards(tmp_path / "idx", factory, vec, lists), q, 10)
            assert where["nodes_used"] == 2
            (lists.folder / "shard-00002.json").unlink()  # as if killed before the shard was done
            (lists.folder / "complete.json").unlink()
            again, built = build_ivf(session, vec, tmp_path / "idx", factory)
            assert built == 1
            hits2, _ = search_dense(session, DenseShards(tmp_path / "idx", factory, vec, again), q, 10)
    finally:
        ray.shutdown()
    trained = next((tmp_path / "idx").glob("ivf-*/trained.faiss"))
    merged = faiss.read_index(str(trained))
    for spec in lists.specs():
        merged.merge_from(faiss.read_index(spec["path"]), 0)
    assert merged.ntotal == n
    faiss.extract_index_ivf(merged).nprobe = IVF_NPROBE
    scores, ids = merged.search(q, 10)
    exact = np.argsort(-(q @ x.T), axis=1)[:, :10]
    assert any(set(e) != set(i) for e, i in zip(exact, ids))  # the lists really are probed, not all rows
    for h, h2, want_r, want_s in zip(hits, hits2, ids, scores):
        np.testing.assert_array_equal(h.rows, want_r)
        np.testing.assert_array_equal(h.scores, want_s)
        np.testing.assert_array_equal(h2.rows, want_r)

    corpus = write_corpus(tmp_path / "corpus.jsonl", 600, words=8)
    questions = write_questions(tmp_path / "questions.jsonl", 5)
    opts = ["--corpus", str(corpus), "--retriever", "dense", "--index", "IVF16,Flat", "--shard-rows", "200"]
    idx, _ = berds(["index", *opts], tmp_path / "cache", ray_address=cluster)
    assert idx["index"] == "IVF16,Flat" and idx["ray"]["shards"] == 3 and idx["ray"]["graphs_built"] == 4
    res, _ = berds(["retrieve", "--questions", str(questions), *opts, "--k", "7", "--out", str(tmp_path / "r.jsonl")],
                   tmp_path / "cache", ray_address=cluster)
    assert res["ray"]["graphs_built"] == 0 and res["ray"]["encode"]["encoded"] == 0
    run = [json.loads(line) for line in (tmp_path / "r.jsonl").read_text().splitlines()]
    assert len(run) == 5 and all(len(e["ctxs"]) == 7 for e in run)


def _client_server_logs(tail: int = 1500) -> str:
    """The end of each Ray Client server log of the head (the proxy's and each connection's server): why a
    connection's server did not start, for a failure's message."""
    logs = sorted({f.resolve() for f in Path(os.environ["RAY_TMPDIR"]).glob("**/session_2*/logs/ray_client_server*")})
    return "".join(f"\n--- {f.name}:\n{f.read_text(errors='replace')[-tail:]}" for f in logs if f.stat().st_size)


def test_ray_client_and_auto_from_the_environment(cluster, tmp_path):
    """The other address forms on the same cluster: ``ray://`` (Ray Client: the encoder pool runs as plain
    actors there, as Ray Data cannot run a pipeline through a client) for the embedded judge, and
    ``BERDS_RAY_ADDRESS=auto`` (the cluster ``RAY_ADDRESS`` names) for BM25 retrieval: the files one
    process writes."""
    from berds_core.runs import write_run

    write_run(tmp_path / "run.jsonl", run_entries(8, 140, perspectives=2, words=8))  # several parts
    client = f"ray://127.0.0.1:{CLIENT_PORT['port']}"
    for mode, addr in (("one", None), ("client", client)):
        judged, p = berds(["judge", "--run", str(tmp_path / "run.jsonl"), "--out", str(tmp_path / f"{mode}.jsonl")],
                          tmp_path / f"cache-{mode}", ray_address=addr, check=False)
        assert p.returncode == 0, p.stderr[-3000:] + (_client_server_logs() if addr else "")
        judged = json.loads(p.stdout)
        if addr:
            assert judged["ray"]["address"] == client and judged["ray"]["mode"] == "judge"
            assert judged["ray"]["chunks"] >= 2 and judged["ray"]["nodes_used"] == 2
    assert (tmp_path / "client.jsonl").read_bytes() == (tmp_path / "one.jsonl").read_bytes()

    corpus = write_corpus(tmp_path / "corpus.jsonl", 1100, words=8)
    questions = write_questions(tmp_path / "questions.jsonl", 6)
    env = {**os.environ, "BERDS_CACHE": str(tmp_path / "cache-auto"), "BERDS_RAY_ADDRESS": "auto",
           "RAY_ADDRESS": cluster}
    p = subprocess.run([sys.executable, "-m", "berds_core", "retrieve", "--questions", str(questions), "--corpus",
                        str(corpus), "--retriever", "bm25", "--k", "15", "--shard-rows", "300",
                        "--out", str(tmp_path / "auto.jsonl"), "--json", "--quiet"],
                       capture_output=True, text=True, timeout=900, env=env)
    assert p.returncode == 0, p.stderr[-3000:]
    info = json.loads(p.stdout)
    assert info["ray"]["address"] == "auto" and info["ray"]["nodes"] == 2 and info["ray"]["shards"] == 4
    berds(["retrieve", "--questions", str(questions), "--corpus", str(corpus), "--retriever", "bm25", "--k", "15",
           "--out", str(tmp_path / "bm25-one.jsonl")], tmp_path / "cache-one")
    assert (tmp_path / "auto.jsonl").read_bytes() == (tmp_path / "bm25-one.jsonl").read_bytes()


@pytest.mark.ray_driver
def test_an_actor_that_dies_before_it_runs_is_replaced(cluster, tmp_path):
    """Root cause of the flake the cluster tests used to re-run ("ActorDiedError: the actor never ran", 1 clean
    CI run in 3 on 2 cores): Ray Data fails a whole job on the first pool actor that dies before it runs
    (``max_consecutive_actor_init_deaths`` defaults to 0), while one that dies later is restarted. The pools
    now replace it (``runtime.INIT_DEATHS``). Here the first actor to start dies in its constructor; every row
    still comes back, once."""
    import numpy as np

    from berds_core.distributed.runtime import INIT_DEATHS, ray_session

    marker = tmp_path / "died-once"

    class DiesFirst:
        def __init__(self, marker):
            if not os.path.exists(marker):
                open(marker, "w").close()
                raise RuntimeError("the first actor dies before it runs")

        def __call__(self, batch):
            return {"x": np.asarray(batch["x"]) * 2}

    assert INIT_DEATHS >= 1
    with ray_session(cluster, progress=False) as session:
        got = sorted(int(v) for b in session.map_rows([{"x": i} for i in range(6)], DiesFirst,
                                                      {"marker": str(marker)}, gpu=False) for v in b["x"])
    assert marker.exists() and got == [0, 2, 4, 6, 8, 10]


STOPPED_JOB = r'''
import gc, sys, threading, time
import ray
import berds_core.distributed.runtime as runtime
from berds_core.distributed.runtime import DATA_THREADS, ray_session

left = []  # Ray Data's threads still running when the session has closed, the moment before Ray disconnects
closed = runtime.Session.close
def close(self):
    closed(self)
    left.extend(sorted(t.name for t in threading.enumerate() if t.name.startswith(DATA_THREADS)))
runtime.Session.close = close

class Slow:
    def __call__(self, batch):
        time.sleep(0.3)
        return batch

held = None
try:
    with ray_session(sys.argv[1], progress=False) as session:
        rows = session.map_rows([{"i": i} for i in range(12)], Slow, {}, gpu=False)
        for batch in rows:
            raise KeyboardInterrupt  # as the CLI is stopped while it stores the first batch
except KeyboardInterrupt as e:
    held = e  # the CLI's handler keeps the exception (and with it the suspended iteration) a while
print("data threads when Ray disconnected:", left, flush=True)
seen = []
for _ in range(20):  # Ray Data's executor, left running, auto-started Ray within 2 s of the shutdown
    time.sleep(0.25)
    seen.append(ray.is_initialized())
held = rows = None
gc.collect()
for _ in range(8):
    time.sleep(0.25)
    seen.append(ray.is_initialized())
print("initialized after the job:", any(seen), flush=True)
'''


def test_a_stopped_job_leaves_no_ray_behind(cluster):
    """Root cause of the run that ended pytest itself: a job stopped in the middle of Ray Data's iteration (the
    interrupted retrieve above) shut Ray down with the iteration suspended and Ray Data's executor still
    running; the executor's next call to Ray auto-started a new local instance in the driver's process, and
    when that instance's GCS went away Ray ended the process ("Failed to connect to GCS within 60 seconds").
    The session now closes its iterations before it disconnects. Run in a subprocess, so that a regression
    fails this test instead of ending the pytest run. And the cause of the crash in the same test at load 6 to 11
    (issue 63): Ray disconnected while a Ray Data thread of the stopped iteration still fetched a block, and Ray's C++
    core ended the process; the session now waits for those threads (``runtime.settle_data_threads``)."""
    p = subprocess.run([sys.executable, "-c", STOPPED_JOB, cluster], capture_output=True, text=True, timeout=240,
                       cwd=TESTS.parent, env={**os.environ, "PYTHONPATH": str(TESTS.parent)})
    assert "data threads when Ray disconnected: []" in p.stdout, (p.stdout[-2000:], p.stderr[-3000:])
    assert "initialized after the job: False" in p.stdout, (p.stdout[-2000:], p.stderr[-3000:])
    assert "Started a local Ray instance" not in p.stderr, p.stderr[-3000:]


@pytest.mark.ray_driver
def test_a_local_cluster_runs_its_workers_at_the_drivers_priority(monkeypatch):
    """``--ray local`` starts its own cluster: its workers run at the driver's priority, not Ray's nice 15, which
    starved a run behind any other job on the machine (issue 63); RAY_worker_niceness, when set, still wins."""
    import ray

    from berds_core.distributed.runtime import WORKER_NICENESS, ray_session

    monkeypatch.delenv(WORKER_NICENESS, raising=False)

    @ray.remote
    def niceness():
        return os.nice(0)

    with ray_session("local", progress=False):
        assert ray.get(niceness.remote()) == os.nice(0)
