"""Generator options shared by the LLM verbs (answer, pd, da, answer-eval, convincing)."""
from __future__ import annotations

from ..errors import InputError


def add_generator_args(p, flag: str = "--generator", *, dest: str = "generator", required: bool = True,
                       help: str = "hf:<model>[+<adapter>] | openai:<model>@<base_url>") -> None:
    p.add_argument(flag, dest=dest, required=required, metavar="SPEC", help=help)


def add_backend_args(p) -> None:
    """Options of the backends (they apply to every generator a verb uses)."""
    g = p.add_argument_group("generator backend options")
    g.add_argument("--device", help="hf: cpu, cuda, cuda:1, mps (default: automatic)")
    g.add_argument("--dtype", help="hf: torch dtype (default bfloat16 on GPU, float32 on CPU)")
    g.add_argument("--batch-size", type=int, dest="batch_size", help="hf: rows per forward pass")
    g.add_argument("--concurrency", type=int, help="openai: parallel requests")
    g.add_argument("--timeout", type=float, help="openai: seconds per request")
    g.add_argument("--retries", type=int, help="openai: retries on 429/5xx/timeouts")
    g.add_argument("--tokenizer", help="openai: local tokenizer (path or hub id) whose chat template renders "
                                       "prompts scored through /v1/completions (P.D.)")


def make_generator(spec: str, args, flag: str = "--generator"):
    """The generator a spec names, or InputError naming the flag."""
    from ..generators import GenerationError, SpecError, get_generator

    opts = {k: getattr(args, k, None) for k in ("device", "dtype", "batch_size", "concurrency", "timeout",
                                                "retries", "tokenizer")}
    try:
        return get_generator(spec, **opts)
    except (SpecError, GenerationError, ValueError) as e:
        raise InputError(flag, None, None, str(e)) from None


def generation_failed(flag: str, err: Exception, extra: str = "") -> InputError:
    """A backend failure (server down, model missing) as the one-line CLI error."""
    msg = " ".join(str(err).split())
    return InputError(flag, None, None, msg + (f"; {extra}" if extra else ""))
