"""Offline perspectives: no LLM, no network.

Two ingredients, both deterministic:

1. **Sides by rules.** A contested question has a yes-side and a no-side.
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

_AUX = ("should", "shall", "must", "can", "could", "will", "would", "may", "might",
        "is", "are", "was", "were", "does", "do", "did", "has", "have", "had")
_NEG_CONTRACTED = {"can": "cannot"}
_WORD = re.compile(r"[A-Za-z][A-Za-z'-]+")


def _clean(q: str) -> str:
    return re.sub(r"\s+", " ", q).strip().rstrip("?.!").strip()


def yes_no_sides(question: str) -> tuple[str, str]:
    """An affirmative statement of the question and its negation (rule-based)."""
    q = _clean(question)
    if not q:
        return "", ""
    words = q.split(" ")
    first = words[0].lower()
    if first in _AUX and len(words) > 2:
        # "Should the US ban X" -> subject = words up to the first lower-case verb-like
        # word after a determiner/noun run; we use a simple rule: the subject is the
        # shortest prefix (1-4 words) ending in a word followed by a plausible verb.
        rest = words[1:]
        split = _copula_subject_end(rest) if first in _COPULAS else _subject_end(rest)
        subj, pred = " ".join(rest[:split]), " ".join(rest[split:])
        aux = first
        neg = _NEG_CONTRACTED.get(aux, f"{aux} not")
        yes = f"{subj} {aux} {pred}".strip()
        no = f"{subj} {neg} {pred}".strip()
        return _cap(yes), _cap(no)
    if not question.strip().endswith("?"):
        # a claim stated as a sentence: the datasets' claim rules negate it
        from ..datasets.phrasing import negate_claim

        return _cap(q), negate_claim(q).rstrip(".")
    return f"Yes, {q[0].lower() + q[1:]}", f"No, {q[0].lower() + q[1:]}"


_DETERMINERS = {"the", "a", "an", "all", "any", "every", "some", "our", "their", "its", "his", "her",
                "this", "that", "these", "those"}
# Common base-form verbs of debate questions ("Should X <verb> ...", "Do X <verb> ...").
_BASE_VERBS = set("""
be have get cause make do help lead contribute pay protect ban allow require reduce increase improve
harm hurt benefit create give take use need want deserve matter work lower raise end stop prevent
replace remain become keep support oppose outweigh promote encourage discourage affect change
legalize legalise abolish fund tax regulate limit restrict provide receive offer replace exist
count belong win lose bring mean threaten violate undermine save kill cost spend decrease teach learn
""".split())


_COPULAS = {"is", "are", "was", "were"}
_PREPS = {"for", "to", "in", "of", "on", "than", "at", "with", "from", "by", "about"}


def _copula_subject_end(rest: list[str]) -> int:
    """Subject length after "Is/Are": up to a later article ("Is golf [a sport]"), else up to
    the word before the first preposition ("Is social media [good for society]"), else all
    but the last word after a determiner ("Is the death penalty [justified]"), else a bare
    noun (phrase) ending in its first plural ("Are [video games] art")."""
    n = len(rest)
    for i in range(1, n):
        if rest[i].lower() in ("a", "an", "the"):
            return i
    for i in range(2, n):
        if rest[i].lower() in _PREPS:
            return i - 1
    if rest[0].lower() in _DETERMINERS:
        return max(1, n - 1)
    # a bare plural or name: "Are [cats] great pets", "Are [video games] art"
    i = 1
    while i < n - 1 and not rest[i - 1].lower().endswith("s") and rest[i].lower().endswith("s"):
        i += 1
    return i


def _subject_end(rest: list[str]) -> int:
    """Length of the subject after a leading auxiliary ("Should [the US] ban ...").

    The subject ends before the first word, after at least one, that is a
    common base-form verb or an -ly adverb; failing that, after the
    determiners and one head word (plus a following capitalised or plural word).
    """
    limit = min(len(rest) - 1, 6)
    for i in range(1, limit + 1):
        w = rest[i].lower().strip(",;:")
        if rest[i - 1].lower() in _DETERMINERS:
            continue
        if w in _BASE_VERBS or (w.endswith("ly") and len(w) > 4):
            return i
    i = 0
    while i < min(len(rest) - 1, 3) and rest[i].lower() in _DETERMINERS:
        i += 1
    i += 1
    while i < min(len(rest) - 1, 4) and rest[i][:1].isupper():
        i += 1
    return max(1, min(i, len(rest) - 1))


def _cap(s: str) -> str:
    return s[:1].upper() + s[1:] if s else s


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
