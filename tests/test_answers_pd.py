"""P.D. (DebateQA Perspective Diversity) on tiny causal LMs built here: the figures are checked against a
perplexity computed by hand on the same tokens; truncation; the released script's computation."""
import math

import numpy as np
import pytest

from berds_core.answers import perspective_diversity, pd_context
from berds_core.answers.perspective_diversity import perplexity, summarize_pd
from berds_core.generators import ScoredText, truncate_ids
from berds_core.generators.hf import HFGenerator
from tiny_models import make_tiny_causal_lm, make_tiny_copy_lm

PA = "free speech is good for people and science"
ANSWERS = ["the war was about money and tax", "school children need food and water in the world",
           "art and music are good for life"]
REFS = [[PA, "tax is bad"], [PA], ["energy and climate", "peace", PA]]


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    d = tmp_path_factory.mktemp("pd")
    return {"llama": make_tiny_causal_lm(d, arch="llama"), "gpt2": make_tiny_causal_lm(d, arch="gpt2"),
            "copy": make_tiny_copy_lm(d)}


def hand_logprobs(gen, context_ids, pa_ids):
    """log p of each partial-answer token after the context, from one unbatched forward pass."""
    import torch

    ids = torch.tensor([context_ids + pa_ids])
    with torch.no_grad():
        logp = torch.log_softmax(gen.model(input_ids=ids).logits[0].float(), -1)
    n = len(context_ids)
    return np.array([logp[n + i - 1, t].item() for i, t in enumerate(pa_ids)])


def ids_of(gen, text):
    return gen.tokenizer(text, add_special_tokens=False)["input_ids"]


@pytest.mark.parametrize("arch", ["llama", "gpt2"])
def test_pd_is_the_perplexity_of_the_partial_answer_tokens_by_hand(models, arch):
    gen = HFGenerator(str(models[arch]), device="cpu", batch_size=4)
    res = perspective_diversity(gen, ANSWERS, REFS)
    for a, refs, row in zip(ANSWERS, REFS, res):
        ctx = pd_context(gen, a)
        if arch == "llama":  # the chat template, one user turn ending in " Please restate."
            assert ctx == gen.tokenizer.apply_chat_template(
                [{"role": "user", "content": a + " Please restate."}], tokenize=False, add_generation_prompt=True)
        else:  # GPT-2 has no chat template: BOS + the text
            assert ctx == gen.tokenizer.bos_token + a + " Please restate.\n"
        hand = []
        for r in refs:
            lp = hand_logprobs(gen, ids_of(gen, ctx), ids_of(gen, r))
            hand.append(math.exp(-lp.mean()))
        assert row["ppl"] == pytest.approx(hand, rel=1e-4)
        assert row["tokens"] == [len(ids_of(gen, r)) for r in refs] and row["cut"] == 0
        assert row["pd_sum"] == pytest.approx(sum(hand), rel=1e-4)
        assert row["pd_mean"] == pytest.approx(sum(hand) / len(hand), rel=1e-4)
    # the shared-context path (above: the context runs once for its partial answers), padded batches of pairs
    # with separate contexts, and one pair at a time give the same numbers
    for opts in ({"share_prefix": False, "batch_size": 4}, {"share_prefix": False, "batch_size": 1},
                 {"share_prefix": True, "batch_size": 1}):
        other = perspective_diversity(HFGenerator(str(models[arch]), device="cpu", **opts), ANSWERS, REFS)
        for a, b in zip(res, other):
            assert a["ppl"] == pytest.approx(b["ppl"], rel=1e-4), opts
    summ = summarize_pd(res)
    assert summ["pd_sum"] == pytest.approx(np.mean([r["pd_sum"] for r in res]))


def test_pd_drops_when_the_answer_contains_the_partial_answer(models):
    gen = HFGenerator(str(models["copy"]), device="cpu")
    without = "the war was about money and tax in the country"
    with_pa = f"the war was about money and tax . {PA} ."
    res = perspective_diversity(gen, [without, with_pa], [[PA], [PA]])
    assert res[1]["pd_sum"] < 0.5 * res[0]["pd_sum"]
    # and per partial answer: only the one the answer states gets easier
    other = "energy and climate"
    res2 = perspective_diversity(gen, [with_pa], [[PA, other]])
    base = perspective_diversity(gen, [without], [[PA, other]])
    assert res2[0]["ppl"][0] < base[0]["ppl"][0]


def test_left_truncation_keeps_the_partial_answer_whole(models):
    gen = HFGenerator(str(models["llama"]), device="cpu")
    long_answer = " ".join(["the government should tax money for school and health"] * 30)
    ctx_ids, pa_ids = ids_of(gen, pd_context(gen, long_answer)), ids_of(gen, PA)
    limit = 48
    assert len(ctx_ids) + len(pa_ids) > limit
    (row,) = perspective_diversity(gen, [long_answer], [[PA]], max_length=limit)
    assert row["tokens"] == [len(pa_ids)] and row["cut"] == 0
    kept = ctx_ids[:1] + ctx_ids[len(ctx_ids) - (limit - len(pa_ids) - 1):]  # BOS + the context's end
    assert kept[0] == gen.tokenizer.bos_token_id and len(kept) + len(pa_ids) == limit
    hand = math.exp(-hand_logprobs(gen, kept, pa_ids).mean())
    assert row["ppl"][0] == pytest.approx(hand, rel=1e-4)
    # the released script cuts on the right: the partial answer is gone, it scores exp(0) = 1
    (rel,) = perspective_diversity(gen, [long_answer], [[PA]], max_length=limit, mode="released")
    assert rel["tokens"] == [0] and rel["cut"] == 1 and rel["unscored"] == 1
    assert rel["ppl"] == [1.0] and rel["pd_sum"] == rel["pd_mean"] == 1.0


def test_released_mode_divides_by_all_input_tokens_less_one_and_cuts_on_the_right(models):
    """GPT-2 (no chat template): the old default template, answer + EOS; the partial answer's tokens
    summed, divided by context + partial answer tokens - 1 (tests/test_answers_pd_released.py checks the
    released computation itself on three tokenizers)."""
    gen = HFGenerator(str(models["gpt2"]), device="cpu").load()
    a = "the war was about money and tax"
    ctx_ids, pa_ids = ids_of(gen, a + gen.tokenizer.eos_token), ids_of(gen, PA)
    (row,) = perspective_diversity(gen, [a], [[PA]], mode="released")
    lp = hand_logprobs(gen, ctx_ids, pa_ids)
    assert row["ppl"][0] == pytest.approx(math.exp(-lp.sum() / (len(ctx_ids) + len(pa_ids) - 1)), rel=1e-5)
    (defined,) = perspective_diversity(gen, [a], [[PA]])
    assert defined["ppl"][0] > row["ppl"][0]
    # a limit that cuts the partial answer: only its first tokens are scored, over the truncated input
    limit = len(ctx_ids) + 3
    (cut,) = perspective_diversity(gen, [a], [[PA]], mode="released", max_length=limit)
    assert cut["tokens"] == [3] and cut["cut"] == 1 and cut["unscored"] == 0
    assert cut["ppl"][0] == pytest.approx(math.exp(-lp[:3].sum() / (limit - 1)), rel=1e-5)


def test_n_counts_the_answers_averaged_and_unscored_partial_answers_are_reported(models):
    """Defined mode: a partial answer with no token to score has no value; an answer none of whose partial
    answers has one is left out of the means, and ``n`` says how many answers were averaged."""
    gen = HFGenerator(str(models["llama"]), device="cpu")
    res = perspective_diversity(gen, ANSWERS, [[PA, ""], [""], ["peace"]])
    assert res[0]["ppl"][1] is None and res[0]["unscored"] == 1 and res[0]["pd_mean"] == res[0]["ppl"][0]
    assert res[1]["pd_sum"] is None and res[1]["pd_mean"] is None and res[1]["unscored"] == 1
    summ = summarize_pd(res)
    assert summ["n"] == 2 and summ["answers"] == 3 and summ["partial_answers"] == 4
    assert summ["partial_answers_unscored"] == 2 and summ["partial_answers_cut"] == 0  # empty, not cut
    assert summ["pd_mean"] == pytest.approx((res[0]["pd_mean"] + res[2]["pd_mean"]) / 2)
    # a partial answer longer than the limit keeps its head and is reported cut
    (long,) = perspective_diversity(gen, [ANSWERS[0]], [[" ".join([PA] * 10)]], max_length=32)
    assert long["cut"] == 1 and long["unscored"] == 0 and summarize_pd([long])["partial_answers_cut"] == 1


def test_truncate_ids_rule():
    ctx, cont = list(range(100, 110)), [1, 2, 3]
    assert truncate_ids(ctx, cont, 20) == (ctx, cont)  # fits: unchanged
    assert truncate_ids(ctx, cont, 8) == (ctx[-5:], cont)
    assert truncate_ids(ctx, cont, 8, keep_first=True) == ([100] + ctx[-4:], cont)
    assert truncate_ids(ctx, cont, 8, side="right") == (ctx[:8], [])
    assert truncate_ids(ctx, cont, 12, side="right") == (ctx, [1, 2])
    assert truncate_ids(ctx, list(range(10)), 4) == (ctx[-1:], [0, 1, 2])  # continuation alone too long
    with pytest.raises(ValueError):
        truncate_ids(ctx, cont, 8, side="middle")


def test_perplexity_modes_on_given_logprobs():
    s = ScoredText(np.log([0.5, 0.25]), n_continuation=2, n_context=6, n_input=8)
    assert perplexity(s) == pytest.approx(math.exp(-(math.log(0.5) + math.log(0.25)) / 2))
    assert perplexity(s, "released") == pytest.approx(math.exp(-(math.log(0.5) + math.log(0.25)) / 7))
    assert math.isnan(perplexity(ScoredText(np.zeros(0), 3, 5, 5)))
    assert perplexity(ScoredText(np.zeros(0), 3, 5, 5), "released") == 1.0  # cut away entirely: exp(0)
    with pytest.raises(ValueError):
        perplexity(s, "paper")
