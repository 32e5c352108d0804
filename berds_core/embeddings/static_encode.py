"""Encoding with a static model (:mod:`.static`) at a lookup's speed: the same vectors as
``SentenceTransformer.encode``, without its per-text work.

A static model's vector is the mean of its tokens' rows (``StaticEmbedding``: an ``EmbeddingBag``), so
encoding is tokenizing. ``SentenceTransformer.encode`` spends most of a static model's time in the
tokenizer and the rest guessing each text's modality and building the token tensor one integer at a time.

:func:`encode_static` gets the very ids the model's tokenizer gives and runs the model's own modules (the
bag, ``Normalize``) on them: bit for bit the plain path's vectors (tested), several times as fast
(``bench/static_scale.py --encode-only``). With a BERT tokenizer (``BertNormalizer``, ``BertPreTokenizer``,
``WordPiece``: the packaged MiniLM's, so every model ``berds models distill`` writes) a text's ids are the
ids of its space-separated pieces, one after the other, cut at the tokenizer's maximum length: the
normalizer works a character at a time, a space always ends a word, and WordPiece reads one word at a time.
So each distinct piece is tokenized once, by the tokenizer itself, and kept (:class:`PieceIds`, at most
``PIECES`` of them); a text is its pieces' ids, gathered with numpy. Any other tokenizer is asked for whole
texts (``encode_batch_fast``: ids only, no offsets).
"""
from __future__ import annotations

import json
import threading
import weakref
from itertools import chain, repeat

import numpy as np

PIECES = 500_000  # distinct pieces kept per model (a Zipf vocabulary's head covers most of a corpus)
_BERT = {"normalizer": {"BertNormalizer"}, "pre_tokenizer": {"BertPreTokenizer"}, "model": {"WordPiece"}}
_pieces: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def static_module(encoder):
    """The ``StaticEmbedding`` that starts ``encoder`` (a SentenceTransformer), or None."""
    try:
        first = encoder[0]
    except (TypeError, IndexError, KeyError):
        return None
    return first if type(first).__name__ == "StaticEmbedding" else None


def splits_on_spaces(tokenizer) -> bool:
    """Whether ``tokenizer``'s ids of a text are its space-separated pieces' ids in order (a BERT tokenizer)."""
    spec = json.loads(tokenizer.to_str())
    return all((spec.get(part) or {}).get("type") in kinds for part, kinds in _BERT.items())


def max_length(tokenizer) -> int | None:
    trunc = tokenizer.truncation
    return int(trunc["max_length"]) if trunc else None


class PieceIds:
    """The ids of each distinct space-separated piece, from the tokenizer itself, in one flat array; one per
    model, shared by every thread that encodes with it (the Playground's sessions), so a batch holds its lock."""

    def __init__(self, tokenizer, limit: int = PIECES):
        self.tokenizer, self.limit = tokenizer, limit
        self._lock = threading.Lock()
        self.row: dict[str, int] = {}
        self.start, self.length, self.ids = (np.zeros(1024, np.int64) for _ in range(3))
        self.n_rows = self.n_ids = 0

    def _add(self, pieces: list[str]) -> list[int]:
        """Tokenize ``pieces`` and append them (the arrays grow by doubling); their rows."""
        got = [e.ids for e in self.tokenizer.encode_batch_fast(pieces, add_special_tokens=False)]
        lengths = np.fromiter(map(len, got), np.int64, len(got))
        flat = np.fromiter(chain.from_iterable(got), np.int64, int(lengths.sum()))
        r, i = self.n_rows, self.n_ids
        self.start = _room(self.start, r + len(got))
        self.length = _room(self.length, r + len(got))
        self.ids = _room(self.ids, i + len(flat))
        self.start[r:r + len(got)] = i + np.cumsum(lengths) - lengths
        self.length[r:r + len(got)] = lengths
        self.ids[i:i + len(flat)] = flat
        self.n_rows, self.n_ids = r + len(got), i + len(flat)
        return list(range(r, r + len(got)))

    def features(self, texts: list[str], cut: int | None) -> tuple[np.ndarray, np.ndarray]:
        """The flat ids of ``texts`` and each text's token count, as the tokenizer gives them."""
        with self._lock:  # two batches appending at once would write over each other's rows
            return self._features(texts, cut)

    def _features(self, texts: list[str], cut: int | None) -> tuple[np.ndarray, np.ndarray]:
        split = [t.split(" ") for t in texts]
        per_text = np.fromiter(map(len, split), np.int64, len(split))
        pieces = list(chain.from_iterable(split))
        rows = np.fromiter(map(self.row.get, pieces, repeat(-1)), np.int64, len(pieces))
        missing = np.flatnonzero(rows < 0)
        if not len(missing):
            return _gather(self.start, self.length, self.ids, rows, per_text, cut)
        new = list(dict.fromkeys(pieces[i] for i in missing))
        room = max(0, min(len(new), self.limit - len(self.row)))  # the first ``room`` new pieces are kept
        rows_before = self.n_rows
        found = dict(zip(new, self._add(new)))
        rows[missing] = [found[pieces[i]] for i in missing]
        out = _gather(self.start, self.length, self.ids, rows, per_text, cut)
        self.row.update(zip(new[:room], range(rows_before, rows_before + room)))
        if room < len(new):  # the store is full: the others were tokenized for this batch alone
            self.n_rows, self.n_ids = rows_before + room, int(self.start[rows_before + room])
        return out


def _room(a: np.ndarray, n: int) -> np.ndarray:
    if n <= len(a):
        return a
    grown = np.zeros(max(n, 2 * len(a)), a.dtype)
    grown[:len(a)] = a
    return grown


def _gather(start, length, ids, rows, per_text, cut):
    """Concatenate the pieces ``rows`` (``per_text`` a text) into each text's ids, cut at ``cut`` tokens."""
    lengths = length[rows]
    total = int(lengths.sum())
    flat = ids[np.repeat(start[rows] - (np.cumsum(lengths) - lengths), lengths) + np.arange(total)]
    piece_end = np.cumsum(per_text)
    tokens_before = np.concatenate([[0], np.cumsum(lengths)])
    counts = tokens_before[piece_end] - tokens_before[piece_end - per_text]
    if cut is not None and (counts > cut).any():
        first = np.cumsum(counts) - counts
        keep = (np.arange(total) - np.repeat(first, counts)) < cut
        flat, counts = flat[keep], np.minimum(counts, cut)
    return flat, counts


def piece_ids(module) -> PieceIds | None:
    """The model's :class:`PieceIds` when its tokenizer splits on spaces, else None (asked once per model)."""
    if module not in _pieces:
        _pieces[module] = PieceIds(module.tokenizer) if splits_on_spaces(module.tokenizer) else None
    return _pieces[module]


def static_features(module, texts: list[str]) -> dict:
    """``{"input_ids", "offsets"}`` for ``texts``, as ``StaticEmbedding.preprocess`` makes them, and
    ``"empty"``: which texts have no token."""
    import torch

    pieces = piece_ids(module)
    if pieces is not None:
        flat, lengths = pieces.features(list(texts), max_length(module.tokenizer))
    else:
        ids = [e.ids for e in module.tokenizer.encode_batch_fast(list(texts), add_special_tokens=False)]
        lengths = np.fromiter(map(len, ids), dtype=np.int64, count=len(ids))
        flat = np.fromiter(chain.from_iterable(ids), dtype=np.int64, count=int(lengths.sum()))
    offsets = np.zeros(len(lengths), dtype=np.int64)
    np.cumsum(lengths[:-1], out=offsets[1:])
    return {"input_ids": torch.from_numpy(np.ascontiguousarray(flat, np.int64)), "offsets": torch.from_numpy(offsets),
            "empty": lengths == 0}


def encode_static(encoder, texts: list[str], batch_size: int) -> np.ndarray:
    """float32 unit-length embeddings of ``texts`` from a static ``encoder`` (``encode_normalized``'s bits);
    a text with no token (empty, only spaces) gets zeros, where the plain path's mean of nothing is NaN."""
    import torch

    module = static_module(encoder)
    dim = int(module.embedding_dim)
    if not texts:
        return np.zeros((0, dim), np.float32)
    out = np.empty((len(texts), dim), np.float32)
    with torch.inference_mode():
        for a in range(0, len(texts), batch_size):
            features = static_features(module, texts[a:a + batch_size])
            empty = features.pop("empty")
            emb = encoder(features)["sentence_embedding"].float().cpu().numpy()
            emb[empty] = 0.0
            out[a:a + len(emb)] = emb
    norms = np.linalg.norm(out, axis=1, keepdims=True)
    return (out / np.maximum(norms, 1e-12)).astype(np.float32)
