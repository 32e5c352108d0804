"""BM25 on disk, in bounded memory: a ``tantivy`` index (Lucene-style segments, multi-threaded build).

For corpora too large for the in-memory ``bm25s`` matrix (which grows with
the corpus: 8.9 GB at 1M passages), ``berds index --retriever bm25`` builds a
tantivy index instead: the writer holds at most ``HEAP_BYTES`` of postings in
memory and flushes segments to disk; searches read the index memory-mapped, so
opening it costs milliseconds whatever its size.

Ranking follows today's ``bm25`` as closely as tantivy allows: the same
analysis (words of two or more letters or digits, lower-cased, bm25s' English stop words removed,
Snowball English stems, in Rust: ``tantivy.Filter.stemmer("english")`` is the
same Snowball stemmer PyStemmer wraps), the text only (no title), BM25 with
Lucene's idf; tantivy fixes k1 = 1.2 and b = 0.75 (bm25s: k1 = 1.5) and stores
document lengths in one byte. The difference on the development corpora is
measured by ``bench/scale.py --quality`` (MRecall@5 / Precision@5 and the
overlap of the top-10 lists; ``docs/scale.md``).

The index folder (``cache_dir("indexes")/<corpus name>-<hash>-bm25-tantivy...``)
holds tantivy's files and ``berds.json`` (the corpus it indexes: name, hash,
passages); it is built in a temporary folder and renamed when complete
(:mod:`berds_core.files.build_dir`), so Ctrl-C or a full disk leaves nothing that
loads. Each document stores only its corpus row (a fast field); passages come
from the corpus by row.

Equal scores are ordered by corpus row, lowest first, as ``bm25s`` orders them
(:mod:`berds_core.retrieval.topk`): tantivy itself orders them by where its
threads happened to put each document, which changes from one build to the next.
"""
from __future__ import annotations

import json
import os
import re
import time
from pathlib import Path

import numpy as np

from ..corpora.disk import corpus_label, is_disk_corpus
from ..errors import InputError
from ..files.build_dir import building
from ..files.cache import cache_dir
from ..records import Hits
from .base import SearchBase

INDEX_VERSION = "tantivy-0.27-bm25-k1.2-b0.75-en-stem-v1"
TOKENIZER = "berds_en_stem"
HEAP_BYTES = 256_000_000
META = "berds.json"
BATCH = 10_000


SINGLE_CHARACTERS = tuple("abcdefghijklmnopqrstuvwxyz0123456789")


def stopwords() -> list[str]:
    """bm25s' English stop words and the one-character tokens (see :func:`analyzer`)."""
    from bm25s.stopwords import STOPWORDS_EN

    return sorted(set(STOPWORDS_EN) | set(SINGLE_CHARACTERS))


def analyzer(stop: list[str] | None = None):
    r"""The text analyzer of index and queries (see the module docstring).

    tantivy's ``simple`` tokenizer (runs of alphanumeric characters) with the
    one-character tokens dropped gives bm25s' ``\w\w+`` tokens of English text
    (they differ on ``_``, which bm25s keeps inside a word, and on lone
    non-ASCII characters); its ``regex`` tokenizer would match exactly but
    measured twice as slow to index (bench/scale.py). The index keeps its stop
    words in ``berds.json``, so opening it does not import bm25s (half a second).
    """
    import tantivy

    return (tantivy.TextAnalyzerBuilder(tantivy.Tokenizer.simple())
            .filter(tantivy.Filter.lowercase())
            .filter(tantivy.Filter.custom_stopword(stop if stop is not None else stopwords()))
            .filter(tantivy.Filter.stemmer("english"))
            .build())


def _schema():
    import tantivy

    sb = tantivy.SchemaBuilder()
    sb.add_text_field("text", stored=False, tokenizer_name=TOKENIZER, index_option="freq")
    sb.add_integer_field("row", fast=True)
    return sb.build()


def text_batches(corpus, size: int = BATCH):
    """``(first row, texts)`` of consecutive passages, streamed from a disk corpus, sliced from memory."""
    batches = getattr(corpus, "iter_batches", None)
    if batches is not None:
        for b in batches(size):
            yield b.start, b.texts
        return
    texts = corpus.texts
    for a in range(0, len(texts), size):
        yield a, texts[a:a + size]


def is_tantivy_folder(folder) -> bool:
    """A complete BM25 index folder made by the studio."""
    meta = Path(folder) / META
    if not meta.is_file():
        return False
    try:
        return json.loads(meta.read_text(encoding="utf-8")).get("engine") == "tantivy"
    except (OSError, ValueError):
        return False


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", str(name))[:40] or "corpus"


def index_key(corpus) -> str:
    return f"{_safe(corpus.name)}-{corpus.hash[:20]}-bm25-{INDEX_VERSION}"


def _writer(folder: Path | None, threads: int | None, heap_bytes: int):
    import tantivy

    index = tantivy.Index(_schema(), path=str(folder) if folder is not None else None)
    index.register_tokenizer(TOKENIZER, analyzer())
    threads = threads or min(os.cpu_count() or 1, 8)
    return index, index.writer(heap_size=max(int(heap_bytes), 15_000_000 * threads), num_threads=threads)


def _stop(writer) -> None:
    """Stop a writer's threads (before its folder is removed: Ctrl-C, a full disk, bad input)."""
    for stop in (writer.rollback, writer.wait_merging_threads):
        try:
            stop()
        except Exception:  # noqa: BLE001 - already failing; the original error goes on
            pass


def build_index(corpus, folder: Path | None, *, threads: int | None = None, heap_bytes: int = HEAP_BYTES,
                progress: bool = False):
    """Index every passage of ``corpus`` into ``folder`` (None: in memory); returns the tantivy Index."""
    import tantivy
    from tqdm.auto import tqdm

    index, writer = _writer(folder, threads, heap_bytes)
    Document = tantivy.Document
    try:
        with tqdm(total=len(corpus), desc="BM25 index (tantivy)", unit="passage", disable=not progress) as bar:
            for start, texts in text_batches(corpus):
                add = writer.add_document
                for j, text in enumerate(texts):
                    add(Document(text=text, row=start + j))
                bar.update(len(texts))
        writer.commit()
    except BaseException:
        _stop(writer)
        raise
    writer.wait_merging_threads()
    index.reload()
    return index


def _meta(corpus, seconds: float) -> dict:
    return {"engine": "tantivy", "version": INDEX_VERSION, "corpus_name": corpus.name, "corpus_hash": corpus.hash,
            "passages": len(corpus), "corpus": corpus_label(corpus), "stopwords": stopwords(),
            "seconds": round(seconds, 3)}


class IngestIndexer:
    """The BM25 index of a corpus built while the on-disk store ingests it: one pass over the source.

    ::

        with IngestIndexer() as feed:
            corpus = open_corpus(path, on_batch=feed)   # tantivy's threads index while Python parses
            feed.finish(corpus)                         # published under the corpus's name and hash

    The index goes to the cache folder :class:`TantivyBM25Retriever` opens. When the
    corpus did not stream through (its store existed, or it loaded into memory),
    nothing is published. Any exception (Ctrl-C, a bad row, a full disk) stops the
    writer and removes the half-built folder.
    """

    def __init__(self, *, threads: int | None = None, heap_bytes: int = HEAP_BYTES):
        self._build = building(cache_dir("indexes") / "bm25-being-ingested", "BM25 index")
        self.threads, self.heap_bytes = threads, heap_bytes
        self.writer = None
        self.rows = 0
        self.published: Path | None = None
        self._t0 = time.perf_counter()

    def __enter__(self) -> "IngestIndexer":
        self.tmp = self._build.__enter__()
        return self

    def __call__(self, rows) -> None:
        import tantivy

        if self.writer is None:
            self.index, self.writer = _writer(self.tmp, self.threads, self.heap_bytes)
        add, Document = self.writer.add_document, tantivy.Document
        for row, _pid, _title, text, *_ in rows:
            add(Document(text=text, row=row))
        self.rows += len(rows)

    def finish(self, corpus) -> Path | None:
        """Publish the index when every passage of ``corpus`` went through this feed."""
        if self.writer is None or not is_disk_corpus(corpus) or self.rows != len(corpus):
            return None
        self.writer.commit()
        self.writer.wait_merging_threads()
        self.writer = None
        (self.tmp / META).write_text(json.dumps(_meta(corpus, time.perf_counter() - self._t0)), encoding="utf-8")
        self._build.final = self._build.final.parent / index_key(corpus)
        self.published = self._build.final
        return self.published

    def __exit__(self, exc_type, exc, tb) -> bool:
        if self.writer is not None:
            _stop(self.writer)
            self.writer = None
        if exc_type is None and self.published is None:
            self._build.discard = True
        return self._build.__exit__(exc_type, exc, tb)


class TantivyBM25Retriever(SearchBase):
    """BM25 over a corpus with an on-disk tantivy index; ``search(queries, k)`` -> one ``Hits`` per query."""

    name = "bm25"
    engine = "tantivy"

    def __init__(self, corpus, *, progress: bool = True, cache: bool = True, folder=None,
                 threads: int | None = None, heap_bytes: int = HEAP_BYTES):
        self.corpus = corpus
        self.cache_hit = False
        if folder is None and cache:
            folder = cache_dir("indexes") / index_key(corpus)
        self.cache_path = Path(folder) if folder is not None else None
        t0 = time.perf_counter()
        self._stopwords = None
        self.index = self._open() if self.cache_path is not None else None
        if self.index is not None:
            self.cache_hit = True
        elif self.cache_path is None:
            self.index = build_index(corpus, None, threads=threads, heap_bytes=heap_bytes, progress=progress)
        else:
            with building(self.cache_path, "BM25 index") as tmp:
                build_index(corpus, tmp, threads=threads, heap_bytes=heap_bytes, progress=progress)
                meta = _meta(corpus, time.perf_counter() - t0)
                (tmp / META).write_text(json.dumps(meta), encoding="utf-8")  # last: marks the index complete
            self.index = self._open()
            if self.index is None:
                raise InputError(self.cache_path, None, None, "the BM25 index just built does not open")
        self._schema = self.index.schema
        self._analyzer = analyzer(self._stopwords)
        self.searcher = self.index.searcher()
        self.build_seconds = time.perf_counter() - t0

    def _open(self):
        import tantivy

        path = self.cache_path
        meta_path = path / META
        if not meta_path.is_file():
            return None
        try:
            meta = json.loads(meta_path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        if meta.get("corpus_hash") != self.corpus.hash or meta.get("version") != INDEX_VERSION:
            raise InputError(path, None, None, f"this BM25 index was built from another corpus "
                                               f"({meta.get('corpus_name')!r}, hash {str(meta.get('corpus_hash'))[:12]}) "
                                               f"than {self.corpus.name!r} (hash {self.corpus.hash[:12]}); "
                                               "remove it or build the index again")
        self._stopwords = meta.get("stopwords")
        try:
            index = tantivy.Index.open(str(path))
            index.register_tokenizer(TOKENIZER, analyzer(self._stopwords))
            index.reload()
        except ValueError:
            return None
        if index.searcher().num_docs != len(self.corpus) or meta.get("passages") != len(self.corpus):
            return None
        return index

    def _query(self, text: str):
        import tantivy

        terms = self._analyzer.analyze(text)
        if not terms:
            return None
        return tantivy.Query.boolean_query([(tantivy.Occur.Should, tantivy.Query.term_query(
            self._schema, "text", t, index_option="freq")) for t in terms])

    def _search(self, queries: list[str], k: int) -> list[Hits]:
        out = []
        searcher = self.searcher
        for text in queries:
            q = self._query(text)
            if q is None:
                out.append(Hits.empty())
                continue
            limit = k + 1
            while True:  # widen until every passage tied with the k-th score is in hand
                hits = searcher.search(q, limit, count=False).hits
                if len(hits) < limit or hits[-1][0] < hits[k - 1][0]:
                    break
                limit *= 2
            rows = np.asarray(searcher.fast_field_values("row", [addr for _, addr in hits]), dtype=np.int64)
            scores = np.array([s for s, _ in hits], dtype=np.float64)
            order = np.lexsort((rows, -scores))[:k]  # score descending, then row ascending (topk.py's order)
            out.append(Hits(rows[order], scores[order]))
        return out
