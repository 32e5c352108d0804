"""The stance network and its weights file.

A BERT-style encoder (the packaged all-MiniLM-L6-v2 unless the weights name
another base) reads ``[CLS] target [SEP] text [SEP]``; its last layer,
mean-pooled over the tokens, is **the pair's encoding** (what the embedding
store keeps, one vector per pair); a linear head turns it into three logits
(``CLASSES``: support, oppose, unrelated).

Training adapts the encoder with LoRA (peft) on every Linear layer of the
attention and feed-forward blocks; only the LoRA factors and the head are
saved (float16 factors: about 1 MB), and at load the factors are merged into
the base weights, so inference is one plain encoder pass per pair.

Weights file (``.npz``): ``lora_A:<module>`` / ``lora_B:<module>`` per adapted
layer, ``head_W`` / ``head_b``, ``config`` (JSON: base, layers, lora_r,
lora_alpha, max_length, classes, version), ``uses`` (JSON: per use, the
calibration and decision rule chosen by cross-validation) and ``meta`` (JSON:
what it was trained on, the out-of-fold report).
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from ..files.jsonio import atomic_write
from ..runtime.model_lock import model_loading

LORA_TARGETS = ("query", "key", "value", "dense")
N_CLASSES = 3


def build_network(base: str, layers: int | None = None):
    """The encoder (cut to ``layers`` layers when given), mean pooling and a 3-way head."""
    import torch
    from transformers import AutoModel
    from transformers.utils import logging as hf_logging

    class StanceNet(torch.nn.Module):
        def __init__(self):
            super().__init__()
            verbosity = hf_logging.get_verbosity()
            hf_logging.set_verbosity_error()  # the checkpoint's unused pooler is reported otherwise
            try:
                self.enc = AutoModel.from_pretrained(base, add_pooling_layer=False, dtype=torch.float32)
            finally:
                hf_logging.set_verbosity(verbosity)
            if layers:
                self.enc.encoder.layer = self.enc.encoder.layer[:layers]
                self.enc.config.num_hidden_layers = layers
            self.head = torch.nn.Linear(self.enc.config.hidden_size, N_CLASSES)

        def encode(self, input_ids, attention_mask, token_type_ids=None):
            """Mean-pooled last layer: the pair's encoding."""
            h = self.enc(input_ids=input_ids, attention_mask=attention_mask,
                         token_type_ids=token_type_ids).last_hidden_state
            m = attention_mask.unsqueeze(-1).to(h.dtype)
            return (h * m).sum(1) / m.sum(1).clamp(min=1.0)

        def forward(self, input_ids, attention_mask, token_type_ids=None):
            return self.head(self.encode(input_ids, attention_mask, token_type_ids))

    with model_loading():  # fresh head weights come from torch.nn.init, which a load elsewhere patches
        return StanceNet()


def add_lora(net, r: int, alpha: int, dropout: float = 0.1):
    """Wrap ``net.enc`` with fresh LoRA adapters (peft) on ``LORA_TARGETS``; returns ``net``."""
    from peft import LoraConfig, get_peft_model

    with model_loading():
        net.enc = get_peft_model(net.enc, LoraConfig(r=r, lora_alpha=alpha, lora_dropout=dropout,
                                                     target_modules=list(LORA_TARGETS)))
    return net


def lora_arrays(net) -> dict[str, np.ndarray]:
    """``lora_A:<module>`` / ``lora_B:<module>`` (float32) of a peft-wrapped ``net.enc``."""
    arrays = {}
    for name, module in net.enc.named_modules():
        if hasattr(module, "lora_A") and "default" in getattr(module, "lora_A", {}):
            clean = name.replace("base_model.model.", "", 1)
            arrays["lora_A:" + clean] = module.lora_A["default"].weight.detach().float().cpu().numpy()
            arrays["lora_B:" + clean] = module.lora_B["default"].weight.detach().float().cpu().numpy()
    return arrays


def save_weights(path, lora: dict[str, np.ndarray], head_W, head_b, config: dict, uses: dict | None = None,
                 meta: dict | None = None) -> Path:
    """Write the weights file atomically (LoRA factors in float16)."""
    if not lora:
        raise ValueError("no LoRA factors to save")
    arrays = {k: np.asarray(v, np.float32).astype(np.float16) for k, v in lora.items()}
    arrays["head_W"] = np.asarray(head_W, np.float32)
    arrays["head_b"] = np.asarray(head_b, np.float32)
    arrays["config"] = np.array(json.dumps(config))
    arrays["uses"] = np.array(json.dumps(uses or {}))
    arrays["meta"] = np.array(json.dumps(meta or {}))
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_write(path, "wb") as fh:
        np.savez_compressed(fh, **arrays)
    return path


def load_weights(path) -> dict:
    """``{"config", "lora": {module: (A, B)}, "head": (W, b), "uses", "meta"}`` of a weights file."""
    p = Path(path)
    if not p.exists():
        raise FileNotFoundError(f"stance model weights missing: {p} (run scripts/train_stance.py)")
    z = np.load(p, allow_pickle=False)
    lora = {}
    for key in z.files:
        if key.startswith("lora_A:"):
            name = key[len("lora_A:"):]
            lora[name] = (z[key].astype(np.float32), z["lora_B:" + name].astype(np.float32))
    return {"config": json.loads(str(z["config"])), "lora": lora,
            "head": (z["head_W"].astype(np.float32), z["head_b"].astype(np.float32)),
            "uses": json.loads(str(z["uses"])) if "uses" in z.files else {},
            "meta": json.loads(str(z["meta"])) if "meta" in z.files else {}}


def merge_lora(net, lora: dict, scale: float) -> None:
    """Add ``scale * B @ A`` to the weight of each named Linear layer of ``net.enc`` (in place)."""
    import torch

    modules = dict(net.enc.named_modules())
    with torch.no_grad():
        for name, (A, B) in lora.items():
            if name not in modules:
                raise ValueError(f"stance weights name an unknown layer {name!r}")
            lin = modules[name]
            lin.weight += torch.from_numpy(B @ A).to(lin.weight.dtype) * scale


def load_network(trained: dict, base: str):
    """The inference network: base encoder + merged LoRA + head, in eval mode (float32)."""
    import torch

    cfg = trained["config"]
    net = build_network(base, cfg.get("layers"))
    merge_lora(net, trained["lora"], float(cfg["lora_alpha"]) / float(cfg["lora_r"]))
    W, b = trained["head"]
    with torch.no_grad():
        net.head.weight.copy_(torch.from_numpy(W))
        net.head.bias.copy_(torch.from_numpy(b))
    return net.eval()
