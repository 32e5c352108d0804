"""`berds pd --compat released` against DebateQA's released P.D. computation, rebuilt here independently
from ``shared/specs/debateqa-pd.md`` (the test's own string for each template, its own batched
cross-entropy with right padding), on three tiny models built here: GPT-2-shaped with no chat template
(the old default template: content + EOS), ChatML (Qwen2-Instruct's template, with its default system
turn), and Mistral's real v1 SentencePiece tokenizer (adds BOS, template starting with BOS: two BOS).
Per-question values must agree to 1e-5 relative, over-long answers included."""
import json
import math

import pytest

from berds_core.datasets.debateqa import partial_answer_text
from berds_core.answers.perspective_diversity import perspective_diversity, summarize_pd
from berds_core.cli import main
from berds_core.generators import GenerationError
from berds_core.generators.hf import HFGenerator
from tiny_models import make_tiny_causal_lm, make_tiny_chatml_lm, make_tiny_mistral_v1

LIMIT = 64  # the tokenizers' model_max_length
LONG = " ".join(("the government should tax money for school and health " * 6).split()[:48])  # context fits,
# the partial answers after it are cut (48 words: 49 to 60 context tokens, by tokenizer)
HUGE = " ".join(["art and music are good for life"] * 12)  # the context alone exceeds the limit
ROWS = [  # (id, answer, partial answers)
    ("q1", "the war was about money and tax",
     [{"point_of_view": "Tax is bad.", "explanation": "people need money for food"},
      {"point_of_view": "War is good for the state", "explanation": "it can win"},
      {"point_of_view": "peace", "explanation": "is good for all people in the world and for children"}]),
    ("q2", "school children need food and water in the world \n",
     [{"point_of_view": "Food", "explanation": "children  need food\nand water"},
      {"point_of_view": "School is good", "explanation": "  "}]),
    ("q3", LONG,
     [{"point_of_view": "Free speech", "explanation": "is good for people and science and art and music and for school children in the world"},
      {"point_of_view": "no", "explanation": ""}]),
    ("q4", HUGE, [{"point_of_view": "peace", "explanation": "is good"},
                  {"point_of_view": "energy", "explanation": "and climate"}]),
    ("q5", "energy and climate are about science and technology",
     [{"point_of_view": "Technology", "explanation": "will work"}]),
    ("q6", "do you support free speech ? yes , most people do",
     [{"point_of_view": "Yes", "explanation": "free speech is good"},
      {"point_of_view": "No", "explanation": "not all speech should be free"}]),
]
WORDS = " ".join(a + " " + " ".join(p["point_of_view"] + " " + p["explanation"] for p in pas) for _, a, pas in ROWS)
# the released script's context, written out by hand per template (not through a chat template)
CONTEXTS = {
    "gpt2": lambda tok, a: a + tok.eos_token,
    "chatml": lambda tok, a: ("<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n<|im_start|>user\n"
                              + a + "<|im_end|>\n"),
    "mistral": lambda tok, a: tok.bos_token + "[INST] " + a + " [/INST]",
}


def set_model_max_length(path, n):
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(path))
    tok.model_max_length = n
    tok.save_pretrained(str(path))
    return path


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    d = tmp_path_factory.mktemp("pd-released")
    return {"gpt2": set_model_max_length(make_tiny_causal_lm(d, arch="gpt2", extra_text=WORDS), LIMIT),
            "chatml": set_model_max_length(make_tiny_chatml_lm(d, extra_text=WORDS), LIMIT),
            "mistral": set_model_max_length(make_tiny_mistral_v1(d / "mistral"), LIMIT)}


def spec_pd(path, arch, rows, batch=20, max_length=None):
    """The released computation, step by step from the spec: per question the mean perplexity, and per
    partial answer its perplexity, whether truncation cut it, and whether it was cut away entirely."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(path))
    model = AutoModelForCausalLM.from_pretrained(str(path), dtype=torch.float32).eval()
    tok.pad_token = tok.eos_token
    tok.padding_side = "right"
    kw = {"max_length": max_length} if max_length else {}  # default: model_max_length
    out = []
    for _, answer, pas in rows:
        x = CONTEXTS[arch](tok, answer)
        ys = [pa["point_of_view"] + ". " + pa["explanation"] for pa in pas]
        n_x = len(tok.encode(x, add_special_tokens=False))
        ppl, cut, gone = [], [], []
        for i in range(0, len(ys), batch):
            texts = [x + y for y in ys[i:i + batch]]
            enc = tok(texts, return_tensors="pt", padding=True, truncation=True, **kw)
            labels = enc["input_ids"].clone()
            labels[:, :n_x] = -100
            with torch.no_grad():
                logits = model(input_ids=enc["input_ids"], attention_mask=enc["attention_mask"]).logits
            loss = torch.nn.functional.cross_entropy(logits[:, :-1].transpose(1, 2), labels[:, 1:],
                                                     ignore_index=-100, reduction="none")
            mask = enc["attention_mask"][:, 1:]
            ppl += torch.exp((loss * mask).sum(1) / mask.sum(1)).tolist()
            for t, kept in zip(texts, enc["attention_mask"].sum(1).tolist()):
                whole = len(tok(t)["input_ids"])
                cut.append(whole > kept)
                gone.append(kept <= n_x)
        out.append({"pd": sum(ppl) / len(ppl), "ppl": ppl, "cut": cut, "gone": gone})
    return out


def released_refs(rows):
    return [[partial_answer_text(pa, "released") for pa in pas] for _, _, pas in rows]


@pytest.mark.parametrize("arch", ["gpt2", "chatml", "mistral"])
def test_released_mode_matches_the_spec_per_question(models, arch):
    spec = spec_pd(models[arch], arch, ROWS)
    # the rows exercise what they are meant to: partial answers cut, cut away entirely (1.0), whole
    assert any(spec[2]["cut"]) and not all(spec[2]["gone"]) and all(spec[3]["gone"]) and not any(spec[0]["cut"])
    assert spec[3]["ppl"] == pytest.approx([1.0] * len(ROWS[3][2]))
    res = perspective_diversity(HFGenerator(str(models[arch]), device="cpu"), [a for _, a, _ in ROWS],
                                released_refs(ROWS), mode="released")
    for s, r in zip(spec, res):
        assert r["pd_mean"] == pytest.approx(s["pd"], rel=1e-5)
        assert r["ppl"] == pytest.approx(s["ppl"], rel=1e-5)
        assert r["cut"] == sum(s["cut"]) and r["unscored"] == sum(s["gone"])
    summ = summarize_pd(res)
    assert summ["n"] == summ["answers"] == len(ROWS)
    assert summ["pd_mean"] == pytest.approx(sum(s["pd"] for s in spec) / len(spec), rel=1e-5)
    assert summ["partial_answers_cut"] == sum(sum(s["cut"]) for s in spec)
    assert summ["partial_answers_unscored"] == sum(sum(s["gone"]) for s in spec) >= 2
    # one pair at a time (no shared context, no padding) and small batches give the same values
    for opts in ({"share_prefix": False, "batch_size": 1}, {"share_prefix": True, "batch_size": 2}):
        other = perspective_diversity(HFGenerator(str(models[arch]), device="cpu", **opts), [a for _, a, _ in ROWS],
                                      released_refs(ROWS), mode="released")
        assert [o["pd_mean"] for o in other] == pytest.approx([s["pd"] for s in spec], rel=1e-5), opts


def test_released_mode_truncates_at_the_tokenizers_length_not_the_generators(models):
    """The tokenizer's model_max_length (64), not the generator's limit (here 24, a studio default elsewhere):
    the Phi-3-128k difference. A given max_length replaces model_max_length."""
    gen = HFGenerator(str(models["chatml"]), device="cpu", max_length=24)
    res = perspective_diversity(gen, [a for _, a, _ in ROWS], released_refs(ROWS), mode="released")
    assert [r["pd_mean"] for r in res] == pytest.approx([s["pd"] for s in spec_pd(models["chatml"], "chatml", ROWS)],
                                                        rel=1e-5)
    shorter = perspective_diversity(gen, [a for _, a, _ in ROWS], released_refs(ROWS), mode="released", max_length=40)
    spec40 = spec_pd(models["chatml"], "chatml", ROWS, max_length=40)
    assert [r["pd_mean"] for r in shorter] == pytest.approx([s["pd"] for s in spec40], rel=1e-5)
    assert sum(r["cut"] for r in shorter) > sum(r["cut"] for r in res)


def test_released_mode_cli_on_debateqa_files(models, tmp_path, capsys):
    q = tmp_path / "dqa.jsonl"
    q.write_text("".join(json.dumps({"id": i, "question": f"Question {i}?", "partial_answers": pas}) + "\n"
                         for i, _, pas in ROWS))
    a = tmp_path / "answers.jsonl"
    a.write_text("".join(json.dumps({"id": i, "generation": g}) + "\n" for i, g, _ in ROWS)
                 + json.dumps({"id": "not-a-question", "generation": "no partial answers"}) + "\n")
    out = tmp_path / "pd.jsonl"
    assert main(["pd", "--answers", str(a), "--questions", str(q), "--model", f"hf:{models['gpt2']}", "--device", "cpu",
                 "--compat", "released", "--out", str(out), "--json"]) == 0
    res = json.loads(capsys.readouterr().out)
    spec = spec_pd(models["gpt2"], "gpt2", ROWS)
    per = [json.loads(line) for line in out.read_text().splitlines()]
    assert [p["id"] for p in per] == [i for i, _, _ in ROWS]
    assert [p["pd_mean"] for p in per] == pytest.approx([s["pd"] for s in spec], rel=1e-5)
    assert res["mode"] == "released" and res["max_length"] == LIMIT
    assert res["n"] == len(ROWS) and res["answers_skipped"] == 1 and res["skipped_ids"] == ["not-a-question"]
    assert res["pd_mean"] == pytest.approx(sum(s["pd"] for s in spec) / len(spec), rel=1e-5)
    assert res["partial_answers_unscored"] == len(ROWS[3][2]) and res["partial_answers_cut"] >= 3
    # the default mode still refuses an answer that is not in the questions file
    assert main(["pd", "--answers", str(a), "--questions", str(q), "--model", f"hf:{models['gpt2']}"]) == 2
    assert "not-a-question" in capsys.readouterr().err
    # answer-eval's P.D. column in released mode is the same computation (partial answers joined by ". ")
    a2 = tmp_path / "answers2.jsonl"
    a2.write_text("".join(json.dumps({"id": i, "generation": g}) + "\n" for i, g, _ in ROWS))
    perq = tmp_path / "perq.jsonl"
    assert main(["answer-eval", "--answers", str(a2), "--questions", str(q), "--pd-model", f"hf:{models['gpt2']}",
                 "--device", "cpu", "--compat", "released", "--bootstrap", "10", "--per-question", str(perq),
                 "--json"]) == 0
    summ = json.loads(capsys.readouterr().out)["summaries"]["answers2"]
    assert summ["pd_mode"] == "released" and summ["pd_partial_answers_unscored"] == len(ROWS[3][2])
    got = [json.loads(line)["pd_mean"] for line in perq.read_text().splitlines()]
    assert got == pytest.approx([s["pd"] for s in spec], rel=1e-5)


def test_released_mode_needs_a_limit_when_the_model_has_fewer_positions(tmp_path):
    """No model_max_length: the released script cuts nothing; an input beyond the model's positions is a clear
    error (GPT-2's learned positions would fail), with --max-length as the way out."""
    path = make_tiny_causal_lm(tmp_path, arch="gpt2")  # the tokenizer sets no model_max_length; 1024 positions
    gen = HFGenerator(str(path), device="cpu")
    long_answer = " ".join(["the war was about money and tax"] * 150)
    with pytest.raises(GenerationError, match="exceeds the 1024 positions"):
        perspective_diversity(gen, [long_answer], [["peace. is good"]], mode="released")
    (row,) = perspective_diversity(gen, [long_answer], [["peace. is good"]], mode="released", max_length=1024)
    assert row["ppl"] == [1.0] and row["unscored"] == 1


def test_released_mode_refuses_a_backend_that_cannot_score_token_ids():
    from berds_core.generators.base import Generator

    class TextOnly(Generator):
        def _name_stem(self):
            return "text-only"

    with pytest.raises(GenerationError, match="use an hf: model"):
        perspective_diversity(TextOnly(), ["an answer"], [["a view. why"]], mode="released")


def test_released_partial_answer_text_is_exact():
    pa = {"point_of_view": "Homework should stay.", "explanation": " It builds\npractice.  "}
    assert partial_answer_text(pa, "released") == "Homework should stay..  It builds\npractice.  "
    assert partial_answer_text(pa) == "Homework should stay. It builds practice."
    assert partial_answer_text({"point_of_view": "No", "explanation": None}, "released") == "No. "
