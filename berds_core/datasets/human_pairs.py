"""The BERDS human pairs (``human_pairs.tsv``: question, id, document, perspective, label 0/1), as
``berds judge-eval`` and the stance model's training read them."""
from __future__ import annotations

from ..errors import InputError
from ..files.csvio import records
from ..files.jsonio import read_text

PAIR_FIELDS = ["question", "id", "document", "perspective", "label"]


def read_pairs(path) -> list[dict]:
    """Rows of a human-pairs TSV (CSV-style quoting with doubled quotes); label must be 0 or 1."""
    text = read_text(path)
    rows: list[dict] = []
    header = None
    for line, rec in records(text, path, "\t"):
        if header is None:
            header = [h.strip() for h in rec]
            missing = [f for f in PAIR_FIELDS if f not in header]
            if missing:
                raise InputError(path, line, missing[0], f"missing column (header needs {', '.join(PAIR_FIELDS)})")
            continue
        if not any(c.strip() for c in rec):
            continue
        if len(rec) != len(header):
            raise InputError(path, line, None, f"expected {len(header)} tab-separated fields, got {len(rec)}")
        row = dict(zip(header, rec))
        for f in ("document", "perspective"):
            if not row[f].strip():
                raise InputError(path, line, f, "must not be empty")
        lab = row["label"].strip()
        if lab not in ("0", "1"):
            raise InputError(path, line, "label", f"expected 0 or 1, got {lab!r}")
        row["_line"] = line
        rows.append(row)
    if header is None:
        raise InputError(path, None, None, "file is empty")
    if not rows:
        raise InputError(path, None, None, "no pairs after the header")
    return rows
