"""Text encoders (:class:`TextEncoder`, :func:`text_encoder`) and the one embedding store they read through:
one embedding per passage.

Dense retrieval (``retrieval.dense``), MMR's Sim2 and the coverage
re-ranker (``diversify.vectors``) and perspective discovery's pool index
all get sentence embeddings from ``text_encoder(...)``:

    enc = text_encoder(model=None, device=None, encoding=None, max_seq_length=None)
    vecs = enc.embed(texts)          # unit-length float32, one row per text

An embedding is looked up in memory, then in the store, and only then
computed; what is computed is written to the store at once (per chunk), so a
second command over the same texts encodes nothing and an interrupted build
resumes where it stopped.

**Key**: ``(model key, precision, max tokens, sha1(text))``: the model key is
the alias-resolved model id (``embed.model_key``), the precision the resolved
encoding (fp32 | bf16 | int8, ``embed.resolve_encoding``), the max tokens the
encoder's ``max_seq_length``. Different precisions or lengths are different
vectors and never mix.

**Decisions, made once** (measured in ``bench/embedding_choices.py``, written
down in ``docs/embeddings.md``):

- the text embedded for a passage is its text, without the title
  (``embed_text``), the same string the judges read (``judges.passage_text``);
- texts are cut at ``MAX_TOKENS`` = 128 word pieces (all-MiniLM-L6-v2 was
  trained at 128; debate arguments and BERDS' 100-word passages fit or lose a
  few words), for the retriever, MMR, the re-ranker and the judge alike.

**Two paths to the model, the same vectors**: ``encode_normalized`` (the plain path:
``SentenceTransformer.encode``) and ``embeddings.pipeline`` (the fast path: tokenizer threads
overlapped with the model, length-sorted batches, parts streamed). ``TextEncoder.path`` picks one
(``$BERDS_ENCODE_PATH``; auto: fast on CUDA, ``pipeline.CPU_DEFAULT_PATH`` on the CPU); everything
that reaches the model goes through ``TextEncoder.encode_stream`` (per part) or ``encode_uncached``.
The path is not part of the key: on the CPU the fast path gives the plain path's bits, on a GPU its
vectors agree within rounding (cosine >= 0.9999).

The stance model (``berds_core.stance``) keeps its *pair* encodings (one
vector per (target, text) pair, shared by the preset, discovery and the
embedded judge) in the same store, under its own key (``stance-<version>|
<precision>|msl<max tokens>``), through :class:`EmbeddingStore` directly.

The store is SQLite (WAL) at ``cache_dir("embeddings")/embeddings.sqlite``,
one connection per cache directory, safe across threads and processes.
"""
from __future__ import annotations

import functools
import sys
import threading
from collections import OrderedDict
from pathlib import Path

import numpy as np

from ..files.cache import cache_dir, text_hash
from ..files.kvcache import KeyValueCache
from .models import load_encoder, model_key, pick_device, resolve_encoding
from .static_encode import encode_static
from .static_folder import is_static
from .pipeline import EncodePipeline, PipelineOptions, asked_path, resolve_path

MAX_TOKENS = 128
STATIC_BATCH = 1024  # texts a batch for a static model (embeddings.static)
CHUNK = 1024  # texts encoded (and committed to the store) per step


def embed_text(passage) -> str:
    """The one string embedded for a passage (a ``Passage`` or a run ``ctx`` dict): its text."""
    if isinstance(passage, dict):
        return str(passage.get("text") or "")
    return passage.text


class EmbeddingStore(KeyValueCache):
    """Unit-length float32 embeddings keyed by (store key, sha1(text)) in SQLite (``files.kvcache``)."""

    table, namespace, keys, value, value_type = "emb", "model", ("text",), "vec", "BLOB"
    timeout, synchronous = 60.0, "NORMAL"

    def __init__(self, path: Path | None = None):
        super().__init__(path or cache_dir("embeddings") / "embeddings.sqlite")

    def encode(self, value) -> bytes:
        return np.asarray(value, np.float32).tobytes()

    def decode(self, stored: bytes) -> np.ndarray:
        return np.frombuffer(stored, dtype=np.float32)


def embedding_store() -> EmbeddingStore:
    """The store of the current ``BERDS_CACHE`` (one connection per cache directory)."""
    return EmbeddingStore.shared(cache_dir("embeddings") / "embeddings.sqlite")


def store_key(model: str | None, encoding: str, max_seq_length: int) -> str:
    """The key part naming the vectors: model key, precision, max tokens."""
    return f"{model_key(model)}|{encoding}|msl{int(max_seq_length)}"


def encode_normalized(encoder, texts: list[str], batch_size: int = 64) -> np.ndarray:
    """float32 unit-length embeddings from any precision of encoder (no store).

    sentence-transformers sorts texts by length before batching, so batches
    hold passages of similar length (little padding); batches of 64 measured
    faster than 32 on CPU for every precision (bench/retrieval.py).
    """
    if not texts:
        return np.zeros((0, int(encoder.get_sentence_embedding_dimension() or 0)), np.float32)
    emb = encoder.encode(list(texts), batch_size=batch_size, normalize_embeddings=False,
                         convert_to_tensor=True, show_progress_bar=False)
    emb = emb.float().cpu().numpy()
    norms = np.linalg.norm(emb, axis=1, keepdims=True)
    return (emb / np.maximum(norms, 1e-12)).astype(np.float32)  # normalised in float32 (bf16 norms are off by ~1e-3)


class TextEncoder:
    """Sentence embeddings through memory -> store -> model, for one (model, precision, max tokens).

    ``embed(texts)`` returns one unit-length float32 row per text (duplicates
    encoded once). ``n_encoded`` counts texts that went through the model.
    ``store=False`` keeps everything in memory (tests, throw-away texts).
    ``path``: ``auto`` | ``fast`` | ``plain`` (``embeddings.pipeline.resolve_path``); ``options``:
    the fast path's ``PipelineOptions`` (None: the device's defaults).
    """

    def __init__(self, model: str | None = None, device: str | None = None, encoding: str | None = None,
                 max_seq_length: int | None = None, *, batch_size: int = 64, store: bool = True,
                 memory: int = 50_000, path: str | None = None, options=None):
        self.model_id = model
        self.device = pick_device(device)
        static = is_static(model)  # a static model (embeddings.static): fp32, the plain path, nothing stored
        self.encoding = "fp32" if static else resolve_encoding(encoding, self.device)
        self.path_asked = "plain" if static else asked_path(path)  # auto | fast | plain: what a Ray actor resolves
        self.path = "plain" if static else resolve_path(path, self.device)  # fast | plain (the fast path may refuse)
        self.static = static  # encoded by embeddings.static_encode: the plain path's bits, without its per-text work
        self.options = options  # embeddings.pipeline.PipelineOptions (None: the device's defaults)
        self._pipeline = None
        self.max_seq_length = int(max_seq_length or MAX_TOKENS)
        # a static model's batch is a lookup and a mean: 1,024 texts a batch encode 1.24x faster than 64
        # (bench/static_scale.py's 100-word passages, 2-core EPYC) and give the same vectors (one per text)
        self.batch_size = max(batch_size, STATIC_BATCH) if static else batch_size
        self.store = store and not static  # a static vector costs less to compute than to read back
        self.key = store_key(model, self.encoding, self.max_seq_length)
        self.n_encoded = 0
        self._encoder = None
        self._mem: OrderedDict[str, np.ndarray] = OrderedDict()
        self._memory = memory
        self._lock = threading.RLock()

    def __repr__(self) -> str:
        return f"<TextEncoder {self.key}>"

    @property
    def encoder(self):
        """The SentenceTransformer (this precision, truncating at ``max_seq_length``), loaded on first use."""
        if self._encoder is None:
            self._encoder = load_encoder(self.model_id, self.device, self.encoding, self.max_seq_length)
        return self._encoder

    @property
    def dim(self) -> int:
        return int(self.encoder.get_sentence_embedding_dimension())

    @property
    def pipeline(self):
        """The fast path (``embeddings.pipeline.EncodePipeline``) when this encoder takes it, else None
        (the plain path: ``encode_normalized``). A model the fast path refuses goes the plain way, said once."""
        if self.path != "fast":
            return None
        if self._pipeline is None:
            try:
                self._pipeline = EncodePipeline(self.encoder, self.options or
                                                PipelineOptions.for_device(self.device, self.batch_size))
            except ValueError as e:
                print(f"berds: {self.key}: the plain encoding path ({e})", file=sys.stderr)
                self._pipeline = False
        return self._pipeline or None

    def encode_uncached(self, texts: list[str]) -> np.ndarray:
        """Run the model on ``texts`` (no lookup, nothing stored): queries one never sees twice."""
        pipe = self.pipeline
        if pipe is not None:
            return pipe.encode(list(texts))
        if self.static:
            return encode_static(self.encoder, list(texts), self.batch_size)
        return encode_normalized(self.encoder, list(texts), self.batch_size)

    def encode_stream(self, parts, on_rows=None):
        """``(key, texts)`` parts in, ``(key, unit vectors)`` out, in order (nothing stored).

        The fast path tokenizes the next parts while the model encodes this one (``parts`` is read by
        its feeder thread); the plain path encodes one part per ``encode_uncached`` call. ``on_rows(n)``
        as texts are encoded (per batch on the fast path, every few batches on the plain one).
        """
        pipe = self.pipeline
        if pipe is not None:
            yield from pipe.stream(parts, on_rows)
            return
        for key, texts in parts:
            yield key, self._encode_reporting(list(texts), on_rows)

    def _encode_reporting(self, part: list[str], on_rows) -> np.ndarray:
        """Encode ``part`` (plain path); with ``on_rows``, in steps of a few batches so a progress bar can move."""
        if on_rows is None:
            return self.encode_uncached(part)
        step, out = self.batch_size * 4, []
        for a in range(0, len(part), step):
            out.append(self.encode_uncached(part[a:a + step]))
            on_rows(len(out[-1]))
        return np.concatenate(out) if out else self.encode_uncached(part)

    def embed(self, texts, progress: bool = False, desc: str | None = None, on_progress=None) -> np.ndarray:
        texts = list(texts)
        if not texts:
            return np.zeros((0, self.dim), np.float32)
        found = self.embed_map(texts, progress=progress, desc=desc, on_progress=on_progress)
        return np.stack([found[t] for t in texts])

    def embed_map(self, texts, progress: bool = False, desc: str | None = None,
                  on_progress=None) -> dict[str, np.ndarray]:
        """``{text: vector}`` for the unique texts; ``on_progress(done, total)`` (unique texts) as they are encoded."""
        uniq = list(dict.fromkeys(texts))
        with self._lock:
            got = {t: self._mem[t] for t in uniq if t in self._mem}
        need = [t for t in uniq if t not in got]
        if need and self.store:
            hashes = {t: text_hash(t) for t in need}
            found = embedding_store().get_many(self.key, list(dict.fromkeys(hashes.values())))
            for t in need:
                v = found.get(hashes[t])
                if v is not None:
                    got[t] = v
            need = [t for t in need if t not in got]
        if need:
            from tqdm.auto import tqdm

            self.encoder  # load the model before any progress bar: a bad model id fails at once
            done = [len(uniq) - len(need)]

            def rows(n: int) -> None:
                done[0] += n
                on_progress(done[0], len(uniq))

            parts = ((start, need[start:start + CHUNK]) for start in range(0, len(need), CHUNK))
            with tqdm(total=len(need), desc=desc or f"Encoding ({self.key})", unit="text",
                      disable=not progress) as bar:
                for start, emb in self.encode_stream(parts, rows if on_progress is not None else None):
                    part = need[start:start + CHUNK]
                    self.n_encoded += len(part)
                    if self.store:
                        embedding_store().put_many(self.key, [(text_hash(t), v) for t, v in zip(part, emb)])
                    got.update(zip(part, emb))
                    bar.update(len(part))
        if on_progress is not None:
            on_progress(len(uniq), len(uniq))
        with self._lock:
            for t in uniq:
                self._mem[t] = got[t]
                self._mem.move_to_end(t)
            while len(self._mem) > self._memory:
                self._mem.popitem(last=False)
        return got


@functools.lru_cache(maxsize=8)
def _shared(model, device, encoding, max_seq_length, root, path) -> TextEncoder:
    return TextEncoder(model, device, encoding, max_seq_length, path=path)


def text_encoder(model: str | None = None, device: str | None = None, encoding: str | None = None,
                 max_seq_length: int | None = None) -> TextEncoder:
    """The process-wide encoder for (model, device, precision, max tokens): one memory, one store key.

    ``encoding`` None/"auto" resolves as ``embed.resolve_encoding`` ($BERDS_ENCODING, else fp32,
    the reference); ``max_seq_length`` None is ``MAX_TOKENS``. The encoding path
    (``pipeline.resolve_path``: ``$BERDS_ENCODE_PATH``, auto) is resolved here too.
    """
    dev = pick_device(device)
    enc = "fp32" if is_static(model) else resolve_encoding(encoding, dev)
    name = None if model is None or model_key(model) == model_key(None) else model
    # one per cache directory too: a new BERDS_CACHE starts with an empty memory (the model is shared)
    return _shared(name, dev, enc, int(max_seq_length or MAX_TOKENS), str(cache_dir()), resolve_path(None, dev))
