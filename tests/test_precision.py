"""issue 52: every figure is defined by fp32 and by nothing about the batch, the thread count or the CPU.

The figures checked are the ones the studio writes from the encoders: the embedded judge's probabilities and
labels, dense top-10 rankings and the stance model's probabilities, on the demo's first questions (their
pools, perspectives and questions). Computed in one batch, each text alone, in shuffled batches of another
size and on one torch thread, they give identical labels and rankings and probabilities within 1e-3; so does
a second process on an emulated CPU without bf16 (``ATEN_CPU_CAPABILITY=avx2``, ``ONEDNN_MAX_CPU_ISA=AVX2``:
the kernels an AVX2-only laptop runs; the test checks the emulation took). bf16 and int8 stay opt-in speed
modes: the last test shows what they change against fp32, and that their names say so.

    python tests/test_precision.py OUT.json   # this process's figures (the emulated CPU's, in the test)
"""
from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
N_QUESTIONS, PER_POOL, K = 3, 24, 10
PROB_TOL = 1e-3


def _demo_texts():
    """(questions, perspectives, passages, judge pairs, stance pairs) of the demo's first questions."""
    from berds_core import datasets
    from berds_core.stance import passage_string

    b = datasets.load_demo()
    by_id = {p.id: p for p in b.passages}
    qs = b.questions[:N_QUESTIONS]
    pools = {q.id: [by_id[i] for i in b.pools[q.id][:PER_POOL]] for q in qs}
    pairs = [(p.text, persp) for q in qs for p in pools[q.id] for persp in q.perspectives]
    stance = [(q.question, passage_string(p)) for q in qs for p in pools[q.id][:8]]
    return qs, pools, pairs, stance


def _encode(te, texts: list[str], mode: str) -> dict[str, np.ndarray]:
    """``{text: vector}`` with ``mode``: ``batch`` (one call), ``alone`` (one text per call) or
    ``shuffled`` (shuffled texts in calls of 7)."""
    texts = list(dict.fromkeys(texts))
    if mode == "batch":
        return dict(zip(texts, te.encode_uncached(texts)))
    if mode == "alone":
        return {t: te.encode_uncached([t])[0] for t in texts}
    order = texts[:]
    random.Random(52).shuffle(order)
    out = {}
    for a in range(0, len(order), 7):
        out.update(zip(order[a:a + 7], te.encode_uncached(order[a:a + 7])))
    return out


def figures(mode: str = "batch", threads: int | None = None) -> dict:
    """The judge's probabilities and labels, dense top-10 rows per question and stance probabilities in the
    default precision (fp32)."""
    import torch

    from berds_core.embeddings.text_encoders import TextEncoder, embed_text
    from berds_core.judges.embedded import EmbeddedJudge
    from berds_core.retrieval.topk import top_k
    from berds_core.stance.model import StanceModel

    saved = torch.get_num_threads()
    if threads:
        torch.set_num_threads(threads)
    try:
        qs, pools, pairs, stance_pairs = _demo_texts()
        te = TextEncoder(None, device="cpu", store=False, batch_size=64 if mode == "batch" else 16)
        texts = [embed_text(p) for q in qs for p in pools[q.id]] + [q.question for q in qs]
        texts += [persp for q in qs for persp in q.perspectives]
        V = _encode(te, texts, mode)
        judge = EmbeddedJudge(device="cpu")
        probs = judge.probabilities(np.array([float(V[d] @ V[p]) for d, p in pairs]))
        ranks = []
        for q in qs:
            P = np.stack([V[embed_text(p)] for p in pools[q.id]])
            ranks.append([int(r) for r in top_k(P @ V[q.question], K)[0]])
        sm = StanceModel(device="cpu", store=False, batch_size=64 if mode == "batch" else 5)
        if mode == "alone":
            sp = np.concatenate([sm.probs([pr], use="preset") for pr in stance_pairs])
        elif mode == "shuffled":
            idx = list(range(len(stance_pairs)))
            random.Random(7).shuffle(idx)
            sp = np.zeros((len(stance_pairs), 3))
            sp[idx] = sm.probs([stance_pairs[i] for i in idx], use="preset")
        else:
            sp = sm.probs(stance_pairs, use="preset")
        assert te.encoding == judge.encoding == sm.encoding, "one precision for every encoder"
        return {"encoding": te.encoding, "judge_probs": probs.tolist(), "judge_labels": (probs >= judge.threshold).tolist(),
                "ranks": ranks, "stance_probs": sp.tolist(), "stance_labels": sp.argmax(1).tolist(),
                "bf16_kernels": bool(torch.ops.mkldnn._is_mkldnn_bf16_supported()),
                "capability": torch.backends.cpu.get_cpu_capability()}
    finally:
        torch.set_num_threads(saved)


def _same(a: dict, b: dict) -> None:
    assert a["judge_labels"] == b["judge_labels"] and a["ranks"] == b["ranks"]
    assert a["stance_labels"] == b["stance_labels"]
    np.testing.assert_allclose(a["judge_probs"], b["judge_probs"], rtol=0, atol=PROB_TOL)
    np.testing.assert_allclose(a["stance_probs"], b["stance_probs"], rtol=0, atol=PROB_TOL)


@pytest.fixture(scope="module")
def reference():
    if os.environ.get("BERDS_ENCODING", "auto") not in ("auto", "fp32"):
        pytest.skip(f"BERDS_ENCODING={os.environ['BERDS_ENCODING']}: a speed mode, not the reference")
    figs = figures("batch")
    assert figs["encoding"] == "fp32"  # the default is the reference
    return figs


@pytest.mark.parametrize("mode,threads", [("alone", None), ("shuffled", None), ("batch", 1), ("shuffled", 1)])
def test_fp32_figures_do_not_depend_on_the_batch_or_the_threads(reference, mode, threads):
    _same(figures(mode, threads), reference)


def test_an_emulated_cpu_without_bf16_gives_the_same_figures(reference, tmp_path):
    """The default precision in a process restricted to AVX2 kernels (no bf16 matmuls, as on most laptops):
    the same labels and rankings, probabilities within 1e-3."""
    out = tmp_path / "avx2.json"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "ATEN_CPU_CAPABILITY": "avx2", "ONEDNN_MAX_CPU_ISA": "AVX2",
           "MKL_ENABLE_INSTRUCTIONS": "AVX2", "BERDS_CACHE": str(tmp_path / "cache")}
    env.pop("BERDS_ENCODING", None)
    subprocess.run([sys.executable, __file__, str(out)], env=env, check=True, cwd=ROOT, timeout=600)
    emulated = json.loads(out.read_text())
    assert emulated["bf16_kernels"] is False and emulated["capability"] in ("AVX2", "DEFAULT")  # the emulation took
    assert emulated["encoding"] == "fp32"
    _same(emulated, reference)


def test_speed_modes_are_opt_in_and_named(monkeypatch):
    """bf16 and int8 are not the default on any CPU, and what they compute is named apart from fp32."""
    from berds_core.embeddings import models as embed
    from berds_core.embeddings.text_encoders import TextEncoder
    from berds_core.judges import get_judge

    monkeypatch.delenv("BERDS_ENCODING", raising=False)
    for fast in (True, False):
        monkeypatch.setattr(embed, "cpu_has_fast_bf16", lambda v=fast: v)
        assert TextEncoder(None, device="cpu", store=False).encoding == "fp32"
    assert get_judge("embedded", device="cpu").name.startswith("embedded-cos-v5-t")
    for enc in ("bf16", "int8"):
        assert get_judge("embedded", device="cpu", encoding=enc).name.startswith(f"embedded-cos-v5-{enc}-t")
        assert f"|{enc}|" in TextEncoder(None, device="cpu", encoding=enc, store=False).key


def test_the_store_and_the_prediction_cache_keep_each_precision_apart(tmp_path, monkeypatch):
    """A vector or a verdict computed in a speed mode is never read back by the reference, nor the reverse."""
    from berds_core import datasets
    from berds_core.embeddings.text_encoders import TextEncoder
    from berds_core.judges import get_judge
    from berds_core.judges.base import prediction_cache

    monkeypatch.setenv("BERDS_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("BERDS_ENCODING", raising=False)
    texts = [p.text for p in datasets.load_demo().passages[:6]]
    ref = TextEncoder(None, device="cpu")
    v32 = ref.embed(texts)
    fast = TextEncoder(None, device="cpu", encoding="bf16")
    v16 = fast.embed(texts)
    assert fast.n_encoded == len(texts) and not np.array_equal(v16, v32)  # computed, not read from fp32's rows
    again = TextEncoder(None, device="cpu")
    np.testing.assert_array_equal(again.embed(texts), v32)  # the reference's own rows, bit for bit
    assert again.n_encoded == 0
    pairs = [(t, "Chatbots do more harm than good.") for t in texts]
    j32, j16 = get_judge("embedded", device="cpu"), get_judge("embedded", device="cpu", encoding="bf16")
    p32, _ = j32.predict(pairs)
    p16, _ = j16.predict(pairs)
    assert j32.cache_key != j16.cache_key and j16.cache_key.endswith("-bf16")
    cache = prediction_cache()
    assert cache.count(j32.cache_key) == cache.count(j16.cache_key) == len(pairs)
    np.testing.assert_array_equal(j32.predict(pairs)[0], p32)


def test_int8_vectors_depend_on_their_batch_and_fp32_ones_do_not():
    """Why int8 (dynamic quantisation: activation scales per batch) cannot be the reference: a text's vector
    moves with its batch partners far beyond float noise; fp32's does not."""
    from berds_core import datasets
    from berds_core.embeddings.text_encoders import TextEncoder

    texts = [p.text for p in datasets.load_demo().passages[:12]]
    drift = {}
    for enc in ("fp32", "int8"):
        te = TextEncoder(None, device="cpu", encoding=enc, store=False)
        together, alone = te.encode_uncached(texts), np.stack([te.encode_uncached([t])[0] for t in texts])
        drift[enc] = float(1 - np.min(np.sum(together * alone, axis=1)))
    assert drift["fp32"] < 1e-6 < 1e-4 < drift["int8"], drift


if __name__ == "__main__":
    figs = figures("batch")
    Path(sys.argv[1]).write_text(json.dumps(figs))
