"""The stance model at inference: one encoding per (target, text) pair, through the embedding store.

``StanceModel.encode(pairs)`` returns the pair encodings (mean-pooled last
layer, float32): looked up in memory, then in the one embedding store
(``embed_store.EmbeddingStore``, key ``stance-<version>|<precision>|msl<max
tokens>`` and the sha1 of the pair), and only then computed, each chunk
written to the store at once. ``logits`` / ``probs`` apply the head (a matrix
product), so every use of the model reads the same stored encoding of a pair
and a second command over the same pairs runs no network.

``probs(pairs, use=...)`` are the three class probabilities ``[support,
oppose, unrelated]`` after the use's calibration (a temperature chosen by
cross-validation, stored in the weights' ``uses``); ``use=None`` is the raw
softmax.

Precision follows the encoders (``embed.resolve_encoding``): fp32, the reference, unless
``$BERDS_ENCODING`` (or ``encoding``) names a speed mode (bf16, int8 on the CPU); the precision is part
of the store key.
"""
from __future__ import annotations

import threading
from collections import OrderedDict
from pathlib import Path

import numpy as np

from ..datasets.phrasing import negate_claim
from ..embeddings.models import pick_device, quantizable_linears, resolve_encoding, resolve_model
from ..embeddings.text_encoders import embedding_store
from ..files.cache import text_hash
from ..runtime.model_lock import model_loading
from . import rules
from .examples import CLASSES
from .network import load_network, load_weights

WEIGHTS = Path(__file__).with_name("weights") / "stance_v3.npz"
SEP = "\x1f"
CHUNK = 512  # pairs encoded (and committed to the store) per step


def pair_key(target: str, text: str) -> str:
    return text_hash(f"{target}{SEP}{text}")


class StanceModel:
    """The trained stance network behind the embedding store (see the module docstring)."""

    def __init__(self, weights: str | Path | None = None, *, base: str | None = None, device: str | None = None,
                 encoding: str | None = None, batch_size: int = 64, store: bool = True, memory: int = 100_000,
                 uses: dict | None = None):
        self.weights_path = Path(weights or WEIGHTS)
        self.trained = load_weights(self.weights_path)
        cfg = self.trained["config"]
        self.config = cfg
        self.uses = self.trained["uses"] if uses is None else dict(uses)  # a fold model gets its fold's rules
        self.meta = self.trained["meta"]
        self.base = base or resolve_model(cfg.get("base"))
        self.device = pick_device(device)
        self.encoding = resolve_encoding(encoding, self.device)
        self.max_length = int(cfg["max_length"])
        self.batch_size = batch_size
        self.store = store
        self.version = str(cfg.get("version", self.weights_path.stem))
        W, b = self.trained["head"]
        self.head_W, self.head_b = W.astype(np.float64), b.astype(np.float64)
        self.n_encoded = 0  # pairs that went through the network (tests and benches read it)
        self._net = None
        self._tok = None
        self._mem: OrderedDict[str, np.ndarray] = OrderedDict()
        self._memory = memory
        self._lock = threading.RLock()

    def __getstate__(self):
        """Picklable (a Ray actor gets a copy): the loaded network, tokenizer, memory and lock are left
        behind; the copy loads the same weights at its first uncached pair."""
        state = dict(self.__dict__)
        state.update(_net=None, _tok=None, _mem=OrderedDict(), n_encoded=0)
        state.pop("_lock", None)
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        self._lock = threading.RLock()

    @property
    def name(self) -> str:
        return f"stance-{self.version}"

    @property
    def store_key(self) -> str:
        return self.key_for(None)

    def key_for(self, max_length: int | None) -> str:
        """The store key of the encodings at ``max_length`` tokens (None: the trained length)."""
        return f"{self.name}|{self.encoding}|msl{int(max_length or self.max_length)}"

    def __repr__(self) -> str:
        return f"<StanceModel {self.store_key}>"

    # ------------------------------------------------------------ network
    def _load(self):
        import torch
        from transformers import AutoTokenizer

        with model_loading():
            net = load_network(self.trained, self.base)
            if self.encoding == "int8":
                from torch.ao.quantization import per_channel_dynamic_qconfig, quantize_dynamic

                spec = {f"enc.{n}": per_channel_dynamic_qconfig for n in quantizable_linears(net.enc)}
                net = quantize_dynamic(net, spec, dtype=torch.qint8)
            elif self.encoding == "bf16":
                net = net.to(torch.bfloat16)
            if self.encoding != "int8":
                net = net.to(self.device)
            self._tok = AutoTokenizer.from_pretrained(self.base)
        self._net = net

    def encode_uncached(self, pairs: list[tuple[str, str]], max_length: int | None = None) -> np.ndarray:
        """Run the network on ``(target, text)`` pairs cut at ``max_length`` tokens (None: the trained length;
        no lookup, nothing stored): ``(n, dim)`` float32."""
        import torch

        with self._lock:
            if self._net is None:
                self._load()
        if not pairs:
            return np.zeros((0, self.head_W.shape[1]), np.float32)
        order = np.argsort([len(a) + len(b) for a, b in pairs], kind="stable")  # similar lengths per batch
        out = np.zeros((len(pairs), self.head_W.shape[1]), np.float32)
        dev = self.device if self.encoding != "int8" else "cpu"
        for start in range(0, len(pairs), self.batch_size):
            idx = order[start:start + self.batch_size]
            enc = self._tok([pairs[i][0] for i in idx], [pairs[i][1] for i in idx], truncation="longest_first",
                            max_length=int(max_length or self.max_length), padding=True, return_tensors="pt")
            enc = {k: v.to(dev) for k, v in enc.items()}
            with torch.inference_mode():
                out[idx] = self._net.encode(**enc).float().cpu().numpy()
        self.n_encoded += len(pairs)
        return out

    # ------------------------------------------------------------ encodings through the store
    def encode(self, pairs, progress: bool = False, desc: str | None = None,
               max_length: int | None = None) -> np.ndarray:
        """``(len(pairs), dim)`` pair encodings: memory, then the embedding store, then the network.

        ``max_length``: cut pairs there (None: the trained length); another length is another store key.
        """
        pairs = [(str(a), str(b)) for a, b in pairs]
        if not pairs:
            return np.zeros((0, self.head_W.shape[1]), np.float32)
        skey = self.key_for(max_length)
        keys = [f"{skey}:{pair_key(a, b)}" for a, b in pairs]
        hashes = {k: k.rsplit(":", 1)[1] for k in keys}
        got: dict[str, np.ndarray] = {}
        with self._lock:
            for k in keys:
                if k in self._mem:
                    got[k] = self._mem[k]
        todo: dict[str, tuple[str, str]] = {}
        for k, p in zip(keys, pairs):
            if k not in got:
                todo.setdefault(k, p)
        if todo and self.store:
            found = embedding_store().get_many(skey, [hashes[k] for k in todo])
            for k in list(todo):
                v = found.get(hashes[k])
                if v is not None:
                    got[k] = v
                    del todo[k]
        if todo:
            from tqdm.auto import tqdm

            items = list(todo.items())
            with tqdm(total=len(items), desc=desc or f"Stance ({self.name})", unit="pair",
                      disable=not progress) as bar:
                for i in range(0, len(items), CHUNK):  # committed per chunk: an interrupted run keeps its work
                    chunk = items[i:i + CHUNK]
                    V = self.encode_uncached([p for _, p in chunk], max_length)
                    if self.store:
                        embedding_store().put_many(skey, [(hashes[k], v) for (k, _), v in zip(chunk, V)])
                    got.update({k: v for (k, _), v in zip(chunk, V)})
                    bar.update(len(chunk))
        with self._lock:
            for k in dict.fromkeys(keys):
                self._mem[k] = got[k]
                self._mem.move_to_end(k)
            while len(self._mem) > self._memory:
                self._mem.popitem(last=False)
        return np.stack([got[k] for k in keys]).astype(np.float32)

    # ------------------------------------------------------------ heads
    def logits(self, pairs, progress: bool = False, max_length: int | None = None) -> np.ndarray:
        """``(n, 3)`` raw logits ``[support, oppose, unrelated]``."""
        V = self.encode(pairs, progress=progress, max_length=max_length).astype(np.float64)
        return V @ self.head_W.T + self.head_b

    def temperature(self, use: str | None) -> float:
        if use is None:
            return 1.0
        return float((self.uses.get(use) or {}).get("temperature", 1.0))

    def probs(self, pairs, use: str | None = None, progress: bool = False,
              max_length: int | None = None) -> np.ndarray:
        """``(n, 3)`` probabilities ``[support, oppose, unrelated]`` of ``(target, text)`` pairs,
        calibrated for ``use`` (``preset``, ``discovery``, ``judge``; None: uncalibrated)."""
        return softmax(self.logits(pairs, progress=progress, max_length=max_length) / self.temperature(use))

    def threshold(self, use: str, default: float = 0.5) -> float:
        return float((self.uses.get(use) or {}).get("threshold", default))

    def rule(self, use: str) -> dict:
        """The use's calibration and decision rule (temperature, consistency, threshold), as shipped."""
        return dict(self.uses.get(use) or {})

    # ------------------------------------------------------------ the three uses
    def sides(self, question: str, texts: list[str], progress: bool = False,
              max_length: int | None = None) -> np.ndarray:
        """The preset: ``(n, 3)`` P(argues the question's yes side), P(its no side), P(off the question);
        ``max_length``: the preset's own cut (a CPU budget), None for the trained length."""
        return self.probs([(question, t) for t in texts], use="preset", progress=progress, max_length=max_length)

    def claim_stance(self, claim: str, texts: list[str]) -> np.ndarray:
        """Discovery's T2: P(the perspective supports the claim | it is about it), per text, with the
        cross-validated rule (temperature; with ``consistency``, averaged with the negated claim's reading)."""
        r = self.rule("discovery")
        Z = self.logits([(claim, t) for t in texts])
        Zn = None
        if r.get("consistency"):
            Zn = self.logits([(negation(claim), t) for t in texts])
        return rules.stance_scores(Z, Zn, float(r.get("temperature", 1.0)), bool(r.get("consistency")))

    def on_topic(self, target: str, texts: list[str], use: str = "discovery") -> np.ndarray:
        """P(the text is about ``target``, on either side): 1 - P(unrelated), calibrated for ``use``."""
        return 1.0 - self.probs([(target, t) for t in texts], use=use)[:, rules.UNRELATED]

    def supports(self, pairs, progress: bool = False) -> np.ndarray:
        """The judge: P(the text supports the perspective) per ``(perspective, text)`` pair, with the
        cross-validated rule (temperature; with ``consistency``, averaged with P(oppose) of the negation)."""
        pairs = [(str(a), str(b)) for a, b in pairs]
        r = self.rule("judge")
        Z = self.logits(pairs, progress=progress)
        Zn = None
        if r.get("consistency"):
            Zn = self.logits([(negation(a), b) for a, b in pairs], progress=progress)
        return rules.judge_scores(Z, Zn, float(r.get("temperature", 1.0)), bool(r.get("consistency")))


def negation(statement: str) -> str:
    """The statement's negation (the datasets' claim rules: "X should be Y" -> "X should not be Y.")."""
    return negate_claim(statement)


softmax = rules.softmax


_MODELS: dict = {}
_MODELS_LOCK = threading.Lock()


def get_stance_model(weights: str | None = None, device: str | None = None,
                     encoding: str | None = None, batch_size: int = 64) -> StanceModel:
    """The process-wide stance model (the shipped weights unless named; loaded on first use), one per
    weights file, device, resolved precision (``BERDS_ENCODING`` or fp32 when ``encoding``
    is None) and batch size: the preset, discovery and the embedded judge hold one network between them."""
    key = (str(Path(weights or WEIGHTS).resolve()), device, resolve_encoding(encoding, device), int(batch_size))
    with _MODELS_LOCK:
        if key not in _MODELS:
            _MODELS[key] = StanceModel(weights, device=device, encoding=encoding, batch_size=batch_size)
        return _MODELS[key]


__all__ = ["StanceModel", "get_stance_model", "pair_key", "negation", "WEIGHTS", "CLASSES"]
