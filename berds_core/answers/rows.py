"""Answers files and the rows the answer metrics score.

Answers files hold ``{"id", "generation"}`` per line (DebateQA's own), or the
richer rows ``berds answer`` writes (which also carry the question, the
perspectives and the passages). :func:`scoring_rows` joins one with its
questions file (any format; DebateQA files also give P.D.'s reference texts):
what ``berds pd`` / ``da`` / ``answer-eval`` score.
"""
from __future__ import annotations

from ..datasets.debateqa import load_debateqa, unique_id
from ..datasets.formats import guess_format, load_questions
from ..errors import InputError
from ..files.jsonio import iter_jsonl
from ..records import Question


def load_answers(path) -> list[dict]:
    """Rows of an answers file; each has at least ``id`` (str) and ``generation`` (str)."""
    rows, seen = [], {}
    for no, obj in iter_jsonl(path):
        qid = unique_id(obj, path, no, seen)
        gen = obj.get("generation")
        if not isinstance(gen, str):
            raise InputError(path, no, "generation", "missing" if gen is None else
                             f"expected str, got {type(gen).__name__}")
        persp = obj.get("perspectives")
        if persp is not None and (not isinstance(persp, list) or not all(isinstance(p, str) for p in persp)):
            raise InputError(path, no, "perspectives", "expected a list of strings")
        ctxs = obj.get("ctxs")
        if ctxs is not None and (not isinstance(ctxs, list) or not all(isinstance(c, dict) and "text" in c
                                                                       for c in ctxs)):
            raise InputError(path, no, "ctxs", "expected a list of passages with 'text'")
        row = dict(obj)
        row["id"], row["_line"] = qid, no
        rows.append(row)
    if not rows:
        raise InputError(path, None, None, "no answers found (empty file?)")
    return rows


def join_questions(path, rows: list[dict], questions: list[Question] | None,
                   references: dict[str, list[str]] | None = None, skipped: list | None = None) -> list[dict]:
    """Answers rows completed with ``question``, ``perspectives`` and ``references`` (P.D.'s texts).

    Without a questions file every row must carry ``question`` and
    ``perspectives`` itself; with one, every answer id must be in it, unless
    ``skipped`` is a list: answers not in the questions file are then left
    out and their ids appended to it (what DebateQA's released P.D. script does).
    """
    by_id = {q.id: q for q in questions or []}
    out = []
    for r in rows:
        r = dict(r)
        q = by_id.get(r["id"])
        if questions is not None and q is None:
            if skipped is not None:
                skipped.append(r["id"])
                continue
            raise InputError(path, r["_line"], "id", f"question {r['id']!r} is not in the questions file")
        if q is not None:
            r.setdefault("question", q.question)
            r["perspectives"] = list(q.perspectives)
        if not isinstance(r.get("question"), str) or not r.get("perspectives"):
            field = "question" if not isinstance(r.get("question"), str) else "perspectives"
            raise InputError(path, r["_line"], field, "missing (give --questions with the questions file)")
        r["references"] = list((references or {}).get(r["id"]) or r["perspectives"])
        out.append(r)
    return out


def load_questions_and_references(path, pd_mode: str = "defined"
                                  ) -> tuple[list[Question], dict[str, list[str]] | None]:
    """Questions of any supported format; DebateQA files also give the partial answers' texts
    (joined for ``pd_mode``)."""
    if guess_format(path) == "debateqa":
        return load_debateqa(path, pd_mode)
    return load_questions(path), None


def scoring_rows(answers_path, questions_path=None, pd_mode: str = "defined", skipped: list | None = None) -> list[dict]:
    """An answers file joined with its questions: rows with ``question``, ``perspectives``,
    ``references`` (joined for ``pd_mode``) and ``generation`` (what ``berds pd`` / ``da`` /
    ``answer-eval`` score); ``skipped``: see :func:`join_questions`."""
    rows = load_answers(answers_path)
    questions, refs = load_questions_and_references(questions_path, pd_mode) if questions_path else (None, None)
    return join_questions(answers_path, rows, questions, refs, skipped)
