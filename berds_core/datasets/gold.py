"""Gold labels: which perspective each (question, passage) pair supports.

JSONL, one labelled pair per line: ``{"question_id", "passage_id",
"perspective"}``, ``perspective`` being the 0-based index of the supported
perspective in the question's list.
"""
from __future__ import annotations

from ..errors import InputError
from ..files.jsonio import iter_jsonl, write_jsonl
from ..records import Gold, Passage, Question
from .checks import as_id


def read_gold(path) -> tuple[Gold, dict[tuple[str, str, int], int]]:
    """Gold labels and the line of each labelled pair."""
    gold: Gold = {}
    lines: dict[tuple[str, str, int], int] = {}
    for no, obj in iter_jsonl(path):
        for key in ("question_id", "passage_id", "perspective"):
            if obj.get(key) is None:
                raise InputError(path, no, key, "missing")
        qid = as_id(obj["question_id"], path, no, "question_id")
        pid = as_id(obj["passage_id"], path, no, "passage_id")
        j = obj["perspective"]
        if isinstance(j, bool) or not isinstance(j, int):
            raise InputError(path, no, "perspective", f"expected a perspective index (int), got {type(j).__name__}")
        if j < 0:
            raise InputError(path, no, "perspective", f"index must be >= 0, got {j}")
        gold.setdefault(qid, {}).setdefault(pid, set()).add(j)
        lines.setdefault((qid, pid, j), no)
    if not lines:
        raise InputError(path, None, None, "no gold labels found (empty file?)")
    return gold, lines


def load_gold(path) -> Gold:
    return read_gold(path)[0]


def validate_gold(gold: Gold, questions: list[Question], passages: list[Passage] | None, path,
                  lines: dict | None = None) -> None:
    """Every labelled pair names a known question, a known passage (when
    ``passages`` is given) and a perspective index the question has."""
    by_id = {q.id: q for q in questions}
    known = {p.id for p in passages} if passages is not None else None
    for qid, labels in gold.items():
        for pid, persp in labels.items():
            for j in sorted(persp):
                line = (lines or {}).get((qid, pid, j))
                q = by_id.get(qid)
                if q is None:
                    raise InputError(path, line, "question_id", f"unknown question {qid!r}")
                if known is not None and pid not in known:
                    raise InputError(path, line, "passage_id", f"unknown passage {pid!r}")
                if j >= len(q.perspectives):
                    raise InputError(path, line, "perspective",
                                     f"index {j} out of range: question {qid!r} has {len(q.perspectives)} perspectives")


def gold_rows(gold: Gold, questions: list[Question] | None = None) -> list[dict]:
    """One ``{question_id, passage_id, perspective}`` row per labelled pair, in
    question order (then passage id, then perspective)."""
    order = [q.id for q in questions] if questions else list(gold)
    order += [qid for qid in gold if qid not in set(order)]
    return [{"question_id": qid, "passage_id": pid, "perspective": j}
            for qid in order for pid in sorted(gold.get(qid, {})) for j in sorted(gold[qid][pid])]


def write_gold(path, gold: Gold, questions: list[Question] | None = None) -> int:
    return write_jsonl(path, gold_rows(gold, questions))


MISSING_GOLD = ("error", "skip", "zero")


def check_run_gold(entries: list[dict], gold: Gold, gold_lines: dict, gold_path, run_path,
                   run_lines: list[int] | None = None, missing: str = "error") -> tuple[list[int], list[str]]:
    """Check gold labels against the questions of a run, before anything is scored.

    Every label of a question in the run must name a perspective the question
    has (also labels of passages the run did not retrieve: a wrong index is a
    wrong file, wherever it sits). A question with no gold label at all cannot
    be scored honestly; ``missing`` says what to do: ``error`` (InputError at
    the question's line of the run), ``skip`` (leave it out) or ``zero`` (score
    it as covering nothing, the BERDS scripts' behaviour).

    Returns the indices of the entries to score and the ids of those without gold.
    """
    if missing not in MISSING_GOLD:
        raise ValueError(f"missing must be one of {', '.join(MISSING_GOLD)}, got {missing!r}")
    keep, without = [], []
    for i, e in enumerate(entries):
        qid, m = str(e["id"]), len(e["perspectives"])
        labels = gold.get(qid)
        for pid, persp in sorted((labels or {}).items()):
            for j in sorted(persp):
                if j >= m:
                    raise InputError(gold_path, gold_lines.get((qid, pid, j)), "perspective",
                                     f"index {j} out of range: question {qid!r} has {m} perspectives in {run_path}")
        if labels:
            keep.append(i)
        else:
            without.append(qid)
            if missing == "zero":
                keep.append(i)
    if without and missing == "error":
        first = next(i for i, e in enumerate(entries) if str(e["id"]) == without[0])
        raise InputError(run_path, run_lines[first] if run_lines else None, "id",
                         f"question {without[0]!r} has no gold labels in {gold_path} ({len(without)} of "
                         f"{len(entries)} questions have none); pass --missing-gold skip to leave them out "
                         f"or --missing-gold zero to score them as covering nothing")
    if not keep:
        raise InputError(run_path, None, "id", f"no question of the run has gold labels in {gold_path}")
    return keep, without


def check_run_ids(entries: list[dict], gold: Gold, gold_path, run_path) -> str | None:
    """Whether the run's passage ids and the gold's are the same kind of ids, before anything is scored.

    No ranked passage of any question in the gold: an InputError naming the first ids of both (a run
    made over another corpus, or ids written another way, would score 0.0 without a word). Most
    questions ranking no gold-labelled passage of their own: the warning line this returns (None when
    the ids look fine)."""
    ranked = [(str(e["id"]), [str(c.get("id")) for c in e.get("ctxs", [])]) for e in entries]
    labelled = [(qid, ids) for qid, ids in ranked if gold.get(qid)]
    if not labelled or not any(ids for _, ids in labelled):
        return None  # nothing ranked (or nothing labelled): the other checks and the scores say so
    hits = [qid for qid, ids in labelled if set(ids) & set(gold[qid])]
    if hits:
        if len(hits) * 2 >= len(labelled):
            return None
        qid, ids = next((q, i) for q, i in labelled if q not in set(hits))
        return (f"only {len(hits)} of {len(labelled)} questions of {run_path} rank any passage the gold labels "
                f"(first without: {qid!r} ranks {_first(ids)}; {gold_path} labels {_first(sorted(gold[qid]))}): "
                "check that the run and the gold come from the same corpus")
    every = {pid for q in gold.values() for pid in q}
    ranked_ids = [i for _, ids in labelled for i in ids]
    anywhere = next((i for i in ranked_ids if i in every), None)
    where = (f"; {anywhere!r} is labelled, but for another question" if anywhere is not None else "")
    qid, ids = next((q, i) for q, i in labelled if i)
    raise InputError(run_path, None, "ctxs", f"no ranked passage id is in the gold {gold_path} (question {qid!r} "
                                             f"ranks {_first(ids)}; the gold labels {_first(sorted(gold[qid]))}"
                                             f"{where}): the run and the gold must come from the same corpus")


def _first(ids, n: int = 3) -> str:
    shown = ", ".join(repr(i) for i in list(ids)[:n])
    return shown + (", ..." if len(ids) > n else "")
