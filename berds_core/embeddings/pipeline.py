"""The fast encoding path: texts in, unit vectors out, the tokenizer overlapped with the model (issue 42).

    pipe = EncodePipeline(encoder, PipelineOptions.for_device("cuda"))
    vecs = pipe.encode(texts)                                   # float32 [n, dim], unit length
    for key, vecs in pipe.stream((key, texts) for ...): ...     # parts back to back, in order

``encoder`` is a loaded SentenceTransformer (any precision ``embeddings.models.load_encoder``
gives: fp32, fp16, bf16, int8). What the plain path (``store.encode_normalized``:
``SentenceTransformer.encode``) does one batch after another on one thread, this does as a
pipeline:

1. **tokenize in worker threads**: a private copy of the model's fast (Rust) tokenizer, no
   padding, truncation at ``max_seq_length``, encodes a *window* of texts per batch call
   (``encode_batch`` releases the GIL, so windows tokenize in parallel with each other and with
   the forward pass);
2. **length-sorted batches** (``PipelineOptions.batching``), padded into int64 arrays (pinned
   for CUDA) by the same worker. ``tokens`` (CUDA's default): a window's texts sorted by token
   count (longest first), cut into batches of at most ``max_rows`` rows and ``token_budget``
   padded tokens (rows x the batch's longest text), so short texts make big batches. ``plain``
   (the CPU's default): the plain path's own batches (the part sorted by characters, longest
   first, as ``SentenceTransformer.encode`` sorts it; ``max_rows`` texts a batch), so the
   vectors are the plain path's bit for bit and only the tokenizer's time is saved;
3. **a bounded queue**: a feeder thread reads the parts (which may read a disk corpus lazily),
   submits their windows and queues them in order, at most ``depth`` ahead, so memory stays
   bounded and the model does not wait for the tokenizer once the queue has filled;
4. **the forward pass** through the SentenceTransformer's own modules (Transformer, Pooling,
   Normalize, ...), on the model's device and precision; each batch's embeddings go to the
   part's float32 buffer on the device, which is normalised and copied to the host once per
   part, after a batch of what follows has been launched (the GPU keeps working while the host
   takes the part: copies to the device are from pinned memory, non-blocking).

Windows start at fixed positions of a part (``first_window`` texts, doubling up to ``window``:
the first batches start sooner), so a part encodes to the same vectors alone or in a stream, in
one process or on a Ray actor.

**Equivalence with the plain path**: the same tokens (checked when the pipeline is built, on
probe texts against the model's own preprocessing; a model it would tokenize differently is
refused with the reason, and callers fall back to the plain path), the same modules and the
same float32 normalisation. With ``plain`` batching the vectors are identical; with ``tokens``
batching only the batch composition (padding) differs, so they agree to float rounding
(cosine >= 0.9999 per passage: ``tests/test_encode_pipeline.py``, ``bench/encoder_gpu.py``).

**Which path** (``resolve_path``): ``$BERDS_ENCODE_PATH`` (``auto`` | ``fast`` | ``plain``) or
the caller's choice; ``auto`` is ``fast`` on CUDA and ``CPU_DEFAULT_PATH`` on the CPU, the
faster of the two as measured on the development CPU in one run (``bench/encoder_gpu.py
--sections cpu-path``; README benchmark table).
"""
from __future__ import annotations

import itertools
import os
import queue
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Callable, Iterable, Iterator

import numpy as np
from tokenizers import Tokenizer

PATHS = ("auto", "fast", "plain")
BATCHINGS = ("tokens", "plain")
# The CPU's default, measured (bench/encoder_gpu.py --sections cpu-path, the README's benchmark table): on the
# 2-core development CPU (AMD EPYC Zen 4, bf16 MiniLM, 128 BERDS passages, 10 interleaved runs, 2026-11-27) the
# fast path ran 0.98x the plain path (median per-pair ratio 0.999x; a repeat 0.82x / 0.97x): no faster, so auto
# keeps the plain path there. The fast path's CPU batches are the plain path's, so either gives the same bits.
CPU_DEFAULT_PATH = "plain"


def asked_path(path: str | None = None) -> str:
    """``auto``, ``fast`` or ``plain``: ``path``, else ``$BERDS_ENCODE_PATH``, else ``auto``."""
    if path in (None, "auto"):
        path = os.environ.get("BERDS_ENCODE_PATH", "").strip() or "auto"
        if path not in PATHS:
            raise ValueError(f"BERDS_ENCODE_PATH must be one of {', '.join(PATHS)}; got {path!r}")
    if path not in PATHS:
        raise ValueError(f"encode path must be one of {', '.join(PATHS)}; got {path!r}")
    return path


def resolve_path(path: str | None, device: str) -> str:
    """``fast`` or ``plain`` for ``device``: ``path``, else ``$BERDS_ENCODE_PATH``, else auto
    (``fast`` on CUDA, ``CPU_DEFAULT_PATH`` on the CPU, ``plain`` elsewhere)."""
    path = asked_path(path)
    if path != "auto":
        return path
    if str(device).startswith("cuda"):
        return "fast"
    return CPU_DEFAULT_PATH if str(device) == "cpu" else "plain"


@dataclass(frozen=True)
class PipelineOptions:
    """How the fast path batches and overlaps (``for_device`` gives the defaults)."""

    batching: str = "tokens"  # tokens: token-budget batches | plain: the plain path's batches (see below)
    token_budget: int = 65_536  # padded tokens per batch: rows x the batch's longest text (tokens batching)
    max_rows: int = 1024  # rows per batch at most (plain batching: exactly, as the plain path's batch size)
    workers: int = 4  # tokenizer threads
    window: int = 8192  # texts tokenized (and, tokens batching, length-sorted) together
    first_window: int = 1024  # a part's first window; windows double up to ``window``
    depth: int = 0  # windows queued ahead of the model (0: 2 x workers + 2)

    @classmethod
    def for_device(cls, device: str, batch_size: int | None = None) -> "PipelineOptions":
        """CUDA: token batching, up to 65,536 padded tokens and 1,024 rows a batch, up to 8 tokenizer
        threads, 8,192-text windows. Elsewhere: plain batching at ``batch_size`` (64) rows, one tokenizer
        thread, 1,024-text windows (the CPU's forward pass, not the tokenizer, is the bottleneck there:
        the gain is the tokenizer's share, and the vectors stay bit for bit the plain path's)."""
        if str(device).startswith("cuda"):
            return cls(workers=max(1, min(8, (os.cpu_count() or 2) - 2)))
        rows = int(batch_size or 64)
        return cls(batching="plain", token_budget=rows * 512, max_rows=rows, workers=1, window=1024,
                   first_window=1024, depth=2)

    def __post_init__(self):
        if self.batching not in BATCHINGS:
            raise ValueError(f"PipelineOptions.batching must be one of {', '.join(BATCHINGS)}; got {self.batching!r}")
        for name in ("token_budget", "max_rows", "workers", "window", "first_window"):
            if int(getattr(self, name)) < 1:
                raise ValueError(f"PipelineOptions.{name} must be at least 1")

    @property
    def queue_depth(self) -> int:
        return int(self.depth) or 2 * int(self.workers) + 2


def windows(n: int, first: int, full: int) -> list[tuple[int, int]]:
    """The windows of a part of ``n`` texts: ``first`` texts, then doubling, up to ``full`` each."""
    out, a, size = [], 0, max(1, min(first, full))
    while a < n:
        out.append((a, min(n, a + size)))
        a += size
        size = min(full, size * 2)
    return out


def batches(lengths: np.ndarray, token_budget: int, max_rows: int) -> list[np.ndarray]:
    """Row numbers of each batch: longest first, at most ``max_rows`` rows and ``token_budget`` padded
    tokens (rows x the batch's longest) per batch; a text longer than the budget goes alone."""
    order = np.argsort(-np.asarray(lengths), kind="stable")
    out, i, n = [], 0, len(order)
    while i < n:
        longest = max(int(lengths[order[i]]), 1)
        rows = max(1, min(max_rows, token_budget // longest, n - i))
        out.append(order[i:i + rows])
        i += rows
    return out


def plain_order(texts: list[str]) -> np.ndarray:
    """The order ``SentenceTransformer.encode`` batches a list of texts in: by character count, longest
    first (the same ``np.argsort`` call, so ties fall the same way)."""
    return np.argsort([-len(t) for t in texts])


_TRANSFORMS: dict[str, Callable[[str], str] | None] = {
    "as is": None, "stripped": str.strip, "lower-cased": str.lower, "stripped, lower-cased": lambda t: t.strip().lower(),
}
PROBES = ("", "  Leading and trailing spaces.  ", "MiXeD CaSe, ünïcödé and punctuation: «quotes» — dashes!",
          "numbers 12,345.67 and symbols #@$% [PAD] [CLS]", "\ttabs\nand newlines\n")
_END = object()


class _Stop(Exception):
    pass


class _Failed:
    """What the feeder queues when reading the parts failed: the consumer raises ``error``."""

    def __init__(self, error: BaseException):
        self.error = error


class EncodePipeline:
    """The fast path for one loaded SentenceTransformer (see the module docstring).

    Raises ``ValueError`` (the reason, one line) for a model it cannot encode exactly as the plain path
    does: no fast tokenizer, a default prompt, features other than ids / mask / token types.
    """

    def __init__(self, encoder, options: PipelineOptions | None = None):
        import torch

        self.encoder = encoder
        self.device = torch.device(getattr(encoder, "device", "cpu"))
        self.options = options or PipelineOptions.for_device(self.device.type)
        self.cuda = self.device.type == "cuda"
        first = encoder[0] if len(encoder) else None
        tok = getattr(first, "tokenizer", None)
        backend = getattr(tok, "backend_tokenizer", None) if getattr(tok, "is_fast", False) else None
        if backend is None:
            raise ValueError("the model's first module has no fast (Rust) tokenizer")
        prompt = (getattr(encoder, "prompts", None) or {}).get(getattr(encoder, "default_prompt_name", None) or "")
        if prompt:
            raise ValueError("the model has a default prompt")
        self.max_seq_length = int(encoder.max_seq_length)
        self.tokenizer = Tokenizer.from_str(backend.to_str())  # private: the model's own tokenizer keeps its state
        self.tokenizer.no_padding()
        self.tokenizer.enable_truncation(self.max_seq_length)
        self._encode_batch = getattr(self.tokenizer, "encode_batch_fast", None) or self.tokenizer.encode_batch
        self.pad_id = int(tok.pad_token_id if tok.pad_token_id is not None else 0)
        self.type_ids = "token_type_ids" in (getattr(tok, "model_input_names", None) or ())
        self.extras: dict = {}
        self.transform = self._match_preprocessing()
        dim = getattr(encoder, "get_embedding_dimension", None) or encoder.get_sentence_embedding_dimension
        self.dim = int(dim() or 0) or None

    # ------------------------------------------------------------ tokens
    def _reference(self, texts: list[str]) -> dict:
        """The model's own features for ``texts`` (one padded batch): what the plain path feeds it."""
        fn = getattr(self.encoder, "preprocess", None) or self.encoder.tokenize
        return dict(fn(list(texts)))

    def _match_preprocessing(self):
        """The text transform (none, strip, lower-case) under which this tokenizer gives the model's own
        features for the probe texts, token for token; ValueError when none does."""
        import torch

        long = " ".join(["word"] * (2 * self.max_seq_length + 10))
        probes = list(PROBES) + [long, "Short."]
        ref = self._reference(probes)
        known = {"input_ids", "attention_mask", "token_type_ids"}
        other = [k for k, v in ref.items() if isinstance(v, torch.Tensor) and k not in known]
        if other:
            raise ValueError(f"the model takes features the fast path does not make: {', '.join(sorted(other))}")
        self.extras = {k: v for k, v in ref.items() if not isinstance(v, torch.Tensor)}
        if self.type_ids != ("token_type_ids" in ref):
            self.type_ids = "token_type_ids" in ref
        for transform in _TRANSFORMS.values():
            ids, lens = self._tokenize(probes, transform)
            width = int(ref["input_ids"].shape[1])
            if int(lens.max()) != width:
                continue
            got = self._collate(ids, lens, np.arange(len(probes)), width)
            same = torch.equal(got["input_ids"], ref["input_ids"].cpu()) and \
                torch.equal(got["attention_mask"], ref["attention_mask"].cpu().to(torch.int64))
            if same and self.type_ids:
                same = not bool(ref["token_type_ids"].cpu().any())  # single texts: every type id is 0
            if same:
                return transform
        raise ValueError("the fast tokenizer does not give the model's own tokens for the probe texts")

    def _tokenize(self, texts: list[str], transform=None) -> tuple[tuple[np.ndarray, np.ndarray], np.ndarray]:
        """``((flat ids, starts), lengths)`` of ``texts`` (one Rust batch call, no padding, truncated)."""
        if transform is not None:
            texts = [transform(t) for t in texts]
        ids = [e.ids for e in self._encode_batch(texts)]
        lens = np.fromiter(map(len, ids), np.int64, len(ids))
        flat = np.fromiter(itertools.chain.from_iterable(ids), np.int64, int(lens.sum()))
        starts = np.zeros(len(lens), np.int64)
        np.cumsum(lens[:-1], out=starts[1:])
        return (flat, starts), lens

    def _collate(self, ids, lens: np.ndarray, local: np.ndarray, width: int, rows: np.ndarray | None = None) -> dict:
        """The padded int64 ``input_ids`` / ``attention_mask`` of the window's texts ``local`` and ``rows``, their
        rows in the part (default ``local``); pinned for CUDA."""
        import torch

        flat, starts = ids
        pos = np.arange(width)
        mask = pos[None, :] < lens[local][:, None]
        out = np.full((len(local), width), self.pad_id, np.int64)
        out[mask] = flat[(starts[local][:, None] + pos[None, :])[mask]]
        feats = {"input_ids": torch.from_numpy(out), "attention_mask": torch.from_numpy(mask.astype(np.int64)),
                 "rows": torch.from_numpy(np.ascontiguousarray(local if rows is None else rows, np.int64))}
        if self.cuda:
            feats = {k: v.pin_memory() for k, v in feats.items()}
        return feats

    def prepare(self, texts: list[str], rows: np.ndarray | None = None) -> list[dict]:
        """A window's batches (a worker's job): tokenized, batched, padded. ``rows``: the texts' rows in the
        part. Tokens batching: sorted by token count, cut under the budget. Plain batching: ``texts`` come in
        the plain path's order (``plain_order``), ``max_rows`` at a time."""
        ids, lens = self._tokenize(texts, self.transform)
        rows = np.arange(len(texts)) if rows is None else np.asarray(rows, np.int64)
        o = self.options
        if o.batching == "plain":
            cuts = [np.arange(a, min(a + o.max_rows, len(texts))) for a in range(0, len(texts), o.max_rows)]
        else:
            cuts = batches(lens, o.token_budget, o.max_rows)
        return [self._collate(ids, lens, local, int(lens[local].max()) if len(local) else 0, rows[local])
                for local in cuts]

    def part_windows(self, texts: list[str]) -> list[tuple[list[str], np.ndarray]]:
        """A part's windows: ``(texts, their rows in the part)``, the jobs of the tokenizer workers. Tokens
        batching: consecutive texts. Plain batching: the part in the plain path's order, whole batches a
        window (so every batch is one of the plain path's)."""
        o = self.options
        if o.batching == "plain":
            order = plain_order(texts)
            per = max(1, o.window // o.max_rows) * o.max_rows
            first = max(1, o.first_window // o.max_rows) * o.max_rows
            return [([texts[i] for i in order[a:b]], order[a:b]) for a, b in windows(len(texts), first, per)]
        return [(texts[a:b], np.arange(a, b)) for a, b in windows(len(texts), o.first_window, o.window)]

    # ------------------------------------------------------------ the model
    def forward(self, feats: dict):
        """One batch through the model (call under ``torch.inference_mode``): its ``sentence_embedding``
        rows on the device, nothing waited for."""
        import torch

        x = {k: v.to(self.device, non_blocking=True) for k, v in feats.items() if k != "rows"}
        if self.type_ids:
            x["token_type_ids"] = torch.zeros_like(x["input_ids"])
        x.update(self.extras)
        return self.encoder(x)["sentence_embedding"]

    def encode(self, texts: list[str]) -> np.ndarray:
        """float32 unit-length embeddings of ``texts``, one row each, in order."""
        return next(self.stream([(None, list(texts))]))[1]

    def stream(self, parts: Iterable[tuple[object, list[str]]], on_rows: Callable[[int], None] | None = None
               ) -> Iterator[tuple[object, np.ndarray]]:
        """``(key, texts)`` parts in, ``(key, float32 unit vectors)`` out, in order; ``on_rows(n)`` after each
        batch's forward pass (``n`` texts). ``parts`` is read by a feeder thread, one part ahead or more."""
        import torch

        o = self.options
        q: queue.Queue = queue.Queue(maxsize=o.queue_depth)
        stop = threading.Event()
        pool = ThreadPoolExecutor(o.workers, thread_name_prefix="berds-tokenize")

        def put(item) -> None:
            while not stop.is_set():
                try:
                    q.put(item, timeout=0.05)
                    return
                except queue.Full:
                    continue
            raise _Stop

        def feed() -> None:
            try:
                for key, texts in parts:
                    texts = list(texts)
                    wins = self.part_windows(texts)
                    if not wins:
                        put((key, 0, None, True))
                    for j, (win, rows) in enumerate(wins):
                        put((key, len(texts), pool.submit(self.prepare, win, rows), j == len(wins) - 1))
                put(_END)
            except _Stop:
                pass
            except BaseException as e:  # noqa: BLE001 - handed to the consumer, raised there
                try:
                    put(_Failed(e))
                except _Stop:
                    pass

        feeder = threading.Thread(target=feed, name="berds-encode-feed", daemon=True)
        feeder.start()
        current, finished = None, []
        try:
            while True:
                item = q.get()
                if item is _END:
                    break
                if isinstance(item, _Failed):  # what was encoded before the reader failed still comes out
                    while finished:
                        yield self._finish(finished.pop(0))
                    raise item.error
                key, n, fut, last = item
                if current is None:
                    current = (key, n, None)
                for feats in (fut.result() if fut is not None else []):
                    with torch.inference_mode():  # never across a yield: the caller's thread state stays its own
                        emb = self.forward(feats)
                        buf = current[2]
                        if buf is None:
                            buf = torch.zeros((n, int(emb.shape[1])), dtype=torch.float32, device=emb.device)
                            current = (key, n, buf)
                        rows = feats["rows"].to(emb.device, non_blocking=True)
                        buf.index_copy_(0, rows, emb.float())
                    if on_rows is not None:
                        on_rows(int(feats["rows"].shape[0]))
                    while finished:  # a batch of what follows is launched: take the finished parts now
                        yield self._finish(finished.pop(0))
                if last:
                    finished.append(current)
                    current = None
            while finished:
                yield self._finish(finished.pop(0))
        finally:
            stop.set()
            while True:  # unblock the feeder, drop what it queued
                try:
                    item = q.get_nowait()
                except queue.Empty:
                    break
                if isinstance(item, tuple) and item[2] is not None:
                    item[2].cancel()
            feeder.join()
            pool.shutdown(wait=True, cancel_futures=True)

    def _finish(self, part) -> tuple[object, np.ndarray]:
        """A part's vectors on the host, normalised in float32 exactly as the plain path normalises."""
        import torch

        key, n, buf = part
        if buf is None:
            return key, np.zeros((n, self.dim or 0), np.float32)
        with torch.inference_mode():
            emb = buf.cpu().numpy()
        norms = np.linalg.norm(emb, axis=1, keepdims=True)  # as store.encode_normalized, to the bit
        return key, (emb / np.maximum(norms, 1e-12)).astype(np.float32)
