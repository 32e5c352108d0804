"""Run files: BERDS-compatible JSON Lines, one question per line.

Each line: ``id``, ``question``, ``perspectives``, ``ctxs`` (``{id, title,
text, score}`` in rank order), optionally ``subset``. A judge's verdicts live
**inside each passage**, as the BERDS authors' ``eval.py`` writes them:
``ctx["<name>-preds"]`` is a list of booleans, one per perspective, and
``ctx["<name>-probs"]`` the probabilities (``mistral-preds`` in their files).

Runs written by the original BERDS scripts (no ``id``) load as they are; their
judged files (``*.mistralpred*`` / ``*.gpt4pred*``) carry ``mistral-preds`` /
``gpt4-preds``, i.e. the judges ``mistral`` / ``gpt4``. The first layout of
this project (``entry["<name>-preds"]``: one list per passage, at the question
level) is still read; :func:`set_judgments` always writes the passage layout.

Every consumer reads verdicts through :func:`judges_in`, :func:`label_matrix`
and :func:`prob_matrix`, never by key. A run's lines are made from ranked hits by
:func:`question_entry` (``berds_core.experiment.run``: a pipeline's top k for every question).
"""
from __future__ import annotations

import math
from pathlib import Path
from typing import Callable, Iterable

import numpy as np

from .errors import InputError
from .files.jsonio import iter_jsonl, require, write_jsonl
from .records import Gold, Hits

PREDS_SUFFIX = "-preds"
PROBS_SUFFIX = "-probs"
# how a judge's labels count when a run is scored (berds_core.experiment applies them; the CLI's --policy and the
# pages' "Judge labels count" control offer them); gold labels have none
POLICIES = {
    "threshold": "a pair supports when the judge's probability is at or above its threshold (the BERDS paper's rule)",
    "confident": "a pair supports only above the judge's unsure band; a pair inside the band counts as not supporting",
}
DEFAULT_POLICY = "threshold"
BAND_SUFFIX = "-band"  # a judged line's unsure band of its judge: [lo, hi] (berds_core.experiment's policies)
POLICY_SUFFIX = "-policy"  # the rule a judged line's -preds follow: "threshold"
GROUP_BAND_SUFFIX = "-group-band"  # the unsure band of a judge's one-side rule, for the members of the line's groups
GROUPS_KEY = "perspective_groups"  # a line's groups of perspectives one passage supports at most one of
AUTHORS_JUDGES = {".mistralpred": "mistral", ".gpt4pred": "gpt4"}  # file-name marker -> judge name


def ctxs_for(corpus, hits: Hits | Iterable[tuple[int, float]]) -> list[dict]:
    """Run-file passages ``{id, title, text, score}`` for ranked hits (a :class:`~berds_core.records.Hits`, or
    ``(row, score)`` pairs), fetched by row; a score is written as the float64 the hits hold."""
    hits = Hits.of(hits)
    rows = hits.rows.tolist()
    get_many = getattr(corpus, "get_many", None)  # a disk corpus fetches the rows in one look-up
    passages = get_many(rows) if get_many is not None else [corpus[r] for r in rows]
    return [{"id": p.id, "title": p.title, "text": p.text, "score": s} for p, s in zip(passages, hits.scores.tolist())]


def document_text(ctx: dict) -> str:
    """The document the BERDS evaluator reads for a run passage (spec section 3.5).

    ``text + " " + title`` when the passage has a ``title`` key (the title
    after the text, one space, even when the title is empty), else ``text``.
    """
    text = str(ctx.get("text") or "")
    if "title" in ctx:
        return text + " " + str(ctx.get("title") if ctx.get("title") is not None else "")
    return text


def passage_text(ctx, judge=None) -> str:
    """The text a judge reads for a passage: a run ``ctx`` dict, a corpus ``Passage``, or a string (as is).

    LLM judges read what the BERDS evaluator reads, ``text + " " + title`` when
    the passage has a title (spec section 3.5); the embedded judge reads
    ``title. text``, what the stance model reads in every use (:meth:`Judge.document`).
    A corpus ``Passage`` always has a title (possibly empty), like a run passage.
    ``judge``: anything with a ``document(ctx)`` method (:class:`berds_core.judges.base.Judge`), or None.
    """
    if isinstance(ctx, str):
        return ctx
    if not isinstance(ctx, dict):
        ctx = {"text": getattr(ctx, "text", ""), "title": getattr(ctx, "title", "") or ""}
    if judge is not None and hasattr(judge, "document"):
        return judge.document(ctx)
    return document_text(ctx)


def question_entry(question, corpus, hits: Hits | Iterable[tuple[int, float]]) -> dict:
    """One run line (BERDS format plus ``id``, ``subset`` and ``stances`` when known) for ranked hits."""
    entry = {"id": question.id, "question": question.question, "perspectives": list(question.perspectives)}
    if question.subset is not None:
        entry["subset"] = question.subset
    if question.stances:
        entry["stances"] = list(question.stances)
    if corpus is not None:  # which corpus the passages come from: name and content hash
        entry["corpus"] = {"name": getattr(corpus, "name", "corpus"), "hash": corpus.hash}
    entry["ctxs"] = ctxs_for(corpus, hits)
    return entry


def read_run(path) -> list[dict]:
    return read_run_lines(path)[0]


def read_run_lines(path) -> tuple[list[dict], list[int]]:
    """The run's entries and the line number of each (for errors that name a question's line).

    Question ids must be unique (a repeated id would be scored twice), and so
    must the passage ids of one question's ranking: a passage listed twice
    would count twice in Precision@k, so the file is refused at the question's
    line, naming the passage and its two ranks (a ranking lists each passage
    once; fix the run that made it). A passage's ``score`` is a finite
    number, null, or a string holding one (the original BERDS / Contriever
    scripts write scores as strings); it is read as a float. Anything else
    (``"high"``, ``NaN``, ``Infinity``) is an error.
    """
    entries, lines = [], []
    seen: dict[str, int] = {}
    for no, obj in iter_jsonl(path):
        require(obj, "question", str, path, no)
        persp = require(obj, "perspectives", list, path, no, nonempty=True)
        if not all(isinstance(p, str) for p in persp):
            raise InputError(path, no, "perspectives", "expected a list of strings")
        ctxs = require(obj, "ctxs", list, path, no)
        for c in ctxs:
            if not isinstance(c, dict) or "text" not in c:
                raise InputError(path, no, "ctxs", "each passage needs at least 'text'")
        obj.setdefault("id", str(len(entries)))
        obj["id"] = str(obj["id"])
        if obj["id"] in seen:
            raise InputError(path, no, "id", f"duplicate question id {obj['id']!r} (first on line "
                                             f"{seen[obj['id']]}); each question must appear once")
        seen[obj["id"]] = no
        ranks: dict[str, int] = {}
        for i, c in enumerate(ctxs):
            c["id"] = str(c.get("id", f"{obj['id']}-{i}"))
            if c["id"] in ranks:
                raise InputError(path, no, f"ctxs[{i}].id", f"passage {c['id']!r} is ranked twice in question "
                                                            f"{obj['id']!r} (ranks {ranks[c['id']]} and {i + 1}); "
                                                            "a ranking lists each passage once")
            ranks[c["id"]] = i + 1
            # no title is added: a missing title changes what the evaluator reads
            c["score"] = _score(c.get("score"), path, no, i)
            for key, val in c.items():
                if key.endswith((PREDS_SUFFIX, PROBS_SUFFIX)):
                    _check_row(val, len(persp), path, no, f"ctxs[{i}].{key}", key.endswith(PREDS_SUFFIX))
        for key, val in obj.items():
            if key.endswith((PREDS_SUFFIX, PROBS_SUFFIX)):
                _check_preds(val, len(ctxs), len(persp), path, no, key, key.endswith(PREDS_SUFFIX))
        entries.append(obj)
        lines.append(no)
    if not entries:
        raise InputError(path, None, None, "run file is empty")
    return entries, lines


def _score(val, path, line, i):
    """A passage score as float (or None); strings holding a number are accepted (BERDS writes them)."""
    if val is None:
        return None
    field = f"ctxs[{i}].score"
    if isinstance(val, bool) or not isinstance(val, (int, float, str)):
        raise InputError(path, line, field, f"expected a number, got {type(val).__name__}")
    if isinstance(val, str):
        try:
            num = float(val.strip())
        except ValueError:
            raise InputError(path, line, field, "expected a number, got a string that is not one") from None
    else:
        num = float(val)
    if not math.isfinite(num):
        raise InputError(path, line, field, f"expected a finite number, got {num}")
    return num


def _ok_row(row, m: int, boolean: bool) -> bool:
    kinds = (bool, int) if boolean else (bool, int, float)
    return isinstance(row, list) and len(row) == m and all(isinstance(x, kinds) for x in row)


def _check_row(val, m, path, line, field, boolean):
    if not _ok_row(val, m, boolean):
        raise InputError(path, line, field, f"expected a list of {m} {'booleans' if boolean else 'numbers'} "
                                            "(one per perspective)")


def _check_preds(val, n_ctx, m, path, line, key, boolean=True):
    ok = isinstance(val, list) and len(val) <= n_ctx and all(_ok_row(row, m, boolean) for row in val)
    if not ok:
        raise InputError(path, line, key, f"expected at most {n_ctx} lists (one per passage) of {m} "
                                          f"{'booleans' if boolean else 'numbers'}")


def authors_judge(path) -> str | None:
    """The judge an authors' judged-run file is named for: ``*.mistralpred*`` -> ``mistral``,
    ``*.gpt4pred*`` -> ``gpt4``; None for other names."""
    name = Path(str(path)).name
    return next((j for marker, j in AUTHORS_JUDGES.items() if marker in name), None)


def write_run(path, entries: list[dict]) -> int:
    return write_jsonl(path, entries)


def judges_in(entry: dict) -> list[str]:
    """Names of the judges whose verdicts the entry carries (passage layout first, then question level)."""
    names: dict[str, None] = {}
    for c in entry.get("ctxs") or ():
        for k in c:
            if k.endswith(PREDS_SUFFIX):
                names.setdefault(k[: -len(PREDS_SUFFIX)])
    for k in entry:
        if k.endswith(PREDS_SUFFIX):
            names.setdefault(k[: -len(PREDS_SUFFIX)])
    return list(names)


def _judge_rows(entry: dict, judge: str, suffix: str) -> list | None:
    """Per-passage rows of ``<judge><suffix>`` (None for a passage without them), or None if absent."""
    key = judge + suffix
    ctxs = entry["ctxs"]
    if any(key in c for c in ctxs):
        return [c.get(key) for c in ctxs]
    if key in entry:  # the question-level layout
        rows = list(entry[key] or [])[: len(ctxs)]
        return rows + [None] * (len(ctxs) - len(rows))
    return None


def _matrix(rows: list, m: int, dtype, fill) -> np.ndarray:
    out = np.full((len(rows), m), fill, dtype=dtype)
    for i, row in enumerate(rows):
        if row is not None:
            out[i] = np.asarray(row, dtype=dtype).reshape(m)
    return out


def label_matrix(entry: dict, *, gold: Gold | None = None, judge: str | None = None) -> np.ndarray:
    """Boolean matrix (passages x perspectives): passage i supports perspective j.

    Exactly one of ``gold`` (labels by question and passage id) or ``judge``
    (a name whose ``<judge>-preds`` the entry carries, in either layout) must
    be given. A passage the judge did not label counts as supporting nothing.
    """
    m = len(entry["perspectives"])
    ctxs = entry["ctxs"]
    if (gold is None) == (judge is None):
        raise ValueError("give exactly one of gold= or judge=")
    if judge is not None:
        rows = _judge_rows(entry, judge, PREDS_SUFFIX)
        if rows is None:
            have = ", ".join(judges_in(entry)) or "none"
            raise KeyError(f"question {entry['id']}: no predictions of judge '{judge}' (has: {have})")
        return _matrix(rows, m, bool, False)
    return gold_matrix(gold, entry["id"], m, [c["id"] for c in ctxs])


def label_matrices(path, entries: list[dict], gold: Gold | None, judge: str | None, gold_path=None) -> list[np.ndarray]:
    """:func:`label_matrix` of every entry of the run at ``path``; InputError naming the run (a passage without
    the judge's ``-preds``) or the gold file (a perspective index the question does not have)."""
    mats = []
    for e in entries:
        try:
            mats.append(label_matrix(e, gold=gold, judge=judge))
        except KeyError as err:
            raise InputError(path, None, f"{judge}-preds", str(err).strip("'\"")) from None
        except ValueError as err:
            raise InputError(gold_path or "gold", None, "perspective", str(err)) from None
    return mats


def align_runs(path, entries: list[dict], other_path, other: list[dict]) -> list[dict]:
    """``other``'s entries in the order of ``entries``; InputError unless both runs hold the same questions."""
    by_id = {e["id"]: e for e in other}
    missing = [e["id"] for e in entries if e["id"] not in by_id]
    if missing or len(other) != len(entries):
        extra = sorted(set(by_id) - {e["id"] for e in entries})
        what = f"question {missing[0]!r} of {path} is missing" if missing else \
            f"question {extra[0]!r} is not in {path}"
        raise InputError(other_path, None, "id", f"runs must have the same questions: {what}")
    return [by_id[e["id"]] for e in entries]


def run_depth(entries: list[dict]) -> dict:
    """The fewest and the most passages one question of a run ranks: ``{"min": .., "max": ..}``."""
    n = [len(e["ctxs"]) for e in entries]
    return {"min": min(n, default=0), "max": max(n, default=0)}


def judged_mask(entry: dict, judge: str) -> np.ndarray:
    """Bool per passage: whether it carries the judge's verdicts (all False when the judge is absent)."""
    rows = _judge_rows(entry, judge, PREDS_SUFFIX)
    return np.array([r is not None for r in rows] if rows is not None else [False] * len(entry["ctxs"]), bool)


def prob_matrix(entry: dict, judge: str) -> np.ndarray | None:
    """Float matrix (passages x perspectives) of the judge's probabilities (NaN where a passage has
    none), or None when the entry stores no ``<judge>-probs`` (e.g. the authors' files)."""
    rows = _judge_rows(entry, judge, PROBS_SUFFIX)
    return None if rows is None else _matrix(rows, len(entry["perspectives"]), np.float64, np.nan)


def set_judgments(entry: dict, judge: str, labels, probs=None) -> dict:
    """Store a judge's verdicts in the passage layout (``ctx["<judge>-preds"]``, ``ctx["<judge>-probs"]``).

    ``labels`` / ``probs``: (passages x perspectives). Question-level keys of the
    same judge (the old layout) are removed so one judge has one set of verdicts.
    """
    ctxs = entry["ctxs"]
    m = len(entry["perspectives"])
    labels = np.asarray(labels, dtype=bool).reshape(len(ctxs), m)
    probs = None if probs is None else np.asarray(probs, dtype=np.float64).reshape(len(ctxs), m)
    entry.pop(judge + PREDS_SUFFIX, None)
    entry.pop(judge + PROBS_SUFFIX, None)
    for i, c in enumerate(ctxs):
        c[judge + PREDS_SUFFIX] = [bool(x) for x in labels[i]]
        if probs is not None:
            c[judge + PROBS_SUFFIX] = [round(float(x), 5) for x in probs[i]]
        else:
            c.pop(judge + PROBS_SUFFIX, None)
    return entry


def set_band(entry: dict, judge: str, band, group_band=None, groups=None) -> dict:
    """Record next to a judged line what scoring it under either label policy needs (``berds_core.experiment``):
    the judge's unsure band (``<judge>-band``, when it has one) and the rule its ``-preds`` follow
    (``<judge>-policy``: ``threshold``, the decision at the judge's threshold); for a judge with a one-side rule,
    the line's groups of opposite perspectives (``perspective_groups``) and the rule's band for their members
    (``<judge>-group-band``)."""
    entry.pop(judge + BAND_SUFFIX, None)
    entry.pop(judge + GROUP_BAND_SUFFIX, None)
    if band is not None:
        entry[judge + BAND_SUFFIX] = [round(float(band[0]), 6), round(float(band[1]), 6)]
    if group_band is not None and groups:
        entry[judge + GROUP_BAND_SUFFIX] = [round(float(group_band[0]), 6), round(float(group_band[1]), 6)]
        entry[GROUPS_KEY] = [list(map(int, g)) for g in groups]
    entry[judge + POLICY_SUFFIX] = "threshold"
    return entry


def line_groups(entry: dict) -> list[tuple[int, ...]] | None:
    """The groups a line records (``perspective_groups``; None when it records none), checked against its
    perspectives: ValueError naming the field when a group names a perspective the line lacks or twice."""
    if GROUPS_KEY not in entry:
        return None
    m = len(entry.get("perspectives") or [])
    out, seen = [], set()
    for g in entry[GROUPS_KEY] or []:
        try:
            g = tuple(int(i) for i in g)
        except (TypeError, ValueError):
            raise ValueError(f"{GROUPS_KEY}: {g!r} is not a list of perspective indices") from None
        if len(g) < 2 or any(not 0 <= i < m for i in g) or seen & set(g) or len(set(g)) != len(g):
            raise ValueError(f"{GROUPS_KEY}: {list(g)} does not name two or more of the line's {m} perspectives, "
                             "each in one group")
        seen |= set(g)
        out.append(g)
    return out


def pair_band(band, group_band, groups, shape):
    """The unsure band of every pair (passages x perspectives) as ``(lo, hi)`` arrays: ``group_band`` for the
    members of ``groups``, ``band`` for the other perspectives; ``band`` itself when there is no group band."""
    if band is None or group_band is None or not groups:
        return band
    lo, hi = np.full(shape, float(band[0])), np.full(shape, float(band[1]))
    for g in groups:
        lo[:, list(g)], hi[:, list(g)] = float(group_band[0]), float(group_band[1])
    return lo, hi


def stored_band(entry: dict, judge: str):
    """The unsure band recorded with a judged line (None: none recorded, e.g. a judge without one); with a
    recorded group band, ``(lo, hi)`` arrays per pair (:func:`pair_band`)."""
    band = entry.get(judge + BAND_SUFFIX)
    if band is None:
        return None
    band = (float(band[0]), float(band[1]))
    gb = entry.get(judge + GROUP_BAND_SUFFIX)
    if gb is None:
        return band
    return pair_band(band, (float(gb[0]), float(gb[1])), line_groups(entry),
                     (len(entry.get("ctxs") or []), len(entry.get("perspectives") or [])))


def gold_matrix(gold: Gold, question_id, m: int, passage_ids) -> np.ndarray:
    """Boolean matrix (passages x m perspectives) of the gold labels of one question.

    A gold perspective index the question does not have raises ValueError.
    """
    labels = gold.get(str(question_id), {})
    out = np.zeros((len(passage_ids), m), dtype=bool)
    for i, pid in enumerate(passage_ids):
        for j in labels.get(str(pid), ()):
            if not 0 <= j < m:
                raise ValueError(f"question {question_id}: gold perspective {j} for passage {pid} "
                                 f"but the question has {m} perspectives")
            out[i, j] = True
    return out
