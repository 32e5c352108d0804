"""Turn a debate claim into a question and into its opposite.

Debate sites state claims ("Golf is a Sport", "Abortion should be legal").
BERDS questions are questions, and the two-sided perspectives are the claim
and its negation. The rules, in order:

1. Find the first auxiliary/modal verb after the subject (``is``, ``are``,
   ``was``, ``should``, ``can``, ``does``, ``has`` + participle, ...).
   Question: move it to the front ("Should abortion be legal?"); negation:
   insert ``not`` after it ("Abortion should not be legal").
2. Otherwise find a lexical verb from a list of verbs common in claims
   ("contribute", "causes", ...). Question: do-support ("Do violent video
   games contribute to youth violence?", "Does X cause Y?"); negation:
   "X do/does not <verb> ...". A bare ``be`` ("Corporal punishment be used")
   is read as ``should be``.
3. A motion written as a command ("Ban junk food from schools"): "Should we
   ban junk food from schools?" / "We should not ban junk food from schools."
4. Otherwise: "Is it true that <claim>?" and "It is not true that <claim>."

An existing negation is cancelled rather than doubled ("There should be no X"
-> "There should be some X").

Claims written in Title Case are put in sentence case first; a leading common
word is lower-cased when it moves after the verb, proper nouns ("Ronald
Reagan", acronyms) are kept.
"""
from __future__ import annotations

import re

AUXILIARIES = {
    "is", "are", "was", "were", "should", "can", "could", "will", "would", "must",
    "may", "might", "shall", "does", "do", "did", "has", "have", "had",
}
_NEGATED = {"can": "cannot"}
_DETERMINERS = {
    "the", "a", "an", "any", "all", "some", "it", "we", "they", "this", "these", "those",
    "our", "most", "many", "more", "every", "each", "no", "there", "people", "you", "he", "she",
    "everyone", "everybody", "nobody", "governments", "government", "parents", "students",
}
_MID_LOWER = {"Its", "The", "A", "An", "Of", "To", "And", "Or", "In", "On", "For", "At", "By", "With", "From", "Be"}
# Verbs that commonly head the predicate of a claim (base forms).
_VERBS = {
    "affect", "allow", "benefit", "belong", "cause", "contribute", "cost", "create", "damage",
    "deserve", "destroy", "deter", "discourage", "do", "encourage", "exist", "fail", "harm",
    "help", "hurt", "improve", "increase", "keep", "kill", "lead", "lower", "make", "matter",
    "need", "outweigh", "pose", "prevent", "promote", "protect", "provide", "raise", "reduce",
    "remain", "require", "return", "save", "serve", "stay", "support", "threaten", "undermine",
    "violate", "work", "worsen", "want", "win", "have", "go", "give", "take", "bring", "put",
}
_BE_FORMS = {"be"}
# Motions written as commands ("Ban junk food from schools").
_IMPERATIVES = _VERBS | {
    "abolish", "adopt", "ban", "build", "cut", "end", "introduce", "legalise", "legalize",
    "let", "limit", "outlaw", "privatise", "privatize", "remove", "replace", "restrict",
    "scrap", "stop", "throw", "tax", "abandon", "boycott", "close", "criminalise", "criminalize",
    "decriminalise", "decriminalize", "fund", "grant", "impose", "invest", "lift", "nationalise",
    "nationalize", "pay", "recognise", "recognize", "subsidise", "subsidize", "withdraw",
    "institute", "place", "treat", "expand", "hold", "establish", "enforce", "extend", "force",
}


def _words(claim: str) -> list[str]:
    claim = " ".join(claim.split()).rstrip(" .!;:")
    return claim.split(" ") if claim else []


def _is_title_case(words: list[str]) -> bool:
    long = [w for w in words if len(w) >= 4 and w[:1].isalpha()]
    return len(long) >= 2 and all(w[:1].isupper() for w in long)


def _is_acronym(word: str) -> bool:
    """'D.A.R.E.', 'UN', 'K-12', 'G8': keep as written."""
    upper = sum(c.isupper() for c in word)
    return upper >= 2 or (upper >= 1 and any(c.isdigit() for c in word))


def _common_in(word: str, context: str) -> bool | None:
    """Does ``context`` write ``word`` in lower case (a common word) or capitalised
    (a name)? None when the context does not tell."""
    if not context:
        return None
    low = word[:1].lower() + word[1:]
    n_low = len(re.findall(rf"(?<![\w'’]){re.escape(low)}(?![\w'’])", context))
    # capitalised in mid-sentence only: after a sentence start it tells nothing
    n_cap = len(re.findall(rf"(?<=[\w,;:)'’][ \t]){re.escape(low[:1].upper() + low[1:])}(?![\w'’])", context))
    if n_low + n_cap == 0:
        return None
    return n_low > 0 and n_low >= n_cap


def _lower(word: str) -> str:
    return word if _is_acronym(word) else word[:1].lower() + word[1:]


def _normalise(claim: str, context: str = "") -> list[str]:
    words = _words(claim)
    if not words:
        return words
    title = _is_title_case(words)
    out = [words[0]]
    for w in words[1:]:
        if w in _MID_LOWER:
            w = _lower(w)
        elif title and w[:1].isupper() and not _is_acronym(w):
            # Title Case hides which words are names: ask the context, else lower
            if _common_in(w, context) is not False:
                w = _lower(w)
        out.append(w)
    return out


def _lower_first(words: list[str], context: str = "") -> list[str]:
    """Lower-case the subject's first word when it is a common word, not a name.

    The context (texts about the claim) decides when it uses the word; else a
    determiner is lowered and a word followed by a capitalised one is kept
    ("Ronald Reagan").
    """
    if not words:
        return words
    first = words[0]
    nxt = words[1] if len(words) > 1 else ""
    if _is_acronym(first):
        return words
    common = None if first.lower() in _DETERMINERS else _common_in(first, context)
    if common is None:
        common = first.lower() in _DETERMINERS or not nxt[:1].isupper()
    return [_lower(first)] + words[1:] if common else words


def _find_aux(words: list[str]) -> int | None:
    for i, w in enumerate(words[1:], 1):
        lw = w.lower()
        if lw in AUXILIARIES:
            if lw in ("has", "have", "had", "do", "does", "did"):
                # "has been shown" is an auxiliary, "has a right" is a main verb.
                nxt = words[i + 1].lower() if i + 1 < len(words) else ""
                if lw in ("has", "have", "had") and not (nxt == "been" or nxt.endswith("ed") or nxt.endswith("en")):
                    return None
            return i
    return None


def _verb_base(word: str) -> tuple[str, bool] | None:
    """``(base, third_person_singular)`` when ``word`` is a listed verb form."""
    w = word.lower()
    if w in _VERBS or w in _BE_FORMS:
        return w, False
    if w == "has":
        return "have", True
    if w == "does":
        return "do", True
    if w.endswith("ies") and w[:-3] + "y" in _VERBS:
        return w[:-3] + "y", True
    if w.endswith("es") and w[:-2] in _VERBS:
        return w[:-2], True
    if w.endswith("s") and w[:-1] in _VERBS:
        return w[:-1], True
    return None


def _find_verb(words: list[str]) -> tuple[int, str, bool] | None:
    for i, w in enumerate(words[1:], 1):
        hit = _verb_base(w)
        if hit:
            return i, hit[0], hit[1]
    return None


def _sentence(words: list[str]) -> str:
    text = " ".join(words)
    return text[:1].upper() + text[1:]


def _is_imperative(words: list[str]) -> bool:
    return words[0].lower() in _IMPERATIVES and _find_aux(words) is None


def claim_to_question(claim: str, context: str = "") -> str:
    """"Golf is a Sport" -> "Is golf a sport?"; a claim ending in '?' is kept.

    ``context`` (optional: texts written about the claim) tells names from
    common words when deciding what to lower-case.
    """
    claim = " ".join(claim.split())
    if claim.endswith("?"):
        return claim
    words = _normalise(claim, context)
    if not words:
        return claim
    if _is_imperative(words):
        return _sentence(["should", "we", _lower(words[0])] + words[1:]) + "?"
    i = _find_aux(words)
    if i is not None:
        return _sentence([words[i].lower()] + _lower_first(words[:i], context) + words[i + 1:]) + "?"
    hit = _find_verb(words)
    if hit:
        i, base, third = hit
        subject = _lower_first(words[:i], context)
        if base == "be":
            return _sentence(["should"] + subject + words[i:]) + "?"
        return _sentence(["does" if third else "do"] + subject + [base] + words[i + 1:]) + "?"
    return "Is it true that " + " ".join(_lower_first(words, context)) + "?"


def _negate_after(words: list[str], i: int) -> list[str] | None:
    """Cancel an existing negation after position ``i`` ("should be no X" ->
    "should be some X", "is not X" -> "is X") instead of doubling it."""
    j = i + 1
    if j < len(words) and words[j].lower() == "be":
        j += 1
    if j < len(words) and words[j].lower() == "not":
        return words[:j] + words[j + 1:]
    if j < len(words) and words[j].lower() == "no":
        return words[:j] + ["some"] + words[j + 1:]
    return None


def negate_claim(claim: str, context: str = "") -> str:
    """"Abortion should be legal" -> "Abortion should not be legal."."""
    claim = " ".join(claim.split())
    if claim.endswith("?"):
        return "No: " + claim
    words = _normalise(claim, context)
    if not words:
        return claim
    if _is_imperative(words):
        return _sentence(["we", "should", "not", _lower(words[0])] + words[1:]) + "."
    i = _find_aux(words)
    if i is not None:
        cancelled = _negate_after(words, i)
        if cancelled is not None:
            return _sentence(cancelled) + "."
        aux = words[i].lower()
        neg = [_NEGATED[aux]] if aux in _NEGATED else [words[i], "not"]
        return _sentence(words[:i] + neg + words[i + 1:]) + "."
    hit = _find_verb(words)
    if hit:
        i, base, third = hit
        if base == "be":
            return _sentence(words[:i] + ["should", "not"] + words[i:]) + "."
        return _sentence(words[:i] + ["does" if third else "do", "not", base] + words[i + 1:]) + "."
    return "It is not true that " + " ".join(_lower_first(words, context)) + "."

