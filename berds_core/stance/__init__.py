"""One stance model for the whole studio: which side a text takes on a question, a claim or a perspective.

    from berds_core.stance import get_stance_model
    m = get_stance_model()
    m.probs([(target, text), ...])      # (n, 3): P(support), P(oppose), P(unrelated)
    m.sides(question, passages)         # the `diverse` preset: P(yes side), P(no side), P(off)
    m.claim_stance(claim, sentences)    # perspective discovery's T2: P(support | on topic)
    m.supports([(perspective, doc)])    # the embedded judge: P(doc supports perspective)

A MiniLM cross-encoder (the packaged all-MiniLM-L6-v2 with merged LoRA
adapters) reads ``target [SEP] text``; its mean-pooled last layer is the
pair's **encoding**, kept once per pair in the embedding store
(``embed_store``) and shared by every use; a linear head gives the three
classes, and each use applies its own calibration and decision rule, chosen
by question-grouped cross-validation (``weights/stance_v3.npz``'s ``uses``).

Modules: ``examples`` (training and evaluation pairs from the development
sources), ``network`` (the encoder, LoRA, the weights file), ``training``
(the resumable trainer), ``rules`` (each use's decision and how it is
fitted), ``model`` (inference through the store). Trained by
``scripts/train_stance.py``; figures in ``docs/stance.md``.
"""
from __future__ import annotations

from .examples import CLASSES, passage_string
from .model import WEIGHTS, StanceModel, get_stance_model, negation

__all__ = ["CLASSES", "WEIGHTS", "StanceModel", "get_stance_model", "negation", "passage_string"]
