"""The studio's one stance model (``berds_core.stance``): examples from the development sources, the resumable
trainer, LoRA export and merge, pair encodings through the embedding store, each use's rule, and the shipped
weights. Training runs on a tiny random BERT built here (no download)."""
import json
from pathlib import Path

import numpy as np
import pytest

from berds_core.records import Passage, Question
from berds_core.stance import StanceModel, passage_string
from berds_core.stance import examples as E
from berds_core.stance import rules
from berds_core.stance.network import load_weights, save_weights
from berds_core.stance.training import partial_nll, signature, train

S, O, U = E.SUPPORT, E.OPPOSE, E.UNRELATED
TRAIN = [
    E.Example("q1", "procon", "Should cats be pets?", "Cats are loving pets that help lonely people.", (S,)),
    E.Example("q1", "procon", "Should cats be pets?", "Cats kill birds and should not be kept as pets.", (O,)),
    E.Example("q1", "procon", "Should cats be pets?", "The stock market fell on Tuesday.", (U,)),
    E.Example("q2", "procon", "Should cars be banned?", "Cars pollute the air and should be banned from cities.", (S,)),
    E.Example("q2", "procon", "Should cars be banned?", "Cars give people freedom and should not be banned.", (O,)),
    E.Example("q2", "human", "Cars should be banned.", "A recipe for lemon cake.", (O, U)),
]
OPTS = {"layers": 2, "lora_r": 4, "lora_alpha": 8, "max_length": 32, "epochs": 40.0, "batch_size": 3, "lr": 1e-2,
        "lora_dropout": 0.0}


def _tiny_base(path: Path) -> Path:
    from transformers import BertConfig, BertModel, BertTokenizerFast

    words = sorted({w.lower().strip(".,?") for e in TRAIN for w in (e.target + " " + e.text).split()}
                   | {"not", "cake", "dogs", "good"})
    path.mkdir(parents=True, exist_ok=True)
    (path / "vocab.txt").write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *words]) + "\n")
    BertTokenizerFast(vocab_file=str(path / "vocab.txt")).save_pretrained(path)
    import torch

    torch.manual_seed(0)
    BertModel(BertConfig(vocab_size=len(words) + 5, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                         intermediate_size=64, max_position_embeddings=64)).save_pretrained(path)
    return path


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    base = _tiny_base(tmp_path_factory.mktemp("tiny-bert"))
    out = tmp_path_factory.mktemp("w") / "stance.npz"
    path = train(TRAIN, OPTS, out, base=str(base), version="t1", progress=None, autocast=False, meta={"test": 1})
    return base, path


def _direct_logits(base, path, pairs):
    """The trained network as trained (peft-wrapped, unmerged) is not kept, so rebuild it from the file the
    slow way: base + LoRA modules (not merged) + head, and compare with the merged inference network."""
    import torch
    from transformers import AutoTokenizer

    from berds_core.stance import network

    w = load_weights(path)
    cfg = w["config"]
    net = network.add_lora(network.build_network(str(base), cfg["layers"]), cfg["lora_r"], cfg["lora_alpha"], 0.0)
    for name, module in net.enc.named_modules():
        clean = name.replace("base_model.model.", "", 1)
        if clean in w["lora"] and hasattr(module, "lora_A"):
            A, B = w["lora"][clean]
            module.lora_A["default"].weight.data = torch.from_numpy(A)
            module.lora_B["default"].weight.data = torch.from_numpy(B)
    net.head.weight.data = torch.from_numpy(w["head"][0])
    net.head.bias.data = torch.from_numpy(w["head"][1])
    tok = AutoTokenizer.from_pretrained(str(base))
    enc = tok([a for a, _ in pairs], [b for _, b in pairs], truncation="longest_first", max_length=cfg["max_length"],
              padding=True, return_tensors="pt")
    with torch.inference_mode():
        return net.eval()(**enc).numpy()


def test_training_learns_and_the_merged_model_equals_the_adapted_one(tiny, tmp_path, monkeypatch):
    monkeypatch.setenv("BERDS_CACHE", str(tmp_path))
    base, path = tiny
    w = load_weights(path)
    assert w["config"]["classes"] == ["support", "oppose", "unrelated"] and w["meta"]["test"] == 1
    assert len(w["lora"]) == 2 * 6  # query, key, value, attention output, intermediate, output per layer
    model = StanceModel(path, base=str(base), encoding="fp32")
    pairs = [(e.target, e.text) for e in TRAIN]
    Z = model.logits(pairs)
    np.testing.assert_allclose(Z, _direct_logits(base, path, pairs), atol=2e-3)  # LoRA merged == LoRA applied
    P = model.probs(pairs)
    assert np.allclose(P.sum(1), 1.0)
    full = [i for i, e in enumerate(TRAIN) if len(e.allowed) == 1]
    assert (P[full].argmax(1) == [TRAIN[i].allowed[0] for i in full]).sum() >= 4  # it learns (chance: 1/3)
    assert P[5, S] < 0.5  # the partial label "oppose or unrelated" pushes support down
    q8 = StanceModel(path, base=str(base), encoding="int8", store=False)
    assert q8.probs(pairs[:3]).shape == (3, 3) and q8.store_key.startswith("stance-t1|int8|msl32")


def test_encodings_are_stored_once_per_pair_and_shared(tiny, tmp_path, monkeypatch):
    monkeypatch.setenv("BERDS_CACHE", str(tmp_path))
    base, path = tiny
    pairs = [(e.target, e.text) for e in TRAIN]
    a = StanceModel(path, base=str(base), encoding="fp32")
    V = a.encode(pairs + pairs[:2])
    assert a.n_encoded == len(pairs) and V.shape == (len(pairs) + 2, 32)  # duplicates encoded once
    P1 = a.sides("Should cats be pets?", [e.text for e in TRAIN[:3]])
    assert a.n_encoded == len(pairs)  # the preset reads the stored encodings
    b = StanceModel(path, base=str(base), encoding="fp32")
    np.testing.assert_allclose(b.encode(pairs[::-1]), V[:len(pairs)][::-1], atol=1e-6)
    assert b.n_encoded == 0 and b._net is None  # all from the store: the network never loaded
    np.testing.assert_allclose(b.sides("Should cats be pets?", [e.text for e in TRAIN[:3]]), P1)
    from berds_core.embeddings.text_encoders import embedding_store

    assert embedding_store().count(a.store_key) == len(pairs)
    c = StanceModel(path, base=str(base), encoding="int8")  # another precision: other vectors, another key
    c.encode(pairs[:1])
    assert c.n_encoded == 1 and embedding_store().count(c.store_key) == 1


def test_training_resumes_from_its_checkpoint(tiny, tmp_path, monkeypatch):
    import torch

    base, _ = tiny
    opts = dict(OPTS, epochs=4.0)
    whole = train(TRAIN, opts, tmp_path / "whole.npz", base=str(base), progress=None, autocast=False)
    calls = {"n": 0}
    real = torch.optim.AdamW.step

    def dying(self, *a, **k):
        calls["n"] += 1
        if calls["n"] == 5:
            raise KeyboardInterrupt
        return real(self, *a, **k)

    monkeypatch.setattr(torch.optim.AdamW, "step", dying)
    out = tmp_path / "cut.npz"
    with pytest.raises(KeyboardInterrupt):
        train(TRAIN, opts, out, base=str(base), progress=None, autocast=False, checkpoint_every=2)
    monkeypatch.setattr(torch.optim.AdamW, "step", real)
    ckpt = out.with_name(out.name + ".ckpt.pt")
    assert ckpt.exists() and not out.exists()
    said = []
    train(TRAIN, opts, out, base=str(base), progress=said.append, autocast=False, checkpoint_every=2)
    assert any("resumed at step 4/" in m for m in said) and not ckpt.exists()
    w1, w2 = load_weights(whole), load_weights(out)
    np.testing.assert_allclose(w2["head"][0], w1["head"][0], atol=1e-5)
    for k in w1["lora"]:
        np.testing.assert_allclose(w2["lora"][k][1], w1["lora"][k][1], atol=1e-3)
    assert signature(TRAIN, opts) != signature(TRAIN[:-1], opts)


def test_training_stopped_early_keeps_its_checkpoint_and_goes_on_to_the_same_end(tiny, tmp_path):
    """``stop_at`` writes the weights after that many steps of the same schedule and keeps the checkpoint; a
    later run without it resumes there and ends where an uninterrupted training ends."""
    base, _ = tiny
    opts = dict(OPTS, epochs=4.0)
    whole = train(TRAIN, opts, tmp_path / "whole.npz", base=str(base), progress=None, autocast=False)
    ckpt = tmp_path / "run.ckpt.pt"
    cut = train(TRAIN, opts, tmp_path / "cut-step3.npz", base=str(base), progress=None, autocast=False,
                stop_at=3, ckpt=ckpt)
    m = load_weights(cut)["meta"]
    assert m["steps_done"] == 3 and m["steps"] == 8 and ckpt.exists()
    assert not np.allclose(load_weights(cut)["head"][0], load_weights(whole)["head"][0], atol=1e-4)
    said = []
    again = train(TRAIN, opts, tmp_path / "cut-again.npz", base=str(base), progress=said.append, autocast=False,
                  stop_at=3, ckpt=ckpt)  # nothing left to do: the same weights, written again
    np.testing.assert_allclose(load_weights(again)["head"][0], load_weights(cut)["head"][0])
    assert any("resumed at step 3/8" in x for x in said)
    end = train(TRAIN, opts, tmp_path / "end.npz", base=str(base), progress=None, autocast=False, ckpt=ckpt)
    assert not ckpt.exists() and load_weights(end)["meta"]["steps_done"] == 8
    np.testing.assert_allclose(load_weights(end)["head"][0], load_weights(whole)["head"][0], atol=1e-5)
    with pytest.raises(ValueError, match="past stop_at"):
        train(TRAIN, opts, tmp_path / "x.npz", base=str(base), progress=None, autocast=False, stop_at=5,
              ckpt=_ckpt_at(tmp_path, base, opts, 6))


def _ckpt_at(tmp_path, base, opts, n):
    ckpt = tmp_path / f"at{n}.ckpt.pt"
    train(TRAIN, opts, tmp_path / f"at{n}.npz", base=str(base), progress=None, autocast=False, stop_at=n, ckpt=ckpt)
    return ckpt


def test_partial_label_loss():
    import torch

    z = torch.tensor([[2.0, 0.0, 0.0], [0.0, 1.0, 1.0]])
    m = torch.tensor([[True, False, False], [False, True, True]])
    loss = partial_nll(z, m, torch.tensor([1.0, 3.0]))
    p = torch.softmax(z, -1)
    want = -(1.0 * torch.log(p[0, 0]) + 3.0 * torch.log(p[1, 1] + p[1, 2])) / 4.0
    assert torch.allclose(loss, want)


def test_rules():
    rng = np.random.default_rng(0)
    y = rng.integers(0, 3, 4000)
    Z = rng.normal(size=(4000, 3))
    Z[np.arange(4000), y] += 2.0
    # class-conditional N(2 * onehot, 1) logits: the true posterior is softmax(2 Z), so T = 1/2; and 3/2 for 3 Z
    T1 = rules.fit_temperature(Z, [(c,) for c in y])
    T3 = rules.fit_temperature(Z * 3.0, [(c,) for c in y])
    assert 0.4 < T1 < 0.6 and 1.2 < T3 < 1.8
    Zs = np.array([[3.0, 0.0, 0.0], [0.0, 3.0, 0.0]])
    Zn = np.array([[0.0, 3.0, 0.0], [0.0, 3.0, 0.0]])  # the negation: oppose in both rows
    s = rules.stance_scores(Zs, Zn, 1.0, False)
    assert s[0] > 0.9 and s[1] < 0.1
    sc = rules.stance_scores(Zs, Zn, 1.0, True)  # row 2 disagrees with its negation: pulled to the middle
    assert sc[0] > 0.9 and 0.4 < sc[1] < 0.6
    p = rules.judge_scores(Zs, Zn, 1.0, True)
    assert p[0] > 0.8 and 0.3 < p[1] < 0.6
    yb = np.array([1, 1, 0, 0, 0])
    pb = np.array([0.9, 0.6, 0.55, 0.2, 0.1])
    assert rules.best_threshold(yb, pb, rules.f1_at) == 0.56 and rules.f1_at(yb, pb, 0.56) == 1.0
    assert rules.accuracy_at(yb, pb, 0.5) == 0.8


def test_uses_apply_the_rules_stored_with_the_weights(tiny, tmp_path, monkeypatch):
    monkeypatch.setenv("BERDS_CACHE", str(tmp_path))
    base, path = tiny
    w = load_weights(path)
    flat = {f"lora_{ab}:{k}": v[i] for k, v in w["lora"].items() for i, ab in enumerate("AB")}
    uses = {"preset": {"temperature": 2.0}, "discovery": {"temperature": 1.5, "consistency": True, "threshold": 0.4},
            "judge": {"temperature": 0.5, "consistency": True, "threshold": 0.3}}
    ruled = save_weights(tmp_path / "ruled.npz", flat, *w["head"], w["config"], uses, w["meta"])
    m = StanceModel(ruled, base=str(base), encoding="fp32")
    texts = [e.text for e in TRAIN[:3]]
    q = "Should cats be pets?"
    np.testing.assert_allclose(m.sides(q, texts), rules.softmax(m.logits([(q, t) for t in texts]) / 2.0))
    claim = "Cats should be pets"
    neg = "Cats should not be pets."
    from berds_core.stance import negation

    assert negation(claim) == neg
    want = rules.stance_scores(m.logits([(claim, t) for t in texts]), m.logits([(neg, t) for t in texts]), 1.5, True)
    np.testing.assert_allclose(m.claim_stance(claim, texts), want)
    want = rules.judge_scores(m.logits([(claim, t) for t in texts]), m.logits([(neg, t) for t in texts]), 0.5, True)
    np.testing.assert_allclose(m.supports([(claim, t) for t in texts]), want)
    assert m.threshold("judge") == 0.3 and m.threshold("discovery") == 0.4
    np.testing.assert_allclose(m.on_topic(q, texts), 1 - m.probs([(q, t) for t in texts], use="discovery")[:, U])
    fold = StanceModel(ruled, base=str(base), encoding="fp32", uses={"judge": {"threshold": 0.7}})
    assert fold.threshold("judge") == 0.7 and fold.temperature("judge") == 1.0  # a fold model gets its fold's rules


# ------------------------------------------------------------------ examples


def test_examples_from_a_bundle_carry_sides_and_the_consistency_cue():
    from berds_core.datasets import load_demo

    b = load_demo()
    rows = {q.id: list(range(len(b.passages))) for q in b.questions}
    ex = E.bundle_examples(b, "demo", rows, negatives=2)
    row = {passage_string(p): p for p in b.passages}
    qs = {q.id: q for q in b.questions}
    kinds = {e.kind for e in ex}
    assert kinds == {"question", "claim", "negation", "perspective"}
    for e in ex:
        q = qs[e.qid]
        p = row[e.text]
        gold = b.gold[q.id].get(p.id)
        if e.allowed == (U,):
            assert gold is None  # a negative is never a labelled passage of its question
            continue
        side = E.side_of(q, set(gold))
        claim, negation = E.side_statements(q)
        if e.kind in ("question", "claim"):
            assert e.allowed == (side,) and e.target == (q.question if e.kind == "question" else claim)
        elif e.kind == "negation":
            assert e.allowed == (1 - side,) and e.target == negation  # the negation takes the other stance
    assert sum(e.allowed == (U,) for e in ex) <= 2 * len(b.questions)
    assert E.side_of(Question("x", "?", ["a", "b", "c"], stances=["support", "oppose", None]), {2}) is None
    assert E.side_of(Question("x", "?", ["a", "b"], stances=["support", "oppose"]), {0, 1}) is None


def test_negatives_skip_passages_labelled_in_the_question_group():
    from berds_core.datasets.bundle import Bundle

    q1 = Question("a", "Should cats be pets?", ["Cats should be pets", "Cats should not be pets."],
                  stances=["support", "oppose"])
    q2 = Question("b", "Should cats be kept as pets?", ["c", "d"], stances=["support", "oppose"])
    ps = [Passage("p0", "", "cats are great"), Passage("p1", "", "cats kill birds"), Passage("p2", "", "cake")]
    b = Bundle("t", [q1, q2], ps, {"a": {"p0": {0}}, "b": {"p1": {1}}})
    pools = {"a": [0, 1, 2], "b": [0, 1, 2]}
    neg = [e.text for e in E.bundle_examples(b, "t", pools, 3, {"a": "g", "b": "g"}) if e.allowed == (U,)]
    assert neg == ["cake", "cake"]  # p1 is labelled by the other question of the group: not a negative
    neg = [e.text for e in E.bundle_examples(b, "t", pools, 3) if e.allowed == (U,) and e.qid == "a"]
    assert sorted(neg) == ["cake", "cats kill birds"]


def test_yes_no_texts_and_human_pairs(tmp_path):
    assert E.strip_yes_no("Yes, banning it would help children.") == (S, "Banning it would help children.")
    assert E.strip_yes_no("No. It would hurt them.") == (O, "It would hurt them.")
    assert E.strip_yes_no("Nobody knows.") == (None, "Nobody knows.")
    line = {"org_id": "1", "id": 1, "org_q": "Should we ban X?", "perspectives": ["X should be banned.",
                                                                                  "X should not be banned."]}
    rows = [dict(line, id=1, perspective="A", text="Yes, X harms everyone who meets it."),
            dict(line, id=2, perspective="B", text="No, X is harmless and useful to people."),
            dict(line, id=3, perspective="C", text="It depends on the kind of X we mean.")]
    (tmp_path / "arguana_generated_query_exp.dev.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    ex, qs = E.berds_dev_examples(tmp_path)
    assert len(qs) == 1 and {e.text for e in ex} == {"X harms everyone who meets it.", "X is harmless and useful to people."}
    for e in ex:
        side = S if e.text.startswith("X harms") else O
        want = {"question": side, "claim": side, "negation": 1 - side}[e.kind]
        assert e.allowed == (want,)
    tsv = tmp_path / "pairs.tsv"
    tsv.write_text("question\tid\tdocument\tperspective\tlabel\nQ?\t1\tdoc one\tP\t1\nQ?\t2\tdoc two\tP\t0\n")
    h = E.human_examples(tsv)
    assert [e.allowed for e in h] == [(S,), (O, U)] and h[0].qid == h[1].qid == E.human_qid("Q?")


def test_passage_string():
    assert passage_string(Passage("p", "Cats help", "Studies show...")) == "Cats help. Studies show..."
    assert passage_string({"title": "", "text": "x"}) == "x" and passage_string("as is") == "as is"


# ------------------------------------------------------------------ the shipped weights


def test_shipped_weights_are_small_and_carry_their_rules_and_report():
    from berds_core.stance import WEIGHTS

    assert WEIGHTS.exists() and WEIGHTS.stat().st_size < 3_000_000
    w = load_weights(WEIGHTS)
    cfg = w["config"]
    assert cfg["classes"] == ["support", "oppose", "unrelated"] and cfg["max_length"] >= 64 and cfg["base"] is None
    assert set(w["uses"]) == {"preset", "discovery", "judge"}
    assert 0 < w["uses"]["judge"]["threshold"] < 1 and w["uses"]["preset"]["temperature"] > 0
    oof = w["meta"]["oof"]
    assert {"t2", "judge", "preset_candidates"} <= set(oof)
    assert set(w["meta"]["trained_on"]) == set(E.SOURCES)
    assert "development" in w["meta"]["data"]


@pytest.mark.slow
def test_shipped_model_tells_the_sides_apart(tmp_path, monkeypatch):
    monkeypatch.setenv("BERDS_CACHE", str(tmp_path))
    from berds_core.stance import get_stance_model

    m = get_stance_model()
    q = "Should nuclear power be expanded?"
    texts = ["Nuclear plants emit almost no carbon dioxide, so building more of them is the fastest way to "
             "cut emissions from electricity.",
             "Reactor accidents like Fukushima and the unsolved problem of nuclear waste mean we should not "
             "build any more nuclear plants.",
             "Mix the flour with two eggs and bake the cake for forty minutes."]
    P = m.sides(q, texts)
    assert P[0, S] > P[0, O] and P[1, O] > P[1, S] and P[2, U] > max(P[0, U], P[1, U])


def test_training_reads_the_base_from_another_folder_and_records_the_named_one(tiny, tmp_path):
    """``base_dir`` (a GPU machine without the package: a copy of the base, there in float16) is where the
    network is read from; the weights still name ``base``, say where they were trained, and a float16 copy
    is read back as float32 (training on it runs)."""
    import torch
    from transformers import BertModel

    base, _ = tiny
    opts = dict(OPTS, epochs=2.0)
    ref = train(TRAIN, opts, tmp_path / "ref.npz", base=str(base), progress=None, autocast=False)
    moved = train(TRAIN, opts, tmp_path / "moved.npz", base="the-packaged-one", progress=None, autocast=False,
                  base_dir=str(base), device="cpu")
    w = load_weights(moved)
    assert w["config"]["base"] == "the-packaged-one"
    assert w["meta"]["device"] == "cpu" and w["meta"]["base_dir"] == base.name
    np.testing.assert_allclose(w["head"][0], load_weights(ref)["head"][0], atol=1e-6)
    half = tmp_path / "half"
    import shutil

    shutil.copytree(base, half)
    BertModel.from_pretrained(str(base)).to(torch.float16).save_pretrained(half)
    out = train(TRAIN, opts, tmp_path / "half.npz", base="the-packaged-one", progress=None, autocast=False,
                base_dir=str(half))
    h = load_weights(out)
    assert h["head"][0].dtype == np.float32 and np.isfinite(h["head"][0]).all()
    # the float16 copy differs from the base by rounding only: the head it trains is close, not equal
    assert np.abs(h["head"][0] - w["head"][0]).max() < 0.05
