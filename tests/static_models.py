"""A static embedding model built from a config, for tests (``berds_core.embeddings.static``): what the studio does
with any static folder, without the distillation environment."""
from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from berds_core.embeddings.models import resolve_model

MINILM = resolve_model(None)


def make_static(path: Path, dims: int = 64) -> Path:
    """A static model built from a config: MiniLM's tokenizer, its input word embeddings' first ``dims``
    columns, a ``StaticEmbedding`` and a ``Normalize`` module saved as sentence-transformers saves them."""
    from safetensors.numpy import load_file
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer.modules import Normalize, StaticEmbedding
    from tokenizers import Tokenizer

    weights = load_file(os.path.join(MINILM, "model.safetensors"))["embeddings.word_embeddings.weight"][:, :dims]
    emb = StaticEmbedding(Tokenizer.from_file(os.path.join(MINILM, "tokenizer.json")),
                          embedding_weights=np.ascontiguousarray(weights, dtype=np.float32))
    SentenceTransformer(modules=[emb, Normalize()], device="cpu").save(str(path))
    return path
