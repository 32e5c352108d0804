"""PERSPECTRUM (Chen et al. 2019): claims with perspective clusters and stances.

``perspectrum_with_answers_v1.0*.json``: ``[{cId, text, perspectives: [{pids,
stance_label_3}]}]``; the sentences live in ``perspective_pool_v1.0.json``
(``[{pId, text}]``) and the splits in ``dataset_split_v1.0.json`` (claim id ->
split), both looked up next to the claims file when not given.

Per claim: the question is the claim phrased as a question, each cluster is
one perspective (the text of its first pid), stance SUPPORT -> ``support``,
UNDERMINE -> ``oppose``. Question ids are ``perspectrum-<cId>``.
"""
from __future__ import annotations

from pathlib import Path

from ..errors import InputError
from ..records import Question
from .checks import as_id, load_json_document, nonempty_str
from .phrasing import claim_to_question

STANCE_MAP = {"SUPPORT": "support", "UNDERMINE": "oppose"}


def is_perspectrum(doc) -> bool:
    return isinstance(doc, list) and bool(doc) and isinstance(doc[0], dict) and "cId" in doc[0] and "perspectives" in doc[0]


def _find(folder: Path, pattern: str) -> Path | None:
    hits = sorted(folder.glob(pattern))
    return hits[0] if hits else None


def _load_pool(path) -> dict[str, str]:
    doc = load_json_document(path)
    if not isinstance(doc, list):
        raise InputError(path, None, None, "expected a JSON array of {pId, text}")
    pool = {}
    for n, row in enumerate(doc):
        where = f"entry {n}"
        if not isinstance(row, dict):
            raise InputError(path, where, None, "expected an object")
        pid = as_id(row.get("pId"), path, where, "pId") if row.get("pId") is not None else None
        if pid is None:
            raise InputError(path, where, "pId", "missing")
        pool[pid] = nonempty_str(row.get("text"), path, where, "text")
    return pool


def cluster_pids(cl, path, where, field: str) -> list[str]:
    """The perspective ids of one cluster ``{pids: [...]}`` (strings), checked."""
    if not isinstance(cl, dict):
        raise InputError(path, where, field, "expected an object")
    pids = cl.get("pids")
    if not isinstance(pids, list) or not pids:
        raise InputError(path, where, f"{field}.pids", "expected a non-empty list of perspective ids")
    return [as_id(p, path, where, f"{field}.pids") for p in pids]


def _load_splits(path) -> dict[str, str]:
    doc = load_json_document(path)
    if not isinstance(doc, dict):
        raise InputError(path, None, None, "expected a JSON object {claim id: split}")
    return {str(k): str(v) for k, v in doc.items()}


def load_perspectrum(path, pool=None, splits=None) -> list[Question]:
    path = Path(path)
    pool = Path(pool) if pool else _find(path.parent, "perspective_pool*.json")
    if pool is None:
        raise InputError(path, None, None, "perspective pool (perspective_pool_v1.0.json) not found next to it; pass it explicitly")
    splits = Path(splits) if splits else _find(path.parent, "dataset_split*.json")
    sentences = _load_pool(pool)
    split_of = _load_splits(splits) if splits else {}
    doc = load_json_document(path)
    if not isinstance(doc, list):
        raise InputError(path, None, None, f"expected a JSON array of claims, got {type(doc).__name__}")
    questions, seen = [], {}
    for n, claim in enumerate(doc):
        where = f"entry {n}"
        if not isinstance(claim, dict):
            raise InputError(path, where, None, f"expected an object, got {type(claim).__name__}")
        cid = as_id(claim.get("cId"), path, where, "cId") if claim.get("cId") is not None else None
        if cid is None:
            raise InputError(path, where, "cId", "missing")
        if cid in seen:
            raise InputError(path, where, "cId", f"duplicate id {cid!r} (first at {seen[cid]})")
        seen[cid] = where
        text = nonempty_str(claim.get("text"), path, where, "text")
        clusters = claim.get("perspectives")
        if clusters is None:
            raise InputError(path, where, "perspectives", "missing")
        if not isinstance(clusters, list):
            raise InputError(path, where, "perspectives", f"expected a list, got {type(clusters).__name__}")
        if not clusters:
            raise InputError(path, where, "perspectives", "a question needs at least one perspective")
        persp, stances = [], []
        for j, cl in enumerate(clusters):
            field = f"perspectives[{j}]"
            first = cluster_pids(cl, path, where, field)[0]
            if first not in sentences:
                raise InputError(path, where, f"{field}.pids", f"perspective id {first} is not in {pool.name}")
            persp.append(sentences[first])
            stance = cl.get("stance_label_3")
            if stance is not None and not isinstance(stance, str):
                raise InputError(path, where, f"{field}.stance_label_3", "expected str")
            stances.append(STANCE_MAP.get((stance or "").upper()))
        context = "\n".join(sentences.get(str(p), "") for cl in clusters for p in cl.get("pids", []))
        questions.append(Question(f"perspectrum-{cid}", claim_to_question(text, context), persp,
                                  subset="perspectrum", split=split_of.get(cid), stances=stances))
    if not questions:
        raise InputError(path, None, None, "no claims found (empty array)")
    return questions
