"""Where a model's (or a dataset's) files come from: local files first, the hub only when reachable.

Every model load of the project goes through :func:`locate` (transformers and
sentence-transformers models, LoRA adapters, tokenizers) or
:func:`hub_offline_mode` (``datasets``):

- a local folder is loaded from disk (``local_files_only``); one without the files such a thing has
  (``config.json``, an adapter's ``adapter_config.json``) fails at once, never taken for a hub id;
- a name that is clearly a path but names no folder fails at once;
- a hub id is loaded from the Hugging Face cache when ``HF_HUB_OFFLINE`` is
  set or the hub cannot be reached (one TCP connection, checked once per
  process), and fails at once in one line when it is not in the cache;
- only with the hub reachable is it fetched from there.

Without this, an unreachable hub costs the hub library's retries (over a
minute of "Retrying in 8s" lines) before the same failure.
"""
from __future__ import annotations

import os
import socket
from contextlib import contextmanager
from urllib.parse import urlparse

_HUB_REACHABLE: dict[str, bool] = {}


def is_local(path: str) -> bool:
    return os.path.isdir(path)


def looks_like_path(name: str) -> bool:
    """Whether a model name is clearly a filesystem path rather than a hub id (``org/name``)."""
    return (os.path.isabs(name) or name.startswith(("./", "../", "~", ".\\")) or "\\" in name
            or name.count("/") > 1 or name in (".", ".."))


def hub_offline() -> bool:
    """``HF_HUB_OFFLINE`` / ``TRANSFORMERS_OFFLINE`` set to a true value."""
    return any(os.environ.get(k, "").strip().lower() in ("1", "true", "yes", "on")
               for k in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"))


def hub_reachable(timeout: float = 3.0) -> bool:
    """Whether the Hugging Face endpoint answers a TCP connection (checked once per process)."""
    endpoint = os.environ.get("HF_ENDPOINT") or "https://huggingface.co"
    if endpoint not in _HUB_REACHABLE:
        u = urlparse(endpoint)
        try:
            socket.create_connection((u.hostname, u.port or (443 if u.scheme == "https" else 80)), timeout).close()
            _HUB_REACHABLE[endpoint] = True
        except (OSError, ValueError):
            _HUB_REACHABLE[endpoint] = False
    return _HUB_REACHABLE[endpoint]


def use_hub() -> bool:
    """Whether a hub id may be fetched now: not offline by setting, and the hub reachable."""
    return not hub_offline() and hub_reachable()


def _why_offline() -> str:
    return "HF_HUB_OFFLINE is set" if hub_offline() else "the Hugging Face hub is unreachable"


def in_cache(name: str, probe: str = "config.json") -> bool:
    """Whether the hub id ``name`` has ``probe`` in the local Hugging Face cache."""
    from huggingface_hub import try_to_load_from_cache

    try:
        return isinstance(try_to_load_from_cache(name, probe), str)
    except Exception:  # an id the hub library rejects (bad characters)
        return False


def locate(name: str, what: str = "model", probes: tuple[str, ...] | None = None) -> tuple[bool, str | None]:
    """(local_files_only, error) for loading ``name``: a local folder, or a hub id fetched from the
    cache when offline (``HF_HUB_OFFLINE``, or the hub unreachable), from the hub otherwise.

    The error (one line) is set when ``name`` cannot be loaded without trying: a missing local
    path, or a hub id that is not in the local cache while offline. No hub retries happen then.
    ``probes``: files any copy of it has (default ``config.json``; ``adapter_config.json`` for adapters).
    """
    probes = probes or (("adapter_config.json",) if what == "adapter" else ("config.json",))
    if is_local(name):  # a local folder is never taken for a hub id: without the files it is an error at once
        if not any(os.path.isfile(os.path.join(name, p)) for p in probes):
            return True, f"cannot load {what} '{name}': the folder has no {' or '.join(probes)}"
        return True, None
    if looks_like_path(name) or os.path.exists(name):
        why = "is not a folder" if os.path.exists(name) else "no such folder"
        return True, f"cannot load {what} '{name}': {why}"
    if use_hub():
        return False, None
    if not any(in_cache(name, p) for p in probes):
        return True, (f"cannot load {what} '{name}': not a local folder and not in the Hugging Face cache, "
                      f"and {_why_offline()} (download it where there is network, or give a local folder)")
    return True, None


@contextmanager
def hub_offline_mode():
    """Within: ``datasets`` and ``huggingface_hub`` read the local cache only (no request, no retry)
    when the hub cannot be used; unchanged when it can."""
    if use_hub():
        yield False
        return
    import huggingface_hub.constants as hub_constants

    saved = [(hub_constants, "HF_HUB_OFFLINE", hub_constants.HF_HUB_OFFLINE)]
    hub_constants.HF_HUB_OFFLINE = True
    try:
        import datasets.config as ds_config

        saved.append((ds_config, "HF_HUB_OFFLINE", ds_config.HF_HUB_OFFLINE))
        ds_config.HF_HUB_OFFLINE = True
    except ImportError:
        pass
    try:
        yield True
    finally:
        for mod, attr, val in saved:
            setattr(mod, attr, val)


def offline_note() -> str:
    """The reason to append to a dataset that could not be found offline."""
    return f"not in the local cache, and {_why_offline()}"
