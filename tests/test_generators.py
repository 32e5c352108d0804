"""Generators (berds_core.generators): a tiny random hf model and a REAL local OpenAI-style server."""
import json
import math
import pickle
import socket
import threading
from http.server import ThreadingHTTPServer

import numpy as np
import pytest

from berds_core.generators import GenerationError, SpecError, get_generator
from berds_core.generators.base import generation_cache
from berds_core.generators.hf import HFGenerator
from answer_server import JSONHandler
from tiny_models import make_tiny_causal_lm

SECRET = "sk-generator-secret-987"

# Mistral-Instruct-v0.2's rule: roles alternate user/assistant, no system role.
STRICT_TEMPLATE = (
    "{{ bos_token }}{% for m in messages %}"
    "{% if (m['role'] == 'user') != (loop.index0 % 2 == 0) %}"
    "{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}{% endif %}"
    "{% if m['role'] == 'user' %}[INST] {{ m['content'] }} [/INST]{% else %} {{ m['content'] }}{{ eos_token }}"
    "{% endif %}{% endfor %}"
)


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    return make_tiny_causal_lm(tmp_path_factory.mktemp("gen"), arch="mistral")


def test_spec_errors():
    with pytest.raises(SpecError, match="choose from: hf:<model>\\[\\+<adapter>\\], openai:<model>@<base_url>"):
        get_generator("gpt:whatever")
    with pytest.raises(SpecError, match="needs an argument"):
        get_generator("hf")
    with pytest.raises(SpecError, match="needs a model and a URL"):
        get_generator("openai:modelonly")


def test_an_openai_spec_splits_at_the_first_at_that_starts_a_url_and_refuses_an_at_after_it():
    """``m@http://a/v1#@b/v1`` named ``b`` as the server (the last '@'), while any reader sees ``a``."""
    from berds_core.generators import split_openai_spec
    from berds_core.judges import parse_spec
    from berds_core.net.reach import server_url

    assert split_openai_spec("org/m@v1@http://h:8000/v1") == ("org/m@v1", "http://h:8000/v1")
    assert split_openai_spec("m@x@localhost:8000") == ("m@x", "localhost:8000")  # no scheme: the last '@'
    for spec in ("m@http://127.0.0.1:9999/v1#@127.0.0.1:9/v1", "m@http://h/v1?x=@y", "m@http://user:secret@h/v1"):
        with pytest.raises(SpecError) as got:
            split_openai_spec(spec)
        msg = str(got.value)
        assert "holds an '@'" in msg and "\n" not in msg and "secret" not in msg and "127.0.0.1" not in msg
        with pytest.raises(SpecError, match="openai judge the server address holds an '@'"):
            parse_spec(f"openai:{spec}")
        assert server_url(f"openai:{spec}") is None  # nothing to probe: the spec itself is refused


def test_hf_generate_is_greedy_batched_and_cached(tiny):
    gen = HFGenerator(str(tiny), device="cpu", batch_size=3)
    prompts = ["Should school be free ?", "Is the law good for people ?", "Yes or no ?", "Does science help ?"]
    out = gen.generate(prompts, max_new_tokens=6)
    assert len(out) == 4 and all(isinstance(t, str) for t in out)
    one_by_one = [HFGenerator(str(tiny), device="cpu", batch_size=1).generate([p], max_new_tokens=6,
                                                                             use_cache=False)[0] for p in prompts]
    assert out == one_by_one  # left padding + position ids: a padded row decodes as it would alone
    calls = gen.calls
    assert gen.generate(prompts[::-1], max_new_tokens=6) == out[::-1] and gen.calls == calls  # cache hit
    assert gen.generate(prompts[:1], max_new_tokens=7) and gen.calls == calls + 1  # other params, new request


def test_hf_choice_probs_match_a_forward_pass_by_hand(tiny):
    import torch

    gen = HFGenerator(str(tiny), device="cpu")
    probs = gen.choice_probs(["Is free speech good ?", "Should tax be low ?"], ["Yes", "No"])
    assert probs.shape == (2, 2) and np.allclose(probs.sum(axis=1), 1.0)
    text = gen.render([{"role": "user", "content": "Is free speech good ?"}])
    assert text.startswith("<s>[INST]") and text.endswith("[/INST]")
    ids = gen.tokenizer(text, return_tensors="pt", add_special_tokens=False)["input_ids"]
    with torch.no_grad():
        logits = gen.model(input_ids=ids).logits[0, -1]
    yes = torch.logsumexp(logits[gen.token_ids("Yes")], 0).item()
    no = torch.logsumexp(logits[gen.token_ids("No")], 0).item()
    assert probs[0, 0] == pytest.approx(1 / (1 + math.exp(no - yes)), abs=1e-5)


def test_hf_system_turn_dropped_only_when_the_template_rejects_it(tiny):
    msgs = [{"role": "system", "content": "Answer with Yes or No ."}, {"role": "user", "content": "Is war bad ?"}]
    gen = HFGenerator(str(tiny), device="cpu").load()
    assert "Answer with Yes" in gen.render(msgs)  # this template accepts a system turn: kept
    gen.tokenizer.chat_template = STRICT_TEMPLATE
    assert gen.render(msgs) == gen.render(msgs[1:])  # Mistral-style template: dropped (auto)
    keep = HFGenerator(str(tiny), device="cpu", system="keep").load()
    keep.tokenizer.chat_template = STRICT_TEMPLATE
    with pytest.raises(GenerationError, match="rejected the messages"):
        keep.render(msgs)


def test_hf_missing_model_is_one_line(tmp_path):
    gen = HFGenerator(str(tmp_path / "nope"))
    with pytest.raises(GenerationError) as e:
        gen.generate(["x"])
    assert "cannot load model" in str(e.value) and "\n" not in str(e.value)
    assert gen.status()["ok"] is False


# ------------------------------------------------------------------ a real local OpenAI-style server

class _Handler(JSONHandler):
    def do_POST(self):
        srv = self.server
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        with srv.lock:
            srv.requests.append({"body": body, "auth": self.headers.get("Authorization")})
        if srv.mode == "no_logprobs" and body.get("logprobs"):
            return self._send(400, {"error": {"message": "logprobs not supported"}})
        text = body["messages"][-1]["content"]
        answer = "Yes" if "yes" in text.lower() else "No"
        choice = {"index": 0, "message": {"role": "assistant",
                                          "content": answer if body["max_tokens"] == 1 else f"{answer}: {text[::-1]}"}}
        if body.get("logprobs"):
            p = 0.9 if answer == "Yes" else 0.2
            choice["logprobs"] = {"content": [{"token": "▁Yes" if answer == "Yes" else " no", "logprob": math.log(max(p, 1 - p)), "top_logprobs": [
                {"token": "▁Yes", "logprob": math.log(p)}, {"token": " no", "logprob": math.log(1 - p)},
                {"token": "Maybe", "logprob": -8.0}]}]}
        self._send(200, {"choices": [choice]})


@pytest.fixture
def server():
    srv = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    srv.lock, srv.requests, srv.mode = threading.Lock(), [], "logprobs"
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    srv.url = f"http://127.0.0.1:{srv.server_address[1]}"
    yield srv
    srv.shutdown()
    srv.server_close()


def test_openai_generate_cached_and_key_never_stored(server, monkeypatch, capsys):
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    gen = get_generator(f"openai:m@{server.url}", retries=0)
    out = gen.generate(["Say yes please", "Say nothing"], max_new_tokens=20)
    assert out == ["Yes: " + "Say yes please"[::-1], "No: " + "Say nothing"[::-1]]
    assert all(r["auth"] == f"Bearer {SECRET}" for r in server.requests)
    assert server.requests[0]["body"]["temperature"] == 0.0 and server.requests[0]["body"]["max_tokens"] == 20
    n = len(server.requests)
    assert gen.generate(["Say nothing"], max_new_tokens=20) == out[1:] and len(server.requests) == n
    assert SECRET not in gen.name and SECRET not in repr(gen) and SECRET.encode() not in pickle.dumps(gen)
    assert SECRET.encode() not in generation_cache().path.read_bytes()
    captured = capsys.readouterr()
    assert SECRET not in captured.out + captured.err


def test_openai_choice_probs_from_logprobs_then_text(server):
    gen = get_generator(f"openai:m@{server.url}", retries=0, top_logprobs=3)
    p = gen.choice_probs(["yes?", "hmm?"], ["Yes", "No"])
    np.testing.assert_allclose(p[:, 0], [0.9, 0.2], atol=1e-9)
    assert server.requests[0]["body"]["top_logprobs"] == 3 and server.requests[0]["body"]["max_tokens"] == 1
    server.mode = "no_logprobs"  # a server without logprobs: the answer text decides
    gen2 = get_generator(f"openai:m@{server.url}", retries=0, top_logprobs=4)
    assert gen2.choice_probs(["yes?", "hmm?"], ["Yes", "No"]).tolist() == [[1.0, 0.0], [0.0, 1.0]]


def test_openai_server_down_is_one_line():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    gen = get_generator(f"openai:m@http://127.0.0.1:{port}", retries=1, backoff=0.01)
    with pytest.raises(GenerationError) as e:
        gen.generate(["hello"])
    msg = str(e.value)
    assert "\n" not in msg and "cannot connect" in msg and "2 tries" in msg and msg.startswith("openai generator")
    assert gen.status()["ok"] is False
