"""The hf judge on tiny random Llama/Mistral models built in the test (no download)."""
import numpy as np
import pytest

from berds_core.judges import get_judge
from berds_core.judges.hf import HFJudge, answer_token_ids

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
    from berds_core.leaning import infer_sides_llm

    j = HFJudge(str(tiny_llama), device="cpu").load()
    prompts = ["Is the sky green? Answer Yes or No.", "Statement: water is wet. Is that so?"]
    probs = j.yes_probability(prompts)
    for q, p in zip(prompts, probs):  # the same softmax over (Yes, No) as pairs, on a one-turn chat
        ln = j.yes_no_logits([j.render_messages([{"role": "user", "content": q}])])[0]
        assert p == pytest.approx(1.0 / (1.0 + np.exp(ln[1] - ln[0])), abs=1e-5)
    sides = infer_sides_llm("Is it good?", ["It is good.", "It is not good."], j.yes_probability)
    assert sides.source == "llm" and {sides.support, sides.oppose} == {0, 1}
