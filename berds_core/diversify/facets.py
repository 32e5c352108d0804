"""Offline perspectives: no LLM, no network.

Two ingredients, both deterministic:

1. **Sides by rules** (``datasets.sides``). A contested question has a yes-side and a no-side.
   ``yes_no_sides`` turns the question into an affirmative statement and its
   negation ("Should schools ban phones?" -> "schools should ban phones" /
   "schools should not ban phones"); claims stated as sentences ("Abortion
   should be legal") are negated after their first auxiliary.
2. **Feedback facets.** The question's top passages (pseudo-relevance
   feedback) are clustered on TF-IDF vectors (k-means, fixed seed); each
   cluster becomes a facet described by its most distinctive terms, skipping
   the question's own words. Facets name the sub-topics the arguments are
   actually about (health, cost, rights...), which is where the different
   perspectives of debate corpora separate.

``offline_perspectives`` returns the sides followed by the facets, in that
order (the order query expansion interleaves).
"""
from __future__ import annotations

import re

import numpy as np

from ..datasets.sides import yes_no_sides

_WORD = re.compile(r"[A-Za-z][A-Za-z'-]+")


def question_terms(question: str) -> set[str]:
    from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

    return {w.lower() for w in _WORD.findall(question) if w.lower() not in ENGLISH_STOP_WORDS}


def feedback_facets(question: str, texts: list[str], n_facets: int = 3, n_terms: int = 6,
                    seed: int = 0) -> list[str]:
    """Facet descriptions from clustering feedback passages (TF-IDF + k-means).

    Each facet is the question followed by the cluster's ``n_terms`` most
    distinctive terms (mean TF-IDF in the cluster minus mean outside),
    excluding the question's own words. Facets come largest cluster first.
    """
    texts = [t for t in texts if t and t.strip()]
    if len(texts) < 2 or n_facets < 1:
        return []
    from sklearn.cluster import KMeans
    from sklearn.feature_extraction.text import TfidfVectorizer

    vec = TfidfVectorizer(stop_words="english", sublinear_tf=True, min_df=1,
                          token_pattern=r"(?u)\b[A-Za-z][A-Za-z-]+\b")
    try:
        X = vec.fit_transform(texts)
    except ValueError:  # empty vocabulary
        return []
    n_clusters = min(n_facets, len(texts))
    if n_clusters < 2:
        labels = np.zeros(len(texts), dtype=int)
    else:
        km = KMeans(n_clusters=n_clusters, n_init=4, random_state=seed)
        labels = km.fit_predict(X)
    vocab = np.asarray(vec.get_feature_names_out())
    skip = question_terms(question)
    keep = np.array([v not in skip for v in vocab])
    Xd = X.toarray()
    facets = []
    sizes = np.bincount(labels, minlength=n_clusters)
    for c in np.argsort(-sizes, kind="stable"):
        inside = labels == c
        if not inside.any():
            continue
        score = Xd[inside].mean(axis=0) - (Xd[~inside].mean(axis=0) if (~inside).any() else 0.0)
        score = np.where(keep, score, -np.inf)
        top = [vocab[i] for i in np.argsort(-score, kind="stable")[:n_terms] if np.isfinite(score[i]) and score[i] > 0]
        if top:
            facets.append(" ".join(top))
    return facets


def offline_perspectives(question: str, *, corpus=None, retriever=None, feedback: int = 20,
                         n_facets: int = 3) -> list[str]:
    """Yes-side, no-side, then feedback facets (when a corpus and retriever are given)."""
    yes, no = yes_no_sides(question)
    persp = [p for p in (yes, no) if p]
    if corpus is not None and retriever is not None and n_facets > 0:
        hits = retriever.search([question], feedback)[0]
        texts = [passage_text(corpus, r) for r, _ in hits]
        persp += feedback_facets(question, texts, n_facets=n_facets)
    return persp


def passage_text(corpus, row: int) -> str:
    p = corpus[int(row)]
    title = getattr(p, "title", "") or ""
    return f"{title}. {p.text}" if title else p.text
