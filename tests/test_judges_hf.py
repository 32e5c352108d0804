"""The hf judge on tiny random Llama/Mistral models built in the test (no download)."""
import numpy as np
import pytest

from berds_core.judges import get_judge
from berds_core.generators.hf import answer_token_ids
from berds_core.judges.hf import HFJudge

from tiny_models import make_tiny_causal_lm, make_tiny_lora_adapter

PAIRS = [
    ("The government should ban free speech about war.", "Free speech should be protected."),
    ("Children in school need more time for sport and art, and less homework every day.",
     "Homework should be banned in primary schools."),
    ("Climate science is new.", "We should tax energy."),
    ("People say the law is not good for health, money or the country, and the state will not support it "
     "over the year.", "The law is good."),
    ("Music.", "Art is good for children."),
]


@pytest.fixture(scope="module")
def tiny_llama(tmp_path_factory):
    return make_tiny_causal_lm(tmp_path_factory.mktemp("llama"), arch="llama")


@pytest.fixture(scope="module")
def tiny_mistral(tmp_path_factory):
    return make_tiny_causal_lm(tmp_path_factory.mktemp("mistral"), arch="mistral", seed=3)


def test_yes_no_token_ids_found(tiny_llama):
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(tiny_llama))
    yes, no = answer_token_ids(tok, "Yes"), answer_token_ids(tok, "No")
    assert tok.convert_ids_to_tokens(yes[0]) in ("Yes", "yes") and "Yes" in tok.convert_ids_to_tokens(yes)
    assert "No" in tok.convert_ids_to_tokens(no)
    assert not set(yes) & set(no)


def test_yes_no_ids_with_leading_space_variants():
    """SentencePiece-style vocabularies spell the answer '▁Yes'; those ids are found too."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab = {"<unk>": 0, "▁Yes": 1, "▁No": 2, "Yes": 3, "▁": 4, "No": 5, "▁maybe": 6}
    tk = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    tk.pre_tokenizer = pre_tokenizers.Metaspace()
    tok = PreTrainedTokenizerFast(tokenizer_object=tk, unk_token="<unk>")
    assert set(answer_token_ids(tok, "Yes")) == {1, 3}
    assert set(answer_token_ids(tok, "No")) == {2, 5}


@pytest.mark.parametrize("arch", ["tiny_llama", "tiny_mistral"])
def test_batched_equals_unbatched(arch, request):
    path = request.getfixturevalue(arch)
    j1 = HFJudge(str(path), batch_size=1, device="cpu")
    j4 = HFJudge(str(path), batch_size=4, device="cpu")
    p1 = j1._score(PAIRS)
    p4 = j4._score(PAIRS)
    assert p1.shape == (len(PAIRS),)
    np.testing.assert_allclose(p1, p4, atol=1e-4)
    assert np.all((p1 > 0) & (p1 < 1))
    assert np.ptp(p1) > 1e-4  # different prompts, different answers


def test_probability_is_softmax_of_yes_no_logits(tiny_llama):
    j = HFJudge(str(tiny_llama), device="cpu").load()
    prompt = j.render(*PAIRS[0])
    assert prompt.startswith("<s>[INST]") and prompt.rstrip().endswith("[/INST]")
    ln = j.yes_no_logits([prompt])[0]
    # recompute by hand from the full logits of one unpadded forward pass
    import torch

    ids = j._tok(prompt, return_tensors="pt", add_special_tokens=False)["input_ids"]
    with torch.no_grad():
        logits = j._model(input_ids=ids).logits[0, -1]
    yes = torch.logsumexp(logits[j._yes], 0).item()
    no = torch.logsumexp(logits[j._no], 0).item()
    assert ln == pytest.approx([yes, no], abs=1e-4)
    assert j._score([PAIRS[0]])[0] == pytest.approx(np.exp(yes) / (np.exp(yes) + np.exp(no)), abs=1e-5)


def test_one_shot_prompt_has_the_example_turn(tiny_llama):
    j0 = HFJudge(str(tiny_llama), shot=0, device="cpu")
    j1 = HFJudge(str(tiny_llama), shot=1, device="cpu")
    a, b = j0.render(*PAIRS[1]), j1.render(*PAIRS[1])
    assert b.count("[INST]") == 2 and a.count("[INST]") == 1
    assert j0.name != j1.name
    assert not np.allclose(j0._score(PAIRS[:2]), j1._score(PAIRS[:2]))


def test_lora_adapter_changes_logits(tiny_llama, tmp_path):
    adapter = make_tiny_lora_adapter(tiny_llama, tmp_path / "lora")
    base = get_judge(f"hf:{tiny_llama}", device="cpu")
    tuned = get_judge(f"hf:{tiny_llama}+{adapter}", device="cpu")
    assert "+lora" in tuned.name and tuned.name != base.name
    pb, pt = base._score(PAIRS), tuned._score(PAIRS)
    assert np.max(np.abs(pb - pt)) > 1e-3


def test_cache_hit_on_second_call(tiny_llama, monkeypatch):
    j = get_judge(f"hf:{tiny_llama}", device="cpu", batch_size=2, threshold=0.5)
    probs1, labels1 = j.predict(PAIRS)
    assert j.forward_calls == 1
    assert probs1.dtype == np.float32 and labels1.dtype == np.bool_
    np.testing.assert_array_equal(labels1, probs1 >= 0.5)

    def boom(*a, **k):
        raise AssertionError("forward pass on a cached pair")

    monkeypatch.setattr(j, "yes_no_logits", boom)
    again = get_judge(f"hf:{tiny_llama}", device="cpu", batch_size=2, threshold=0.5)
    monkeypatch.setattr(again, "yes_no_logits", boom)
    probs2, labels2 = again.predict(list(reversed(PAIRS)))
    np.testing.assert_array_equal(probs2, probs1[::-1])
    assert again.forward_calls == 0


def test_name_is_stable_and_safe(tiny_llama):
    j = get_judge("hf:mistralai/Mistral-7B-Instruct-v0.2+timchen0618/Mistral_BERDS_evaluator", threshold=0.5)
    assert j.name == ("hf-mistralai__Mistral-7B-Instruct-v0.2+timchen0618__Mistral_BERDS_evaluator"
                      "-berds-nosys-0shot-t0.5")  # the paper's prompt, system turn dropped for Mistral
    assert "/" not in j.name and " " not in j.name
    # a local path is named by its folder, not by where it happens to live
    assert get_judge(f"hf:{tiny_llama}").name.startswith("hf-tiny-llama-0-berds-0shot")
    assert get_judge(f"hf:{tiny_llama}", prompt="studio").name.startswith("hf-tiny-llama-0-studio-0shot")
    assert get_judge(f"hf:{tiny_llama}", decode="generate").name.endswith("-berds-0shot-gen-t0.5")


def test_missing_model_is_a_clear_error(tmp_path):
    from berds_core.judges import JudgeError

    j = get_judge(f"hf:{tmp_path / 'nope'}")
    with pytest.raises(JudgeError, match="cannot load model"):
        j.predict([("a", "b")])
    assert j.status()["ok"] is False


def test_bad_dtype_is_a_clear_error(tiny_llama):
    from berds_core.judges import JudgeError

    j = get_judge(f"hf:{tiny_llama}", dtype="float33")
    with pytest.raises(JudgeError, match="unknown dtype 'float33'"):
        j.load()
    assert "float33" in j.status()["detail"]


def test_judge_run_with_hf_judge(tiny_mistral):
    from berds_core.judges import judge_run

    entries = [{"id": "1", "question": "q", "perspectives": ["Art is good.", "Art is bad."],
                "ctxs": [{"id": "a", "text": "Music and art for children."}, {"id": "b", "text": "Tax law."}]}]
    j = get_judge(f"hf:{tiny_mistral}", device="cpu", batch_size=3)
    judge_run(entries, j, progress=False)
    preds = [c[j.name + "-preds"] for c in entries[0]["ctxs"]]  # inside each passage, one per perspective
    probs = [c[j.name + "-probs"] for c in entries[0]["ctxs"]]
    assert len(preds) == 2 and all(len(r) == 2 for r in preds)
    assert [[p >= j.threshold for p in row] for row in probs] == preds


def test_free_form_yes_probability(tiny_llama):
    from berds_core.eval.leaning import infer_sides_llm

    j = HFJudge(str(tiny_llama), device="cpu").load()
    prompts = ["Is the sky green? Answer Yes or No.", "Statement: water is wet. Is that so?"]
    probs = j.yes_probability(prompts)
    for q, p in zip(prompts, probs):  # the same softmax over (Yes, No) as pairs, on a one-turn chat
        ln = j.yes_no_logits([j.render_messages([{"role": "user", "content": q}])])[0]
        assert p == pytest.approx(1.0 / (1.0 + np.exp(ln[1] - ln[0])), abs=1e-5)
    sides = infer_sides_llm("Is it good?", ["It is good.", "It is not good."], j.yes_probability)
    assert sides.source == "llm" and {sides.support, sides.oppose} == {0, 1}


def test_generate_mode_is_greedy_16_tokens_parsed_by_the_authors_parser(tiny_mistral):
    from berds_core.judges.prompts import parse_answer

    j = get_judge(f"hf:{tiny_mistral}", device="cpu", decode="generate", batch_size=2)
    assert j.name.endswith("-berds-nosys-0shot-gen-t0.5")
    probs, labels = j.predict(PAIRS)
    replies = j.generate_answers(PAIRS)  # served from the generation cache now
    assert j.lm.calls > 0 and set(probs.tolist()) <= {0.0, 1.0}
    assert labels.tolist() == [parse_answer(r) for r in replies]
    assert all(len(j._tok(r, add_special_tokens=False)["input_ids"]) <= 16 for r in replies)
    # the same model in logits mode is a different judge (its own cache entries), loaded once
    k = get_judge(f"hf:{tiny_mistral}", device="cpu", batch_size=2)
    assert k.lm is j.lm and k.cache_key != j.cache_key


def test_cli_compare_decode_with_the_hf_judge(tiny_mistral, tmp_path, capsys):
    import json

    from berds_core.cli import main

    run = tmp_path / "run.jsonl"
    run.write_text(json.dumps({"id": "q", "question": "Q?", "perspectives": ["Art is good.", "Tax is bad."],
                               "ctxs": [{"id": "a", "title": "Art", "text": "Music and art for children."},
                                        {"id": "b", "title": "", "text": "The tax law is new."}]}) + "\n")
    assert main(["judge", "--run", str(run), "--out", str(tmp_path / "o.jsonl"), "--judge", f"hf:{tiny_mistral}",
                 "--device", "cpu", "--compare-decode", "--json", "--quiet"]) == 0
    res = json.loads(capsys.readouterr().out)
    c = res["decode_comparison"]
    assert c["pairs"] == 4 and 0 <= c["disagree"] <= 4 and c["logits_judge"] == res["judge"]
    assert c["disagree"] == c["logits_yes_generate_no"] + c["logits_no_generate_yes"]
    assert main(["judge", "--run", str(run), "--out", str(tmp_path / "e.jsonl"), "--decode", "generate",
                 "--quiet"]) == 2  # the embedded judge takes no LLM options
    assert "--decode" in capsys.readouterr().err


# --- a missing model fails fast, with one line and no hub retries (issue 18) ---


@pytest.fixture
def no_hub_calls(monkeypatch):
    """Any attempt to load through transformers / the hub fails the test."""
    import transformers

    def boom(*a, **k):
        raise AssertionError("tried to load from the hub")

    monkeypatch.setattr(transformers.AutoTokenizer, "from_pretrained", boom)
    monkeypatch.setattr(transformers.AutoModelForCausalLM, "from_pretrained", boom)


@pytest.mark.parametrize("spec", ["hf:/no/such/model/dir", "hf:./models/missing", "hf:~/missing-model"])
def test_missing_local_path_fails_at_once(spec, no_hub_calls, monkeypatch):
    from berds_core.judges import JudgeError

    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.delenv("TRANSFORMERS_OFFLINE", raising=False)
    with pytest.raises(JudgeError) as err:
        get_judge(spec).predict([("a", "b")])
    assert "no such folder" in str(err.value) and "\n" not in str(err.value)


def test_missing_hub_model_offline_fails_at_once(no_hub_calls, monkeypatch, tmp_path):
    from berds_core.net import hub
    from berds_core.judges import JudgeError

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(hub, "hub_reachable", lambda timeout=3.0: pytest.fail("probed the network while offline"))
    j = get_judge("hf:nonexistent-org/nonexistent-model")
    assert j.status()["ok"] is False and "HF_HUB_OFFLINE" in j.status()["detail"]
    with pytest.raises(JudgeError, match="not in the Hugging Face cache, and HF_HUB_OFFLINE is set"):
        j.predict([("a", "b")])
    # online but the hub cannot be reached: the same one line, no retries
    monkeypatch.delenv("HF_HUB_OFFLINE")
    monkeypatch.delenv("TRANSFORMERS_OFFLINE", raising=False)
    monkeypatch.setattr(hub, "hub_reachable", lambda timeout=3.0: False)
    with pytest.raises(JudgeError, match="hub is unreachable"):
        get_judge("hf:other-org/missing-model").predict([("a", "b")])
    # a missing adapter of a present model (a local folder with its config) fails the same way
    (tmp_path / "config.json").write_text("{}")
    with pytest.raises(JudgeError, match="cannot load adapter 'org/missing-lora'"):
        get_judge(f"hf:{tmp_path}+org/missing-lora").load()
    # a folder that is no model (no config.json) is one line too, never taken for a hub id
    with pytest.raises(JudgeError, match="cannot load model './tests': the folder has no config.json"):
        get_judge("hf:./tests+org/missing-lora").load()


def test_cli_missing_model_is_one_line(tmp_path, capsys, monkeypatch):
    from berds_core.cli import main

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    tsv = tmp_path / "p.tsv"
    tsv.write_text("question\tid\tdocument\tperspective\tlabel\nQ\t1\tdoc\tP\t1\n")
    assert main(["judge-eval", "--pairs", str(tsv), "--judge", "hf:nonexistent-org/nonexistent-model"]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "nonexistent-org/nonexistent-model" in err
