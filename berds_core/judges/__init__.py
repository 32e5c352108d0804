"""Perspective-detection judges: does a passage support a perspective?

``get_judge(spec, **opts)`` (registry ``JUDGES``, one error listing the choices):

- ``embedded`` (default): offline CPU judge, a calibrated MiniLM cosine of
  perspective and passage, gated on the question's topic (opts: ``threshold``,
  ``device``, ``batch_size``, ``encoding`` fp32|bf16|int8|auto); chosen by
  nested cross-validation (``scripts/train_judge.py``), its out-of-fold
  agreement with the BERDS human pairs in its weights' report (``describe_judge``);
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
"""
from __future__ import annotations

import numpy as np

from ..generators import split_openai_spec
from ..specs import Registry, SpecError
from .base import Judge, JudgeError, PredictionCache, gate, prediction_cache
from ..files.safepaths import resolve_user_model
from ..net.endpoints import check_endpoint
from ..runs import set_judgments
from .prompts import document_text

BERDS_EVALUATOR_MODEL = "mistralai/Mistral-7B-Instruct-v0.2"
BERDS_EVALUATOR_ADAPTER = "timchen0618/Mistral_BERDS_evaluator"
BERDS_EVALUATOR_MODULE = "berds-evaluator"  # the LoRA module name the README's `vllm serve` command registers

__all__ = ["JUDGES", "app_judge_spec", "get_judge", "judge_run", "judge_passages", "passage_text", "Judge", "JudgeError", "gate",
           "PredictionCache", "prediction_cache", "parse_spec", "describe_judge", "BERDS_EVALUATOR_MODEL",
           "BERDS_EVALUATOR_ADAPTER", "BERDS_EVALUATOR_MODULE"]

JUDGES = Registry("judge", parts_required=True)
LLM_OPTS = {"prompt", "shot", "decode", "system", "threshold"}
HF_OPTS = LLM_OPTS | {"device", "dtype", "batch_size", "max_length", "inference"}
OPENAI_OPTS = LLM_OPTS | {"concurrency", "timeout", "retries", "backoff", "api_key", "top_logprobs"}
BERDS_PROMPT = {"prompt": "berds", "system": "drop"}  # the BERDS evaluator's prompt, system turn dropped


def _pick(opts: dict, allowed: set) -> dict:
    return {k: v for k, v in opts.items() if k in allowed}


def _split_hf(arg: str) -> tuple[str, str | None]:
    model, _, adapter = (arg or "").partition("+")
    if not model:
        raise SpecError("hf judge needs a model: hf:<model-id-or-path>[+<adapter>]")
    return model, adapter or None


# What each spec names, nothing loaded: (backend, parts); parse_spec reads them, the factories build from them.

def _embedded_parts(arg):
    return "embedded", {"variant": None}


def _hf_parts(arg):
    model, adapter = _split_hf(arg)
    return "hf", {"model": model, "adapter": adapter}


def _openai_parts(arg):
    model, url = split_openai_spec(arg)
    return "openai", {"model": model, "base_url": url}


def _berds_evaluator_parts(arg):
    if arg:  # the LoRA served by `vllm serve` under the module name the README registers
        return "openai", {"model": BERDS_EVALUATOR_MODULE, "base_url": arg}
    return "hf", {"model": BERDS_EVALUATOR_MODEL, "adapter": BERDS_EVALUATOR_ADAPTER}


def _vllm_parts(arg):
    model, adapter = _split_hf(arg) if arg else (BERDS_EVALUATOR_MODEL, BERDS_EVALUATOR_ADAPTER)
    return "vllm", {"model": model, "adapter": adapter}


def _build(parts, opts: dict) -> Judge:
    """The judge of ``(backend, parts)``, loaded or connected with ``opts`` (each backend keeps its own)."""
    backend, p = parts
    if backend == "embedded":
        from .embedded import EmbeddedJudge

        return EmbeddedJudge(**_pick(opts, {"threshold", "device", "batch_size", "encoding"}))
    if backend == "hf":
        from .hf import HFJudge

        return HFJudge(p["model"], p["adapter"], **_pick(opts, HF_OPTS))
    if backend == "openai":
        from .openai_compat import OpenAIJudge

        return OpenAIJudge(p["model"], p["base_url"], **_pick(opts, OPENAI_OPTS))
    from .vllm_batch import VLLMJudge

    return VLLMJudge(p["model"], p["adapter"], **_pick(opts, LLM_OPTS | {"batch_size"}))


def _with_berds_prompt(opts: dict) -> dict:
    return {**opts, **{k: opts.get(k) or v for k, v in BERDS_PROMPT.items()}}


@JUDGES.register("embedded", parts=_embedded_parts,
                 help="offline: calibrated MiniLM cosine of passage and perspective, gated on the question's topic "
                      "(reads closeness, not sides)")
def _embedded(parts, **opts):
    return _build(parts, opts)


JUDGES.register("default", parts=_embedded_parts, help="the embedded judge")(_embedded)


@JUDGES.register("hf", usage="hf:<model>[+<adapter>]", needs_arg=True, parts=_hf_parts,
                 help="a transformers causal LM (hub id or local folder), optional LoRA adapter")
def _hf(parts, **opts):
    return _build(parts, opts)


@JUDGES.register("openai", usage="openai:<model>@<base_url>", needs_arg=True, parts=_openai_parts,
                 help="an OpenAI-compatible server: vLLM, Ollama, llama.cpp, OpenAI")
def _openai(parts, **opts):
    return _build(parts, opts)


@JUDGES.register("berds-evaluator", usage="berds-evaluator[:<base_url>]", takes_arg=True,
                 parts=_berds_evaluator_parts,
                 help="the BERDS paper's evaluator (Mistral-7B-Instruct-v0.2 + LoRA, the paper's prompt): "
                      "local transformers, or a vLLM server at <base_url> serving the LoRA as 'berds-evaluator'")
def _berds_evaluator(parts, **opts):
    return _build(parts, _with_berds_prompt(opts))


@JUDGES.register("vllm", usage="vllm[:<model>[+<adapter>]]", takes_arg=True, parts=_vllm_parts,
                 help="vLLM engines on a Ray cluster through ray.data.llm (needs --ray), LoRA adapter loaded by "
                      "the engine; vllm alone: the BERDS evaluator")
def _vllm(parts, **opts):
    # the BERDS evaluator (vllm alone, or named by its model and adapter) reads the paper's prompt
    evaluator = (parts[1]["model"], parts[1]["adapter"]) == (BERDS_EVALUATOR_MODEL, BERDS_EVALUATOR_ADAPTER)
    return _build(parts, _with_berds_prompt(opts) if evaluator else opts)


def parse_spec(spec: str) -> tuple[str, dict]:
    """``spec`` -> (backend, parts), what the registry entry reads from it (nothing is loaded). Raises
    ValueError (:class:`SpecError`) with the choices."""
    return JUDGES.parts(spec or "embedded")


def app_judge_spec(spec: str, what: str = "judge") -> str:
    """A judge spec typed into the app, checked before anything is loaded or requested.

    ``hf:`` and ``vllm:`` models and adapters given as folders must lie under the allowed
    roots (hub ids pass; :func:`berds_core.files.safepaths.resolve_user_model`), and
    server addresses (``openai:<model>@<url>``, ``berds-evaluator:<url>``) must
    be on the operator's list (:func:`berds_core.net.endpoints.check_endpoint`).
    Returns the spec (folders made absolute); raises InputError / SpecError.
    """
    spec = (spec or "embedded").strip()
    name, arg = JUDGES.parse(spec)
    if name in ("hf", "vllm") and arg:  # vllm:<model>[+<adapter>] names folders the same way as hf:
        model, adapter = _split_hf(arg)
        parts = [resolve_user_model(p, what=f"{what} model path") for p in (model, adapter) if p]
        return f"{name}:" + "+".join(parts)
    if name == "openai":
        check_endpoint(split_openai_spec(arg)[1], what=f"{what} server address")
    elif name == "berds-evaluator" and arg:
        check_endpoint(arg, what=f"{what} server address")
    return spec


def get_judge(spec: str = "embedded", **opts) -> Judge:
    """A judge from its spec string; ``opts`` with value None are ignored."""
    opts = {k: v for k, v in opts.items() if v is not None}
    return JUDGES.create((spec or "embedded").strip(), **opts)


def describe_judge(spec_or_judge) -> dict:
    """What a judge measures, for the app and reports: ``{"stance": bool, "label": str, "caveat": str|None}``
    for a judge, a spec (``embedded``) or a stored judge name (``embedded-cos-v4-...``).

    The ``embedded`` judge reads how close a passage is to a perspective (a calibrated MiniLM cosine, gated on
    the question's topic): it cannot tell a passage for a perspective from one against it, so its positives
    are labelled "close", not "supports"; its out-of-fold figures on the BERDS human pairs come from its
    weights. Names of earlier embedded judges stored in runs and databases keep what they measured:
    ``embedded-minilm-...`` (cosine, topicality) and ``embedded-stance-...`` (the stance model, issue 28).
    """
    backend = getattr(spec_or_judge, "backend", None)
    text = str(spec_or_judge or "").strip()
    if backend is None and text.startswith("embedded-minilm"):
        return {"stance": False, "label": "on topic",
                "caveat": "Judged by an earlier offline embedded judge that measured topicality, not stance: "
                          "it could not tell a passage for a perspective from one against it."}
    if backend is None and text.startswith("embedded-stance"):
        return {"stance": True, "label": "supports",
                "caveat": "Judged by an earlier offline embedded judge, the studio's stance model (out of fold "
                          "on the BERDS human pairs' development half: F1 0.29, kappa 0.08, below the cosine "
                          "judge that replaced it)."}
    if backend is None and (text in ("embedded", "default") or text.startswith(("embedded-", "embedded:"))):
        backend = "embedded"  # a spec, or a judge name as stored in runs and annotation databases
    if backend == "embedded":
        from .embedded import judge_report

        cv = judge_report()
        fig = (f" Out of fold on the BERDS human pairs' development half: F1 {cv['f1']:.2f}, precision "
               f"{cv['precision']:.2f}, recall {cv['recall']:.2f}, Cohen's kappa {cv['kappa']:.2f}, calibration "
               f"error {cv['ece']:.2f} (the paper's fine-tuned evaluator: F1 0.62).") if cv else ""
        return {"stance": False, "label": "close",
                "caveat": "The offline embedded judge reads how close a passage is to a perspective (MiniLM "
                          "cosine, calibrated; passages off the question's topic support nothing): it cannot "
                          "tell a passage for a perspective from one against it." + fig +
                          " For the paper's figures, use berds-evaluator (the paper's evaluator), hf:<model> or "
                          "openai:<model>@<url>."}
    return {"stance": True, "label": "supports", "caveat": None}


# --------------------------------------------------------------------------- passages -> judge input


def passage_text(ctx, judge: Judge | None = None) -> str:
    """The text a judge reads for a passage: a run ``ctx`` dict, a corpus ``Passage``, or a string (as is).

    LLM judges read what the BERDS evaluator reads, ``text + " " + title`` when
    the passage has a title (spec section 3.5); the embedded judge reads
    ``title. text``, what the stance model reads in every use (:meth:`Judge.document`).
    A corpus ``Passage`` always has a title (possibly empty), like a run passage.
    """
    if isinstance(ctx, str):
        return ctx
    if not isinstance(ctx, dict):
        ctx = {"text": getattr(ctx, "text", ""), "title": getattr(ctx, "title", "") or ""}
    if judge is not None and hasattr(judge, "document"):
        return judge.document(ctx)

    return document_text(ctx)


def judge_passages(judge: Judge, passages, perspectives, question: str | None = None, **predict_opts
                   ) -> tuple[np.ndarray, np.ndarray]:
    """Probabilities and labels, shaped (passages x perspectives), for run ctxs, corpus passages or texts;
    with ``question``, passages the judge finds off its topic support nothing (:func:`base.gate`)."""
    n, m = len(passages), len(perspectives)
    if n == 0 or m == 0:
        return np.zeros((n, m)), np.zeros((n, m), dtype=bool)
    docs = [passage_text(p, judge) for p in passages]
    probs, labels = judge.predict([(d, s) for d in docs for s in perspectives], **predict_opts)
    return gate(judge, question, docs, np.asarray(probs, dtype=float).reshape(n, m),
                np.asarray(labels, dtype=bool).reshape(n, m))


def judge_run(entries: list[dict], judge: Judge, progress: bool = True) -> list[dict]:
    """Store the judge's verdicts inside each passage: ``ctx["<judge.name>-preds"]`` (one bool per
    perspective) and ``ctx["<judge.name>-probs"]``, the BERDS authors' layout.

    All pairs of the run go through one cached ``predict`` call, so an
    interrupted run resumes where it stopped. Passages the judge finds off the
    question's topic support nothing (:func:`base.gate`).
    """
    pairs = [(passage_text(c, judge), p) for e in entries for c in e["ctxs"] for p in e["perspectives"]]
    probs, labels = judge.predict(pairs, progress=progress, desc=f"judge {judge.name}")
    i = 0
    for e in entries:
        shape = (len(e["ctxs"]), len(e["perspectives"]))
        n = shape[0] * shape[1]
        docs = [pairs[i + r * shape[1]][0] for r in range(shape[0])] if shape[1] else []
        P, L = gate(judge, e.get("question"), docs, probs[i:i + n].reshape(shape), labels[i:i + n].reshape(shape))
        set_judgments(e, judge.name, L, P)
        i += n
    return entries
