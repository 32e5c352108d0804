"""Stable, file- and key-safe names for models and components (judges, generators, caches)."""
from __future__ import annotations

import re
from pathlib import Path


def safe_name(text: str) -> str:
    """Filesystem- and JSON-key-safe form of a model id, path or option."""
    return re.sub(r"[^A-Za-z0-9._+=-]+", "_", text).strip("_") or "x"


def model_label(model: str) -> str:
    """A short stable label for a hub id (``org__name``) or a local path (its folder name)."""
    p = Path(model)
    if p.exists():
        return safe_name(p.resolve().name)
    return safe_name(model.replace("/", "__"))
