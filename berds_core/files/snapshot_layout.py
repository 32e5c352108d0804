"""Where a web snapshot keeps its passages: the part of its folder layout that readers of
corpora need (``corpus.load_corpus`` reads a snapshot folder as a corpus through
:func:`snapshot_passages`; ``web.snapshot`` writes the folders and documents the whole layout).

A question folder is a snapshot when it holds both ``manifest.json`` and ``passages.jsonl``;
a folder of question folders is read as the union of its snapshots.
"""
from __future__ import annotations

from pathlib import Path

PASSAGES = "passages.jsonl"
MANIFEST = "manifest.json"


def is_snapshot(folder) -> bool:
    """True when ``folder`` is one question's snapshot (a manifest and the passages)."""
    f = Path(folder)
    return (f / MANIFEST).is_file() and (f / PASSAGES).is_file()


def snapshot_passages(folder) -> list[Path]:
    """The passages files of a snapshot folder: its own, or those of its snapshot sub-folders in
    name order; empty for a folder that holds no snapshot."""
    folder = Path(folder)
    if is_snapshot(folder):
        return [folder / PASSAGES]
    return [sub / PASSAGES for sub in sorted(folder.iterdir()) if sub.is_dir() and is_snapshot(sub)]
