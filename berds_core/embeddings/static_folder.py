"""Reading a static embedding folder (:mod:`.static`) without loading it: is it one, its stable name, its record.

The encoders (:mod:`.models`, :mod:`.text_encoders`) ask this before they load a model: a static model is encoded
in fp32 on the plain path and not stored, and keys and retriever names carry its name, never its install path.
"""
from __future__ import annotations

import functools
import json
import os
from pathlib import Path

META = "berds_static.json"


def is_static(model) -> bool:
    """Whether ``model`` (a path) is a static embedding folder (its first sentence-transformers module a
    ``StaticEmbedding``), read from its ``modules.json`` without loading anything."""
    if not isinstance(model, (str, os.PathLike)):
        return False
    return first_module(os.fspath(model)).endswith("StaticEmbedding")


def first_module(path: str) -> str:
    """The type of the first module a sentence-transformers folder lists ('' when it lists none): read again
    whenever its ``modules.json`` changes, so a model distilled while the app runs is seen at once."""
    listing = os.path.join(path, "modules.json")
    try:
        st = os.stat(listing)
    except OSError:
        return ""
    return _first_module_of(listing, st.st_mtime_ns, st.st_size)


@functools.lru_cache(maxsize=64)
def _first_module_of(listing: str, mtime_ns: int, size: int) -> str:
    try:
        with open(listing, encoding="utf-8") as fh:
            modules = json.load(fh)
        return str(min(modules, key=lambda m: int(m.get("idx", 0))).get("type", ""))
    except (OSError, ValueError, TypeError, AttributeError):
        return ""


def static_meta(path) -> dict:
    """What ``berds_static.json`` records about a static folder ({} for a folder the studio did not distil)."""
    try:
        return json.loads((Path(path) / META).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}


def static_name(path) -> str:
    """The static model's stable name (cache keys, retriever names): ``static:<name>`` from its record, else
    ``static:<folder name>``."""
    return "static:" + str(static_meta(path).get("name") or Path(path).name)


