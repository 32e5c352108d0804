"""Which side of a contested question a passage argues: a small trained cross-encoder.

``StanceModel().probs(question, passages) -> (n, 3)`` gives for each passage
``[p_yes, p_no, p_off]``: it argues for the question's yes-answer (the claim),
for its no-answer (the negation), or it is about something else. The coverage
re-ranker uses ``[p_yes, p_no]`` as the probabilities that a candidate covers
each side (``coverage_probs="model"``).

Why a cross-encoder: the two sides of a question embed almost alike, so a
rule on shared sentence embeddings barely separates them (the cosine-to-sides
rule, ``coverage.stance_probs``: 0.618 of one-sided candidates on their side);
reading the question and the passage together does better (0.650, out of fold
over 7,117 development passages; docs/diversity.md). It reads ``question [SEP] passage``
where the passage string is ``stance_text`` (title + text: in debate corpora
the title states the argument), cut at the trained ``max_length`` tokens.

Weights: the packaged all-MiniLM-L6-v2 (its first ``layers`` layers), LoRA
deltas merged into its linear layers at load, mean pooling and a 3-way linear
head, all in ``judges/weights/stance_v2.npz`` (trained on development data
only by ``scripts/train_stance.py``, which writes the file and its report).
On CPU the merged model runs in the same precision as the encoders
(``embed.resolve_encoding``: int8 dynamic quantisation on CPUs without native
bf16, bf16 on those with it).

Predictions are cached per (model name, sha1(passage string), sha1(question))
in the judges' prediction cache (``judges.base.prediction_cache``), so a
second run over the same candidates runs no model.
"""
from __future__ import annotations

import functools
import json
import threading
from pathlib import Path

import numpy as np

from ..runtime.model_lock import model_loading

WEIGHTS = Path(__file__).resolve().parents[1] / "judges" / "weights" / "stance_v2.npz"
CLASSES = ("yes", "no", "off")


def stance_text(passage) -> str:
    """The passage string the stance model reads: ``title. text`` (or the text when untitled)."""
    if isinstance(passage, dict):
        title, text = passage.get("title") or "", passage.get("text") or ""
    else:
        title, text = getattr(passage, "title", "") or "", passage.text
    title = " ".join(str(title).split())
    return f"{title}. {text}" if title else str(text)


def load_weights(path: str | Path = WEIGHTS) -> dict:
    """The trained parts: ``config`` (dict), ``lora`` {module: (A, B)}, ``head`` (W, b), ``meta`` (report)."""
    p = Path(path)
    if not p.exists():
        raise FileNotFoundError(f"stance model weights missing: {p} (run scripts/train_stance.py)")
    z = np.load(p, allow_pickle=False)
    config = json.loads(str(z["config"]))
    lora = {}
    for key in z.files:
        if key.startswith("lora_A:"):
            name = key[len("lora_A:"):]
            lora[name] = (z[key].astype(np.float32), z["lora_B:" + name].astype(np.float32))
    meta = json.loads(str(z["meta"])) if "meta" in z.files else {}
    return {"config": config, "lora": lora, "head": (z["head_W"].astype(np.float32), z["head_b"].astype(np.float32)),
            "meta": meta}


def build_network(base: str, layers: int):
    """The trainable network: ``base``'s encoder cut to ``layers`` layers, mean pooling, a 3-way head."""
    import torch
    from transformers import AutoModel

    class StanceNet(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.enc = AutoModel.from_pretrained(base)
            self.enc.encoder.layer = self.enc.encoder.layer[:layers]
            self.enc.config.num_hidden_layers = layers
            if hasattr(self.enc, "pooler"):
                self.enc.pooler = None  # mean pooling over tokens instead (and no adapter on an unused layer)
            self.head = torch.nn.Linear(self.enc.config.hidden_size, len(CLASSES))

        def forward(self, input_ids, attention_mask, token_type_ids=None):
            h = self.enc(input_ids=input_ids, attention_mask=attention_mask,
                         token_type_ids=token_type_ids).last_hidden_state
            m = attention_mask.unsqueeze(-1).to(h.dtype)
            return self.head((h * m).sum(1) / m.sum(1).clamp(min=1.0))

    with model_loading():
        return StanceNet()


def merge_lora(net, lora: dict, scale: float) -> None:
    """Add ``scale * B @ A`` to the weight of each named linear layer of ``net.enc`` (in place)."""
    import torch

    modules = dict(net.enc.named_modules())
    with torch.no_grad():
        for name, (A, B) in lora.items():
            if name not in modules:
                raise ValueError(f"stance weights name an unknown layer {name!r}")
            lin = modules[name]
            lin.weight += torch.from_numpy(B @ A).to(lin.weight.dtype) * scale


class StanceModel:
    """The trained stance cross-encoder (see the module docstring)."""

    def __init__(self, weights: str | Path | None = None, base: str | None = None, device: str | None = None,
                 encoding: str | None = None, batch_size: int = 64, cache: bool = True):
        from ..embeddings.models import pick_device, resolve_encoding, resolve_model

        self.weights_path = Path(weights or WEIGHTS)
        self.trained = load_weights(self.weights_path)
        cfg = self.trained["config"]
        self.base = base or resolve_model(cfg.get("base"))
        self.device = pick_device(device)
        self.encoding = resolve_encoding(encoding, self.device)
        self.max_length = int(cfg["max_length"])
        self.batch_size = batch_size
        self.cache = cache
        self.version = str(cfg.get("version", self.weights_path.stem))
        self.n_scored = 0  # pairs that went through the network (tests and benches read it)
        self._net = None
        self._tok = None
        self._memo: dict = {}
        self._lock = threading.Lock()

    @property
    def name(self) -> str:
        """Stable: weights version + precision (the prediction cache key)."""
        return f"stance-{self.version}" + ("" if self.encoding == "fp32" else f"-{self.encoding}")

    def _load(self):
        import torch
        from transformers import AutoTokenizer

        cfg = self.trained["config"]
        net = build_network(self.base, int(cfg["layers"]))
        merge_lora(net, self.trained["lora"], float(cfg["lora_alpha"]) / float(cfg["lora_r"]))
        W, b = self.trained["head"]
        with torch.no_grad():
            net.head.weight.copy_(torch.from_numpy(W))
            net.head.bias.copy_(torch.from_numpy(b))
        net.eval()
        if self.encoding == "int8":
            from ..embeddings.models import _quantizable_linears
            from torch.ao.quantization import per_channel_dynamic_qconfig, quantize_dynamic

            spec = {f"enc.{n}": per_channel_dynamic_qconfig for n in _quantizable_linears(net.enc)}
            net = quantize_dynamic(net, spec, dtype=torch.qint8)
        elif self.encoding == "bf16":
            net = net.to(torch.bfloat16)
        self._net = net.to(self.device) if self.encoding != "int8" else net
        self._tok = AutoTokenizer.from_pretrained(self.base)

    def _forward(self, questions: list[str], texts: list[str]) -> np.ndarray:
        import torch

        with self._lock:
            if self._net is None:
                self._load()
        order = np.argsort([-len(t) for t in texts], kind="stable")  # similar lengths per batch
        probs = np.zeros((len(texts), len(CLASSES)), np.float64)
        for start in range(0, len(texts), self.batch_size):
            idx = order[start:start + self.batch_size]
            enc = self._tok([questions[i] for i in idx], [texts[i] for i in idx], truncation="only_second",
                            max_length=self.max_length, padding=True, return_tensors="pt")
            enc = {k: v.to(self.device) for k, v in enc.items()}
            with torch.inference_mode():
                logits = self._net(**enc).float()
            probs[idx] = torch.softmax(logits, -1).cpu().numpy()
        self.n_scored += len(texts)
        return probs

    def probs(self, question: str, passages: list[str]) -> np.ndarray:
        """``(len(passages), 3)`` probabilities ``[yes, no, off]`` of passage strings for one question."""
        return self.probs_many([(question, p) for p in passages])

    def probs_many(self, pairs: list[tuple[str, str]], progress: bool = False) -> np.ndarray:
        """``[yes, no, off]`` per ``(question, passage string)`` pair: memory, then the prediction cache,
        then the network (whose results are committed to the cache per chunk)."""
        if not pairs:
            return np.zeros((0, len(CLASSES)))
        if not self.cache:
            return self._forward([q for q, _ in pairs], [p for _, p in pairs])
        from ..cache import text_hash
        from ..judges.base import prediction_cache

        keys = [(text_hash(p), text_hash(q)) for q, p in pairs]
        known = self._memo
        todo = {}
        for k, pair in zip(keys, pairs):
            if k not in known:
                todo.setdefault(k, pair)
        if todo:
            cache = prediction_cache()
            found = {c: cache.get_many(f"{self.name}:{c}", list(todo)) for c in CLASSES[:2]}
            for k in list(todo):
                if k in found["yes"] and k in found["no"]:
                    known[k] = (found["yes"][k], found["no"][k])
                    del todo[k]
        if todo:
            from tqdm.auto import tqdm

            items = list(todo.items())
            with tqdm(total=len(items), desc=f"Stance ({self.name})", unit="pair", disable=not progress) as bar:
                for i in range(0, len(items), 1024):  # committed per chunk: an interrupted run keeps its work
                    chunk = items[i:i + 1024]
                    P = self._forward([q for _, (q, _) in chunk], [p for _, (_, p) in chunk])
                    for j, c in enumerate(CLASSES[:2]):
                        prediction_cache().put_many(f"{self.name}:{c}",
                                                    [(k, float(P[n, j])) for n, (k, _) in enumerate(chunk)])
                    for n, (k, _) in enumerate(chunk):
                        known[k] = (float(P[n, 0]), float(P[n, 1]))
                    bar.update(len(chunk))
        out = np.zeros((len(pairs), len(CLASSES)))
        out[:, :2] = [known[k] for k in keys]
        out[:, 2] = np.clip(1.0 - out[:, 0] - out[:, 1], 0.0, 1.0)
        if len(known) > 500_000:
            known.clear()
        return out


@functools.lru_cache(maxsize=4)
def get_stance_model(weights: str | None = None, device: str | None = None, encoding: str | None = None
                     ) -> StanceModel:
    """The process-wide stance model (loaded on first use)."""
    return StanceModel(weights, device=device, encoding=encoding)
