"""``load_questions``: one entry point for every question format.

Formats: ``jsonl``, ``csv`` (also ``tsv``), ``qe`` (BERDS query expansion),
``debate-sites``, ``perspectrum``, ``debateqa`` (DebateQA's partial answers; the
points of view become perspectives), ``hub`` (``datasets``: hub id or local copy).
With ``fmt=None`` the format is guessed from the extension and content.
"""
from __future__ import annotations

import json
from pathlib import Path

from ..errors import InputError
from ..files.jsonio import read_text
from ..records import Question
from .checks import load_json_document
from .debate_sites import is_debate_sites, load_debate_sites
from .debateqa import is_debateqa_record, load_debateqa
from .expanded_queries import is_qe_record, load_qe
from .generic import load_questions_csv, load_questions_jsonl
from .hub import load_hub
from .perspectrum import is_perspectrum, load_perspectrum

FORMATS = ("jsonl", "csv", "tsv", "qe", "debate-sites", "perspectrum", "debateqa", "hub")


def guess_format(path) -> str:
    p = Path(path)
    if not p.exists():
        if "/" in str(path) and not str(path).startswith((".", "/")) and str(path).count("/") == 1:
            return "hub"  # owner/name
        raise InputError(path, None, None, "file not found")
    suffix = p.suffix.lower()
    if p.is_dir() or suffix == ".parquet":
        return "hub"
    if suffix in (".csv", ".tsv"):
        return suffix[1:]
    if suffix == ".json":
        doc = load_json_document(p)
        if is_debate_sites(doc):
            return "debate-sites"
        if is_perspectrum(doc):
            return "perspectrum"
        raise InputError(p, None, None, "unrecognised JSON file (expected debate-site or PERSPECTRUM claims; "
                                        "pass the format explicitly)")
    text = read_text(p)
    first = next((line for line in text.splitlines() if line.strip()), "")
    try:
        obj = json.loads(first) if first else {}
    except json.JSONDecodeError:
        return "jsonl"  # let the JSONL reader report the line

    if isinstance(obj, dict) and is_debateqa_record(obj):
        return "debateqa"
    return "qe" if isinstance(obj, dict) and is_qe_record(obj) else "jsonl"


def load_questions(path, fmt: str | None = None) -> list[Question]:
    fmt = fmt or guess_format(path)
    if fmt == "jsonl":
        return load_questions_jsonl(path)
    if fmt in ("csv", "tsv"):
        return load_questions_csv(path, delimiter="\t" if fmt == "tsv" else None)
    if fmt == "qe":
        return load_qe(path)
    if fmt == "debate-sites":
        return load_debate_sites(path).questions
    if fmt == "perspectrum":
        return load_perspectrum(path)
    if fmt == "debateqa":
        return load_debateqa(path)[0]
    if fmt == "hub":
        return load_hub(path)
    raise InputError(path, None, "format", f"unknown format {fmt!r} (one of {', '.join(FORMATS)})")
