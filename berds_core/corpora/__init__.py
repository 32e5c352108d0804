"""Corpora of any size: in memory (:mod:`.memory`: ``Corpus``, ``load_corpus``), or in the on-disk passage
store with its manifest (:mod:`.disk`: ``DiskCorpus``, ``ingest``), and :func:`open_corpus`, which picks
memory or disk by size.

Small corpora load into memory; large ones are ingested once, streamed, into an on-disk store in the cache
that retrievers, runs and the app read passage by passage. Both read records through the streaming readers
of :mod:`berds_core.files.corpus_readers` and give the same passages, ids and content hash.
"""
from __future__ import annotations

from pathlib import Path

from ..errors import InputError
from .disk import DISK_MIN_BYTES, STORAGES, DiskCorpus, ingest, is_store, source_bytes, streamable
from .memory import load_corpus


def open_corpus(path, *, passage_words: int | None = 100, name: str | None = None, storage: str = "auto",
                progress: bool = False, on_batch=None, reader=None):
    """The corpus at ``path``: in memory (:func:`.memory.load_corpus`) or in the on-disk store (:mod:`.disk`).

    ``storage``: ``memory``, ``disk`` (a shard file or a folder of shards), or
    ``auto`` (disk from ``DISK_MIN_BYTES`` of source up, memory below). A
    complete store folder itself (``<cache>/corpora/...``) opens as it is. ``reader``: see :func:`ingest`
    (the in-memory loader reads in this process).
    """
    if storage not in STORAGES:
        raise ValueError(f"storage must be one of {', '.join(STORAGES)}, got {storage!r}")
    p = Path(path)
    if is_store(p):
        return DiskCorpus(p)
    if not p.exists():
        raise InputError(p, None, None, "file not found")
    disk = storage == "disk" or (storage == "auto" and streamable(p) and source_bytes(p) >= DISK_MIN_BYTES)
    if disk:
        if not streamable(p):
            raise InputError(p, None, None, "the on-disk corpus store reads .jsonl, .tsv, .csv (each optionally .gz) "
                                            "and .parquet files or folders of them; load this corpus in memory")
        return ingest(p, passage_words=passage_words, name=name, progress=progress, on_batch=on_batch,
                      reader=reader)
    return load_corpus(p, passage_words=passage_words, name=name)
