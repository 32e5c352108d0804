"""Where indexes, embeddings and judge predictions persist (``BERDS_CACHE``)."""
from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path

from ..errors import InputError
from .outputs import probe_writable


_WRITABLE: set[str] = set()  # cache folders this process has found writable


def cache_dir(sub: str | None = None) -> Path:
    """The cache root (``$BERDS_CACHE`` or the user's cache dir), or a sub-folder of it.

    A cache folder that cannot be created or written to is an ``InputError``
    naming the cache (checked once per folder and process), so a read-only
    cache is reported as such before any work, not as a failure of whatever
    happened to write there first.
    """
    env = os.environ.get("BERDS_CACHE")
    if env:
        root = Path(env)
    else:
        import platformdirs  # only here: with BERDS_CACHE set the engine runs without it (bench machines)

        root = Path(platformdirs.user_cache_dir("berds"))
    path = root / sub if sub else root
    if str(path) in _WRITABLE:
        return path
    what = f"cache folder {path}" + (" (BERDS_CACHE)" if env else "")
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise InputError(what, None, None, f"is not writable (cannot create it: {e.strerror or type(e).__name__}); "
                                           "set BERDS_CACHE to a writable folder") from None
    why = probe_writable(path)
    if why:
        raise InputError(what, None, None, f"is not writable ({why}); set BERDS_CACHE to a writable folder")
    _WRITABLE.add(str(path))
    return path


def slug(text: str) -> str:
    """A filesystem-safe, readable and unique name for a model id or path."""
    safe = re.sub(r"[^A-Za-z0-9._-]+", "_", text)[-60:]
    return f"{safe}-{hashlib.sha1(text.encode()).hexdigest()[:8]}"


def text_hash(text: str) -> str:
    return hashlib.sha1(text.encode("utf-8")).hexdigest()
