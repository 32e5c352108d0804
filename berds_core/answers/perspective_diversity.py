"""Perspective Diversity (DebateQA, Xu et al.): how well an answer "contains" each reference perspective.

For an answer A and reference perspectives (partial answers) PA_1..PA_n::

    context_i = chatTemplate(user: A + " Please restate.")   # ends where the model's reply begins
    PPL_i     = exp( -1/|PA_i| * sum_{t in PA_i} log p(t | context_i, PA_i,<t) )
    P.D.      = sum_i PPL_i   (the paper)      and   mean_i PPL_i   (the released script)

Lower is better: an answer that states a perspective makes it easy to restate.
``mode="defined"`` (default) is the formula above: only the partial answer's
tokens are averaged and, when context + partial answer exceed ``max_length``
tokens, the *context* loses tokens from its left (the partial answer stays
whole whenever it fits; the context's first special token, e.g. BOS, is kept).
A partial answer none of whose tokens could be scored has no value and is left
out of its answer's sum and mean; an answer with no value is left out of the
means over answers (``n`` counts the answers averaged).

``mode="released"`` is DebateQA's released ``scripts/eval_PD.py``, step by
step as ``shared/specs/debateqa-pd.md`` describes it (hf: models only, since it
depends on the tokenizer's own handling of the text)::

    x    = chatTemplate(user: A)                 # template defaults: no generation prompt, nothing added
                                                 # (no template: the old GPT-2 default, content + eos per turn)
    ids  = tokenizer(x + PA_i, truncation=True)  # one call, special tokens as the tokenizer adds them,
                                                 # cut on the right at model_max_length
    L    = len(tokenizer.encode(x, add_special_tokens=False))
    PPL_i = exp( -1/(len(ids) - 1) * sum_{t >= L} log p(ids[t] | ids[<t]) )   # exp(0) = 1 when nothing is left

and the answer's P.D. is the mean of its PPL_i (the partial answer's text is
``point_of_view + ". " + explanation``, see :func:`.debateqa.partial_answer_text`).
With a tokenizer that adds BOS, ``L`` is one short of the context's length, so
the context's last token is scored too, as in the released script.

Both sums and means over partial answers are always reported.
"""
from __future__ import annotations

import math
from typing import Sequence

import numpy as np

from ..generators.base import GenerationError, ScoredText

RESTATE = " Please restate."
MODES = ("defined", "released")
# transformers' old default chat template for GPT-2 (removed since; the released script ran with it)
OLD_DEFAULT_TEMPLATE = "{% for message in messages %}{{ message.content }}{{ eos_token }}{% endfor %}"


def pd_context(generator, answer: str) -> str:
    """The scoring context of an answer: the chat template of one user turn ``answer + " Please restate."``."""
    return generator.render([{"role": "user", "content": str(answer) + RESTATE}])


def released_context(tokenizer, answer: str) -> str:
    """The released script's context: the tokenizer's chat template of one user turn ``answer``, with the
    template's defaults (no generation prompt); without a template, transformers' old default."""
    kw = {} if getattr(tokenizer, "chat_template", None) else {"chat_template": OLD_DEFAULT_TEMPLATE}
    return tokenizer.apply_chat_template([{"role": "user", "content": str(answer)}], tokenize=False, **kw)


def released_ids(tokenizer, context: str, continuations: Sequence[str], max_length: int | None = None
                 ) -> list[tuple[list[int], list[int], int]]:
    """Per continuation y: (scored-from prefix, scored ids, scored ids before truncation) as the released
    script builds them: ``tokenizer(context + y)`` cut on the right at ``max_length`` (default the
    tokenizer's ``model_max_length``), split at ``len(encode(context, add_special_tokens=False))``."""
    n_x = len(tokenizer.encode(context, add_special_tokens=False, verbose=False))
    kw = {"max_length": int(max_length)} if max_length else {}
    side = getattr(tokenizer, "truncation_side", "right")
    tokenizer.truncation_side = "right"
    try:
        rows = []
        for y in continuations:
            text = context + str(y)
            ids = list(tokenizer(text, truncation=True, **kw)["input_ids"])
            full = ids
            limit = kw.get("max_length") or tokenizer.model_max_length
            if len(ids) >= limit:  # possibly cut: the untruncated length tells
                full = tokenizer(text, add_special_tokens=True, verbose=False)["input_ids"]
            rows.append((ids[:n_x], ids[n_x:], max(0, len(full) - n_x)))
        return rows
    finally:
        tokenizer.truncation_side = side


def input_limit(generator, mode: str = "defined", max_length: int | None = None) -> int | None:
    """The input limit P.D. applies (None: none): ``max_length`` when given; otherwise, defined mode,
    the generator's (at most the model's positions), released mode, the tokenizer's ``model_max_length``
    (None when the tokenizer sets none: the released script then cuts nothing)."""
    if max_length:
        return int(max_length)
    if mode == "released":
        from transformers.tokenization_utils_base import LARGE_INTEGER

        m = getattr(generator.load().tokenizer, "model_max_length", None)
        return int(m) if isinstance(m, int) and m <= LARGE_INTEGER else None
    limit = getattr(generator, "input_limit", None)
    return int(limit()) if callable(limit) else None


def perplexity(scored: ScoredText, mode: str = "defined") -> float:
    """Perplexity of one scored partial answer.

    ``defined``: ``exp`` of the mean negative log-probability of the scored
    tokens (``nan`` when none could be scored). ``released``: the summed
    negative log-probability divided by the input's tokens minus one, so a
    partial answer cut away entirely scores ``exp(0) = 1``.
    """
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, not {mode!r}")
    total = -float(np.sum(scored.logprobs))
    if mode == "released":
        return math.exp(total / (scored.n_input - 1)) if scored.n_input > 1 else math.nan
    if scored.n_scored == 0:
        return math.nan
    return math.exp(total / scored.n_scored)


def _score_released(generator, answers, references, max_length):
    if not getattr(generator, "scores_token_ids", False):
        raise GenerationError(f"generator {generator.name} cannot follow DebateQA's released P.D. script "
                              "(it tokenises context and partial answer together with the model's tokenizer): "
                              "use an hf: model")
    tok = generator.load().tokenizer
    ctxs, conts, full, owner = [], [], [], []
    for i, (a, refs) in enumerate(zip(answers, references)):
        for ctx, cont, n in released_ids(tok, released_context(tok, a), refs, max_length):
            ctxs.append(ctx)
            conts.append(cont)
            full.append(n)
            owner.append(i)
    return generator.score_token_ids(ctxs, conts, full), owner


def perspective_diversity(generator, answers: Sequence[str], references: Sequence[Sequence[str]], *,
                          mode: str = "defined", max_length: int | None = None) -> list[dict]:
    """P.D. per answer: ``{"ppl": [...], "pd_sum", "pd_mean", "tokens": [...], "cut": k, "unscored": u}``.

    ``references[i]`` are the reference perspectives of answer i. All pairs go
    through one ``generator.score_continuations`` call (``score_token_ids`` in
    released mode). ``tokens``: tokens scored per partial answer; ``cut``:
    partial answers truncation cut (partly or entirely); ``unscored``: those
    with no token scored (``ppl`` None and left out in defined mode, 1.0 in
    released mode); ``pd_sum``/``pd_mean`` None when no partial answer has a
    value. ``max_length``: the input limit (defined: default the generator's,
    at most the model's positions; released: default the tokenizer's
    ``model_max_length``, as the released script).
    """
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, not {mode!r}")
    if len(answers) != len(references):
        raise ValueError("one list of references per answer")
    if mode == "released":
        scored, owner = _score_released(generator, answers, references, max_length)
    else:
        contexts, conts, owner = [], [], []
        for i, (a, refs) in enumerate(zip(answers, references)):
            ctx = pd_context(generator, a)
            for r in refs:
                contexts.append(ctx)
                conts.append(str(r))
                owner.append(i)
        scored = generator.score_continuations(contexts, conts, max_length=max_length, truncation="left")
    out = [{"ppl": [], "tokens": [], "cut": 0, "unscored": 0} for _ in answers]
    for i, s in zip(owner, scored):
        out[i]["ppl"].append(perplexity(s, mode))
        out[i]["tokens"].append(s.n_scored)
        out[i]["cut"] += int(not s.complete)
        out[i]["unscored"] += int(s.n_scored == 0)
    for row in out:
        ok = [p for p in row["ppl"] if math.isfinite(p)]
        row["pd_sum"] = float(sum(ok)) if ok else None
        row["pd_mean"] = float(sum(ok) / len(ok)) if ok else None
        row["ppl"] = [p if math.isfinite(p) else None for p in row["ppl"]]  # JSON has no NaN
    return out


def summarize_pd(rows: Sequence[dict]) -> dict:
    """Means over answers of P.D. (sum and mean over partial answers), ``n`` the answers averaged
    (those with a value), and the partial answers truncation cut and those with no token scored."""
    s = [r["pd_sum"] for r in rows if r["pd_sum"] is not None]
    m = [r["pd_mean"] for r in rows if r["pd_mean"] is not None]
    return {"n": len(m), "answers": len(rows),
            "pd_sum": float(np.mean(s)) if s else None, "pd_mean": float(np.mean(m)) if m else None,
            "partial_answers": int(sum(len(r["ppl"]) for r in rows)),
            "partial_answers_cut": int(sum(r["cut"] for r in rows)),
            "partial_answers_unscored": int(sum(r.get("unscored", 0) for r in rows))}
