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

import hashlib
import json
import secrets

from ..files.spreadsheet import delimited, neutralise, unneutralise  # noqa: F401 (re-exported)

from .qualification import qualification_rows
from .reliability import label_sets
from .request_reads import RequestReads

EXPORT_COLUMNS = ["question", "id", "document", "perspective", "label", "annotator", "unsure", "note",
                  "updated_at", "question_id", "passage_id", "subset", "retriever", "source", "title", "side",
                  "time_ms", "judge_visible", "app_version", "server_ms"]
JUDGE_COLUMNS = ["judge", "judge_prob", "judge_label"]  # labels exported for a reviewer or admin, with a judge
LABEL_SET_COLUMNS = ["confidence", "n_labels"]  # majority vote and the annotator models' label sets
LABEL_SET_NAMES = {"mace": "MACE", "dawid-skene": "Dawid-Skene"}
WHAT = ("labels", "gold", "reference", "majority", "mace", "dawid-skene", "qualification")
ROUND_WHAT = ("qualification",)  # exports of the round's quality control (reviewers may download them)


def export_rows(store, *, what: str = "labels", annotator: str | None = None, include_skips: bool = False,
                gold: bool = False, judge: str | None = None) -> list[dict]:
    """Rows of ``what``: ``labels`` (optionally one annotator's; with ``judge``, that judge's probability
    and label beside each), ``gold`` (adjudicated), ``reference``, the label sets ``majority`` (majority
    vote), ``mace`` and ``dawid-skene`` (each annotator model's most likely labels,
    :mod:`berds_core.lab.reliability`; ``confidence`` is the majority's share / the model's posterior of the label), or ``qualification`` (every qualification answer)."""
    if gold:
        what = "gold"
    if what not in WHAT:
        raise ValueError(f"export one of {', '.join(WHAT)}")
    reads = RequestReads.of(store)  # the store, or a request's reads
    if what == "qualification":
        return qualification_rows(reads.store)
    store = reads
    pairs = {p.pair_id: p for p in store.pairs()}
    if what in ("gold", "reference"):
        got = store.gold() if what == "gold" else store.reference_labels()
        return [_row(p, got[pid], what) for pid, p in pairs.items() if pid in got]
    if what in ("majority", "mace", "dawid-skene"):
        got = label_sets(store)[what]
        out = []
        for pid, p in pairs.items():
            if pid not in got:
                continue
            m = got[pid]
            if what == "majority":
                conf = None if m["label"] is None else (m["share"] if m["label"] == 1 else 1 - m["share"])
                out.append({**_row(p, "" if m["label"] is None else m["label"], "majority vote"),
                            "confidence": "" if conf is None else round(conf, 4), "n_labels": m["n"]})
            else:
                out.append({**_row(p, m["label"], LABEL_SET_NAMES[what]), "n_labels": m["n"],
                            "confidence": round(m["p1"] if m["label"] == 1 else 1 - m["p1"], 4)})
        return out
    preds = store.judge_preds(judge) if judge else None
    rows = []
    for lab in store.labels(annotator, include_skips=include_skips):
        row = _row(pairs[lab.pair_id], lab.value, lab.annotator, lab)
        if preds is not None:
            prob, jl = preds.get(lab.pair_id, (None, None))
            row.update({"judge": judge, "judge_prob": "" if prob is None else round(float(prob), 6),
                        "judge_label": "" if jl is None else int(jl)})
        rows.append(row)
    return rows


OWN_COLUMNS = ["ref", "question", "title", "document", "perspective", "label", "unsure", "note", "updated_at",
               "time_ms", "server_ms", "judge_visible", "app_version", "annotator"]
REF_SALT_KEY = "export_ref_salt"


def own_rows(store, annotator: str, *, include_skips: bool = False) -> list[dict]:
    """An annotator's own labels as they may download them, in the order they made them: what they saw and
    said, under an opaque reference of each pair (``ref``, stable for them, never the pair id), with no
    column that could tell a gold check from a task pair (no ids, subset, source, retriever or side).
    ``store``: the store, or a request's reads (the labels and pairs read once)."""
    reads = RequestReads.of(store)
    store = reads.store
    salt = store.settings.get(REF_SALT_KEY)
    if not salt:
        salt = secrets.token_hex(16)
        store.settings.set(REF_SALT_KEY, salt, by="exports")
    labs = sorted(reads.labels(annotator, include_skips=include_skips), key=lambda lab: (lab.updated_at, lab.pair_id))
    pairs = {p.pair_id: p for p in reads.pairs([lab.pair_id for lab in labs])}
    out = []
    for lab in labs:
        p = pairs[lab.pair_id]
        ref = hashlib.sha256(f"{salt}\x1f{annotator}\x1f{lab.pair_id}".encode("utf-8")).hexdigest()[:16]
        out.append({"ref": ref, "question": p.question, "title": p.title or "", "document": p.document,
                    "perspective": p.perspective, "label": lab.value, "unsure": int(bool(lab.unsure)),
                    "note": lab.note or "", "updated_at": lab.updated_at or "",
                    "time_ms": "" if lab.time_ms is None else lab.time_ms,
                    "server_ms": "" if lab.server_ms is None else lab.server_ms,
                    "judge_visible": "" if lab.judge_visible is None else int(lab.judge_visible),
                    "app_version": lab.app_version or "", "annotator": annotator})
    return out


def columns_for(rows: list[dict]) -> list[str]:
    """The columns of an export: the human-pairs TSV ones first, then what these rows add (judge, label set)."""
    if rows and ("expected" in rows[0] or "ref" in rows[0]):  # qualification answers, own labels: their own
        return list(rows[0])
    cols = list(EXPORT_COLUMNS)
    for extra in (JUDGE_COLUMNS, LABEL_SET_COLUMNS):
        if rows and extra[0] in rows[0]:
            cols += extra
    return cols


def _row(p, label, annotator, lab=None) -> dict:
    jv = None if lab is None else lab.judge_visible
    return {"question": p.question, "id": p.pair_id, "document": p.document, "perspective": p.perspective,
            "label": label, "annotator": annotator, "unsure": int(bool(lab and lab.unsure)),
            "note": (lab.note if lab else None) or "", "updated_at": (lab.updated_at if lab else None) or "",
            "question_id": p.question_id or "", "passage_id": p.passage_id or "", "subset": p.subset or "",
            "retriever": p.retriever or "", "source": p.source or "", "title": p.title or "", "side": p.side or "",
            "time_ms": "" if lab is None or lab.time_ms is None else lab.time_ms,
            "server_ms": "" if lab is None or lab.server_ms is None else lab.server_ms,
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
