"""Corpora of any size: streaming readers (``readers``), the on-disk passage store with its
manifest (``store``), and ``open_corpus``, which picks memory or disk by size.

Small corpora load into memory (:class:`berds_core.corpus.Corpus`); large ones
are ingested once, streamed, into an on-disk store in the cache
(:class:`berds_core.corpora.store.DiskCorpus`) that retrievers, runs and the app
read passage by passage. Both give the same passages, ids and content hash.
"""
from __future__ import annotations


def open_corpus(path, *, passage_words=100, name=None, storage: str = "auto", progress: bool = False, on_batch=None,
                reader=None):
    """A corpus in memory or on disk (see :func:`berds_core.corpora.store.open_corpus`)."""
    from .store import open_corpus as _open

    return _open(path, passage_words=passage_words, name=name, storage=storage, progress=progress,
                 on_batch=on_batch, reader=reader)
