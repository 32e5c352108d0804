"""Which side wins: paired paragraphs, the model's Yes/No answer, win-rates and position bias.

ConflictingQA's protocol (Wan, Wallace, Klein): the model reads two
paragraphs with opposite stances on a yes/no question, then "Use only the
information in the above text to answer the question", and its answer is read
from the next-token log-probabilities of "Yes" and "No"
(``Generator.choice_probs``). Each (yes-paragraph, no-paragraph) pair is asked
in both orders, because the order biases models.

An *outcome* is one asked comparison: ``{question_id, first, second,
first_side, second_side, p_yes}``. From a table of outcomes:

- a paragraph *wins* a comparison when the answer matches its side: answer
  "Yes" when ``p_yes > 0.5``, "No" when ``p_yes < 0.5``; ``p_yes == 0.5`` is a
  tie, half a win for each;
- its **win-rate** is the mean over its opponents of its mean win indicator
  against that opponent (over the orders asked) -- the plain mean over its
  comparisons when every pair is asked in both orders; the interval is a
  percentile bootstrap over its opponents;
- paragraphs with fewer than ``min_opponents`` (5) distinct opponents are
  dropped and counted;
- **position bias**: how often the paragraph shown first wins (0.5 = none).
"""
from __future__ import annotations

import zlib
from typing import Sequence

import numpy as np

from .data import QuestionSet
from ..eval.evaluation import bootstrap_ci

OPTIONS = ("Yes", "No")
INSTRUCTION = "Use only the information in the above text to answer the question."


def pair_prompt(question: str, first: str, second: str) -> list[dict]:
    """The chat (one user turn) for one ordered pair of paragraphs."""
    body = (f"Paragraph 1: {' '.join(first.split())}\n\nParagraph 2: {' '.join(second.split())}\n\n"
            f"{INSTRUCTION}\nQuestion: {question}\nAnswer with Yes or No.")
    return [{"role": "user", "content": body}]


def pairings(qs: QuestionSet, mode: str = "all", max_pairs: int | None = None, seed: int = 0
             ) -> list[tuple[int, int]]:
    """(yes index, no index) pairs of paragraphs of ``qs``: all of them, or ``max_pairs`` sampled
    without replacement (seeded by ``seed`` and the question id, so a question's sample does not
    depend on the other questions)."""
    if mode not in ("all", "sample"):
        raise ValueError(f"pairing mode must be all or sample, not {mode!r}")
    yes = [i for i, p in enumerate(qs.paragraphs) if p.side == "yes"]
    no = [i for i, p in enumerate(qs.paragraphs) if p.side == "no"]
    allp = [(y, n) for y in yes for n in no]
    if mode == "all" or max_pairs is None or max_pairs >= len(allp):
        return allp
    rng = np.random.default_rng([int(seed), zlib.crc32(qs.id.encode())])
    pick = rng.choice(len(allp), size=int(max_pairs), replace=False)
    return [allp[i] for i in sorted(pick)]


def comparisons(sets: Sequence[QuestionSet], mode: str = "all", max_pairs: int | None = None,
                seed: int = 0) -> list[dict]:
    """Both orders of every pairing: ``{question_id, question, first, second, first_side, second_side,
    first_text, second_text}``."""
    out = []
    for qs in sets:
        for y, n in pairings(qs, mode, max_pairs, seed):
            for a, b in ((y, n), (n, y)):
                pa, pb = qs.paragraphs[a], qs.paragraphs[b]
                out.append({"question_id": qs.id, "question": qs.question, "first": pa.id, "second": pb.id,
                            "first_side": pa.side, "second_side": pb.side, "first_text": pa.text,
                            "second_text": pb.text})
    return out


def decide(generator, comps: Sequence[dict], *, progress: bool = False, chunk: int = 64) -> list[dict]:
    """The outcome of each comparison: the comparison (without its texts) plus ``p_yes`` (P("Yes") vs "No")."""
    if not comps:
        return []
    from tqdm.auto import tqdm

    prompts = [pair_prompt(c["question"], c["first_text"], c["second_text"]) for c in comps]
    p = []
    with tqdm(total=len(prompts), desc=f"pairs {generator.name}", unit="pair", disable=not progress,
              leave=False) as bar:
        for i in range(0, len(prompts), chunk):
            p.extend(generator.choice_probs(prompts[i:i + chunk], list(OPTIONS))[:, 0].tolist())
            bar.update(min(chunk, len(prompts) - i))
    return [{k: v for k, v in c.items() if not k.endswith("_text")} | {"p_yes": float(x)} for c, x in zip(comps, p)]


def win_indicator(p_yes: float, side: str) -> float:
    """1 when the answer matches ``side``, 0 when it opposes it, 0.5 for a tie (p_yes == 0.5)."""
    if p_yes == 0.5:
        return 0.5
    return float((p_yes > 0.5) == (side == "yes"))


def win_rates(outcomes: Sequence[dict], *, min_opponents: int = 5, n_boot: int = 1000, seed: int = 0,
              level: float = 0.95) -> dict:
    """Per-paragraph win-rates with bootstrap intervals, and the paragraphs dropped.

    Returns ``{"paragraphs": {pid: {"question_id", "side", "win_rate", "lo", "hi", "opponents",
    "comparisons"}}, "dropped": n, "dropped_ids": [...]}``.
    """
    per: dict[str, dict] = {}
    for o in outcomes:
        for me, other, side in ((o["first"], o["second"], o["first_side"]), (o["second"], o["first"], o["second_side"])):
            rec = per.setdefault(me, {"question_id": o["question_id"], "side": side, "vs": {}})
            rec["vs"].setdefault(other, []).append(win_indicator(o["p_yes"], side))
    kept, dropped = {}, []
    rng_seed = int(seed)
    for pid, rec in per.items():
        opp = [float(np.mean(v)) for v in rec["vs"].values()]
        if len(opp) < min_opponents:
            dropped.append(pid)
            continue
        arr = np.asarray(opp)
        lo, hi = _boot(arr, n_boot, rng_seed, level)
        kept[pid] = {"question_id": rec["question_id"], "side": rec["side"], "win_rate": float(arr.mean()),
                     "lo": lo, "hi": hi, "opponents": len(opp), "comparisons": sum(len(v) for v in rec["vs"].values())}
    return {"paragraphs": kept, "dropped": len(dropped), "dropped_ids": sorted(dropped),
            "min_opponents": int(min_opponents)}


def _boot(values: np.ndarray, n_boot: int, seed: int, level: float) -> tuple[float, float]:
    return bootstrap_ci(values, n_boot=max(1, n_boot), seed=seed, level=level)


def position_bias(outcomes: Sequence[dict], *, n_boot: int = 1000, seed: int = 0, level: float = 0.95) -> dict:
    """How often the first paragraph wins (ties half), with a bootstrap interval over comparisons;
    also how often the answer is "Yes"."""
    if not outcomes:
        return {"n": 0, "first_wins": None, "lo": None, "hi": None, "yes_rate": None}
    first = np.asarray([win_indicator(o["p_yes"], o["first_side"]) for o in outcomes])
    lo, hi = _boot(first, n_boot, seed, level)
    yes = np.asarray([1.0 if o["p_yes"] > 0.5 else 0.5 if o["p_yes"] == 0.5 else 0.0 for o in outcomes])
    return {"n": len(outcomes), "first_wins": float(first.mean()), "lo": lo, "hi": hi, "yes_rate": float(yes.mean())}
