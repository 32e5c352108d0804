"""No tracebacks, no slow failures (issue 24, item 2).

- A server named by a spec (``openai:<model>@<url>``, ``berds-evaluator:<url>``) that is not there is one
  line, exit 2, naming the option and the server, before any work: no request of the work is sent (no
  retries) and no progress bar (``0%``) is drawn first.
- A server that answers the check but fails in the middle of a run is one line too, not a traceback.
- A model or dataset named by hub id loads from local files first and from the hub only when it is
  reachable: with the hub unreachable and the id not cached, one line at once, the loader never called.
"""
from __future__ import annotations

import json
import threading
from http.server import ThreadingHTTPServer
from pathlib import Path

import pytest

from answer_server import JSONHandler
from browser_harness import free_port
from berds_core.cli import main


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("ff")
    assert main(["import", "demo", "--out", str(d), "--quiet"]) == 0
    run = d / "run.jsonl"
    assert main(["retrieve", "--questions", str(d / "questions.jsonl"), "--corpus", str(d / "corpus.jsonl"),
                 "--k", "2", "--out", str(run), "--quiet"]) == 0
    answers = d / "answers.jsonl"
    answers.write_text(json.dumps({"id": "q1", "question": "Q?", "perspectives": ["A", "B"],
                                   "generation": "An answer."}) + "\n")
    pairs = d / "pairs.tsv"
    pairs.write_text("question\tid\tdocument\tperspective\tlabel\nQ?\t1\tSome passage.\tA view.\t1\n")
    claims = d / "claims.jsonl"
    claims.write_text(json.dumps({"id": "c1", "claim": "Cities should ban cars."}) + "\n")
    pool = d / "pool.txt"
    pool.write_text("Cars pollute the air.\nCars give people freedom.\n")
    return {"d": d, "run": run, "answers": answers, "pairs": pairs, "claims": claims, "pool": pool}


def _argvs(f, spec: str, out: Path) -> dict:
    d = f["d"]
    q, c = d / "questions.jsonl", d / "corpus.jsonl"
    return {
        "retrieve --qe llm": ["retrieve", "--questions", q, "--corpus", c, "--qe", "llm", "--qe-llm", spec,
                              "--out", out],
        "retrieve --rerank-judge": ["retrieve", "--questions", q, "--corpus", c, "--rerank", "coverage",
                                    "--rerank-judge", spec, "--out", out],
        "judge": ["judge", "--run", f["run"], "--judge", spec, "--out", out],
        "judge berds-evaluator": ["judge", "--run", f["run"], "--judge", "berds-evaluator:" + spec.split("@", 1)[1],
                                  "--out", out],
        "judge-eval": ["judge-eval", "--pairs", f["pairs"], "--judge", spec],
        "answer": ["answer", "--run", f["run"], "--generator", spec, "--out", out],
        "answer-eval": ["answer-eval", "--answers", f["answers"], "--da-model", spec],
        "pd": ["pd", "--answers", f["answers"], "--model", spec],
        "da": ["da", "--answers", f["answers"], "--model", spec],
        "convincing": ["convincing", "--run", f["run"], "--gold", d / "gold.jsonl", "--model", spec, "--out", out],
        "discover --llm": ["discover", "--claims", f["claims"], "--pool", f["pool"], "--method", "llm", "--llm", spec,
                           "--out", out],
        "leaning --sides-llm": ["leaning", "--run", f["run"], "--gold", d / "gold.jsonl", "--sides-llm", spec],
        "annotations tasks --judge": ["annotations", "tasks", "--run", f["run"], "--n", "2", "--annotators", "a",
                                      "--strategy", "uncertain", "--judge", spec, "--db", d / "ann.db"],
    }


FLAGS = {"retrieve --qe llm": "--qe-llm", "retrieve --rerank-judge": "--rerank-judge", "judge": "--judge",
         "judge berds-evaluator": "--judge", "judge-eval": "--judge", "answer": "--generator",
         "answer-eval": "--da-model", "pd": "--model", "da": "--model", "convincing": "--model",
         "discover --llm": "--llm", "leaning --sides-llm": "--sides-llm", "annotations tasks --judge": "--judge"}


@pytest.fixture()
def no_work_requests(monkeypatch):
    """Any request of the work itself (a chat, a completion) fails the test: only the check may ask."""
    from berds_core.generators.openai import OpenAIClient

    def boom(self, path, body):
        raise AssertionError(f"a request of the work was sent to an unreachable server: {path}")

    monkeypatch.setattr(OpenAIClient, "post", boom)


@pytest.mark.parametrize("verb", sorted(FLAGS))
def test_unreachable_server_is_one_line_before_any_work(verb, files, tmp_path, capsys, no_work_requests, monkeypatch):
    monkeypatch.setenv("BERDS_CACHE", str(tmp_path / "cache"))
    port = free_port()  # nothing listens there
    spec = f"openai:m@http://127.0.0.1:{port}"
    argv = [str(a) for a in _argvs(files, spec, tmp_path / "out.jsonl")[verb]]
    assert main(argv) == 2
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err  # no progress bar, no retry messages, no traceback
    assert FLAGS[verb] in lines[0] and f"127.0.0.1:{port}" in lines[0] and "cannot reach the server" in lines[0]
    assert "0%" not in err and "Traceback" not in err
    assert not (tmp_path / "out.jsonl").exists()
    assert not (tmp_path / "cache" / "indexes").exists()  # nothing indexed: refused before any work


def test_every_verb_with_a_server_option_declares_it():
    """Options that take a generator or judge spec are declared as servers (checked before the verb runs)."""
    from test_no_overwrite import UNDECLARED, _leaves
    from berds_core.cli import build_parser

    spec_dests = {"generator", "qe_llm", "rerank_judge", "judge", "answer_judge", "pd_model", "da_model", "model",
                  "editor", "ppl_model", "llm", "sides_llm"}
    for name, parser in _leaves(build_parser()):
        if name in UNDECLARED:
            continue
        vf = parser.get_default("files")
        dests = {a.dest for a in parser._actions if a.option_strings}
        embedder = {"model"} if name in ("index", "retrieve", "sycophancy") else set()  # --model: an embedder
        stored = {"judge"} if name == "agreement" else set()  # a judge name whose answers are stored: no server
        missing = (dests & spec_dests) - embedder - stored - set(vf.servers)
        assert not missing, f"berds {name}: spec options {missing} are not declared as servers"


class _FailingChat(JSONHandler):
    """Answers the check (GET /v1/models) but refuses every chat: a server that breaks mid-run."""

    def do_POST(self):
        self.rfile.read(int(self.headers["Content-Length"]))
        self._send(400, {"error": {"message": "model 'm' does not exist"}})


def test_a_server_failing_mid_run_is_one_line_not_a_traceback(files, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("BERDS_CACHE", str(tmp_path / "cache"))
    srv = ThreadingHTTPServer(("127.0.0.1", 0), _FailingChat)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    try:
        d = files["d"]
        spec = f"openai:m@http://127.0.0.1:{srv.server_address[1]}"
        assert main(["retrieve", "--questions", str(d / "questions.jsonl"), "--corpus", str(d / "corpus.jsonl"),
                     "--qe", "llm", "--qe-llm", spec, "--out", str(tmp_path / "r.jsonl"), "--quiet"]) == 2
    finally:
        srv.shutdown()
        srv.server_close()
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--qe-llm" in err[0] and "HTTP 400" in err[0], err
    assert not (tmp_path / "r.jsonl").exists()


def test_server_url_of_specs():
    from berds_core.net.reach import server_url

    assert server_url("openai:org/m@v1@http://h:8000") == "http://h:8000"
    assert server_url("berds-evaluator:http://h:8000/v1") == "http://h:8000/v1"
    for spec in ("embedded", "hf:org/m", "berds-evaluator", "openai:m", None, "openai-m@host-8000-berds"):
        assert server_url(spec) is None


# --------------------------------------------------------------------------- models and datasets


@pytest.fixture()
def hub_down(monkeypatch):
    """The hub cannot be reached (as on a laptop without network); HF_HUB_OFFLINE is not set."""
    from berds_core.net import hub

    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.delenv("TRANSFORMERS_OFFLINE", raising=False)
    monkeypatch.setattr(hub, "hub_reachable", lambda timeout=3.0: False)


@pytest.fixture()
def no_model_construction(monkeypatch):
    import sentence_transformers

    def boom(*a, **k):
        raise AssertionError("tried to load the model (the hub would be retried)")

    monkeypatch.setattr(sentence_transformers, "SentenceTransformer", boom)


@pytest.mark.parametrize("flags,flag", [(["--retriever", "dense", "--model", "no/such-model"], "--model"),
                                        (["--mmr", "0.5", "--mmr-embedder", "no/such-model"], "--mmr-embedder")])
def test_missing_embedder_with_the_hub_down_is_one_line_at_once(flags, flag, files, tmp_path, capsys, hub_down,
                                                                no_model_construction, monkeypatch):
    monkeypatch.setenv("BERDS_CACHE", str(tmp_path / "cache"))
    d = files["d"]
    assert main(["retrieve", "--questions", str(d / "questions.jsonl"), "--corpus", str(d / "corpus.jsonl"),
                 *flags, "--out", str(tmp_path / "r.jsonl"), "--quiet"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    assert flag in err[0] and "'no/such-model'" in err[0] and "hub is unreachable" in err[0]
    assert err[0].count("cannot load") == 1
    assert not (tmp_path / "cache" / "indexes").exists()  # before the corpus was indexed


def test_sycophancy_missing_embedder_is_one_line(files, tmp_path, capsys, hub_down, no_model_construction):
    d = files["d"]
    assert main(["sycophancy", "--questions", str(d / "questions.jsonl"), "--corpus", str(d / "corpus.jsonl"),
                 "--retriever", "dense", "--model", "no/such-model", "--gold", str(d / "gold.jsonl")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--model" in err[0] and "hub is unreachable" in err[0], err


def test_embedder_in_the_local_cache_loads_offline_without_the_hub(hub_down, monkeypatch):
    """A hub id the Hugging Face cache holds is loaded from there (local_files_only), not refused."""
    from berds_core.embeddings import models as embed
    from berds_core.net import hub

    monkeypatch.setattr(hub, "in_cache", lambda name, probe="config.json": name == "org/cached")
    assert embed.locate_embedder("org/cached") is True
    with pytest.raises(OSError, match="not in the Hugging Face cache"):
        embed.locate_embedder("org/absent")
    monkeypatch.setattr(hub, "hub_reachable", lambda timeout=3.0: True)
    assert embed.locate_embedder("org/absent") is False  # the hub can be asked


def test_short_sentence_transformers_names_are_found_under_their_org(hub_down, monkeypatch):
    from berds_core.embeddings import models as embed
    from berds_core.net import hub

    monkeypatch.setattr(hub, "in_cache", lambda name, probe="config.json": name == "sentence-transformers/all-mpnet-base-v2")
    assert embed.locate_embedder("all-mpnet-base-v2") is True


def test_hub_dataset_with_the_hub_down_is_one_line_without_retries(tmp_path, capsys, hub_down, monkeypatch):
    import datasets
    import huggingface_hub.constants as hc

    seen, orig = {}, hc.HF_HUB_OFFLINE

    real = datasets.load_dataset

    def spy(*a, **k):
        seen["offline"] = hc.HF_HUB_OFFLINE
        return real(*a, **k)

    monkeypatch.setattr(datasets, "load_dataset", spy)
    assert main(["import", "hub", "no/such-dataset", "--out", str(tmp_path / "x")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "no/such-dataset" in err[0] and "hub is unreachable" in err[0], err
    assert seen["offline"] is True  # the hub library was told not to ask the network (no retries)
    assert hc.HF_HUB_OFFLINE == orig  # restored after the call


def test_openai_tokenizer_missing_is_one_line(hub_down):
    from berds_core.generators import GenerationError, get_generator

    gen = get_generator("openai:m@http://127.0.0.1:9", tokenizer="no/such-tokenizer")
    with pytest.raises(GenerationError, match="cannot load tokenizer 'no/such-tokenizer'.*hub is unreachable"):
        gen.tokenizer
