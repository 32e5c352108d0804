"""The judge registry: every judge spec, what it names, and how it is built.

``JUDGES`` (a :class:`berds_core.specs.Registry`, ``parts_required``): each entry says what its spec names,
nothing loaded (``parts``: ``(backend, {...})``, read by :func:`parse_spec`), and builds the judge from those
parts (:func:`_build`, one place per backend). :func:`get_judge` builds; :func:`app_judge_spec` checks a spec
typed into the app before anything is loaded or requested. The specs and options are listed in the package's
docstring (:mod:`berds_core.judges`).
"""
from __future__ import annotations

from ..files.safepaths import resolve_user_model
from ..net.endpoints import check_endpoint
from ..specs import Registry, SpecError, split_model_url
from .base import Judge, JudgeError
from .cross_encoder import CrossEncoderJudge
from .embedded import WEIGHTS, EmbeddedJudge
from .hf import HFJudge
from .lab_judge import LabJudge, check_name, lab_judge_path
from .openai_compat import OpenAIJudge
from .vllm_batch import VLLMJudge

BERDS_EVALUATOR_MODEL = "mistralai/Mistral-7B-Instruct-v0.2"
BERDS_EVALUATOR_ADAPTER = "timchen0618/Mistral_BERDS_evaluator"
BERDS_EVALUATOR_MODULE = "berds-evaluator"  # the LoRA module name the README's `vllm serve` command registers

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

EMBEDDED_VARIANTS = {"v5": None, "v4": "embedded_v4.npz"}  # `embedded:v4`: each pair alone (before issue 62)


def _embedded_parts(arg):
    arg = (arg or "").strip()
    if arg and arg not in EMBEDDED_VARIANTS:
        raise SpecError(f"embedded judge {arg!r}: the variants are {', '.join(EMBEDDED_VARIANTS)} (default v5)")
    return "embedded", {"variant": EMBEDDED_VARIANTS.get(arg)}


def _lab_parts(arg):
    arg = (arg or "").strip()
    if not arg:
        raise SpecError("lab judge needs a name: lab:<name> (written by berds agreement --fit <name>) or lab:<file>.json")
    if not arg.endswith(".json"):
        try:
            check_name(arg)
        except JudgeError as e:
            raise SpecError(str(e)) from None
    return "lab", {"file": arg}


def _argkp_parts(arg):
    return "argkp", {}


def _hf_parts(arg):
    model, adapter = _split_hf(arg)
    return "hf", {"model": model, "adapter": adapter}


def _openai_parts(arg):
    try:
        model, url = split_model_url(arg)
    except SpecError as e:
        raise SpecError(f"openai judge {e}") from None
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
        weights = {"weights": str(WEIGHTS.with_name(p["variant"]))} if p.get("variant") else {}
        return EmbeddedJudge(**weights, **_pick(opts, {"threshold", "device", "batch_size", "encoding"}))
    if backend == "lab":
        return LabJudge(lab_judge_path(p["file"]), **_pick(opts, {"threshold", "device", "batch_size", "encoding"}))
    if backend == "argkp":
        return CrossEncoderJudge(**_pick(opts, {"threshold", "device", "batch_size", "encoding", "weights",
                                                "cross_encoder"}))
    if backend == "hf":
        return HFJudge(p["model"], p["adapter"], **_pick(opts, HF_OPTS))
    if backend == "openai":
        return OpenAIJudge(p["model"], p["base_url"], **_pick(opts, OPENAI_OPTS))

    return VLLMJudge(p["model"], p["adapter"], **_pick(opts, LLM_OPTS | {"batch_size"}))


def _with_berds_prompt(opts: dict) -> dict:
    return {**opts, **{k: opts.get(k) or v for k, v in BERDS_PROMPT.items()}}


@JUDGES.register("embedded", usage="embedded[:v4]", takes_arg=True, parts=_embedded_parts,
                 help="offline: calibrated MiniLM cosine of passage and perspective, gated on the question's topic; "
                      "of two opposite perspectives a passage supports at most one, the stance model reading the side "
                      "(embedded:v4: each pair alone, about 2.8x faster cold)")
def _embedded(parts, **opts):
    return _build(parts, opts)


JUDGES.register("default", parts=_embedded_parts, help="the embedded judge")(_embedded)


@JUDGES.register("lab", usage="lab:<name>", needs_arg=True, parts=_lab_parts,
                 help="offline: the embedded judge refitted on a lab's own labels by berds agreement --fit <name> "
                      "(its file in the lab folder: judges/<name>.json beside the annotation database)")
def _lab(parts, **opts):
    return _build(parts, opts)


@JUDGES.register("argkp", parts=_argkp_parts,
                 help="offline: a MiniLM cross-encoder trained on IBM ArgKP (does this argument express this key "
                      "point?), calibrated on the BERDS human pairs, gated on the question's topic")
def _argkp(parts, **opts):
    return _build(parts, opts)


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
    if name == "lab" and (arg or "").strip().endswith(".json"):  # the app reads the lab folder's judges only
        raise SpecError(f"{what} {spec!r}: in the app a lab judge is named, not a file: lab:<name>")
    if name == "openai":
        check_endpoint(_openai_parts(arg)[1]["base_url"], what=f"{what} server address")
    elif name == "berds-evaluator" and arg:
        check_endpoint(arg, what=f"{what} server address")
    return spec


def get_judge(spec: str = "embedded", **opts) -> Judge:
    """A judge from its spec string; ``opts`` with value None are ignored."""
    opts = {k: v for k, v in opts.items() if v is not None}
    return JUDGES.create((spec or "embedded").strip(), **opts)
