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

``mode="released"`` reproduces the released script's computation for
comparison with published tables: the summed loss over the partial answer's
tokens is divided by the number of *all* input tokens (context + partial
answer), and the input is cut on the *right*, so a long answer can cut the
partial answer off (its missing tokens are simply not scored)::

    PPL_i(released) = exp( -1/(n_context + n_kept) * sum_{t in kept PA_i tokens} log p(t | ...) )

Both sums and means over partial answers are always reported.
"""
from __future__ import annotations

import math
from typing import Sequence

import numpy as np

from ..generators.base import ScoredText

RESTATE = " Please restate."
MODES = ("defined", "released")


def pd_context(generator, answer: str) -> str:
    """The scoring context of an answer: the chat template of one user turn ``answer + " Please restate."``."""
    return generator.render([{"role": "user", "content": str(answer) + RESTATE}])


def perplexity(scored: ScoredText, mode: str = "defined") -> float:
    """Perplexity of one scored partial answer (``nan`` when no token could be scored)."""
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, not {mode!r}")
    if scored.n_scored == 0:
        return math.nan
    total = -float(np.sum(scored.logprobs))
    denom = scored.n_scored if mode == "defined" else scored.n_input
    return math.exp(total / denom)


def perspective_diversity(generator, answers: Sequence[str], references: Sequence[Sequence[str]], *,
                          mode: str = "defined", max_length: int | None = None) -> list[dict]:
    """P.D. per answer: ``{"ppl": [...], "pd_sum", "pd_mean", "tokens": [...], "cut": k}`` (None where
    no token of a partial answer could be scored).

    ``references[i]`` are the reference perspectives of answer i. All pairs go
    through one ``generator.score_continuations`` call (batched by length).
    ``tokens``: partial-answer tokens scored; ``cut``: partial answers not
    scored whole (truncation).
    """
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, not {mode!r}")
    if len(answers) != len(references):
        raise ValueError("one list of references per answer")
    contexts, conts, owner = [], [], []
    for i, (a, refs) in enumerate(zip(answers, references)):
        ctx = pd_context(generator, a)
        for r in refs:
            contexts.append(ctx)
            conts.append(str(r))
            owner.append(i)
    scored = generator.score_continuations(contexts, conts, max_length=max_length,
                                           truncation="left" if mode == "defined" else "right")
    out = [{"ppl": [], "tokens": [], "cut": 0} for _ in answers]
    for i, s in zip(owner, scored):
        out[i]["ppl"].append(perplexity(s, mode))
        out[i]["tokens"].append(s.n_scored)
        out[i]["cut"] += int(not s.complete)
    for row in out:
        ok = [p for p in row["ppl"] if math.isfinite(p)]
        row["pd_sum"] = float(sum(ok)) if ok else None
        row["pd_mean"] = float(sum(ok) / len(ok)) if ok else None
        row["ppl"] = [p if math.isfinite(p) else None for p in row["ppl"]]  # JSON has no NaN
    return out


def summarize_pd(rows: Sequence[dict]) -> dict:
    """Means over answers of P.D. (sum and mean over partial answers) and the truncation count."""
    s = np.asarray([np.nan if r["pd_sum"] is None else r["pd_sum"] for r in rows], dtype=float)
    m = np.asarray([np.nan if r["pd_mean"] is None else r["pd_mean"] for r in rows], dtype=float)
    return {"n": len(rows), "pd_sum": float(np.nanmean(s)) if np.isfinite(s).any() else None,
            "pd_mean": float(np.nanmean(m)) if np.isfinite(m).any() else None,
            "partial_answers_cut": int(sum(r["cut"] for r in rows))}
