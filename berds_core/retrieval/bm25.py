"""BM25 (Lucene variant) with ``bm25s``: English stop words, Snowball stemming.

Tokenisation follows ``bm25s.tokenize`` exactly (lower-case, ``\\b\\w\\w+\\b``,
bm25s' English stop words, PyStemmer's English stemmer) but maps each distinct
word once, and the score matrix is built with vectorised numpy through
bm25s' documented override point ``build_index_from_ids``; the scores are the
same as stock bm25s (a test checks it). The index is saved and loaded with
bm25s' own ``save``/``load`` under the cache, keyed by the corpus hash.
A query is scored by bm25s (``get_scores_from_ids``); the top-k are ranked by
score, equal scores by row (``retrieval.topk``), so the ranking is the same
whether the index is searched whole or in shards (``berds retrieve --ray``).
"""
from __future__ import annotations

import itertools
import json
import re
import shutil
import time

import numpy as np

from ..files.cache import cache_dir
from ..records import Hits
from .base import SearchBase
from .topk import top_k

TOKEN_PATTERN = r"(?u)\b\w\w+\b"  # bm25s default; the same tokens as the faster "\w\w+" used below
_FAST_PATTERN = r"\w\w+"
INDEX_VERSION = "bm25s-0.3-lucene-k1.5-b0.75-en-stem-v1"
_SPLIT = re.compile(_FAST_PATTERN).findall
_SEP = "XXBERDSPASSAGEBREAKXX"  # upper case: never produced by str.lower()


def _stemmer():
    import Stemmer

    return Stemmer.Stemmer("english")


def _stopwords() -> frozenset[str]:
    from bm25s.stopwords import STOPWORDS_EN

    return frozenset(STOPWORDS_EN)


class _Analyzer:
    """Word -> stem (or None for a stop word), each distinct word stemmed once."""

    def __init__(self):
        self.stemmer = _stemmer()
        self.stop = _stopwords()
        self.memo: dict[str, str | None] = {}

    def _learn(self, words) -> None:
        new = [w for w in dict.fromkeys(words) if w not in self.memo]
        if not new:
            return
        keep = [w for w in new if w not in self.stop]
        for w, s in zip(keep, self.stemmer.stemWords(keep)):
            self.memo[w] = s
        for w in new:
            self.memo.setdefault(w, None)

    def analyze(self, texts: list[str]) -> list[list[str]]:
        split = [_SPLIT(t.lower()) for t in texts]
        self._learn(itertools.chain.from_iterable(split))
        memo = self.memo
        return [[s for s in (memo[w] for w in words) if s is not None] for words in split]

    def to_ids(self, texts: list[str], progress: bool = False) -> "TokenIds":
        """Token ids of every text as flat arrays (stop words removed) and the vocabulary.

        Texts are lower-cased and joined with an upper-case separator (which no
        lower-cased text can contain), split by one regex call per chunk, and
        each distinct word is mapped once; the rest is numpy.
        """
        from tqdm.auto import tqdm

        vocab: dict[str, int] = {}
        word_id: dict[str, int] = {_SEP: -2}
        flats, lens = [], []
        step = 5_000
        with tqdm(total=len(texts), desc="BM25 tokenize", unit="passage", disable=not progress) as bar:
            for start in range(0, len(texts), step):
                chunk = texts[start:start + step]
                words = _SPLIT(f" {_SEP} ".join(t.lower() for t in chunk) + f" {_SEP}")
                new = [w for w in dict.fromkeys(words) if w not in word_id]
                self._learn(new)
                for w in new:
                    s = self.memo[w]
                    word_id[w] = -1 if s is None else vocab.setdefault(s, len(vocab))
                ids = np.fromiter(map(word_id.__getitem__, words), dtype=np.int64, count=len(words))
                ends = np.flatnonzero(ids == -2)
                keep = ids >= 0
                # kept tokens per passage: cumulative kept count at each separator
                kept_before = np.concatenate(([0], np.cumsum(keep)))[ends]
                lens.append(np.diff(np.concatenate(([0], kept_before))))
                flats.append(ids[keep])
                bar.update(len(chunk))
        flat = np.concatenate(flats) if flats else np.zeros(0, np.int64)
        lengths = np.concatenate(lens) if lens else np.zeros(0, np.int64)
        return TokenIds(flat, lengths.astype(np.int64), vocab)


class _FlatIds:
    """All passages' token ids in one array plus per-passage lengths."""

    def __init__(self, flat: np.ndarray, lens: np.ndarray):
        self.flat, self.lens = flat, lens

    def __len__(self) -> int:
        return len(self.lens)

    def __iter__(self):
        offsets = np.concatenate(([0], np.cumsum(self.lens)))
        for i in range(len(self.lens)):
            yield self.flat[offsets[i]:offsets[i + 1]].tolist()


class TokenIds:
    """What ``bm25s.BM25.index`` accepts as a tokenised corpus: ``.ids`` and ``.vocab``."""

    def __init__(self, flat, lens, vocab):
        self.ids = _FlatIds(flat, lens)
        self.vocab = vocab


def _make_bm25_class():
    import bm25s
    import scipy.sparse as sp

    class FastBM25(bm25s.BM25):
        """bm25s.BM25 whose index build is vectorised (Lucene/Robertson/ATIRE tf; others fall back)."""

        def build_index_from_ids(self, unique_token_ids, corpus_token_ids, show_progress=True,
                                 leave_progress=False):
            if self.method not in ("lucene", "robertson", "atire") or self.idf_method not in ("lucene", "robertson", "atire"):
                return super().build_index_from_ids(unique_token_ids, corpus_token_ids,
                                                    show_progress=show_progress, leave_progress=leave_progress)
            n_docs = len(corpus_token_ids)
            n_vocab = len(unique_token_ids)
            if isinstance(corpus_token_ids, _FlatIds):
                lens, flat = corpus_token_ids.lens, corpus_token_ids.flat
            else:
                lens = np.fromiter(map(len, corpus_token_ids), dtype=np.int64, count=n_docs)
                flat = np.fromiter(itertools.chain.from_iterable(corpus_token_ids), dtype=np.int64,
                                   count=int(lens.sum()))
            docs = np.repeat(np.arange(n_docs, dtype=np.int64), lens)
            # term frequencies: count each (doc, term) pair once; CSR sums duplicates.
            tf = sp.csr_matrix((np.ones(flat.size, dtype=np.float32), (docs, flat)), shape=(n_docs, n_vocab))
            tf.sum_duplicates()
            d = np.repeat(np.arange(n_docs, dtype=np.int64), np.diff(tf.indptr))
            v = tf.indices.astype(np.int64)
            tfv = tf.data.astype(np.float64)
            df = np.bincount(v, minlength=n_vocab).astype(np.float64)
            idf = np.zeros(n_vocab, dtype=np.float64)
            seen = df > 0
            if self.idf_method == "lucene":
                idf[seen] = np.log(1 + (n_docs - df[seen] + 0.5) / (df[seen] + 0.5))
            elif self.idf_method == "robertson":
                idf[seen] = np.log((n_docs - df[seen] + 0.5) / (df[seen] + 0.5))
            else:  # atire
                idf[seen] = np.log(n_docs / df[seen])
            avg = float(lens.mean()) if n_docs else 0.0
            l_d = lens[d].astype(np.float64)
            if self.method == "atire":
                tfc = (tfv * (self.k1 + 1)) / (tfv + self.k1 * (1 - self.b + self.b * l_d / avg))
            else:  # lucene and robertson share the tf component
                tfc = tfv / (self.k1 * ((1 - self.b) + self.b * l_d / avg) + tfv)
            scores = (idf[v] * tfc).astype(self.dtype)
            self.nonoccurrence_array = None
            csc = sp.csc_matrix((scores, (d, v)), shape=(n_docs, n_vocab), dtype=self.dtype)
            csc.sort_indices()
            return {"data": csc.data, "indices": csc.indices.astype(self.int_dtype, copy=False),
                    "indptr": csc.indptr, "num_docs": n_docs}

    return FastBM25


class BM25Retriever(SearchBase):
    """BM25 over a corpus; ``search(queries, k)`` -> one ``Hits`` per query."""

    name = "bm25"
    engine = "bm25s"

    def __init__(self, corpus, *, progress: bool = True, cache: bool = True):
        self.corpus = corpus
        self.progress = progress
        self.analyzer = _Analyzer()
        self.cache_hit = False
        self.cache_path = cache_dir("indexes") / f"{corpus.hash[:20]}-bm25-{INDEX_VERSION}" if cache else None
        t0 = time.perf_counter()
        self.model = self._load() if cache else None
        if self.model is None:
            self.model = self._build()
            if cache:
                self._save()
        else:
            self.cache_hit = True
        self.build_seconds = time.perf_counter() - t0

    def _build(self):
        cls = _make_bm25_class()
        tokens = self.analyzer.to_ids(self.corpus.texts, progress=self.progress)
        model = cls()
        model.index(tokens, show_progress=False)
        return model

    def _save(self) -> None:
        final = self.cache_path
        tmp = final.with_name(final.name + f".tmp-{time.time_ns()}")
        self.model.save(str(tmp), show_progress=False)
        (tmp / "berds.json").write_text(json.dumps({"corpus_hash": self.corpus.hash, "passages": len(self.corpus),
                                                    "version": INDEX_VERSION}))
        try:
            tmp.rename(final)  # atomic: readers never see a half-written index
        except OSError:  # another process finished first; keep theirs
            shutil.rmtree(tmp, ignore_errors=True)

    def _load(self):
        path = self.cache_path
        meta = path / "berds.json"
        if not meta.is_file():
            return None
        try:
            info = json.loads(meta.read_text())
            if info.get("corpus_hash") != self.corpus.hash:
                return None
            cls = _make_bm25_class()
            model = cls.load(str(path), show_progress=False, verbosity=0)
        except (OSError, ValueError, KeyError):
            return None
        if model.scores.get("num_docs") != len(self.corpus):
            return None
        model.unique_token_ids_set = set(model.vocab_dict.values())
        return model

    def _search(self, queries: list[str], k: int) -> list[Hits]:
        out = []
        for ids in self.query_ids(queries):
            rows, scores = top_k(self.model.get_scores_from_ids(ids), k)  # ties: lowest row first (topk.py)
            out.append(Hits(rows, scores))
        return out

    def query_ids(self, queries: list[str]) -> list[list[int]]:
        """Each query's token ids in the index vocabulary (bm25s drops the words it does not know)."""
        return [self.model.get_tokens_ids(t) for t in self.analyzer.analyze(list(queries))]
