"""Query encoders for dense indexes, named by spec strings.

- a sentence-transformers hub id or local path (default all-MiniLM-L6-v2):
  unit-length embeddings through the shared text encoder (the one the studio's
  own dense indexes are built with; ``embed_store.text_encoder``);
- ``dpr:<hub id or path>``: a DPR question encoder (``transformers``'
  ``DPRQuestionEncoder``), its pooled output *not* normalised, as DPR and
  Pyserini's DPR indexes score (inner product). Pyserini's
  ``wikipedia-dpr-100w.dpr-multi`` index takes
  ``dpr:facebook/dpr-question_encoder-multiset-base``.

``query_encoder(spec)`` returns an object with ``embed(texts) -> float32
[n, dim]``, ``dim``, ``key`` (what names it in ``berds.json``) and
``normalized``.
"""
from __future__ import annotations

import functools
import os

import numpy as np

from ..embeddings.models import pick_device
from ..embeddings.text_encoders import text_encoder
from ..runtime.model_lock import model_loading

DPR_PREFIX = "dpr:"


class SentenceQueryEncoder:
    normalized = True

    def __init__(self, model: str | None = None, device: str | None = None, encoding: str | None = None):
        self.text_encoder = text_encoder(model, device, encoding)
        self.model = model
        self.key = self.text_encoder.key
        self.encoding = self.text_encoder.encoding
        self.device = self.text_encoder.device

    @property
    def dim(self) -> int:
        return self.text_encoder.dim

    def embed(self, texts) -> np.ndarray:
        return self.text_encoder.embed(list(texts))


class DPRQueryEncoder:
    """DPR's question tower: ``pooler_output`` of the [CLS] token, unnormalised, fp32."""

    normalized = False
    encoding = "fp32"

    def __init__(self, path: str, device: str | None = None, max_length: int = 256):
        import torch
        from transformers import AutoTokenizer, DPRQuestionEncoder

        self.device = pick_device(device)
        self.key = f"{DPR_PREFIX}{path}"
        self.max_length = max_length
        local = os.path.isdir(path)
        with model_loading():
            self.tokenizer = AutoTokenizer.from_pretrained(path, local_files_only=local)
            self.model = DPRQuestionEncoder.from_pretrained(path, local_files_only=local).to(self.device).eval()
        self._torch = torch

    @property
    def dim(self) -> int:
        return int(self.model.config.projection_dim or self.model.config.hidden_size)

    def embed(self, texts, batch_size: int = 32) -> np.ndarray:
        texts = list(texts)
        out = []
        with self._torch.inference_mode():
            for a in range(0, len(texts), batch_size):
                enc = self.tokenizer(texts[a:a + batch_size], padding=True, truncation=True,
                                     max_length=self.max_length, return_tensors="pt").to(self.device)
                out.append(self.model(**enc).pooler_output.float().cpu().numpy())
        return np.concatenate(out).astype(np.float32) if out else np.zeros((0, self.dim), np.float32)


@functools.lru_cache(maxsize=4)
def query_encoder(spec: str | None = None, device: str | None = None, encoding: str | None = None):
    """The query encoder a spec names (see the module docstring)."""
    if spec and spec.startswith(DPR_PREFIX):
        path = spec[len(DPR_PREFIX):].strip()
        if not path:
            raise ValueError("dpr: needs a model, e.g. dpr:facebook/dpr-question_encoder-multiset-base")
        return DPRQueryEncoder(path, device)
    return SentenceQueryEncoder(spec, device, encoding)
