"""Side probabilities read from the index's stored passage vectors (``probs=index`` / ``reader=index``).

The side reader (:mod:`berds_core.stance.side_reader`) reads a passage through its one stored MiniLM vector
(the dense retriever's own row, or the on-disk embedding store for any other retriever:
:func:`.vectors.passage_embeddings`) and the question through its two side statements' embeddings. Its
passage reading ``z`` does not depend on the question, so it is computed once per passage and corpus in a
process (:class:`PassageSides`) and every later question reuses it: query-time reading is then the question's
two statements (one encoder call) and a few vector operations per candidate.
"""
from __future__ import annotations

import threading

import numpy as np

from ..datasets.sides import yes_no_sides
from ..stance.side_reader import SideReader, get_side_reader
from .vectors import encode, get_text_encoder, passage_embeddings

_MAX_CORPORA = 4


class PassageSides:
    """The side reader's passage readings of one corpus, each row's computed once (``computed`` counts them)."""

    def __init__(self, reader: SideReader):
        self.reader = reader
        self.rows: dict[int, np.ndarray] = {}
        self.computed = 0

    def of(self, corpus, rows, embedder, retriever) -> np.ndarray:
        rows = [int(r) for r in rows]
        missing = sorted({r for r in rows if r not in self.rows})
        if missing:
            Z = self.reader.passage_side(passage_embeddings(corpus, missing, embedder, retriever))
            self.rows.update(zip(missing, Z))
            self.computed += len(missing)
        if not rows:
            return np.zeros((0, self.reader.rank))
        return np.vstack([self.rows[r] for r in rows])


_CACHE: dict[tuple, PassageSides] = {}
_LOCK = threading.Lock()  # two page sessions may open (and evict) corpora at once


def passage_sides(reader: SideReader, corpus, embedder) -> PassageSides:
    """The cache of ``reader``'s passage readings for ``corpus`` read with ``embedder``'s vectors."""
    te = get_text_encoder(embedder)
    key = (reader.key, id(reader), getattr(corpus, "hash", id(corpus)), te.key if te is not None else id(embedder))
    with _LOCK:  # unlocked, two threads evicting at once popped the same oldest key: KeyError in the second
        if key not in _CACHE:
            if len(_CACHE) >= _MAX_CORPORA:
                _CACHE.pop(next(iter(_CACHE)))
            _CACHE[key] = PassageSides(reader)
        return _CACHE[key]


def index_side_probs(question_text: str, corpus, rows, embedder=None, retriever=None, reader=None) -> np.ndarray:
    """``(len(rows), 3)`` [P(yes side), P(no side), P(off)] of corpus rows for a question, from their stored
    vectors (None for a question without both side statements: nothing to read against)."""
    reader = reader if reader is not None else get_side_reader()
    sides = yes_no_sides(question_text)
    if not all(sides):
        return None
    if reader.dim != (emb := encode(embedder, list(sides))).shape[1]:
        raise ValueError(f"the side reader reads {reader.dim}-dimensional vectors; this index's have {emb.shape[1]} "
                         "(probs=index needs the MiniLM index it was trained on)")
    Z = passage_sides(reader, corpus, embedder).of(corpus, rows, embedder, retriever)
    return reader.probs_from(Z, reader.question_side(emb[0], emb[1]))
