"""Which texts to encode, in exactly the parts one process would encode them.

A transformer's output for a text depends, in its last bits, on the other
texts of its batch (padding changes the shapes the kernels see). One process
encodes the texts missing from the embedding store in parts of
``embeddings.text_encoders.CHUNK`` texts, in the order it meets them
(``TextEncoder.embed_map``); each part is one ``encode_normalized`` call. The
plans below list those same parts, so a cluster that encodes each part in one
call gives the same vectors bit for bit.

- :func:`corpus_plan`: ``berds index`` over a corpus in memory (``DenseRetriever`` embeds every passage
  text in one call);
- :func:`store_plan`: ``berds index`` over a corpus in the on-disk store. One process
  (``retrieval.dense_scale.passage_vectors``) does not go through the embedding store there: it encodes
  the rows of each vector shard of ``retrieval.vector_shards.SHARD_ROWS`` rows in one ``encode_uncached``
  call and writes the shard (the store de-duplicated the texts already). A part is that row range, so
  the plan is a list of ranges, planned without reading a single text (the shards already written and
  checked are left out: a resumed job encodes only the rest);
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ..files.cache import text_hash
from ..embeddings.text_encoders import CHUNK, embedding_store


@dataclass
class EncoderSpec:
    """What an actor needs to build the driver's encoder: same model, precision, length and batch size."""

    model: str | None
    encoding: str
    max_seq_length: int
    batch_size: int
    key: str  # the embedding-store key the vectors are filed under (model | precision | max tokens)
    path: str = "auto"  # the encoding path asked for (embeddings.pipeline.resolve_path, per actor device)

    @classmethod
    def of(cls, te) -> "EncoderSpec":
        """From a ``embeddings.text_encoders.TextEncoder`` (nothing is loaded)."""
        return cls(te.model_id, te.encoding, te.max_seq_length, te.batch_size, te.key, te.path_asked)

    def kwargs(self) -> dict:
        return {"model": self.model, "encoding": self.encoding, "max_seq_length": self.max_seq_length,
                "batch_size": self.batch_size, "path": self.path}


@dataclass
class Plan:
    parts: list[list[str]] = field(default_factory=list)  # each part: one encode call, in this order
    texts: int = 0  # unique texts asked for
    stored: int = 0  # of which already in the store

    @property
    def to_encode(self) -> int:
        return sum(len(p) for p in self.parts)


def _in_store(key: str, texts: list[str]) -> set[str]:
    hashes = {t: text_hash(t) for t in texts}
    found = embedding_store().get_many(key, list(dict.fromkeys(hashes.values())))
    return {t for t, h in hashes.items() if h in found}


def _split(need: list[str]) -> list[list[str]]:
    return [need[i:i + CHUNK] for i in range(0, len(need), CHUNK)]


def corpus_plan(key: str, texts) -> Plan:
    """The parts ``TextEncoder.embed(texts)`` would encode: unique texts not in the store, CHUNK at a time."""
    uniq = list(dict.fromkeys(texts))
    stored = _in_store(key, uniq)
    need = [t for t in uniq if t not in stored]
    return Plan(_split(need), len(uniq), len(stored))


@dataclass
class RowPlan:
    """Row ranges of an on-disk corpus, each encoded in one call: ``(part, start, stop)``."""

    parts: list[tuple[int, int, int]] = field(default_factory=list)
    texts: int = 0  # rows of the corpus
    stored: int = 0  # of which already in finished vector shards

    @property
    def to_encode(self) -> int:
        return sum(b - a for _, a, b in self.parts)


def store_plan(shards) -> RowPlan:
    """The row ranges one process would encode for the vector shards ``shards``
    (``retrieval.vector_shards.VectorShards``) that are not written yet (or whose checksum fails)."""
    todo = [] if shards.complete else [i for i in range(shards.n_shards) if not shards.shard_ok(i)]
    parts = [(i, *shards.bounds(i)) for i in todo]
    return RowPlan(parts, shards.n, shards.n - sum(b - a for _, a, b in parts))
