"""Debate-site JSON (procon.org style): questions, argument passages and gold labels.

File: ``[{url, claim_title, topic, perspectives_for: [...], perspectives_against: [...]}]``;
each perspective is ``{perspective_title, argument: {description: [fragments]}}``.

Per claim: the question is the claim phrased as a question ("Golf is a
Sport" -> "Is golf a sport?"); perspective 0 is the claim itself (stance
``support``), perspective 1 its negation (``oppose``). Each argument's
fragments are joined and split into 100-word passages titled with the
argument's ``perspective_title``. Gold: passages of ``perspectives_for``
support perspective 0, those of ``perspectives_against`` perspective 1.

Ids are content hashes, stable when the file is reordered: question
``q-<sha1(claim)>``, passage ``p-<sha1(text)>``. A passage text that occurs
more than once is one passage (labelled with every side it appears under).
Errors in the file name ``entry N`` (0-based index in the top-level array).
"""
from __future__ import annotations

from pathlib import Path

from ..corpora.memory import split_words
from ..errors import InputError
from ..records import Gold, Passage, Question
from .bundle import Bundle
from .checks import load_json_document, nonempty_str, short_hash
from .phrasing import claim_to_question, negate_claim

SIDES = (("perspectives_for", 0), ("perspectives_against", 1))


def _split_balanced(text: str, n: int = 100) -> list[str]:
    """Split into the fewest passages of at most ``n`` words, of near-equal length.

    A 105-word argument gives 53 + 52 words rather than 100 + a 5-word scrap
    that would carry a gold label while saying nothing.
    """
    words = len(text.split())
    if words <= n:
        return _split_words(text, n)
    k = -(-words // n)
    return _split_words(text, -(-words // k))


def _split_words(text: str, n: int = 100) -> list[str]:
    try:  # the corpus module's splitter, when present, so both split alike
        pass
    except ImportError:  # pragma: no cover - before berds_core.corpora.memory exists
        words = text.split()
        return [" ".join(words[i:i + n]) for i in range(0, len(words), n)]
    return split_words(text, n)


def is_debate_sites(doc) -> bool:
    return isinstance(doc, list) and bool(doc) and isinstance(doc[0], dict) and "claim_title" in doc[0]


def _arguments(entry: dict, key: str, path, where) -> list[tuple[str, str]]:
    """``(title, text)`` per argument of one side."""
    args = entry.get(key)
    if args is None:
        raise InputError(path, where, key, "missing")
    if not isinstance(args, list):
        raise InputError(path, where, key, f"expected a list, got {type(args).__name__}")
    out = []
    for i, arg in enumerate(args):
        field = f"{key}[{i}]"
        if not isinstance(arg, dict):
            raise InputError(path, where, field, f"expected an object, got {type(arg).__name__}")
        title = arg.get("perspective_title", "")
        if not isinstance(title, str):
            raise InputError(path, where, f"{field}.perspective_title", f"expected str, got {type(title).__name__}")
        argument = arg.get("argument")
        if not isinstance(argument, dict):
            raise InputError(path, where, f"{field}.argument",
                             "missing" if argument is None else f"expected an object, got {type(argument).__name__}")
        desc = argument.get("description")
        if isinstance(desc, str):
            desc = [desc]
        if not isinstance(desc, list) or not all(isinstance(d, str) for d in desc):
            raise InputError(path, where, f"{field}.argument.description",
                             "missing" if desc is None else "expected a list of strings")
        out.append((" ".join(title.split()), " ".join(" ".join(desc).split())))
    return out


def load_debate_sites(path, words_per_passage: int = 100) -> Bundle:
    doc = load_json_document(path)
    if not isinstance(doc, list):
        raise InputError(path, None, None, f"expected a JSON array of claims, got {type(doc).__name__}")
    if not doc:
        raise InputError(path, None, None, "no claims found (empty array)")
    questions: list[Question] = []
    passages: dict[str, Passage] = {}
    gold: Gold = {}
    seen: dict[str, str] = {}
    for n, entry in enumerate(doc):
        where = f"entry {n}"
        if not isinstance(entry, dict):
            raise InputError(path, where, None, f"expected an object, got {type(entry).__name__}")
        claim = nonempty_str(entry.get("claim_title"), path, where, "claim_title")
        sides = [(_arguments(entry, key, path, where), persp) for key, persp in SIDES]
        if not any(text for args, _ in sides for _t, text in args):
            raise InputError(path, where, "perspectives_for", "no argument text on either side")
        qid = "q-" + short_hash(claim.lower(), 10)
        if qid in seen:
            raise InputError(path, where, "claim_title", f"duplicate claim {claim!r} (first at {seen[qid]})")
        seen[qid] = where
        context = "\n".join(t for args, _ in sides for title, text in args for t in (title, text))
        questions.append(Question(
            qid, claim_to_question(claim, context), [claim, negate_claim(claim, context)],
            subset=Path(path).stem, stances=["support", "oppose"]))
        labels = gold.setdefault(qid, {})
        for args, persp in sides:
            for title, text in args:
                for chunk in _split_balanced(text, words_per_passage):
                    pid = "p-" + short_hash(chunk, 12)
                    passages.setdefault(pid, Passage(pid, title, chunk))
                    labels.setdefault(pid, set()).add(persp)
    return Bundle(Path(path).stem, questions, list(passages.values()), gold)
