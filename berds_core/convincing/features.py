"""Paragraph features and their rank correlation with win-rate (ConflictingQA, section 5).

Per paragraph, with the field's libraries where they exist:

- ``similarity``: cosine of the question and paragraph MiniLM embeddings
  (the project's embedder, ``diversify.vectors.encode``);
- ``unigram_overlap`` / ``bigram_overlap``: share of the question's content
  unigrams / bigrams found in the paragraph;
- ``flesch_kincaid``: Flesch-Kincaid grade level (``textstat``);
- ``unique_tokens``: number of distinct lower-cased word tokens;
- ``sentiment``: VADER compound score (``vaderSentiment``);
- ``perplexity``: the paragraph's perplexity under a causal LM
  (``Generator.score_continuations``, the P.D. scorer), when a model is given;
- ``retriever_score``: the retriever's own score (does the retriever's
  favourite also win?), when the paragraphs come from a run.

:func:`correlations` gives Spearman's rho (``scipy.stats.spearmanr``) of each
feature with win-rate over the kept paragraphs, with a percentile bootstrap
interval over paragraphs.
"""
from __future__ import annotations

import math
import re
import warnings
from typing import Sequence

import numpy as np

from ..answers.perspective_diversity import perplexity
from ..diversify.vectors import encode

_WORD = re.compile(r"[a-z0-9]+(?:'[a-z]+)?")
STOP = frozenset("""a an the of to in on for is are was were be been being will would should could can do does did
it its this that these those and or but if then than as at by from with about into over not no yes there their they
he she we you i what which who whom how why when where""".split())
FEATURES = ("similarity", "unigram_overlap", "bigram_overlap", "flesch_kincaid", "unique_tokens", "sentiment",
            "perplexity", "retriever_score")


def words(text: str) -> list[str]:
    return _WORD.findall(str(text).lower())


def overlap(question: str, text: str, n: int) -> float:
    """Share of the question's content n-grams (stop words removed) that occur in ``text``."""
    q = [w for w in words(question) if w not in STOP]
    t = [w for w in words(text) if w not in STOP]
    qg = {tuple(q[i:i + n]) for i in range(len(q) - n + 1)}
    tg = {tuple(t[i:i + n]) for i in range(len(t) - n + 1)}
    return len(qg & tg) / len(qg) if qg else 0.0


_VADER = None


def sentiment(text: str) -> float:
    global _VADER
    if _VADER is None:
        from vaderSentiment.vaderSentiment import SentimentIntensityAnalyzer

        _VADER = SentimentIntensityAnalyzer()
    return float(_VADER.polarity_scores(str(text))["compound"])


def readability(text: str) -> float:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # textstat 0.7's pkg_resources deprecation notice
        import textstat

    return float(textstat.flesch_kincaid_grade(str(text)))


def text_perplexity(generator, texts: Sequence[str]) -> list[float | None]:
    """Perplexity of each text on its own (after the model's BOS when it has one)."""
    bos = getattr(getattr(generator, "tokenizer", None), "bos_token", None) or ""
    scored = generator.score_continuations([bos] * len(texts), list(texts))
    out = [perplexity(s) for s in scored]
    return [None if not math.isfinite(x) else x for x in out]


def paragraph_features(items: Sequence[tuple[str, object]], *, embedder=None, ppl_generator=None,
                       with_similarity: bool = True) -> list[dict]:
    """Features of (question, Paragraph) items, in order (see the module docstring)."""
    items = list(items)
    rows = []
    for q, p in items:
        rows.append({"unigram_overlap": overlap(q, p.text, 1), "bigram_overlap": overlap(q, p.text, 2),
                     "flesch_kincaid": readability(p.text), "unique_tokens": float(len(set(words(p.text)))),
                     "sentiment": sentiment(p.text),
                     "retriever_score": None if getattr(p, "score", None) is None else float(p.score)})
    if with_similarity and items:
        qs = list(dict.fromkeys(q for q, _ in items))
        qv = dict(zip(qs, encode(embedder, qs)))
        pv = encode(embedder, [p.text for _, p in items])
        for row, (q, _), v in zip(rows, items, pv):
            row["similarity"] = float(np.dot(qv[q], v))
    if ppl_generator is not None and items:
        for row, x in zip(rows, text_perplexity(ppl_generator, [p.text for _, p in items])):
            row["perplexity"] = x
    return rows


def correlations(features: Sequence[dict], win: Sequence[float], *, n_boot: int = 1000, seed: int = 0,
                 level: float = 0.95) -> dict:
    """Spearman's rho of each feature with win-rate, a bootstrap interval over paragraphs, and n.

    A feature missing for some paragraphs uses the others; constant or absent -> rho None.
    """
    from scipy.stats import spearmanr

    win = np.asarray(win, dtype=float)
    out = {}
    rng = np.random.default_rng(seed)
    for name in FEATURES:
        vals = np.asarray([np.nan if f.get(name) is None else float(f[name]) for f in features], dtype=float)
        ok = np.isfinite(vals)
        x, y = vals[ok], win[ok]
        if x.size < 3 or np.ptp(x) == 0 or np.ptp(y) == 0:
            out[name] = {"rho": None, "lo": None, "hi": None, "n": int(x.size)}
            continue
        rho = float(spearmanr(x, y).statistic)
        idx = rng.integers(0, x.size, size=(max(1, n_boot), x.size))
        reps = []
        for row in idx:
            xs, ys = x[row], y[row]
            if np.ptp(xs) > 0 and np.ptp(ys) > 0:
                reps.append(spearmanr(xs, ys).statistic)
        lo, hi = (np.quantile(reps, [(1 - level) / 2, 1 - (1 - level) / 2]).tolist() if reps else (None, None))
        out[name] = {"rho": rho, "lo": lo, "hi": hi, "n": int(x.size)}
    return out
