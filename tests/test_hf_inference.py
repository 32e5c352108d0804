"""The optimised hf forward path (prefix reuse, length buckets, merged LoRA) decides as the plain path does.

Tiny random models in float32 on the CPU (built by the test, nothing downloaded): the same P(yes) within
float tolerance and the same decisions, with the shared prefix of a passage's perspectives computed once.
"""
import numpy as np
import pytest

from berds_core.generators.hf_inference import (InferenceOptions, PrefixGroup, group_batches, prefix_groups,
                                                row_batches)
from berds_core.judges.hf import HFJudge

from tiny_models import make_tiny_causal_lm, make_tiny_lora_adapter, make_tiny_mistral_v1

# passages with 1, 2 and 3 perspectives, of different lengths
PASSAGES = [
    ("Cats are good pets and keep mice away from the house.", ["Cats are good pets."]),
    ("The city banned cars from its centre last year, and the air in the old town got cleaner within months.",
     ["Cars should be banned from city centres.", "Cities are cleaner without cars."]),
    ("Nuclear plants emit little carbon but leave waste that stays dangerous for thousands of years.",
     ["Nuclear power should be expanded.", "Nuclear waste is too dangerous.", "Carbon emissions matter most."]),
    ("Homework takes time from play and sleep.", ["Homework should be abolished.", "Children need more sleep."]),
]
PAIRS = [(d, p) for d, ps in PASSAGES for p in ps]
TOL = 1e-4  # float32 on CPU: the paths differ by matmul shapes only (seen: ~3e-6)


@pytest.fixture(scope="module", autouse=True)
def one_thread():
    """Tiny matrices: one thread (two threads on a shared, loaded machine spin ~10x slower)."""
    import torch

    old = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(old)


@pytest.fixture(scope="module")
def mistral_v1(tmp_path_factory):
    """Tiny Mistral with the real v1 tokenizer; its answer head makes P(yes) vary between pairs."""
    return make_tiny_mistral_v1(tmp_path_factory.mktemp("mv1") / "tiny-mistral-v1-inference", answer_head=True)


@pytest.fixture(scope="module")
def mv1_loaded(mistral_v1):
    """The tiny Mistral loaded once; judges with different forward paths share it (no adapter to merge)."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    return AutoModelForCausalLM.from_pretrained(str(mistral_v1)).eval(), AutoTokenizer.from_pretrained(str(mistral_v1))


@pytest.fixture(scope="module")
def llama_lora(tmp_path_factory):
    words = " ".join(d + " " + " ".join(ps) for d, ps in PASSAGES)
    tmp = tmp_path_factory.mktemp("llama")
    path = make_tiny_causal_lm(tmp, arch="llama", seed=5, extra_text=words)
    return path, make_tiny_lora_adapter(path, tmp / "lora", std=0.3)


def _judge(path, inference, adapter=None, **kw):
    judge = HFJudge(str(path), adapter and str(adapter), device="cpu", inference=inference, **kw).load()
    judge.lm.counters.reset()  # generators are shared per (model, options) in a process
    return judge


def _on(loaded, inference, **kw):
    """A judge with its own forward path around the already loaded tiny Mistral."""
    model, tok = loaded
    return HFJudge.from_loaded(model, tok, "tiny-mistral-v1-inference", inference=inference, device="cpu", **kw)


def _same(a, b, tol=TOL):
    assert a.shape == b.shape == (len(PAIRS),)
    assert np.max(np.abs(a - b)) < tol
    np.testing.assert_array_equal(a >= 0.5, b >= 0.5)


# --- options ----------------------------------------------------------------------------------------------------


def test_options_parse_and_resolve():
    auto = InferenceOptions.parse(None)
    assert auto == InferenceOptions.parse("auto") and auto.batching is None and auto.attn == "sdpa"
    cuda, cpu = auto.resolved("cuda:0"), auto.resolved("cpu")
    assert (cuda.batching, cuda.prefix, cuda.merge_lora) == ("bucket", True, True)  # the default on CUDA
    assert (cpu.batching, cpu.prefix, cpu.merge_lora) == ("sorted", False, False)
    assert InferenceOptions.parse("plain").resolved("cuda") == InferenceOptions.plain()
    o = InferenceOptions.parse("fast,no-merge,compile=reduce-overhead,tokens=4096,min-prefix=8,attn=eager")
    assert (o.batching, o.prefix, o.merge_lora, o.compile, o.batch_tokens, o.min_prefix, o.attn) == \
        ("bucket", True, False, "reduce-overhead", 4096, 8, "eager")
    assert InferenceOptions.parse("prefix").resolved("cpu").batching == "sorted"
    assert InferenceOptions.parse("plain,compile").compile == "default"
    for bad in ("turbo", "fast,prefx", "tokens=0", "compile=warp", "attn=magic"):
        with pytest.raises(ValueError, match="unknown inference option") as err:
            InferenceOptions.parse(bad)
        assert "\n" not in str(err.value)


def test_prefix_groups_reassemble_every_prompt():
    doc_a, doc_b = list(range(100, 140)), list(range(200, 230))
    tail = [7, 8, 9]
    seqs = [[1] + doc_a + [5, 50] + tail, [1] + doc_b + [5, 60] + tail, [1] + doc_a + [5, 51, 52] + tail,
            [1, 2, 3], [1] + doc_a + [5, 53] + tail, [1] + doc_b + [5, 61] + tail, [1] + doc_b]
    groups, alone = prefix_groups(seqs, min_prefix=16)
    members = sorted(j for g in groups for j in g.members)
    assert sorted(members + alone) == list(range(len(seqs)))  # each prompt exactly once
    by_doc = {tuple(sorted(g.members)) for g in groups}
    assert by_doc == {(0, 2, 4), (1, 5, 6)} and alone == [3]
    for g in groups:
        assert g.prefix >= 16
        for j in g.members:
            assert seqs[j][:g.prefix] == seqs[g.members[0]][:g.prefix] and len(seqs[j]) > g.prefix
    # [1] + doc_b is a whole prompt and the prefix of two others: its group leaves it its last token
    assert next(g for g in groups if 6 in g.members).prefix == len(doc_b)
    # identical prompts still keep one token each; short common prefixes are not grouped
    g2, a2 = prefix_groups([[1] + doc_a, [1] + doc_a], min_prefix=16)
    assert [(g.prefix, sorted(g.members)) for g in g2] == [(len(doc_a), [0, 1])] and a2 == []
    assert prefix_groups([[1, 2, 3, 4], [1, 2, 3, 5]], min_prefix=16) == ([], [0, 1])


def test_prefix_groups_stop_where_saving_drops():
    """A shared head (a one-shot example) and per-document prefixes: groups never save less than apart."""
    head = list(range(1000, 1010))
    seqs = [head + [d] * 40 + [s] for d in (1, 2) for s in (7, 8, 9)]
    groups, alone = prefix_groups(seqs, min_prefix=4)
    saved = sum((len(g.members) - 1) * g.prefix for g in groups)
    assert saved >= 2 * 2 * 50 and not alone  # two documents, three prompts each, 50 shared tokens


def test_row_batches_and_group_batches():
    lengths = [30, 5, 12, 31, 6, 29, 11]
    assert row_batches(lengths, "input", 3) == [[0, 1, 2], [3, 4, 5], [6]]
    assert row_batches(lengths, "sorted", 3) == [[1, 4, 6], [2, 5, 0], [3]]
    buckets = row_batches(lengths, "bucket", 3, budget=60)
    assert sorted(i for b in buckets for i in b) == list(range(len(lengths)))
    for b in buckets:
        assert len(b) * max(lengths[i] for i in b) <= 60 or len(b) == 1
    assert [len(b) for b in buckets] == [4, 2, 1]  # short rows make larger batches: 5,6,11,12 | 29,30 | 31
    groups = [PrefixGroup(100, [0, 1]), PrefixGroup(20, [2, 3, 4]), PrefixGroup(90, [5, 6])]
    lens = [150, 160, 40, 45, 41, 130, 131]
    batches = group_batches(groups, lens, budget=400, max_rows=8)
    assert sorted(j for b in batches for g in b for j in g.members) == list(range(7))
    for b in batches:
        pmax = max(g.prefix for g in b)
        smax = max(lens[j] - g.prefix for g in b for j in g.members)
        rows = sum(len(g.members) for g in b)
        assert len(b) == 1 or len(b) * pmax + rows * smax <= 400


# --- same decisions as the plain path -----------------------------------------------------------------------------


@pytest.mark.slow
def test_fast_paths_equal_plain_on_mistral_v1(mv1_loaded):
    """Prefix reuse on/off, buckets vs fixed batches, input order: P(yes) within 1e-4, decisions identical."""
    ref = _on(mv1_loaded, "plain", batch_size=2)._score(PAIRS)
    assert np.ptp(ref) > 0.05 and (ref >= 0.5).any() and (ref < 0.5).any()  # the pairs do differ
    for spec in ("fast", "fast,no-prefix", "plain,prefix", "plain,input", "fast,tokens=300", "fast,min-prefix=4"):
        _same(_on(mv1_loaded, spec, batch_size=2)._score(PAIRS), ref)
    # one forward pass holding every passage (a batch mixing passages) and one group per batch
    _same(_on(mv1_loaded, "fast", batch_size=16)._score(PAIRS), ref)
    _same(_on(mv1_loaded, "fast,tokens=1", batch_size=1)._score(PAIRS), ref)
    # pairs in any order, a passage's perspectives not next to each other
    perm = np.random.default_rng(0).permutation(len(PAIRS))
    shuffled = _on(mv1_loaded, "fast", batch_size=3)._score([PAIRS[i] for i in perm])
    _same(shuffled[np.argsort(perm)], ref)


@pytest.mark.slow
def test_prefix_computed_once_per_passage(mv1_loaded):
    """Each passage's document goes through the model in exactly one row; fewer tokens than the plain path."""
    import torch

    fast = _on(mv1_loaded, "fast", batch_size=4)
    tok = fast._tok
    rows: list[list[int]] = []
    hook = fast._model.get_input_embeddings().register_forward_hook(
        lambda mod, args, out: rows.extend(args[0].tolist()))
    try:
        fast._score(PAIRS)
    finally:
        hook.remove()
    multi = [d for d, ps in PASSAGES if len(ps) > 1]
    assert fast.lm.counters["prefix_rows"] == len(multi)
    for d, ps in PASSAGES:
        doc_ids = tok(" " + d, add_special_tokens=False)["input_ids"][2:12]  # a run of the document's tokens

        def holds(row, sub=doc_ids):
            return any(row[i:i + len(sub)] == sub for i in range(len(row) - len(sub) + 1))
        assert sum(holds(r) for r in rows) == 1, d  # computed once, whatever the number of perspectives
    plain = _on(mv1_loaded, "plain", batch_size=4)
    plain._score(PAIRS)
    saved = 0  # what computing each passage's shared prefix once saves: (perspectives - 1) x prefix tokens
    for d, ps in PASSAGES:
        seqs = plain.lm.tokenize([plain.render(d, p) for p in ps])
        prefix = min(len(seqs[0]) if len(seqs) == 1 else next(
            (i for i in range(len(seqs[0])) if any(len(s) <= i or s[i] != seqs[0][i] for s in seqs)), 0), 10**9)
        saved += (len(ps) - 1) * prefix
    assert saved > 60
    assert fast.lm.counters["tokens"] == plain.lm.counters["tokens"] - saved
    assert plain.lm.counters["prefix_rows"] == 0 and plain.lm.counters["logit_rows"] == len(PAIRS)
    assert fast.lm.counters["logit_rows"] == len(PAIRS)
    assert isinstance(fast.lm.last_logits([]), torch.Tensor)


@pytest.mark.slow
def test_one_shot_and_truncated_prompts_equal_plain(mv1_loaded):
    """One-shot prompts share the worked example across passages too; prompts cut at max_length stay equal."""
    ref = _on(mv1_loaded, "plain", shot=1, batch_size=3)._score(PAIRS)
    fast = _on(mv1_loaded, "fast", shot=1, batch_size=3)
    _same(fast._score(PAIRS), ref)
    assert fast.lm.counters["prefix_tokens"] > 0
    ref_cut = _on(mv1_loaded, "plain", max_length=40, batch_size=2)._score(PAIRS)
    _same(_on(mv1_loaded, "fast", max_length=40, batch_size=2)._score(PAIRS), ref_cut)


@pytest.mark.slow
def test_merged_lora_equals_unmerged(llama_lora):
    """The adapter merged into the weights (merge_and_unload) gives the adapter's P(yes), prefix reuse or not."""
    from peft import PeftModel

    path, adapter = llama_lora
    plain = _judge(path, "plain", adapter, batch_size=2)
    assert isinstance(plain._model, PeftModel)  # unmerged: the adapter's own modules run
    ref = plain._score(PAIRS)
    base = _judge(path, "plain", batch_size=2)._score(PAIRS)
    assert np.max(np.abs(ref - base)) > 1e-3  # the adapter matters
    merged = _judge(path, "plain,merge", adapter, batch_size=2)
    assert not isinstance(merged._model, PeftModel) and "LoRA merged" in merged.status()["detail"]
    _same(merged._score(PAIRS), ref)
    _same(_judge(path, "fast", adapter, batch_size=2)._score(PAIRS), ref)  # merged + prefix + buckets
    _same(_judge(path, "fast,no-merge", adapter, batch_size=2)._score(PAIRS), ref)


@pytest.mark.slow
def test_judge_run_and_defaults(mistral_v1):
    """On the CPU the default is the plain path; a judged run through the fast path stores the same verdicts."""
    from berds_core.judges import get_judge, judge_run

    default = get_judge(f"hf:{mistral_v1}", device="cpu").load()
    assert default.lm.fast == InferenceOptions.plain().resolved("cpu") or default.lm.fast.prefix is False
    assert "no prefix reuse" in default.status()["detail"]
    fast = get_judge(f"hf:{mistral_v1}", device="cpu", inference="fast", batch_size=2)
    assert fast.name == default.name  # same function, same cached predictions
    entries = [{"id": str(i), "question": "q", "perspectives": ps, "ctxs": [{"id": "a", "text": d}]}
               for i, (d, ps) in enumerate(PASSAGES)]
    fast.load().lm.counters.reset()
    judge_run(entries, fast, progress=False)
    probs = np.array([p for e in entries for p in e["ctxs"][0][fast.name + "-probs"]])
    _same(probs, default._score(PAIRS))
    assert fast.lm.counters["prefix_rows"] == 3  # the three passages with more than one perspective


def test_cli_rejects_bad_inference_options(tmp_path, capsys):
    import json

    from berds_core.cli import main

    run = tmp_path / "run.jsonl"
    run.write_text(json.dumps({"id": "q", "question": "Q?", "perspectives": ["A."],
                               "ctxs": [{"id": "a", "text": "T."}]}) + "\n")
    with pytest.raises(SystemExit) as exit_:  # a usage error: read with the command line, before the
        main(["judge", "--run", str(run), "--out", str(tmp_path / "o.jsonl"), "--judge", "hf:./nope",  # model
              "--inference", "fast,warp", "--quiet"])  # folder (missing here) is looked at
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert "--inference" in err and "unknown inference option 'warp'" in err and len(err.strip().splitlines()) == 1
    assert main(["judge", "--run", str(run), "--out", str(tmp_path / "o.jsonl"), "--inference", "fast",
                 "--quiet"]) == 2  # the embedded judge has no forward path to choose
    assert "only transformers judges" in capsys.readouterr().err
