"""Side probabilities read from the index's stored passage vectors (``probs=index`` / ``reader=index``).

The side reader (:mod:`berds_core.stance.side_reader`) reads a passage through its one stored MiniLM vector
(the dense retriever's own row, or the on-disk embedding store for any other retriever:
:func:`.vectors.passage_embeddings`) and the question through its two side statements' embeddings. Its
passage reading ``z`` does not depend on the question, so it is computed once per passage and corpus
(:class:`PassageSides`, kept on the reader object the run was given) and every later question reuses it:
query-time reading is then the question's two statements (one encoder call) and a few vector operations per
candidate.
"""
from __future__ import annotations

import numpy as np

from ..datasets.sides import yes_no_sides
from ..stance.side_reader import SideReader
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


def passage_sides(reader: SideReader, corpus, embedder) -> PassageSides:
    """``reader``'s passage readings of ``corpus`` read with ``embedder``'s vectors, kept on the reader
    (``SideReader.readings``: the last ``_MAX_CORPORA`` corpora)."""
    te = get_text_encoder(embedder)
    key = (getattr(corpus, "hash", id(corpus)), te.key if te is not None else id(embedder))
    with reader.readings_lock:  # unlocked, two threads evicting at once popped the same oldest key: KeyError
        kept = reader.readings
        if key not in kept:
            if len(kept) >= _MAX_CORPORA:
                kept.pop(next(iter(kept)))
            kept[key] = PassageSides(reader)
        return kept[key]


def index_side_probs(question_text: str, corpus, rows, embedder, retriever, reader: SideReader) -> np.ndarray:
    """``(len(rows), 3)`` [P(yes side), P(no side), P(off)] of corpus rows for a question, from their stored
    vectors read by ``reader`` (None for a question without both side statements: nothing to read against)."""
    sides = yes_no_sides(question_text)
    if not all(sides):
        return None
    if reader.dim != (emb := encode(embedder, list(sides))).shape[1]:
        raise ValueError(f"the side reader reads {reader.dim}-dimensional vectors; this index's have {emb.shape[1]} "
                         "(probs=index needs the MiniLM index it was trained on)")
    Z = passage_sides(reader, corpus, embedder).of(corpus, rows, embedder, retriever)
    return reader.probs_from(Z, reader.question_side(emb[0], emb[1]))
