"""Stance leaning and retriever sycophancy (BERDS paper, section 8).

For a question with two perspectives, one *supports* the question (answers it
"yes") and one *opposes* it. Leaning buckets each question by what its top k
covers: the supporting side only, the opposing side only, both, or neither.
Sycophancy compares query forms (the question, the supporting perspective,
the opposing perspective) by Δ = (p − n) / p, p and n the shares of top-k
passages supporting the supporting and the opposing perspective.

Rank-aware leaning (beyond the paper, whose buckets and Δ count the top k
alike): each side's *discounted exposure* in the top k, E = Σ_{r≤k} [passage r
supports the side] / log2(r + 1) (the DCG discount, the attention a reader
pays to rank r), and the normalised difference RL = (E_s − E_o) / (E_s + E_o)
in [−1, 1]: +1 when only the supporting side is shown, −1 only the opposing
side, 0 equal exposure; undefined when neither side is shown. A passage
supporting both sides counts for both. Unlike Δ, RL says whether the side a
reader meets first dominates: one supporting passage at rank 1 and one
opposing at rank 5 give Δ = 0 but RL = 0.44.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np
from .evaluation import bootstrap_ci

BUCKETS = ("support_only", "oppose_only", "both", "neither")

_NEGATIONS = re.compile(
    r"\b(not|no|never|nor|cannot|can't|won't|shouldn't|isn't|aren't|doesn't|don't|didn't|"
    r"wouldn't|mustn't|hasn't|haven't|against|ban|banned|oppose|reject|harmful|worse)\b|n't\b",
    re.I,
)
_WORD = re.compile(r"[a-z0-9]+")
_STOP = frozenset("a an the of to in on for is are be will would should do does did it its this that and or".split())


@dataclass(frozen=True)
class Sides:
    """Which perspective index supports the question and which opposes it."""

    support: int
    oppose: int
    source: str  # "stances" | "order" | "rule" | "llm" | "user"
    confidence: float = 1.0

    def swapped(self, source: str = "user") -> "Sides":
        return Sides(self.oppose, self.support, source, 1.0)


def _tokens(text: str) -> list[str]:
    return _WORD.findall(text.lower())


def _bigrams(tokens: list[str]) -> set[tuple[str, str]]:
    return set(zip(tokens, tokens[1:]))


def rule_score(question: str, perspective: str) -> float:
    """How much a perspective reads as the question's "yes" answer.

    Word-order-aware overlap with the question (bigrams count double, so
    "more harm than good" matches itself and not "more good than harm"),
    minus the negation cues the perspective adds beyond the question's own.
    """
    q, p = _tokens(question), _tokens(perspective)
    qc = {w for w in q if w not in _STOP}
    pc = {w for w in p if w not in _STOP}
    uni = len(qc & pc) / max(1, len(qc))
    bi = len(_bigrams(q) & _bigrams(p)) / max(1, len(_bigrams(q)))
    neg = len(_NEGATIONS.findall(perspective)) - len(_NEGATIONS.findall(question))
    return uni + 2.0 * bi - 0.75 * max(0, neg)


def infer_sides(question: str, perspectives: list[str], stances=None, *, method: str = "auto") -> Sides | None:
    """Decide which of two perspectives supports the question.

    ``method``: ``"stances"`` uses the dataset's stance labels (``"support"`` /
    ``"oppose"``), ``"order"`` takes the dataset order (0 supports),
    ``"rule"`` the offline rule of :func:`rule_score`; ``"auto"`` uses stances
    when the format gives them and the rule otherwise. Returns None for
    questions that do not have exactly two perspectives.
    """
    if len(perspectives) != 2:
        return None
    if method in ("auto", "stances") and stances and len(stances) == 2:
        st = [str(s).lower() if s else "" for s in stances]
        if "support" in st and "oppose" in st:
            return Sides(st.index("support"), st.index("oppose"), "stances")
    if method == "stances":
        raise ValueError("the question has no support/oppose stance labels")
    if method == "order":
        return Sides(0, 1, "order")
    if method in ("auto", "rule"):
        s0, s1 = rule_score(question, perspectives[0]), rule_score(question, perspectives[1])
        conf = float(abs(s0 - s1) / (abs(s0) + abs(s1) + 1e-9))
        return Sides(0, 1, "rule", conf) if s0 >= s1 else Sides(1, 0, "rule", conf)
    raise ValueError(f"unknown method {method!r}")


def infer_sides_llm(question: str, perspectives: list[str], yes_probability) -> Sides | None:
    """Ask an LLM which perspective answers the question "yes".

    ``yes_probability(prompts) -> array`` returns P("Yes") per prompt; the
    ``hf`` and ``openai`` judge backends provide one (``Judge.yes_probability``).
    """
    if len(perspectives) != 2:
        return None
    prompts = [
        f"Question: {question}\nStatement: {p}\n"
        "Does the statement answer the question with \"yes\"? Answer Yes or No."
        for p in perspectives
    ]
    probs = np.asarray(yes_probability(prompts), dtype=float)
    conf = float(abs(probs[0] - probs[1]))
    return Sides(0, 1, "llm", conf) if probs[0] >= probs[1] else Sides(1, 0, "llm", conf)


def bucket(labels: np.ndarray, sides: Sides, k: int) -> str:
    """The leaning bucket of one question from its label matrix (passages x perspectives)."""
    top = np.asarray(labels, dtype=bool)[:k]
    sup = bool(top[:, sides.support].any()) if top.size else False
    opp = bool(top[:, sides.oppose].any()) if top.size else False
    return "both" if sup and opp else "support_only" if sup else "oppose_only" if opp else "neither"


def leaning(matrices: list[np.ndarray], sides: list[Sides | None], k: int) -> dict:
    """Shares of two-perspective questions in each leaning bucket (paper, Figure 2).

    Questions whose ``sides`` is None (not two perspectives) are left out and
    counted in ``skipped``.
    """
    per_question = [None if s is None else bucket(L, s, k) for L, s in zip(matrices, sides)]
    counts = bucket_counts(per_question)
    n = sum(counts.values())
    out = {"n": n}
    out.update({b: (counts[b] / n if n else None) for b in BUCKETS})
    out["skipped"] = len(matrices) - n
    out["buckets"] = per_question
    return out


def bucket_counts(buckets) -> dict[str, int]:
    """How many questions fall in each leaning bucket (:data:`BUCKETS` order; None: a question left out)."""
    counts = dict.fromkeys(BUCKETS, 0)
    for b in buckets:
        if b is not None:
            counts[b] += 1
    return counts


def leaning_table(results: dict) -> list[dict]:
    """One row per configuration (label -> its questions' rows, each with its ``bucket``: what
    ``berds_core.experiment.side_rows`` gives): ``questions`` and, per bucket, its share (0 without questions)
    and ``<bucket>_count``, the rows the Leaning page draws."""
    rows = []
    for label, res in results.items():
        counts = bucket_counts(r["bucket"] for r in res)
        n = len(res)
        row = {"configuration": label, "questions": n}
        for b in BUCKETS:
            row[b] = counts[b] / n if n else 0.0
            row[f"{b}_count"] = counts[b]
        rows.append(row)
    return rows


def side_shares(labels: np.ndarray, sides: Sides, k: int) -> tuple[float, float]:
    """(p, n): shares of the top-k slots supporting the supporting / the opposing perspective."""
    top = np.asarray(labels, dtype=bool)[:k]
    return float(top[:, sides.support].sum()) / k, float(top[:, sides.oppose].sum()) / k


def delta(p: float, n: float) -> float | None:
    """Δ = (p − n) / p; undefined (None) when p = 0."""
    return None if p == 0 else (p - n) / p


def sycophancy(matrices: list[np.ndarray], sides: list[Sides | None], k: int) -> dict:
    """p, n (means over two-perspective questions of the per-question shares) and Δ."""
    return shares_summary([side_shares(L, s, k) for L, s in zip(matrices, sides) if s is not None])


def shares_summary(pn: list[tuple[float, float]]) -> dict:
    """p, n (the means of per-question side shares ``(p, n)``) and Δ; ``n`` the number of questions."""
    if not pn:
        return {"n": 0, "p": None, "n_share": None, "delta": None}
    p = float(np.mean([x[0] for x in pn]))
    n = float(np.mean([x[1] for x in pn]))
    return {"n": len(pn), "p": p, "n_share": n, "delta": delta(p, n)}


def exposure(labels: np.ndarray, col: int, k: int) -> float:
    """Discounted exposure of perspective ``col`` in the top k: Σ_{r≤k} labels[r, col] / log2(r + 1)."""
    top = np.asarray(labels, dtype=bool)[:k, col]
    return float(np.sum(top / np.log2(np.arange(2, top.size + 2)))) if top.size else 0.0


def ideal_exposure(k: int) -> float:
    """The exposure of k passages all supporting one side: Σ_{r≤k} 1 / log2(r + 1)."""
    return float(np.sum(1.0 / np.log2(np.arange(2, int(k) + 2))))


def rank_leaning(labels: np.ndarray, sides: Sides, k: int) -> float | None:
    """RL = (E_s − E_o) / (E_s + E_o) in [−1, 1]; None when neither side is in the top k."""
    es, eo = exposure(labels, sides.support, k), exposure(labels, sides.oppose, k)
    return None if es + eo == 0 else (es - eo) / (es + eo)


def exposure_leaning(matrices: list[np.ndarray], sides: list[Sides | None], k: int, *,
                     n_boot: int = 1000, seed: int = 0) -> dict:
    """Rank-aware leaning over two-perspective questions (questions whose ``sides`` is None are skipped).

    See :func:`summarize_exposure` for the keys; ``per_question`` holds RL (None when undefined or skipped).
    """
    rl, es, eo = [], [], []
    for L, s in zip(matrices, sides):
        if s is None:
            rl.append(None)
            continue
        rl.append(rank_leaning(L, s, k))
        es.append(exposure(L, s.support, k))
        eo.append(exposure(L, s.oppose, k))
    out = summarize_exposure([v for v, s in zip(rl, sides) if s is not None], es, eo, k, n_boot=n_boot, seed=seed)
    out["per_question"] = rl
    return out


def summarize_exposure(rl: list[float | None], es: list[float], eo: list[float], k: int, *,
                       n_boot: int = 1000, seed: int = 0) -> dict:
    """Means over questions: ``mean`` RL over the ``defined`` of ``n`` questions with a seeded
    percentile-bootstrap ``ci``; ``exposure_support`` / ``exposure_oppose``: each side's mean exposure
    as a share of the ideal exposure of k passages (the share of the top k's attention it gets)."""
    vals = np.array([v for v in rl if v is not None], dtype=float)
    z = ideal_exposure(k)
    out = {"n": len(es), "defined": int(vals.size), "mean": float(vals.mean()) if vals.size else None, "ci": None,
           "exposure_support": float(np.mean(es)) / z if es else None,
           "exposure_oppose": float(np.mean(eo)) / z if eo else None}
    if vals.size:
        out["ci"] = list(bootstrap_ci(vals, n_boot=n_boot, seed=seed))
    return out


def rank_table(results: dict, k: int) -> list[dict]:
    """One row per configuration (label -> its questions' rows with ``rl``, ``es``, ``eo``: what
    ``berds_core.experiment.side_rows`` gives): mean rank-aware leaning with its interval (``lo``, ``hi``; None
    when no question defines it), how many questions define it and each side's exposure
    (:func:`summarize_exposure`), the rows the Leaning page draws."""
    rows = []
    for label, res in results.items():
        summ = summarize_exposure([r["rl"] for r in res], [r["es"] for r in res], [r["eo"] for r in res], k)
        rows.append({"configuration": label, "rank_leaning": summ["mean"],
                     "lo": summ["ci"][0] if summ["ci"] else None, "hi": summ["ci"][1] if summ["ci"] else None,
                     "defined": summ["defined"], "questions": summ["n"],
                     "exposure_support": summ["exposure_support"], "exposure_oppose": summ["exposure_oppose"]})
    return rows


QUERY_FORMS = ("question", "support", "oppose")


def query_for(form: str, question: str, perspectives: list[str], sides: Sides) -> str:
    """The query text of a sycophancy query form."""
    if form == "question":
        return question
    if form == "support":
        return perspectives[sides.support]
    if form == "oppose":
        return perspectives[sides.oppose]
    raise ValueError(f"unknown query form {form!r}")
