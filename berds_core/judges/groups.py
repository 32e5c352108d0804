"""Which perspectives of a question exclude each other: one passage cannot support both.

BERDS's perspectives mostly come in opposites, a statement and its negation ("Ignoring North Korea is / is not an
effective strategy ..."): in the development half of the human pairs every question has exactly two such
perspectives and no passage is labelled as supporting both. A judge that reads each pair alone says "supports"
to both sides of a passage that is merely on the point; the embedded judge decides a group's members together
(:mod:`.one_side`).

:func:`exclusive_groups` finds the groups by rules that hold on the development data (``docs/judge.md``, "One
passage, one side"); anything else stays independent (Kialo's lists of reasons, the demo's four perspectives of
which two argue one side):

- **negation**: the two statements say the same words once the negation is taken out ("An increase in choice
  leads to ..." / "... does not lead to ..."; "There is an afterlife" / "There is no afterlife"; "... is a
  reason why I am not married" / "... is not a reason why I am not married"): the same stemmed content words,
  and negations in one of them that the other lacks (an odd number more);
- **either-or**: the question offers two alternatives and the statements differ only there ("... done more to
  help or hurt your job" -> "... done more to help your job" / "... to hurt your job");
- **declared sides**: a question of exactly two perspectives whose ``stances`` say one supports and one opposes
  (the two-sided formats: procon, PERSPECTRUM's claims, the preset's yes and no sides).

A perspective belongs to at most one group (one that would pair with two others stays independent: the rule is
then unsure which is its opposite). Groups are tuples of perspective indices, lowest first, in the order of their
first member; a line judged by a judge with a one-side rule records them (``perspective_groups``,
``runs.set_band``), the Playground shows them beside the perspectives (⇄).
"""
from __future__ import annotations

import re
from functools import lru_cache
from typing import Sequence

from ..runs import GROUPS_KEY, line_groups

Groups = list[tuple[int, ...]]
_NEGATIONS = frozenset({"not", "no", "never", "none", "nobody", "nothing", "neither", "nor"})
# words a negation adds or replaces: do-support ("leads" / "does not lead") and the article "no" replaces
_FILLER = frozenset({"do", "does", "did", "a", "an", "some", "any"})
_WORD = re.compile(r"[a-z0-9]+(?:'[a-z]+)?")


@lru_cache(maxsize=1)
def _stemmer():
    import Stemmer

    return Stemmer.Stemmer("english")


def _tokens(text: str) -> list[str]:
    out = []
    for w in _WORD.findall(str(text).lower().replace("\u2019", "'")):
        if w == "cannot":
            out += ["can", "not"]
        elif w == "never":  # "can ever be justified" / "can never be justified"
            out += ["not", "ever"]
        elif w.endswith("n't"):
            base = {"won't": "will", "can't": "can", "shan't": "shall"}.get(w, w[:-3])
            out += [base, "not"]
        else:
            out.append(w)
    return out


@lru_cache(maxsize=4096)
def _core(text: str) -> tuple[tuple[str, ...], int]:
    """(the stemmed words without negations and the words a negation adds, how many negations)."""
    toks = _tokens(text)
    negs = sum(t in _NEGATIONS for t in toks)
    stem = _stemmer().stemWord
    return tuple(stem(t) for t in toks if t not in _NEGATIONS and t not in _FILLER), negs


def negations_of_each_other(a: str, b: str) -> bool:
    """``a`` and ``b`` say the same thing, one of them negated (the **negation** rule)."""
    (ca, na), (cb, nb) = _core(a), _core(b)
    return bool(ca) and ca == cb and na % 2 != nb % 2


def _contains(seq: Sequence[str], sub: Sequence[str]) -> bool:
    n = len(sub)
    return n > 0 and any(tuple(seq[i:i + n]) == tuple(sub) for i in range(len(seq) - n + 1))


def _alternatives(question: str, a: str, b: str) -> int:
    """0: ``a`` / ``b`` are not the question's two alternatives; 1: they are, ``a``'s named first in the
    question; 2: they are, ``b``'s first."""
    if not question:
        return 0
    ta, tb, tq = _tokens(a), _tokens(b), _tokens(question)
    if "or" not in tq:
        return 0
    p = 0
    while p < min(len(ta), len(tb)) and ta[p] == tb[p]:
        p += 1
    s = 0
    while s < min(len(ta), len(tb)) - p and ta[len(ta) - 1 - s] == tb[len(tb) - 1 - s]:
        s += 1
    xa, xb = ta[p:len(ta) - s], tb[p:len(tb) - s]
    if not xa or not xb or "or" in xa or "or" in xb:
        return 0
    return 1 if _contains(tq, xa + ["or"] + xb) else 2 if _contains(tq, xb + ["or"] + xa) else 0


def alternatives_of(question: str, a: str, b: str) -> bool:
    """The question offers ``x or y`` and ``a`` / ``b`` differ only in ``x`` / ``y`` (the **either-or** rule)."""
    return _alternatives(question, a, b) > 0


def opposite(a: str, b: str, question: str | None = None) -> bool:
    """One passage cannot support both ``a`` and ``b`` (the negation or the either-or rule)."""
    return negations_of_each_other(a, b) or alternatives_of(question or "", a, b)


def exclusive_groups(perspectives: Sequence[str], question: str | None = None,
                     stances: Sequence[str | None] | None = None) -> Groups:
    """The groups of ``perspectives`` (indices) of which a passage supports at most one (module docstring)."""
    m = len(perspectives)
    if m < 2:
        return []
    if m == 2 and stances and len(stances) == 2 and {str(s).lower() for s in stances if s} == {"support", "oppose"}:
        return [(0, 1)]
    partners: dict[int, list[int]] = {i: [] for i in range(m)}
    for i in range(m):
        for j in range(i + 1, m):
            if opposite(perspectives[i], perspectives[j], question):
                partners[i].append(j)
                partners[j].append(i)
    groups = []
    for i in range(m):
        if len(partners[i]) == 1:
            j = partners[i][0]
            if i < j and len(partners[j]) == 1:
                groups.append((i, j))
    return groups


def affirmative_first(group: tuple[int, ...], perspectives: Sequence[str], question: str | None = None
                      ) -> tuple[tuple[int, ...], bool]:
    """``(the group with its affirmative member first, whether it has one)``: of a statement and its negation,
    the one with fewer negations; of an either-or question's two alternatives, the one the question names first
    ("easier or more difficult"); other groups (declared sides) have none: the group as it is, False. The
    one-side rule's prior reads this order, read off the texts, never the order a dataset lists the
    perspectives in."""
    i, j = group
    a, b = perspectives[i], perspectives[j]
    if negations_of_each_other(a, b):
        return ((i, j) if _core(a)[1] < _core(b)[1] else (j, i)), True
    alt = _alternatives(question or "", a, b)
    if alt:
        return ((i, j) if alt == 1 else (j, i)), True
    return (i, j), False


def record_groups(entry: dict) -> Groups:
    """The groups of a run line or question record: those it records (``perspective_groups``, checked by
    :func:`berds_core.runs.line_groups`), else :func:`exclusive_groups` of its own fields."""
    got = line_groups(entry)
    if got is not None:
        return got
    return exclusive_groups(entry.get("perspectives") or [], entry.get("question"), entry.get("stances"))


__all__ = ["GROUPS_KEY", "Groups", "affirmative_first", "exclusive_groups", "negations_of_each_other",
           "alternatives_of", "opposite", "record_groups"]
