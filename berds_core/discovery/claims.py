"""Claims to discover perspectives for, and PERSPECTRUM's gold clusters to score them against.

``load_claims(path, split=None) -> [Claim]`` reads

- PERSPECTRUM's ``perspectrum_with_answers_v1.0*.json`` (``[{cId, text,
  perspectives?}]``; ``split`` keeps one split, looked up in
  ``dataset_split_v1.0.json`` next to the file or given as ``splits``);
- JSONL, one claim per line: ``{id, claim | text | question}``;
- a JSON array of such objects;
- ``.txt``: one claim per line (ids are line numbers).

``load_gold(path, split=None) -> {claim id: GoldClaim}``: the PERSPECTRUM
clusters (pids as strings) and stances of every claim in the file.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..errors import InputError
from ..files.jsonio import iter_jsonl, read_text
from .evaluate import GoldClaim, gold_stance
from ..datasets.checks import as_id, load_json_document, nonempty_str
from ..datasets.perspectrum import cluster_pids

TEXT_KEYS = ("claim", "text", "question")


@dataclass
class Claim:
    id: str
    text: str
    gold: GoldClaim | None = None  # when the file carries PERSPECTRUM clusters


def _splits_file(path: Path, splits) -> Path | None:
    if splits:
        return Path(splits)
    hits = sorted(path.parent.glob("dataset_split*.json"))
    return hits[0] if hits else None


def _read_splits(path: Path) -> dict[str, str]:
    doc = load_json_document(path)
    if not isinstance(doc, dict):
        raise InputError(path, None, None, "expected a JSON object {claim id: split}")
    return {str(k): str(v) for k, v in doc.items()}


def _perspectrum_claim(obj: dict, path, where) -> Claim:
    cid = as_id(obj.get("cId"), path, where, "cId")
    text = nonempty_str(obj.get("text"), path, where, "text")
    clusters, stances = [], []
    raw = obj.get("perspectives")
    if raw is not None:
        if not isinstance(raw, list):
            raise InputError(path, where, "perspectives", f"expected a list, got {type(raw).__name__}")
        for j, cl in enumerate(raw):
            field = f"perspectives[{j}]"
            clusters.append(cluster_pids(cl, path, where, field))
            label = cl.get("stance_label_3")
            if label is not None and gold_stance(label) is None:
                raise InputError(path, where, f"{field}.stance_label_3",
                                 f"expected SUPPORT or UNDERMINE, got {label!r}")
            stances.append(gold_stance(label))
    gold = GoldClaim(cid, text, clusters, stances) if raw is not None else None
    return Claim(cid, text, gold)


def _generic_claim(obj: dict, path, where, default_id: str) -> Claim:
    key = next((k for k in TEXT_KEYS if obj.get(k) is not None), None)
    if key is None:
        raise InputError(path, where, "claim", "missing (expected 'claim', 'text' or 'question')")
    text = nonempty_str(obj.get(key), path, where, key)
    raw_id = obj.get("id", obj.get("cId"))
    cid = as_id(raw_id, path, where, "id") if raw_id is not None else default_id
    return Claim(cid, text)


def load_claims(path, split: str | None = None, splits=None) -> list[Claim]:
    """Claims of a file (PERSPECTRUM JSON, JSONL, JSON array or .txt); ``split`` filters PERSPECTRUM claims."""
    p = Path(path)
    suffix = p.suffix.lower()
    out: list[Claim] = []
    if suffix == ".txt":
        for no, line in enumerate(read_text(p).splitlines(), 1):
            if line.strip():
                out.append(Claim(str(no), " ".join(line.split())))
    elif suffix in (".jsonl", ".ndjson"):
        for no, obj in iter_jsonl(p):
            out.append(_perspectrum_claim(obj, p, no) if "cId" in obj else _generic_claim(obj, p, no, str(no)))
    elif suffix == ".json":
        doc = load_json_document(p)
        if not isinstance(doc, list):
            raise InputError(p, None, None, "expected a JSON array of claims")
        for i, obj in enumerate(doc):
            where = f"entry {i}"
            if not isinstance(obj, dict):
                raise InputError(p, where, None, "expected a JSON object")
            out.append(_perspectrum_claim(obj, p, where) if "cId" in obj else _generic_claim(obj, p, where, str(i)))
    else:
        raise InputError(p, None, None, f"unknown claims format '{suffix or p.name}' (expected .json, .jsonl or .txt)")
    seen: set[str] = set()
    for c in out:
        if c.id in seen:
            raise InputError(p, None, "id", f"duplicate claim id {c.id!r}")
        seen.add(c.id)
    if split:
        sfile = _splits_file(p, splits)
        if sfile is None:
            raise InputError(p, None, None, "--split needs dataset_split_v1.0.json next to the claims file")
        split_of = _read_splits(sfile)
        out = [c for c in out if split_of.get(c.id) == split]
        for c in out:
            if c.gold is not None:
                c.gold.split = split
    if not out:
        raise InputError(p, None, None, "no claims found" + (f" in split {split!r}" if split else ""))
    return out


def load_gold(path, split: str | None = None, splits=None) -> dict[str, GoldClaim]:
    """``{claim id: GoldClaim}`` from a PERSPECTRUM claims file (clusters and stances required)."""
    claims = load_claims(path, split, splits)
    missing = [c.id for c in claims if c.gold is None]
    if missing:
        raise InputError(path, None, "perspectives",
                         f"gold needs PERSPECTRUM clusters ({{cId, text, perspectives: [{{pids, stance_label_3}}]}}); "
                         f"claim {missing[0]} has none")
    return {c.id: c.gold for c in claims}
