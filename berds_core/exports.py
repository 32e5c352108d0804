"""Exports of an annotation store as rows, TSV, CSV and JSON Lines.

Only pairs, labels (with their provenance), adjudicated gold and reference
labels are exported: nothing from the accounts tables (names of users appear
only as the annotator of a label; passwords and their hashes never leave the
``users`` table). The TSV's first five columns are a human-pairs TSV, so an
export reads back with :func:`berds_core.tasks.read_pairs_tsv`.
"""
from __future__ import annotations

import csv
import io
import json

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


def _delimited(rows: list[dict], columns: list[str], delimiter: str) -> str:
    buf = io.StringIO(newline="")
    w = csv.DictWriter(buf, fieldnames=columns, delimiter=delimiter, quotechar='"', doublequote=True,
                       quoting=csv.QUOTE_MINIMAL, lineterminator="\n", extrasaction="ignore")
    w.writeheader()
    w.writerows(rows)
    return buf.getvalue()


def to_tsv(rows: list[dict], columns: list[str] | None = None) -> str:
    return _delimited(rows, columns or EXPORT_COLUMNS, "\t")


def to_csv(rows: list[dict], columns: list[str] | None = None) -> str:
    cols = columns or (list(rows[0]) if rows else EXPORT_COLUMNS)
    return _delimited(rows, cols, ",")


def to_jsonl(rows: list[dict]) -> str:
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)
