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
from ..records import Gold, Passage, Question
from .bundle import Bundle
from .checks import as_id, load_json_document, nonempty_str
from .phrasing import claim_to_question, negate_claim

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


def _claims(path, pool=None, splits=None):
    """Validated claims: ``(cid, text, [(pids, stance_label_3)], split, sentences)`` per entry, in file order."""
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
    if not doc:
        raise InputError(path, None, None, "no claims found (empty array)")
    out, seen = [], {}
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
        parsed = []
        for j, cl in enumerate(clusters):
            field = f"perspectives[{j}]"
            ids = cluster_pids(cl, path, where, field)
            for x in ids:
                if x not in sentences:
                    raise InputError(path, where, f"{field}.pids", f"perspective id {x} is not in {pool.name}")
            stance = cl.get("stance_label_3")
            if stance is not None and not isinstance(stance, str):
                raise InputError(path, where, f"{field}.stance_label_3", "expected str")
            parsed.append((ids, (stance or "").upper()))
        out.append((cid, text, parsed, split_of.get(cid)))
    return out, sentences


def load_perspectrum(path, pool=None, splits=None) -> list[Question]:
    claims, sentences = _claims(path, pool, splits)
    questions = []
    for cid, text, clusters, split in claims:
        persp = [sentences[ids[0]] for ids, _ in clusters]
        stances = [STANCE_MAP.get(stance) for _, stance in clusters]
        context = "\n".join(sentences[x] for ids, _ in clusters for x in ids)
        questions.append(Question(f"perspectrum-{cid}", claim_to_question(text, context), persp,
                                  subset="perspectrum", split=split, stances=stances))
    return questions


def load_perspectrum_bundle(path, pool=None, splits=None, keep=("train", "dev")) -> Bundle:
    """PERSPECTRUM in the debate-sites gold form: a development corpus for diversity.

    Per claim (only claims whose split is in ``keep``; every claim when no
    split file is found): the question is the claim phrased
    as a question, perspective 0 the claim, perspective 1 its negation
    (stances ``support`` / ``oppose``), exactly as ``load_debate_sites``.
    Passages are the perspective sentences of the kept claims, one per
    sentence (id ``perspectrum-s<pId>``, no title); gold: a sentence of a
    SUPPORT cluster supports perspective 0, of an UNDERMINE cluster
    perspective 1 (a sentence used by several claims is labelled for each).
    Sentences of claims outside ``keep`` (e.g. the test split) are never read
    into the corpus.
    """
    claims, sentences = _claims(path, pool, splits)
    has_splits = any(split is not None for *_, split in claims)
    side = {"SUPPORT": 0, "UNDERMINE": 1}
    questions: list[Question] = []
    passages: dict[str, Passage] = {}
    gold: Gold = {}
    for cid, text, clusters, split in claims:
        if has_splits and split not in keep:
            continue
        context = "\n".join(sentences[x] for ids, _ in clusters for x in ids)
        qid = f"perspectrum-{cid}"
        questions.append(Question(qid, claim_to_question(text, context), [text, negate_claim(text, context)],
                                  subset="perspectrum", split=split, stances=["support", "oppose"]))
        labels = gold.setdefault(qid, {})
        for ids, stance in clusters:
            for x in ids:
                pid = f"perspectrum-s{x}"
                passages.setdefault(pid, Passage(pid, "", sentences[x]))
                if stance in side:
                    labels.setdefault(pid, set()).add(side[stance])
    if not questions:
        raise InputError(path, None, None, f"no claims of split {', '.join(keep)} found")
    return Bundle("perspectrum", questions, list(passages.values()), gold)
