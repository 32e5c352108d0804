"""DebateQA files (Xu et al.): debatable questions with partial answers.

Questions, JSON Lines, one per line::

    {"id": ..., "question": "...", "partial_answers": [{"point_of_view": "...", "explanation": "..."}, ...]}

become :class:`~berds_core.records.Question` with the points of view as
perspectives (what a perspective-detection judge compares an answer with);
:func:`partial_answer_text` gives each partial answer's full text, the
reference text P.D. scores: point of view, a space, explanation (whitespace
normalised) as P.D. is defined here, or exactly ``point_of_view + ". " +
explanation`` as DebateQA's released script joins them (``pd_mode="released"``).

Answers files (``{"id", "generation"}`` per line) and their join with these
questions are read by :mod:`berds_core.answers.rows`.
"""
from __future__ import annotations

from ..errors import InputError
from ..files.jsonio import iter_jsonl
from ..records import Question
from .checks import as_id, nonempty_str


def partial_answer_text(pa: dict, pd_mode: str = "defined") -> str:
    """A partial answer as one reference text: point of view + " " + explanation, whitespace normalised
    (``pd_mode="defined"``), or ``point_of_view + ". " + explanation`` untouched (``"released"``)."""
    if pd_mode == "released":
        return str(pa.get("point_of_view") or "") + ". " + str(pa.get("explanation") or "")
    pov = " ".join(str(pa.get("point_of_view") or "").split())
    expl = " ".join(str(pa.get("explanation") or "").split())
    return f"{pov} {expl}".strip()


def unique_id(obj: dict, path, no: int, seen: dict) -> str:
    """The line's ``id`` as a string; missing or repeated ids are errors naming both lines."""
    if obj.get("id") is None:
        raise InputError(path, no, "id", "missing")
    qid = as_id(obj["id"], path, no, "id")
    if qid in seen:
        raise InputError(path, no, "id", f"duplicate id {qid!r} (first at line {seen[qid]})")
    seen[qid] = no
    return qid


def is_debateqa_record(obj: dict) -> bool:
    return isinstance(obj, dict) and "partial_answers" in obj and "question" in obj


def load_debateqa(path, pd_mode: str = "defined") -> tuple[list[Question], dict[str, list[str]]]:
    """(questions, partial answer texts by question id) from a DebateQA JSONL file (texts joined for
    ``pd_mode``, see :func:`partial_answer_text`)."""
    questions, refs, seen = [], {}, {}
    for no, obj in iter_jsonl(path):
        text = nonempty_str(obj.get("question"), path, no, "question")
        qid = unique_id(obj, path, no, seen)
        pas = obj.get("partial_answers")
        if not isinstance(pas, list) or not pas:
            raise InputError(path, no, "partial_answers", "expected a non-empty list of "
                                                          "{point_of_view, explanation} objects")
        povs, texts = [], []
        for i, pa in enumerate(pas):
            if not isinstance(pa, dict):
                raise InputError(path, no, f"partial_answers[{i}]", "expected an object")
            povs.append(nonempty_str(pa.get("point_of_view"), path, no, f"partial_answers[{i}].point_of_view"))
            if pa.get("explanation") is not None and not isinstance(pa["explanation"], str):
                raise InputError(path, no, f"partial_answers[{i}].explanation", "expected a string")
            texts.append(partial_answer_text(pa, pd_mode))
        questions.append(Question(qid, text, povs))
        refs[qid] = texts
    if not questions:
        raise InputError(path, None, None, "no questions found (empty file?)")
    return questions, refs
