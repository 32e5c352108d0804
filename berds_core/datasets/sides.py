"""A contested question's two sides, by rules: an affirmative statement and its negation.

"Should schools ban phones?" -> "Schools should ban phones" / "Schools should not ban phones";
"Is golf a sport?" -> "Golf is a sport" / "Golf is not a sport"; a claim stated as a sentence
("Abortion should be legal") is negated by the claim rules of :mod:`berds_core.datasets.phrasing`;
any other question -> "Yes, ..." / "No, ...". Used by the offline perspectives
(``diversify.facets``) and to turn a question into the claim perspective discovery reads
(``discovery.claim_of``).
"""
from __future__ import annotations

import re

from .phrasing import negate_claim

_AUX = ("should", "shall", "must", "can", "could", "will", "would", "may", "might",
        "is", "are", "was", "were", "does", "do", "did", "has", "have", "had")
_NEG_CONTRACTED = {"can": "cannot"}


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
