"""Exports of an annotation store as rows, TSV, CSV and JSON Lines.

Only pairs, labels (with their provenance), adjudicated gold and reference
labels are exported: nothing from the accounts tables (names of users appear
only as the annotator of a label; passwords and their hashes never leave the
``users`` table). The TSV's first five columns are a human-pairs TSV, so an
export reads back with :func:`berds_core.lab.tasks.read_pairs_tsv`.

Spreadsheet formulas (CSV injection): every delimited export (TSV and CSV,
here and in the app's downloads) is written by
:func:`berds_core.files.spreadsheet.delimited`: OWASP's rule on every line of
every cell (a line that starts with ``=``, ``+``, ``-``, ``@``, a tab or a
carriage return gets a leading ``'``, so an annotator's note
``ok\r=HYPERLINK(...)`` stays a note), and every field holding ``\r`` or
``\n`` quoted. Plain numbers (``-0.25``) are left as they are. The rule can be
undone exactly: :func:`unneutralise` drops one leading ``'`` per line
(:func:`berds_core.lab.tasks.read_pairs_tsv` does so for this module's exports).
JSON Lines are exact: no cell is changed.
"""
from __future__ import annotations

import json

from ..files.spreadsheet import delimited, neutralise, unneutralise  # noqa: F401 (re-exported)

EXPORT_COLUMNS = ["question", "id", "document", "perspective", "label", "annotator", "unsure", "note",
                  "updated_at", "question_id", "passage_id", "subset", "retriever", "source", "title", "side",
                  "time_ms", "judge_visible", "app_version"]
WHAT = ("labels", "gold", "reference")


def export_rows(store, *, what: str = "labels", annotator: str | None = None, include_skips: bool = False,
                gold: bool = False) -> list[dict]:
    """Rows of ``what``: ``labels`` (optionally one annotator's), ``gold`` (adjudicated) or ``reference``."""
    if gold:
        what = "gold"
    if what not in WHAT:
        raise ValueError(f"export one of {', '.join(WHAT)}")
    pairs = {p.pair_id: p for p in store.pairs()}
    if what in ("gold", "reference"):
        got = store.gold() if what == "gold" else store.reference_labels()
        return [_row(p, got[pid], what) for pid, p in pairs.items() if pid in got]
    return [_row(pairs[lab.pair_id], lab.value, lab.annotator, lab)
            for lab in store.labels(annotator, include_skips=include_skips)]


def _row(p, label, annotator, lab=None) -> dict:
    jv = None if lab is None else lab.judge_visible
    return {"question": p.question, "id": p.pair_id, "document": p.document, "perspective": p.perspective,
            "label": label, "annotator": annotator, "unsure": int(bool(lab and lab.unsure)),
            "note": (lab.note if lab else None) or "", "updated_at": (lab.updated_at if lab else None) or "",
            "question_id": p.question_id or "", "passage_id": p.passage_id or "", "subset": p.subset or "",
            "retriever": p.retriever or "", "source": p.source or "", "title": p.title or "", "side": p.side or "",
            "time_ms": "" if lab is None or lab.time_ms is None else lab.time_ms,
            "judge_visible": "" if jv is None else int(jv),
            "app_version": (lab.app_version if lab else None) or ""}


def is_export_header(header) -> bool:
    """Whether a delimited file's header is one of this module's label exports (its cells are neutralised)."""
    return set(EXPORT_COLUMNS) <= {str(h).strip() for h in header}


def to_tsv(rows: list[dict], columns: list[str] | None = None) -> str:
    return delimited(rows, columns or EXPORT_COLUMNS, "\t")


def to_csv(rows: list[dict], columns: list[str] | None = None) -> str:
    """CSV of ``rows``; columns: ``columns``, else every key of the rows in first-seen order."""
    cols = columns or (list(dict.fromkeys(k for r in rows for k in r)) if rows else EXPORT_COLUMNS)
    return delimited(rows, cols, ",")


def to_jsonl(rows: list[dict]) -> str:
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)
