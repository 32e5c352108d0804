"""Paragraphs with a stance on a yes/no question: from ConflictingQA files or from a retrieval run.

The experiments need, per question, paragraphs whose *side* is known:
``"yes"`` (the paragraph supports answering the question "Yes") or ``"no"``.
Three sources:

- **given in the data**: ConflictingQA's ``stance`` column (:func:`load_conflictingqa`),
  or a ``stance`` field on a run's passages;
- **gold labels**: the question's two perspectives are put on sides the way
  the leaning analysis does (``leaning.infer_sides``: dataset stances, else the
  offline rule); a passage labelled as supporting the supporting perspective
  only is "yes", the opposing one only "no"; both or neither: no side (left out);
- **a judge**: the same with the judge's labels (stored ``<judge>-preds`` read
  through ``runs.label_matrix``, else the judge's cached predictions).

ConflictingQA (Wan, Wallace, Klein) rows: ``category, search_query,
search_type, url, title, text_window, stance``, from JSONL, CSV or Parquet.
A row's question is its ``question`` column when the file has one, else its
``search_query``. Pickles are refused: loading one runs code.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

import numpy as np

from ..answers.coverage import retrieval_matrix
from ..errors import InputError
from ..eval.leaning import infer_sides
from ..files.csvio import records
from ..files.jsonio import iter_jsonl, read_text

SIDES = ("yes", "no")
CQA_COLUMNS = ("category", "search_query", "search_type", "url", "title", "text_window", "stance")
_YES = {"yes", "y", "true", "1", "support", "supports", "pro", "for"}
_NO = {"no", "n", "false", "0", "oppose", "opposes", "against", "con"}


@dataclass
class Paragraph:
    id: str
    text: str
    side: str  # "yes" | "no"
    title: str = ""
    score: float | None = None  # the retriever's score, when the paragraph comes from a run
    rank: int | None = None


@dataclass
class QuestionSet:
    """A yes/no question and its paragraphs with known sides."""

    id: str
    question: str
    paragraphs: list[Paragraph] = field(default_factory=list)
    category: str | None = None

    def by_side(self, side: str) -> list[Paragraph]:
        return [p for p in self.paragraphs if p.side == side]


def parse_side(value) -> str | None:
    """A stance value as "yes" / "no" (None when it says neither)."""
    if isinstance(value, bool):
        return "yes" if value else "no"
    s = str(value).strip().lower() if value is not None else ""
    return "yes" if s in _YES else "no" if s in _NO else None


# --------------------------------------------------------------------------- ConflictingQA files


def _rows(path: Path) -> list[tuple[int, dict]]:
    """(line or row number, record) of a JSONL / CSV / TSV / Parquet file."""
    suffix = path.suffix.lower()
    if suffix in (".pkl", ".pickle"):
        raise InputError(path, None, None, "pickle files are refused (loading one runs code); convert it once in a "
                                           "Python session you trust: pandas.read_pickle(path).to_parquet('x.parquet')")
    if suffix == ".parquet":
        import pyarrow.parquet as pq

        try:
            table = pq.read_table(str(path))
        except FileNotFoundError:
            raise InputError(path, None, None, "file not found") from None
        except Exception as e:  # pyarrow's errors for a file that is not Parquet
            raise InputError(path, None, None, f"not a readable Parquet file ({type(e).__name__})") from None
        return [(i, r) for i, r in enumerate(table.to_pylist(), 1)]
    if suffix in (".csv", ".tsv"):
        recs = [(no, rec) for no, rec in records(read_text(path), path, "\t" if suffix == ".tsv" else ",") if rec]
        if not recs:
            return []
        header = [h.strip() for h in recs[0][1]]
        out = []
        for no, rec in recs[1:]:
            if len(rec) > len(header):
                raise InputError(path, no, None, f"{len(rec)} cells, header has {len(header)}")
            out.append((no, dict(zip(header, rec))))
        return out

    return list(iter_jsonl(path))


def load_conflictingqa(path) -> list[QuestionSet]:
    """Questions with their paragraphs and stances from a ConflictingQA file (JSONL, CSV/TSV or Parquet)."""
    path = Path(path)
    rows = _rows(path)
    if not rows:
        raise InputError(path, None, None, "no rows found (empty file?)")
    have = set(rows[0][1])
    need = ("text_window", "stance") + (() if "question" in have else ("search_query",))
    for col in need:
        if col not in have:
            raise InputError(path, rows[0][0], col, f"missing column (ConflictingQA has {', '.join(CQA_COLUMNS)})")
    qcol = "question" if "question" in have else "search_query"
    sets: dict[str, QuestionSet] = {}
    for no, r in rows:
        q = " ".join(str(r.get(qcol) or "").split())
        if not q:
            raise InputError(path, no, qcol, "must not be empty")
        text = " ".join(str(r.get("text_window") or "").split())
        if not text:
            raise InputError(path, no, "text_window", "must not be empty")
        side = parse_side(r.get("stance"))
        if side is None:
            raise InputError(path, no, "stance", f"expected yes or no, got {r.get('stance')!r}")
        qs = sets.get(q)
        if qs is None:
            qs = sets[q] = QuestionSet(f"q{len(sets) + 1}", q, category=(str(r["category"]) if r.get("category")
                                                                         is not None else None))
        pid = f"{qs.id}-p{len(qs.paragraphs) + 1}"
        qs.paragraphs.append(Paragraph(pid, text, side, title=" ".join(str(r.get("title") or "").split())))
    return list(sets.values())


# --------------------------------------------------------------------------- retrieval runs


def run_sides(entry: dict, L: np.ndarray | None, sides) -> list[str | None]:
    """Per passage of ``entry``: "yes", "no" or None, from its label row (or its own ``stance`` field)."""
    out = []
    for i, c in enumerate(entry["ctxs"]):
        if L is None:
            out.append(parse_side(c.get("stance")))
            continue
        sup, opp = bool(L[i, sides.support]), bool(L[i, sides.oppose])
        out.append("yes" if sup and not opp else "no" if opp and not sup else None)
    return out


def from_run(entries: Sequence[dict], *, gold=None, judge=None, k: int | None = None,
             side_method: str = "auto") -> tuple[list[QuestionSet], dict]:
    """Question sets from run entries (top ``k`` passages each) and counts of what was left out.

    With neither ``gold`` nor ``judge`` the passages' own ``stance`` fields decide.
    Questions without exactly two perspectives cannot be put on sides and are
    skipped when labels decide (counted in ``skipped_questions``).
    """
    sets, skipped, no_side = [], 0, 0
    for e in entries:
        top = dict(e, ctxs=list(e["ctxs"])[: k or len(e["ctxs"])])
        if gold is None and judge is None:
            sides, L = None, None
        else:
            sides = infer_sides(e["question"], e["perspectives"], e.get("stances"), method=side_method)
            if sides is None:
                skipped += 1
                continue
            L = retrieval_matrix(top, len(top["ctxs"]), gold=gold, judge=judge)
        qs = QuestionSet(str(e["id"]), e["question"])
        for rank, (c, side) in enumerate(zip(top["ctxs"], run_sides(top, L, sides)), 1):
            if side is None:
                no_side += 1
                continue
            qs.paragraphs.append(Paragraph(str(c["id"]), str(c.get("text") or ""), side,
                                           title=str(c.get("title") or ""), score=c.get("score"), rank=rank))
        sets.append(qs)
    return sets, {"skipped_questions": skipped, "passages_without_side": no_side}
