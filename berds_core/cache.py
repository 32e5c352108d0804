"""Where indexes, embeddings and judge predictions persist (``BERDS_CACHE``)."""
from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path


def cache_dir(sub: str | None = None) -> Path:
    """The cache root (``$BERDS_CACHE`` or the user's cache dir), or a sub-folder of it."""
    root = os.environ.get("BERDS_CACHE")
    if not root:
        import platformdirs  # only here: with BERDS_CACHE set the engine runs without it (bench machines)

        root = platformdirs.user_cache_dir("berds")
    root = Path(root)
    path = root / sub if sub else root
    path.mkdir(parents=True, exist_ok=True)
    return path


def slug(text: str) -> str:
    """A filesystem-safe, readable and unique name for a model id or path."""
    safe = re.sub(r"[^A-Za-z0-9._-]+", "_", text)[-60:]
    return f"{safe}-{hashlib.sha1(text.encode()).hexdigest()[:8]}"


def text_hash(text: str) -> str:
    return hashlib.sha1(text.encode("utf-8")).hexdigest()
