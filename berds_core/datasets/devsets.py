"""Development corpora for tuning diversifiers, and question-grouped folds.

Every knob of a diversifier (a preset's alpha, candidates, the stance model's
weights...) is chosen by cross-validation over questions of development data,
and figures are reported out of fold. This module loads the development
corpora in one gold-labelled form and splits their questions into folds so
that near-duplicate questions (the same motion on two debate sites, a claim
and its rewording) always fall in the same fold.

- ``dev_bundles(data_dir, names)``: ``procon`` (``debate-sites/procon.json``),
  ``perspectrum`` (PERSPECTRUM train + dev claims, ``datasets.load_perspectrum_bundle``;
  the test split is never read) and ``demo`` (the packaged demo bundle). A
  corpus whose files are missing is left out (``missing`` lists why).
- ``question_groups(questions, threshold)``: union of questions whose
  normalised texts are equal or whose embeddings (the shared encoder) have a
  cosine of at least ``threshold``.
- ``grouped_folds(group_of, n_folds, seed)``: question id -> fold, whole groups per fold.
"""
from __future__ import annotations

import random
import re
from pathlib import Path

import numpy as np
from ..embeddings.text_encoders import text_encoder
from . import load_debate_sites, load_demo, load_perspectrum_bundle

DEV_CORPORA = ("procon", "perspectrum", "demo")


def dev_bundles(data_dir, names=DEV_CORPORA) -> tuple[dict, dict]:
    """``({name: Bundle}, {name: why missing})`` for the development corpora under ``data_dir``."""
    data = Path(data_dir)
    out, missing = {}, {}
    for name in names:
        if name == "procon":
            path = data / "debate-sites" / "procon.json"
            if path.exists():
                out[name] = load_debate_sites(path)
            else:
                missing[name] = f"{path} not found"
        elif name == "perspectrum":
            path = data / "perspectrum" / "perspectrum_with_answers_v1.0.train_dev.json"
            if path.exists():
                out[name] = load_perspectrum_bundle(path, keep=("train", "dev"))
            else:
                missing[name] = f"{path} not found"
        elif name == "demo":
            out[name] = load_demo()
        else:
            raise ValueError(f"unknown development corpus {name!r}; choose from {', '.join(DEV_CORPORA)}")
    return out, missing


def _norm(text: str) -> str:
    return " ".join(re.findall(r"[a-z0-9]+", text.lower()))


def question_groups(questions, threshold: float = 0.9, embed=None) -> dict[str, str]:
    """Question id -> group id (the first member's id): near-duplicate questions share a group.

    ``questions``: ``Question`` objects (ids unique across corpora). ``embed``:
    texts -> unit vectors (default: the shared encoder, ``embed_store.text_encoder``).
    """
    questions = list(questions)
    parent = list(range(len(questions)))

    def find(i):
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    def union(i, j):
        a, b = find(i), find(j)
        if a != b:
            parent[max(a, b)] = min(a, b)

    seen: dict[str, int] = {}
    for i, q in enumerate(questions):
        key = _norm(q.question)
        if key in seen:
            union(i, seen[key])
        else:
            seen[key] = i
    if threshold < 1.0 and len(questions) > 1:
        if embed is None:
            embed = text_encoder().embed
        E = np.asarray(embed([q.question for q in questions]), dtype=np.float32)
        S = E @ E.T
        ii, jj = np.nonzero(np.triu(S >= threshold, k=1))
        for i, j in zip(ii.tolist(), jj.tolist()):
            union(i, j)
    return {q.id: questions[find(i)].id for i, q in enumerate(questions)}


def grouped_folds(group_of: dict[str, str], n_folds: int = 5, seed: int = 0) -> dict[str, int]:
    """Question id -> fold in ``range(n_folds)``; a group never spans two folds.

    Groups are shuffled (seeded) and dealt largest first to the fold with the
    fewest questions, so folds are of near-equal size.
    """
    if n_folds < 2:
        raise ValueError("n_folds must be at least 2")
    members: dict[str, list[str]] = {}
    for qid, g in group_of.items():
        members.setdefault(g, []).append(qid)
    groups = sorted(members)
    random.Random(seed).shuffle(groups)
    groups.sort(key=lambda g: -len(members[g]))  # stable: shuffled order within equal sizes
    size = [0] * n_folds
    fold: dict[str, int] = {}
    for g in groups:
        f = min(range(n_folds), key=lambda i: (size[i], i))
        for qid in members[g]:
            fold[qid] = f
        size[f] += len(members[g])
    return fold
