"""IBM Debater ArgKP (the Key Point Analysis 2021 shared task): arguments, key points and their match labels.

A split ``NAME`` of a folder is three CSV files: ``arguments_NAME.csv`` (arg_id, argument, topic, stance),
``key_points_NAME.csv`` (key_point_id, key_point, topic, stance) and, where the split is labelled,
``labels_NAME.csv`` (arg_id, key_point_id, label 0/1). Stance is 1 (pro) or -1 (con).

:func:`read_split` reads them (strict, one-line errors naming file, line and field); :func:`candidate_pairs`
lists what the task's track 1 scores: every argument against every key point of its topic and stance;
:func:`as_pairs` turns a split into the studio's pair format (question = topic, document = argument,
perspective = key point, label), ids kept.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from ..errors import InputError
from ..files.csvio import records
from ..files.jsonio import read_text

FILES = {"arguments": ("arg_id", "argument", "topic", "stance"),
         "key_points": ("key_point_id", "key_point", "topic", "stance"),
         "labels": ("arg_id", "key_point_id", "label")}


@dataclass
class ArgKPSplit:
    name: str
    arguments: dict[str, dict] = field(default_factory=dict)   # arg_id -> {text, topic, stance}
    key_points: dict[str, dict] = field(default_factory=dict)  # key_point_id -> {text, topic, stance}
    labels: dict[tuple[str, str], int] | None = None           # (arg_id, key_point_id) -> 0/1; None: unlabelled


def split_files(folder, name: str) -> dict[str, Path]:
    return {kind: Path(folder) / f"{kind}_{name}.csv" for kind in FILES}


def _rows(path: Path, kind: str):
    header = None
    for line, rec in records(read_text(path), path, ","):
        if header is None:
            header = [h.strip() for h in rec]
            missing = [f for f in FILES[kind] if f not in header]
            if missing:
                raise InputError(path, line, missing[0], f"missing column (header needs {', '.join(FILES[kind])})")
            continue
        if not any(c.strip() for c in rec):
            continue
        if len(rec) != len(header):
            raise InputError(path, line, None, f"expected {len(header)} comma-separated fields, got {len(rec)}")
        row = dict(zip(header, rec))
        for f in FILES[kind]:
            if not row[f].strip():
                raise InputError(path, line, f, "must not be empty")
        yield line, row
    if header is None:
        raise InputError(path, None, None, "file is empty")


def _stance(path, line, value: str) -> int:
    v = value.strip()
    if v not in ("1", "-1", "1.0", "-1.0"):
        raise InputError(path, line, "stance", f"expected 1 or -1, got {v!r}")
    return int(float(v))


def read_split(folder, name: str) -> ArgKPSplit:
    """The split ``name`` of ``folder`` (labels ``None`` when ``labels_NAME.csv`` is absent)."""
    files = split_files(folder, name)
    for kind in ("arguments", "key_points"):
        if not files[kind].exists():
            raise InputError(files[kind], None, None, f"missing: split {name!r} needs {files[kind].name}")
    s = ArgKPSplit(name)
    for kind, ident, text, into in (("arguments", "arg_id", "argument", s.arguments),
                                    ("key_points", "key_point_id", "key_point", s.key_points)):
        path = files[kind]
        for line, row in _rows(path, kind):
            i = row[ident].strip()
            if i in into:
                raise InputError(path, line, ident, f"duplicate id {i!r}")
            into[i] = {"text": row[text].strip(), "topic": row["topic"].strip(),
                       "stance": _stance(path, line, row["stance"])}
        if not into:
            raise InputError(path, None, None, "no rows after the header")
    if files["labels"].exists():
        s.labels = {}
        path = files["labels"]
        for line, row in _rows(path, "labels"):
            a, k, lab = row["arg_id"].strip(), row["key_point_id"].strip(), row["label"].strip()
            if a not in s.arguments:
                raise InputError(path, line, "arg_id", f"unknown argument {a!r} (not in {files['arguments'].name})")
            if k not in s.key_points:
                raise InputError(path, line, "key_point_id",
                                 f"unknown key point {k!r} (not in {files['key_points'].name})")
            if lab not in ("0", "1"):
                raise InputError(path, line, "label", f"expected 0 or 1, got {lab!r}")
            s.labels[(a, k)] = int(lab)
    return s


def candidate_pairs(s: ArgKPSplit) -> list[tuple[str, str]]:
    """``(arg_id, key_point_id)`` for every argument and every key point of its topic and stance (track 1)."""
    by_side: dict[tuple[str, int], list[str]] = {}
    for k, kp in s.key_points.items():
        by_side.setdefault((kp["topic"], kp["stance"]), []).append(k)
    return [(a, k) for a, arg in s.arguments.items() for k in by_side.get((arg["topic"], arg["stance"]), [])]


def as_pairs(s: ArgKPSplit) -> list[dict]:
    """The labelled pairs in the studio's pair format (question = topic, document = argument, perspective =
    key point, label), with the task's ids and stances."""
    if s.labels is None:
        return []
    out = []
    for (a, k), lab in s.labels.items():
        arg, kp = s.arguments[a], s.key_points[k]
        out.append({"question": arg["topic"], "id": f"{a}|{k}", "arg_id": a, "key_point_id": k,
                    "document": arg["text"], "perspective": kp["text"], "label": lab, "stance": arg["stance"]})
    return out
