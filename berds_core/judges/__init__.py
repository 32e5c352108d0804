"""Perspective-detection judges: does a passage support a perspective?

``get_judge(spec, **opts)`` (registry ``JUDGES``, one error listing the choices):

- ``embedded`` (default): offline CPU judge, a calibrated MiniLM cosine of
  perspective and passage, gated on the question's topic (opts: ``threshold``,
  ``device``, ``batch_size``, ``encoding`` fp32|bf16|int8|auto); chosen by
  nested cross-validation (``scripts/train_judge.py``), its out-of-fold
  agreement with the BERDS human pairs in its weights' report (``describe_judge``); of two opposite
  perspectives (:mod:`.groups`) a passage supports at most one, the stance model reading the side
  (:mod:`.one_side`, v5); ``embedded:v4`` is the judge before that rule (each pair alone, cheaper cold);
- ``argkp``: offline CPU judge, a MiniLM cross-encoder trained on IBM ArgKP (does this argument express this
  key point?) read through a calibrated head with the same unsure band and topicality gate
  (:mod:`.cross_encoder`; same options as ``embedded``);
- ``hf:<model-id-or-path>[+<adapter-id-or-path>]``: a transformers causal LM;
- ``openai:<model>@<base_url>``: an OpenAI-compatible server (vLLM, Ollama, OpenAI);
- ``berds-evaluator``: the BERDS paper's fine-tuned evaluator,
  ``hf:mistralai/Mistral-7B-Instruct-v0.2+timchen0618/Mistral_BERDS_evaluator``
  with the ``berds`` prompt, system turn dropped (as the authors do);
- ``berds-evaluator:<base_url>``: the same evaluator served by ``vllm serve``
  with its LoRA adapter registered as ``berds-evaluator`` (see the README);
- ``vllm[:<model>[+<adapter>]]``: vLLM engines on a Ray cluster through
  ``ray.data.llm`` (``--ray`` only; ``vllm`` alone: the BERDS evaluator), see
  :mod:`berds_core.judges.vllm_batch`.

LLM-judge options: ``prompt`` (``berds`` | ``studio``), ``shot`` (0 | 1),
``decode`` (``logits``: one forward pass, P(Yes) from the Yes/No logits, the
default; ``generate``: the authors' greedy 16 tokens + their parser),
``system`` (``auto`` | ``keep`` | ``drop``), ``threshold``; hf: ``device``,
``dtype``, ``batch_size``, ``max_length``, ``inference`` (``auto`` | ``plain`` | ``fast``,
see :mod:`berds_core.generators.hf_inference`); openai: ``concurrency``,
``timeout``, ``retries``, ``backoff``, ``api_key``.

Every judge has ``.name``, ``.predict(pairs) -> (probs, labels)`` (cached),
``.document(ctx)`` (the text it reads for a passage) and ``.status()``.
``judge_run`` stores ``<name>-preds`` (and ``<name>-probs``) inside each
passage, as the BERDS authors' ``eval.py`` does.

The package's modules: :mod:`.registry` (the specs and how each judge is built), :mod:`.verdicts` (passages
and runs judged), :mod:`.about` (what a judge measures, in words), :mod:`.base` (the base class and the
prediction cache), and one module per backend.
"""
from __future__ import annotations

from .about import describe_judge
from .base import Judge, JudgeError, PredictionCache, gate, prediction_cache
from .registry import (BERDS_EVALUATOR_ADAPTER, BERDS_EVALUATOR_MODEL, BERDS_EVALUATOR_MODULE, JUDGES, app_judge_spec,
                       get_judge, parse_spec)
from .verdicts import judge_passages, judge_run, passage_text

__all__ = ["JUDGES", "app_judge_spec", "get_judge", "judge_run", "judge_passages", "passage_text", "Judge",
           "JudgeError", "gate", "PredictionCache", "prediction_cache", "parse_spec", "describe_judge",
           "BERDS_EVALUATOR_MODEL", "BERDS_EVALUATOR_ADAPTER", "BERDS_EVALUATOR_MODULE"]
