"""Diversifiers on development data, every knob chosen by question-grouped cross-validation; out-of-fold figures only.

    python bench/diversity.py --data ../shared/data                    # quality tables (out of fold)
    python bench/diversity.py --data ../shared/data --timing           # + berds retrieve timings (cold / warm)
    python bench/diversity.py --data ../shared/data --timing-only      # timings only

Development corpora (``berds_core.datasets.devsets``), all in the debate-sites gold
form (perspective 0 the claim, 1 its negation, each passage labelled with the
side it argues): ``procon`` (debate-sites/procon.json), ``perspectrum``
(PERSPECTRUM train + dev claims, their perspective sentences as passages; the
test split is never read) and ``demo`` (the packaged bundle: 4 perspectives per
question, stances on most). Each is retrieved over its own corpus.

Protocol. Questions of all corpora are split into ``--folds`` folds by
question group (near-duplicate questions -- the same motion on two sites --
share a group, ``devsets.question_groups``). For every configuration (rows,
``CONFIGS``) each setting of its knobs (``grid``) ranks every question; for
each fold the setting with the best MRecall@5 on the *other* folds (macro
mean over corpora, so every corpus weighs the same) whose Precision@5 there
is not below plain dense's on any corpus (when no setting manages that: not
below on the macro mean) is applied to the held-out fold. Trained parts
are trained per fold too: the studio's stance model (``scripts/train_stance.py``,
one model per fold over every development source) scoring a fold's questions
was trained only on the other folds' questions, and its calibration was chosen
on the other folds; with the stance rows the folds are that script's
(``folds.json``), so knobs and stance model leave out the same questions.
Every figure printed is out of fold; the settings chosen on all questions are
printed separately as what ships (``diversify/presets.py``).

Tables: per corpus, pooled (all questions) and macro (mean over corpora):
MRecall@5, Precision@5, MRecall@10, Precision@10; the ``diverse`` preset
against plain dense with a paired bootstrap interval (2,000 resamples; pooled:
stratified by corpus); side accuracy of the stance model against the
cosine-to-sides rule on candidates labelled with exactly one side.

The side reader's rows (``dense + coverage, side reader on stored vectors``, ``dense >> rvr, side reader on
stored vectors``) read every candidate from its stored dense vector with the head of the question's fold
(``scripts/train_side_reader.py``, ``--side-reader-cv``; trained on the stance cross-validation's folds, so
they need a stance row in the run), and the side-accuracy table gains its column.

The shortlist row (``dense + side-reader shortlist, stance model verifies, within the CPU budget``) lets the
side reader order the dense top 10 / 20 by coverage and the stance model read only the first 6 / 8 / 10 of
that order at the preset's cuts (its reads are the preset's); it needs the side reader's fold heads too. As a
pipeline: ``dense%20>>coverage(probs=index,alpha=...)>>coverage(probs=model,...,tokens=112,read=6)``.

A row that ranks fewer than ``K`` passages (the preset re-ranks the dense top 6) is followed by dense's own
order (``filled``), as ``berds retrieve`` fills the ranks below the candidates.

Adding a configuration: append ``Config(name, grid, rank)`` to ``CONFIGS``;
``rank(qc, **knobs)`` returns the top ``K`` corpus rows for one question from
the precomputed ``QuestionCtx`` (dense / BM25 lists, embeddings, out-of-fold
stance probabilities, the retrievers themselves).

Timing (``--timing``): ``berds retrieve`` (a subprocess, as a user runs it)
with ``--preset diverse`` and with plain ``--retriever dense`` on a timing
corpus of ``--timing-questions`` x ``--timing-passages`` built from
development data (``timing_corpus``: procon's questions and passages, plus
PERSPECTRUM claims as questions and passages of procon's word-length
distribution made of each claim's perspective sentences), each with a fresh
``BERDS_CACHE`` (cold) and again with the filled one (warm); medians over
``--repeat`` runs, in one table.

Markdown goes to stdout, JSON to bench/results/diversity.json. Skips cleanly
(exit 0) when the development data is missing.
"""
from __future__ import annotations

import argparse
import hashlib
import itertools
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

K = 10            # rankings are cut at 10 (MRecall / Precision at 5 and 10)
DEPTH = 100       # retrieved per question and retriever
STANCE_DEPTH = 30  # the stance model scores the union of the dense and BM25 top STANCE_DEPTH
METRICS = ("mrecall@5", "precision@5", "mrecall@10", "precision@10")


def log(msg: str) -> None:
    sys.stderr.write(msg + "\n")
    sys.stderr.flush()


# ------------------------------------------------------------------ per-question context

@dataclass
class CorpusCtx:
    name: str
    bundle: object
    corpus: object
    dense: object
    bm25: object


@dataclass
class QuestionCtx:
    """Everything a configuration may rank from, for one question."""

    corpus: CorpusCtx
    question: object
    fold: int
    dense_rows: np.ndarray
    dense_scores: np.ndarray
    bm25_rows: np.ndarray
    bm25_scores: np.ndarray
    qv: np.ndarray
    stance: dict = field(default_factory=dict)  # row -> [yes, no, off], out of fold (the trained length)
    stance_at: dict = field(default_factory=dict)  # (max tokens, row) -> [yes, no, off] at a preset's shorter cut
    side_hits: dict = field(default_factory=dict)  # side (0 yes, 1 no) -> dense hits of its statement (rvr)
    side_read: dict = field(default_factory=dict)  # row -> [yes, no, off] of the fold's side reader (stored vectors)
    memo: dict = field(default_factory=dict)

    def pool(self, kind: str, n: int) -> tuple[np.ndarray, np.ndarray]:
        """Candidates and dense-cosine scores: ``dense`` top n, or ``union`` of the dense and BM25 top n
        (as ``diversify.candidate_pool``)."""
        if kind == "dense":
            return self.dense_rows[:n], self.dense_scores[:n]
        key = ("pool", kind, n)
        if key not in self.memo:
            rows = np.array(list(dict.fromkeys(self.dense_rows[:n].tolist() + self.bm25_rows[:n].tolist())), int)
            sc = np.asarray(self.corpus.dense.embeddings)[rows] @ self.qv
            order = np.argsort(-sc, kind="stable")
            self.memo[key] = (rows[order], sc[order].astype(np.float64))
        return self.memo[key]

    def emb(self, rows) -> np.ndarray:
        return np.asarray(self.corpus.dense.embeddings)[np.asarray(rows, dtype=int)]

    def stance_probs(self, rows, max_length: int | None = None) -> np.ndarray:
        src = (self.stance if not max_length else {r: self.stance_at[(max_length, r)] for r in map(int, rows)})
        return np.array([src[int(r)] for r in rows], dtype=np.float64).reshape(len(rows), 3)

    def side_probs(self, rows) -> np.ndarray:
        return np.array([self.side_read[int(r)] for r in rows], dtype=np.float64).reshape(len(rows), 3)

    def labels(self, rows) -> np.ndarray:
        from berds_core.runs import gold_matrix

        ids = [self.corpus.corpus[int(r)].id for r in rows]
        return gold_matrix(self.corpus.bundle.gold, self.question.id, len(self.question.perspectives), ids)


# ------------------------------------------------------------------ configurations

@dataclass
class Config:
    name: str
    rank: Callable  # rank(qc, **knobs) -> corpus rows (best first, at least K when the pool has them)
    grid: dict = field(default_factory=dict)  # knob -> values; chosen per fold
    needs_stance: bool = False
    note: str = ""

    def settings(self) -> list[dict]:
        keys = list(self.grid)
        return [dict(zip(keys, vals)) for vals in itertools.product(*(self.grid[k] for k in keys))]


def _bm25(qc):
    return qc.bm25_rows[:K]


def _dense(qc):
    return qc.dense_rows[:K]


def _mmr(qc, lam, candidates):
    from berds_core.diversify import mmr

    rows, sc = qc.pool("dense", candidates)
    return rows[mmr(sc, qc.emb(rows), K, lam)]


def _qe(qc, source):
    from berds_core.diversify import diversify

    return np.array([r for r, _ in diversify(qc.question, qc.corpus.corpus, qc.corpus.dense, f"qe(source={source})",
                                             K)], dtype=int)


def _cosine_sides(qc, alpha, candidates, temperature, keep=0):
    """The coverage re-ranker with the cosine-to-sides rule (the ``diverse`` preset's method until 2026-11-25);
    ``keep``: the dense top ``keep`` stay in place."""
    from berds_core.diversify import coverage_rerank, stance_probs
    from berds_core.diversify.vectors import encode
    from berds_core.diversify.facets import yes_no_sides

    rows, sc = qc.pool("dense", candidates)
    if "sides" not in qc.memo:
        qc.memo["sides"] = encode(None, list(yes_no_sides(qc.question.question)))
    sides = qc.memo["sides"]
    P = stance_probs(qc.emb(rows), sides[0], sides[1], temperature)
    return rows[coverage_rerank(sc, P, K, alpha, keep=keep)]


def _stance_model(qc, pool, candidates, alpha, mix, keep=0, max_length=None):
    """The coverage re-ranker on the stance model's P(yes), P(no) (``coverage_probs="model"``); ``max_length``:
    the tokens the model reads per pair (None: its trained length)."""
    from berds_core.diversify import blend_relevance, coverage_rerank

    rows, sc = qc.pool(pool, candidates)
    P = qc.stance_probs(rows, max_length)
    return rows[coverage_rerank(blend_relevance(sc, P, mix), P[:, :2], K, alpha, keep=keep)]


def _budget_preset(qc, budget, alpha, mix, keep=0):
    """The preset's row: ``budget`` = (candidates, max tokens per pair), one of the CPU-feasible pairs."""
    candidates, max_length = budget
    return _stance_model(qc, "dense", candidates, alpha, mix, keep, max_length)


def _rvr(qc, budget, keep, add, threshold):
    """The ``rvr`` stage (retrieve, verify, retrieve again) behind plain dense, through the stage's own code
    (``diversify.rvr.retrieve_verify``): ``budget`` = (rows read, second-round depth, tokens per pair), one
    of the CPU-feasible triples; the reader is the question's fold stance model at that cut."""
    from berds_core.diversify.rvr import retrieve_verify
    from berds_core.records import Hits

    read, depth, tokens = budget
    out = retrieve_verify(Hits(qc.dense_rows, qc.dense_scores), lambda rows: qc.stance_probs(rows, tokens),
                          lambda s: qc.side_hits[s][:depth],
                          lambda r: qc.corpus.corpus[int(r)].id, read=read, keep=keep, add=add, threshold=threshold)
    return out.rows[:K]


def _side_reader(qc, candidates, keep, alpha, mix):
    """The coverage re-ranker on the side reader's P(yes), P(no) from the stored passage vectors
    (``coverage(probs=index)``): reading costs a few vector operations, so it may read the dense top 100."""
    from berds_core.diversify import blend_relevance, coverage_rerank

    rows, sc = qc.pool("dense", candidates)
    P = qc.side_probs(rows)
    return rows[coverage_rerank(blend_relevance(sc, P, mix), P[:, :2], K, alpha, keep=keep)]


def _shortlist(qc, candidates, first_alpha, budget, keep, alpha, mix):
    """Retrieve, shortlist, verify: the side reader (stored vectors, a few vector operations a candidate) orders
    the dense top ``candidates`` by expected coverage of the two sides (``first_alpha``: its relevance weight),
    the stance model reads only the first ``budget[0]`` of that order at ``budget[1]`` word pieces (the preset's
    token-slot bound) and re-ranks them by coverage; the rest of the side reader's order follows. The preset
    reads the dense top 6 whatever they argue; this reads the 6 most likely to cover both sides among the top
    ``candidates``. A configuration of this bench (its cost: the preset's reads plus the side reader's)."""
    from berds_core.diversify import blend_relevance, coverage_rerank

    key = ("shortlist", candidates, first_alpha)
    if key not in qc.memo:
        rows, sc = qc.pool("dense", candidates)
        R = qc.side_probs(rows)
        order = coverage_rerank(sc, R[:, :2], len(rows), first_alpha)
        qc.memo[key] = (rows[order], sc[order])
    rows, sc = qc.memo[key]
    read, tokens = budget
    P = qc.stance_probs(rows[:read], tokens)
    head = coverage_rerank(blend_relevance(sc[:read], P, mix), P[:, :2], read, alpha, keep=keep)
    return np.concatenate([rows[:read][head], rows[read:]])[:K]


def _rvr_index(qc, read, depth, keep, add, threshold):
    """The ``rvr`` stage with the side reader as its verifier (``rvr(reader=index)``): no token budget."""
    from berds_core.diversify.rvr import retrieve_verify

    first = list(zip(qc.dense_rows.tolist(), qc.dense_scores.tolist()))
    out = retrieve_verify(first, qc.side_probs, lambda s: qc.side_hits[s][:depth],
                          lambda r: qc.corpus.corpus[int(r)].id, read=read, keep=keep, add=add, threshold=threshold)
    return np.array([r for r, _ in out[:K]], dtype=int)


def rvr_diagnostics(qcs: list[QuestionCtx], setting: dict) -> dict:
    """What the rvr row does with one setting (the one chosen on all questions): how often the stance model
    finds a side missing in the first round's reads (a second round runs) against how often the dense top 5
    really lacks one of the two sides (gold), and what the passages it brings into the top 5 carry."""
    from berds_core.diversify.rvr import missing_sides

    read, _, tokens = setting["budget"]
    d = {"questions": 0, "second_round": 0, "gold_missing": 0, "both": 0, "brought": 0, "brought_missing_side": 0,
         "brought_other_side": 0, "brought_unlabelled": 0}
    for qc in (qc for qc in qcs if qc.side_hits):
        d["questions"] += 1
        runs = bool(missing_sides(qc.stance_probs(qc.dense_rows[:read], tokens), setting["threshold"]))
        top = qc.dense_rows[:5]
        L = qc.labels(top)[:, :2]
        lacking = {s for s in (0, 1) if not L[:, s].any()}
        d["second_round"] += runs
        d["gold_missing"] += bool(lacking)
        d["both"] += runs and bool(lacking)
        new = [r for r in _rvr(qc, **setting)[:5] if r not in set(top.tolist())]
        for lab in (qc.labels(new)[:, :2] if new else []):
            d["brought"] += 1
            key = ("brought_missing_side" if any(lab[s] for s in lacking) else
                   "brought_other_side" if lab.any() else "brought_unlabelled")
            d[key] += 1
    return d


def _oracle(qc, candidates):
    """A perfect re-ranker of the dense top ``candidates`` (gold labels): first one passage per perspective
    not yet covered (dense order), then the other supporting passages, then the rest -- the ceiling of any
    re-ranking of those candidates (an upper bound, not a method)."""
    rows, _ = qc.pool("dense", candidates)
    L = qc.labels(rows)
    covered: set[int] = set()
    first, pos, rest = [], [], []
    for i in range(len(rows)):
        new = set(np.flatnonzero(L[i]).tolist()) - covered
        if new:
            first.append(i)
            covered |= new
        elif L[i].any():
            pos.append(i)
        else:
            rest.append(i)
    return rows[first + pos + rest]


PRESET = "dense + coverage, stance model, within the CPU budget"
UNBOUNDED = "dense + coverage, stance model, no CPU budget"
# (candidates, tokens per pair) the preset may use, so that `berds retrieve --preset diverse` stays within
# 1.5x plain dense, cold, on the timing corpus (400 questions x 7,000 passages; checked by --timing). A cost
# bound, not a knob tuned on data: the first bound, (10, 96) / (8, 112) / (6, 160), about 960 token slots a
# question, measured 1.66x (123.4 s vs 74.3 s, 2026-11-26, Zen 4, bf16: the stance network costs ~0.12 ms
# a token slot there, all of it in its matmuls), so the bound is now at most ~670 slots a question.
PRESET_BUDGETS = [(10, 64), (8, 80), (6, 112)]
RVR = "dense >> rvr (retrieve, verify, retrieve again), within the CPU budget"
# (rows the stance model reads, second-round depth per missing side, tokens per pair) of the rvr row: each
# reads at most read + depth pairs for the (about half of the) questions that miss a side, ~400-700 token
# slots a question on average like the preset's bound; a cost bound, not a knob tuned on data (--timing checks it)
RVR_BUDGETS = [(5, 10, 64), (5, 5, 64), (3, 10, 64), (3, 5, 112)]
DENSE = "dense"
SIDE_READER = "dense + coverage, side reader on stored vectors"
RVR_INDEX = "dense >> rvr, side reader on stored vectors"
SIDE_READER_DEPTH = 100  # the side reader reads the dense top 100 (and the rvr row's second-round hits)
RVR_INDEX_DEPTH = 50
SHORTLIST = "dense + side-reader shortlist, stance model verifies, within the CPU budget"
SHORTLIST_DEPTH = 20  # the shortlist row's deepest candidates (the stance model's cuts are read this deep)

CONFIGS: list[Config] = [
    Config("BM25", _bm25),
    Config(DENSE, _dense),
    Config("dense + MMR", _mmr, {"lam": [0.5, 0.75, 0.9, 0.95], "candidates": [20, 100]}),
    Config("dense + QE (offline sides + facets)", _qe, {"source": ["offline"]}),
    Config("dense + coverage, cosine-to-sides rule", _cosine_sides,
           {"keep": [0, 1, 2, 3], "alpha": [0.1, 0.3, 0.5, 0.7], "candidates": [10, 15, 30],
            "temperature": [0.005, 0.01, 0.03]}),
    Config(PRESET, _budget_preset,
           # keep: the retriever's first 0-3 candidates stay on top; mix 1: relevance = the dense score
           {"budget": PRESET_BUDGETS, "keep": [0, 1, 2, 3], "alpha": [0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6],
            "mix": [0.0, 0.5, 1.0]}, needs_stance=True),
    Config(UNBOUNDED, _stance_model,
           {"pool": ["dense", "union"], "candidates": [10, 20], "keep": [0, 1, 2, 3],
            "alpha": [0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6], "mix": [0.0, 0.5, 1.0]}, needs_stance=True,
           note="the stance model at its full length on up to 20 candidates: over the CPU budget (1.7-3x plain "
                "dense cold), what the budget costs in quality; not shipped"),
    Config(RVR, _rvr, {"budget": RVR_BUDGETS, "keep": [0, 1, 2, 3], "add": [1, 2],
                       "threshold": [0.35, 0.45, 0.55, 0.65]}, needs_stance=True),
    Config(SIDE_READER, _side_reader,
           {"candidates": [6, 10, 20, 50, 100], "keep": [0, 1, 2, 3], "alpha": [0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6],
            "mix": [0.0, 0.5, 1.0]}),
    Config(SHORTLIST, _shortlist,
           {"candidates": [10, SHORTLIST_DEPTH], "first_alpha": [0.3, 0.5, 0.7], "budget": PRESET_BUDGETS,
            "keep": [0, 1, 2, 3], "alpha": [0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6], "mix": [0.0, 0.5, 1.0]},
           needs_stance=True),
    Config(RVR_INDEX, _rvr_index, {"read": [5, 10, 20], "depth": [10, 20, 50], "keep": [0, 1, 2, 3], "add": [1, 2],
                                   "threshold": [0.35, 0.45, 0.55, 0.65]}),
    Config("dense + QE (gold perspectives, upper bound)", _qe, {"source": ["oracle"]},
           note="uses the gold perspectives: an upper bound, not a method"),
    Config("oracle re-ranker of the dense top 10", lambda qc: _oracle(qc, 10),
           note="gold labels: the ceiling of re-ranking the dense top 10, not a method"),
    Config("oracle re-ranker of the dense top 20", lambda qc: _oracle(qc, 20),
           note="gold labels: the ceiling of re-ranking the dense top 20 (the issue's reference), not a method"),
]


# ------------------------------------------------------------------ building the contexts

def build_contexts(bundles: dict, progress: bool) -> list[QuestionCtx]:
    from berds_core.corpora.memory import corpus_from_passages
    from berds_core.retrieval import get_retriever

    out = []
    for name, b in bundles.items():
        corpus = corpus_from_passages(b.passages, b.name)
        t0 = time.perf_counter()
        dense = get_retriever("dense", corpus, progress=progress)
        bm25 = get_retriever("bm25", corpus, progress=False)
        cc = CorpusCtx(name, b, corpus, dense, bm25)
        texts = [q.question for q in b.questions]
        qv = dense.encode(texts)
        dh = dense.search_vectors(qv, DEPTH)
        bh = bm25.search(texts, DEPTH)
        for q, v, d, s in zip(b.questions, qv, dh, bh):
            out.append(QuestionCtx(cc, q, -1, d.rows, d.scores, s.rows, s.scores, v))
        log(f"{name}: {len(b.questions)} questions, {len(corpus)} passages, retrievers ready "
            f"({time.perf_counter() - t0:.0f}s, dense encoded {dense.n_encoded})")
    return out


def assign_folds(qcs: list[QuestionCtx], n_folds: int, seed: int, stance_folds: dict | None = None) -> dict:
    """Question-grouped folds. With ``stance_folds`` (question id -> fold of the stance model's
    cross-validation, over every development source) those folds, so a question's knobs and its stance
    probabilities are both chosen / trained without it; otherwise ``devsets`` groups over these questions."""
    from berds_core.datasets.devsets import grouped_folds, question_groups

    if stance_folds is not None:
        for qc in qcs:
            qc.fold = int(stance_folds[qc.question.id])
        n_folds = 1 + max(qc.fold for qc in qcs)
        return {"folds": n_folds, "source": "scripts/train_stance.py folds.json (every development source, "
                "stratified by source)", "questions": len(qcs),
                "fold_sizes": [sum(qc.fold == f for qc in qcs) for f in range(n_folds)]}
    groups = question_groups([qc.question for qc in qcs])
    folds = grouped_folds(groups, n_folds, seed)
    for qc in qcs:
        qc.fold = folds[qc.question.id]
    n_groups = len(set(groups.values()))
    return {"folds": n_folds, "seed": seed, "questions": len(qcs), "groups": n_groups,
            "merged_questions": len(qcs) - n_groups,
            "fold_sizes": [sum(qc.fold == f for qc in qcs) for f in range(n_folds)]}


# ------------------------------------------------------------------ out-of-fold stance model

def prepare_side_hits(qcs: list[QuestionCtx], depth: int) -> None:
    """``qc.side_hits``: the dense top ``depth`` of each side statement of the question (``datasets.sides``),
    every statement of a corpus in one encoder call; the order the ``rvr`` stage gives them (score, then
    passage id)."""
    from berds_core.datasets.sides import yes_no_sides

    for cc in {id(qc.corpus): qc.corpus for qc in qcs}.values():
        mine = [qc for qc in qcs if qc.corpus is cc]
        sides = [yes_no_sides(qc.question.question) for qc in mine]
        hits = cc.dense.search_vectors(cc.dense.encode([s for pair in sides for s in pair]), depth)
        for i, qc in enumerate(mine):
            qc.side_hits = {s: hits[2 * i + s] for s in (0, 1)} if all(sides[i]) else {}


def rvr_pairs(qc: QuestionCtx) -> dict:
    """tokens -> the rows the ``rvr`` row's budgets may read for this question (at most)."""
    need: dict[int, set] = {}
    for read, depth, tokens in RVR_BUDGETS:
        rows = set(qc.dense_rows[:read].tolist())
        for s in qc.side_hits:
            rows |= {int(r) for r, _ in qc.side_hits[s][:depth]}
        need.setdefault(tokens, set()).update(rows)
    return need


def stance_out_of_fold(qcs: list[QuestionCtx], data: Path, work: Path, jobs: int, progress: bool,
                       full: bool = True, rvr: bool = False, shortlist: int = 0) -> dict:
    """Fill ``qc.stance`` for the union top STANCE_DEPTH of every question with the studio's stance model of
    the question's cross-validation fold (``scripts/train_stance.py``: one model per fold, trained on the
    other folds' questions of every development source, with the calibration chosen on the other folds).
    The fold models are trained there (and only once: reused by file name) when missing."""
    import train_stance

    from berds_core.stance import passage_string

    if not (Path(work) / "report.json").exists():
        log(f"stance fold models: running scripts/train_stance.py --stage cv (work {work})")
        train_stance.main(["--data", str(data), "--work", str(work), "--stage", "cv", "--jobs", str(jobs),
                           "--quiet"])
    fold_of, models = train_stance.fold_stance_models(Path(work))
    report = {"work": str(work), "folds": []}
    for f, model in sorted(models.items()):
        pairs, owners = [], []
        for qc in (qc for qc in qcs if fold_of[qc.question.id] == f and full):
            rows = qc.pool("union", STANCE_DEPTH)[0]
            pairs += [(qc.question.question, passage_string(qc.corpus.corpus[int(r)])) for r in rows]
            owners += [(qc, int(r)) for r in rows]
        t1 = time.perf_counter()
        P = model.probs(pairs, use="preset", progress=progress)
        for (qc, r), pr in zip(owners, P):
            qc.stance[r] = pr
        if rvr:  # the rvr row's reads: the dense top rows and the side statements' hits, at each budget's cut
            by_len: dict[int, list] = {}
            for qc in (qc for qc in qcs if fold_of[qc.question.id] == f):
                for length, rows in rvr_pairs(qc).items():
                    by_len.setdefault(length, []).extend((qc, r) for r in sorted(rows))
            for length, own in by_len.items():
                P = model.probs([(qc.question.question, passage_string(qc.corpus.corpus[r])) for qc, r in own],
                                use="preset", max_length=length, progress=progress)
                for (qc, r), pr in zip(own, P):
                    qc.stance_at[(length, r)] = pr
        for cands, length in PRESET_BUDGETS:  # the preset's shorter cuts, on its dense candidates
            cands = max(cands, shortlist)  # (the shortlist row may read any of the dense top SHORTLIST_DEPTH)
            if length >= model.max_length and full:
                for qc in (qc for qc in qcs if fold_of[qc.question.id] == f):
                    for r in qc.pool("dense", cands)[0]:
                        qc.stance_at[(length, int(r))] = qc.stance[int(r)]
                continue
            short, own = [], []
            for qc in (qc for qc in qcs if fold_of[qc.question.id] == f):
                rows = qc.pool("dense", cands)[0]
                short += [(qc.question.question, passage_string(qc.corpus.corpus[int(r)])) for r in rows]
                own += [(qc, int(r)) for r in rows]
            for (qc, r), pr in zip(own, model.probs(short, use="preset", max_length=length)):
                qc.stance_at[(length, r)] = pr
        report["folds"].append({"fold": f, "model": model.weights_path.name, "pairs": len(pairs),
                                "encoded": model.n_encoded, "temperature": model.temperature("preset"),
                                "seconds": round(time.perf_counter() - t1, 1)})
        log(f"stance fold {f}: {len(pairs)} full-length pairs, {model.n_encoded} pairs through the network")
    return report


def side_reader_out_of_fold(qcs: list[QuestionCtx], folder: Path) -> dict:
    """Fill ``qc.side_read`` for the dense top SIDE_READER_DEPTH (and the side statements' hits) of every
    question with the side reader of its fold (``scripts/train_side_reader.py``: ``fold<N>.npz``, trained on
    the other folds' questions), from the dense index's stored vectors and the question's side statements."""
    from berds_core.stance.side_reader import SideReader

    readers = {int(p.stem[4:]): SideReader(p) for p in sorted(Path(folder).glob("fold*.npz"))}
    if not readers:
        raise SystemExit(f"{folder}: no fold<N>.npz (run scripts/train_side_reader.py first)")
    t0, n = time.perf_counter(), 0
    for qc in qcs:
        rows = list(dict.fromkeys(qc.dense_rows[:SIDE_READER_DEPTH].tolist() + [
            int(r) for s in qc.side_hits for r, _ in qc.side_hits[s][:RVR_INDEX_DEPTH]] +
            qc.pool("union", STANCE_DEPTH)[0].tolist()))
        sides = qc.memo["sides"]
        for r, p in zip(rows, readers[qc.fold].probs(qc.emb(rows), sides[0], sides[1])):
            qc.side_read[r] = p
        n += len(rows)
    log(f"side reader: {n} (question, passage) readings in {time.perf_counter() - t0:.1f}s")
    return {"folder": str(folder), "folds": {f: r.meta.get("signature") for f, r in readers.items()},
            "readings": n, "seconds": round(time.perf_counter() - t0, 1)}


def prepare_sides(qcs: list[QuestionCtx]) -> None:
    """Embed every question's offline yes/no sides in one encoder call (``qc.memo["sides"]``): one call per
    question is slow on a loaded CPU."""
    from berds_core.diversify.vectors import encode
    from berds_core.diversify.facets import yes_no_sides

    texts = [s for qc in qcs for s in yes_no_sides(qc.question.question)]
    emb = encode(None, texts)
    for i, qc in enumerate(qcs):
        qc.memo["sides"] = emb[2 * i:2 * i + 2]


def side_accuracy(qcs: list[QuestionCtx]) -> dict:
    """On candidates (union top STANCE_DEPTH) labelled with exactly one of the two sides: how often each
    rule puts them on their side. Model: P(yes) > P(no). Cosine rule: ``coverage.stance_probs``
    (difference of cosines to the offline yes/no sides, centred on the pool's median), as the old preset."""
    from berds_core.diversify import stance_probs
    from berds_core.diversify.vectors import encode
    from berds_core.diversify.facets import yes_no_sides

    from berds_core.stance.examples import side_of

    out: dict[str, dict] = {}
    for qc in qcs:
        rows, _ = qc.pool("union", STANCE_DEPTH)
        L = qc.labels(rows)
        truth = [side_of(qc.question, set(np.flatnonzero(L[i]).tolist())) for i in range(len(rows))]
        keep = [i for i, t in enumerate(truth) if t is not None]
        if not keep:
            continue
        sides = qc.memo["sides"] if "sides" in qc.memo else encode(None, list(yes_no_sides(qc.question.question)))
        rule = stance_probs(qc.emb(rows), sides[0], sides[1], 0.01)
        P = qc.stance_probs(rows) if qc.stance else None
        R = qc.side_probs(rows) if qc.side_read and all(int(r) in qc.side_read for r in rows) else None
        for name in (qc.corpus.name, "pooled"):
            d = out.setdefault(name, {"n": 0, "model": 0, "cosine_rule": 0, "reader": 0, "reader_n": 0,
                                      "questions": set()})
            for i in keep:
                d["n"] += 1
                if R is not None:
                    d["reader_n"] += 1
                    d["reader"] += int((R[i, 0] > R[i, 1]) == (truth[i] == 0))
                d["cosine_rule"] += int((rule[i, 0] > rule[i, 1]) == (truth[i] == 0))
                if P is not None:
                    d["model"] += int((P[i, 0] > P[i, 1]) == (truth[i] == 0))
            d["questions"].add(qc.question.id)
    scored = any(qc.stance for qc in qcs)  # the full-length stance pool was read (not with --skip "no CPU")
    return {name: {"passages": d["n"], "questions": len(d["questions"]),
                   "model": d["model"] / d["n"] if d["n"] and scored else None,
                   "side_reader": d["reader"] / d["reader_n"] if d["reader_n"] else None,
                   "side_reader_passages": d["reader_n"],
                   "cosine_rule": d["cosine_rule"] / d["n"] if d["n"] else None} for name, d in out.items()}


# ------------------------------------------------------------------ evaluation and selection

def per_question(qc: QuestionCtx, rows) -> np.ndarray:
    from berds_core.eval.measures import mrecall_at_k, precision_at_k

    L = qc.labels(list(rows)[:K])
    return np.array([mrecall_at_k(L, 5), precision_at_k(L, 5), mrecall_at_k(L, 10), precision_at_k(L, 10)])


def filled(qc: QuestionCtx, rows) -> np.ndarray:
    """A configuration's ranking cut at ``K`` or, when it ranks fewer (a re-ranker of the dense top 6),
    followed by dense's own order, as ``berds retrieve`` fills the ranks below the candidates
    (``diversify.pipeline.fill``); @10 figures measured on the re-ranked 6 alone count ranks 7-10 as empty."""
    rows = np.asarray(rows, dtype=int)[:K]
    if len(rows) >= K:
        return rows
    seen = set(rows.tolist())
    return np.concatenate([rows, [r for r in qc.dense_rows.tolist() if r not in seen][:K - len(rows)]]).astype(int)


def macro(values: np.ndarray, corpora: np.ndarray, idx: np.ndarray) -> np.ndarray:
    """Mean over corpora of each corpus's mean over the questions in ``idx`` (rows: questions)."""
    names = sorted(set(corpora[idx]))
    return np.mean([values[idx][corpora[idx] == n].mean(axis=0) for n in names], axis=0)


def select(scores: np.ndarray, dense: np.ndarray, corpora: np.ndarray, idx: np.ndarray) -> int:
    """Index of the setting with the best macro MRecall@5 on ``idx`` among those whose Precision@5 there is
    not below plain dense's on any corpus (the issue's bar: no corpus loses precision); when none is, among
    those whose macro Precision@5 is not below dense's; else the best MRecall@5 + Precision@5.
    ``scores``: settings x questions x 4."""
    names = sorted(set(corpora[idx]))
    per = np.array([[s[idx][corpora[idx] == n].mean(axis=0) for n in names] for s in scores])  # settings x corpora x 4
    ref = np.array([dense[idx][corpora[idx] == n].mean(axis=0) for n in names])
    means = per.mean(axis=1)  # macro
    for ok in (np.flatnonzero((per[:, :, 1] >= ref[None, :, 1] - 1e-12).all(axis=1)),
               np.flatnonzero(means[:, 1] >= ref[:, 1].mean() - 1e-12)):
        if ok.size:
            return int(ok[np.argmax(means[ok, 0])])  # first best: grids list cheaper settings first
    return int(np.argmax(means[:, 0] + means[:, 1]))


def evaluate(qcs: list[QuestionCtx], configs: list[Config], n_folds: int, progress: bool) -> dict:
    corpora = np.array([qc.corpus.name for qc in qcs])
    folds = np.array([qc.fold for qc in qcs])
    results = {}
    dense_scores = None
    for cfg in configs:
        if cfg.needs_stance and not all(qc.stance or qc.stance_at for qc in qcs):
            continue
        t0 = time.perf_counter()
        settings = cfg.settings() or [{}]
        S = np.zeros((len(settings), len(qcs), len(METRICS)))
        for si, knobs in enumerate(settings):
            for qi, qc in enumerate(qcs):
                S[si, qi] = per_question(qc, filled(qc, cfg.rank(qc, **knobs)))
        if cfg.name == DENSE:
            dense_scores = S[0]
        oof = np.zeros((len(qcs), len(METRICS)))
        chosen = []
        for f in range(n_folds):
            test = np.flatnonzero(folds == f)
            train = np.flatnonzero(folds != f)
            si = select(S, dense_scores, corpora, train) if len(settings) > 1 else 0
            oof[test] = S[si, test]
            chosen.append(settings[si])
        final = settings[select(S, dense_scores, corpora, np.arange(len(qcs)))] if len(settings) > 1 else settings[0]
        results[cfg.name] = {"oof": oof, "chosen_per_fold": chosen, "chosen_on_all": final,
                             "settings": len(settings), "seconds": time.perf_counter() - t0, "note": cfg.note}
        if progress:
            m = oof.mean(axis=0)
            log(f"  {cfg.name}: MR@5 {m[0]:.3f} P@5 {m[1]:.3f} ({len(settings)} settings, "
                f"{time.perf_counter() - t0:.0f}s)")
    return results


def tables(qcs, results, n_boot: int = 2000) -> dict:
    from berds_core.eval.evaluation import paired_comparison

    corpora = np.array([qc.corpus.name for qc in qcs])
    views = {name: np.flatnonzero(corpora == name) for name in dict.fromkeys(corpora)}
    views["pooled"] = np.arange(len(qcs))
    out = {}
    for view, idx in views.items():
        rows = {}
        for name, r in results.items():
            v = r["oof"][idx]
            rows[name] = dict(zip(METRICS, v.mean(axis=0).tolist()))
        if view == "pooled":
            rows_macro = {name: dict(zip(METRICS, macro(r["oof"], corpora, idx).tolist()))
                          for name, r in results.items()}
        cmp, vs = {}, {}
        groups = None  # pooled: all questions alike (the macro view below is stratified by corpus)
        if PRESET in results and DENSE in results:
            for mi, m in enumerate(METRICS):
                cmp[m] = paired_comparison(results[DENSE]["oof"][idx, mi], results[PRESET]["oof"][idx, mi],
                                           n_boot=n_boot, seed=0, groups=groups)
        if DENSE in results:  # every row against plain dense, MRecall@5 and Precision@5
            for name, r in results.items():
                if name not in (DENSE, PRESET):
                    vs[name] = {m: paired_comparison(results[DENSE]["oof"][idx, mi], r["oof"][idx, mi],
                                                     n_boot=n_boot, seed=0, groups=groups)
                                for mi, m in enumerate(METRICS[:2])}
        out[view] = {"questions": int(idx.size), "rows": rows, "preset_vs_dense": cmp, "vs_dense": vs}
        if view == "pooled":
            mcmp, mvs = {}, {}
            if PRESET in results and DENSE in results:
                for mi, m in enumerate(METRICS):
                    mcmp[m] = paired_comparison(results[DENSE]["oof"][idx, mi], results[PRESET]["oof"][idx, mi],
                                                n_boot=n_boot, seed=0, groups=corpora[idx])
            if DENSE in results:
                for name, r in results.items():
                    if name not in (DENSE, PRESET):
                        mvs[name] = {m: paired_comparison(results[DENSE]["oof"][idx, mi], r["oof"][idx, mi],
                                                          n_boot=n_boot, seed=0, groups=corpora[idx])
                                     for mi, m in enumerate(METRICS[:2])}
            for name, d in [(PRESET, mcmp)] + list(mvs.items()):  # point estimate: the macro difference
                for mi, m in enumerate(METRICS):
                    if m in d:
                        d[m]["diff"] = float(macro(results[name]["oof"][:, mi] - results[DENSE]["oof"][:, mi],
                                                   corpora, idx))
            out["macro"] = {"questions": int(idx.size), "rows": rows_macro, "preset_vs_dense": mcmp,
                            "vs_dense": mvs,
                            "note": "mean over corpora; intervals resample questions within each corpus"}
    return out


def markdown(tab: dict, results: dict) -> str:
    lines = []
    for view, t in tab.items():
        lines += ["", f"### {view}: {t['questions']} questions (out of fold)", "",
                  "| configuration | MRecall@5 | Precision@5 | MRecall@10 | Precision@10 |", "|---|---|---|---|---|"]
        for name, m in t["rows"].items():
            note = " *" if results[name]["note"] else ""
            lines.append(f"| {name}{note} | {m['mrecall@5']:.3f} | {m['precision@5']:.3f} | "
                         f"{m['mrecall@10']:.3f} | {m['precision@10']:.3f} |")
        cmp = t.get("preset_vs_dense") or {}
        if cmp:
            lines.append("")
            lines.append(f"preset - dense (paired bootstrap 95% CI{', stratified by corpus' if view == 'macro' else ''}):")
            for m, c in cmp.items():
                lines.append(f"- {m}: {c['diff']:+.3f} [{c['ci'][0]:+.3f}, {c['ci'][1]:+.3f}], p = {c['p_value']:.3f}, "
                             f"wins/losses/ties {c['wins']}/{c['losses']}/{c['ties']}")
        vs = t.get("vs_dense") or {}
        if vs:
            lines += ["", "other rows - dense (paired bootstrap 95% CI):"]
            for name, d in vs.items():
                lines.append(f"- {name}: " + "; ".join(
                    f"{m} {c['diff']:+.3f} [{c['ci'][0]:+.3f}, {c['ci'][1]:+.3f}]" for m, c in d.items()))
    notes = [f"* {name}: {r['note']}" for name, r in results.items() if r["note"]]
    if notes:
        lines += [""] + notes
    return "\n".join(lines)


# ------------------------------------------------------------------ timing

def timing_corpus(data_dir: Path, n_questions: int = 400, n_passages: int = 7000, seed: int = 0):
    """Questions and passages for timing, from development data (quality is not measured on it).

    Questions: procon's 50, then PERSPECTRUM train/dev claims (as questions, seeded
    sample) up to ``n_questions``. Passages: procon's 1,430 argument passages, then
    passages whose word lengths are drawn from procon's own passage lengths, each made
    of one PERSPECTRUM claim's perspective sentences (seeded order) and titled with one
    of them, round-robin over the claims, up to ``n_passages``.
    """
    import random

    from berds_core.datasets import load_debate_sites, load_perspectrum_bundle
    from berds_core.records import Passage

    rng = random.Random(seed)
    procon = load_debate_sites(data_dir / "debate-sites" / "procon.json")
    persp = load_perspectrum_bundle(data_dir / "perspectrum" / "perspectrum_with_answers_v1.0.train_dev.json")
    claims = list(persp.questions)
    rng.shuffle(claims)
    questions = list(procon.questions) + claims[:max(0, n_questions - len(procon.questions))]
    lengths = [len(p.text.split()) for p in procon.passages]
    text_of = {p.id: p.text for p in persp.passages}
    sentences = [[text_of[pid] for pid in persp.gold[q.id]] for q in claims]
    sentences = [s for s in sentences if s]
    passages = list(procon.passages)[:n_passages]
    i = 0
    seen = {p.text for p in passages}
    while len(passages) < n_passages:
        sents = list(sentences[i % len(sentences)])
        rng.shuffle(sents)
        target = rng.choice(lengths)
        words: list[str] = []
        for s in itertools.cycle(sents):
            words += s.split()
            if len(words) >= target:
                break
        text = " ".join(words[:target])
        if text not in seen:
            seen.add(text)
            passages.append(Passage(f"t{len(passages)}", sents[0], text))
        i += 1
    return questions[:n_questions], passages


def time_retrieve(data_dir: Path, n_questions: int, n_passages: int, repeat: int, progress: bool,
                  pipelines: list[str] = (), skip_preset: bool = False) -> dict:
    from berds_core.files.jsonio import write_jsonl

    questions, passages = timing_corpus(data_dir, n_questions, n_passages)
    words = [len(p.text.split()) for p in passages]
    work = Path(tempfile.mkdtemp(prefix="berds-timing-"))
    qf, cf = work / "questions.jsonl", work / "corpus.jsonl"
    write_jsonl(qf, [q.to_json() for q in questions])
    write_jsonl(cf, [p.to_json() for p in passages])
    variants = {"dense (plain)": ["--retriever", "dense"], "--preset diverse": ["--preset", "diverse"]}
    if skip_preset:
        del variants["--preset diverse"]
    variants.update({f"--pipeline '{spec}'": ["--pipeline", spec] for spec in pipelines})
    times: dict[str, dict[str, list]] = {v: {"cold": [], "warm": []} for v in variants}
    cpu: dict[str, dict[str, list]] = {v: {"cold": [], "warm": []} for v in variants}
    details = {}
    for rep in range(repeat):
        for name, extra in variants.items():
            cache = work / f"cache-{rep}-{len(details)}"
            details[f"{name} #{rep}"] = {}
            for phase in ("cold", "warm"):
                env = dict(os.environ, BERDS_CACHE=str(cache))
                cmd = [sys.executable, "-m", "berds_core", "retrieve", "--questions", str(qf), "--corpus", str(cf),
                       "--passage-words", "0", "--k", "10", "--out", str(work / "run.jsonl"), "--json", "--quiet",
                       *extra]
                r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
                t0 = time.perf_counter()
                res = subprocess.run(cmd, env=env, capture_output=True, text=True, cwd=str(ROOT))
                dt = time.perf_counter() - t0
                r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
                cpu[name][phase].append(r1.ru_utime + r1.ru_stime - r0.ru_utime - r0.ru_stime)
                if res.returncode != 0:
                    raise RuntimeError(f"{' '.join(cmd)} failed: {res.stderr.strip().splitlines()[-1:]}")
                times[name][phase].append(dt)
                details[f"{name} #{rep}"][phase] = {"seconds": round(dt, 2), "cpu_seconds": round(cpu[name][phase][-1], 2), **{
                    k: v for k, v in json.loads(res.stdout).items() if k in ("search_seconds", "build_seconds",
                                                                              "cache_hit", "retriever")}}
                if progress:
                    log(f"  timing {name} {phase} #{rep}: {dt:.1f}s wall, {cpu[name][phase][-1]:.1f}s CPU")
    med = {name: {ph: statistics.median(v) for ph, v in t.items()} for name, t in times.items()}
    med_cpu = {name: {ph: statistics.median(v) for ph, v in t.items()} for name, t in cpu.items()}
    return {"questions": len(questions), "passages": len(passages), "mean_words": float(np.mean(words)),
            "repeat": repeat, "median_seconds": med, "median_cpu_seconds": med_cpu, "all_seconds": times,
            "details": details,
            "cpu": os.cpu_count(), "load_average": os.getloadavg()}


def timing_markdown(t: dict) -> str:
    med = t["median_seconds"]
    base = med["dense (plain)"]
    lines = [f"### berds retrieve, {t['questions']} questions x {t['passages']} passages "
             f"(mean {t['mean_words']:.0f} words), median of {t['repeat']}", "",
             "| command | cold cache (s) | warm cache (s) | cold / dense cold | warm / dense warm | "
             "CPU s cold | CPU s warm |", "|---|---|---|---|---|---|---|"]
    for name, m in med.items():
        c = t["median_cpu_seconds"][name]
        lines.append(f"| {name} | {m['cold']:.1f} | {m['warm']:.1f} | {m['cold'] / base['cold']:.2f} | "
                     f"{m['warm'] / base['warm']:.2f} | {c['cold']:.1f} | {c['warm']:.1f} |")
    lines.append(f"\nwall seconds of the whole command (a fresh process: imports, model loading, encoding, search, "
                 f"writing the run); CPU s = user + system time of the process. Load average at the end: "
                 f"{', '.join(f'{x:.1f}' for x in t['load_average'])} on {t['cpu']} CPUs. "
                 f"Targets: preset cold < 120 s, warm < 20 s.")
    return "\n".join(lines)


# ------------------------------------------------------------------ main

def main(argv=None) -> int:
    global STANCE_DEPTH
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                 epilog="See the module docstring for the protocol.")
    ap.add_argument("--data", default=str(ROOT.parent / "shared" / "data"), help="the shared development data folder")
    ap.add_argument("--corpora", default="procon,perspectrum,demo")
    ap.add_argument("--folds", type=int, default=5)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--no-stance", action="store_true", help="skip the rows needing the trained stance model")
    ap.add_argument("--skip", default="", help="comma-separated words: rows whose name contains one are left out")
    ap.add_argument("--jobs", type=int, default=2, help="fold models trained at once (each a niced process), "
                    "when the stance cross-validation has not run yet")
    ap.add_argument("--stance-depth", type=int, default=20,
                    help="the stance model scores the union of the dense and BM25 top N (and the preset's "
                         "candidates grid is cut at N)")
    ap.add_argument("--stance-cv", default=str(ROOT / "bench" / "results" / "stance_cv"),
                    help="the stance model's cross-validation folder (scripts/train_stance.py --work): its folds "
                         "and fold models are used (run there first when missing)")
    ap.add_argument("--side-reader-cv", default=str(ROOT / "bench" / "results" / "side_reader_cv"),
                    help="the side reader's fold heads (scripts/train_side_reader.py --out-dir), for its rows")
    ap.add_argument("--sample", type=int, default=0,
                    help="evaluate at most N questions per corpus (seeded sample; 0 = all). Questions left out "
                         "are never scored; fold models may train on them")
    ap.add_argument("--timing", action="store_true", help="also time berds retrieve (preset vs dense, cold and warm)")
    ap.add_argument("--timing-only", action="store_true")
    ap.add_argument("--timing-questions", type=int, default=400)
    ap.add_argument("--timing-passages", type=int, default=7000)
    ap.add_argument("--repeat", type=int, default=3, help="timing repeats (median)")
    ap.add_argument("--timing-pipeline", action="append", default=[], metavar="SPEC",
                    help="also time berds retrieve --pipeline SPEC (repeatable), e.g. 'dense>>rvr(read=5,depth=10)'")
    ap.add_argument("--timing-no-preset", action="store_true", help="time plain dense and --timing-pipeline only")
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "diversity.json"))
    ap.add_argument("--encoding", choices=("auto", "fp32", "int8", "bf16"), default="auto",
                    help="precision of the encoders and the stance model in this run (auto: as the product picks, "
                         "fp32 unless $BERDS_ENCODING names a speed mode); bf16 and int8 are the opt-in CPU speed "
                         "modes (quality tables only; the timings run `berds retrieve` as it picks)")
    ap.add_argument("--quiet", action="store_true")
    args = ap.parse_args(argv)
    if args.encoding != "auto":
        os.environ["BERDS_ENCODING"] = args.encoding  # every encoder and the stance model of this process
    data = Path(args.data)
    if not data.exists():
        print(f"skip: {data} not found", file=sys.stderr)
        return 0
    progress = not args.quiet
    from berds_core.embeddings.models import resolve_encoding

    results: dict = {"k": K, "protocol": "question-grouped CV; every figure out of fold",
                     "encoding": resolve_encoding(None, "cpu")}
    if not args.timing_only:
        from berds_core.datasets.devsets import dev_bundles

        bundles, missing = dev_bundles(data, args.corpora.split(","))
        if missing:
            log(f"left out: {missing}")
        if not bundles:
            print("skip: no development corpus found", file=sys.stderr)
            return 0
        STANCE_DEPTH = args.stance_depth
        qcs = build_contexts(bundles, progress)
        if args.sample:
            import random

            keep = set()
            for name in bundles:
                ids = sorted(qc.question.id for qc in qcs if qc.corpus.name == name)
                keep |= set(random.Random(args.seed).sample(ids, min(args.sample, len(ids))))
            qcs = [qc for qc in qcs if qc.question.id in keep]
            results["sample"] = {"per_corpus": args.sample, "questions": len(qcs)}
        skip = [w for w in args.skip.split(",") if w]
        configs = [c for c in CONFIGS if not (c.needs_stance and args.no_stance)
                   and not any(w in c.name for w in skip)]
        for c in configs:
            if c.needs_stance and "candidates" in c.grid:
                c.grid["candidates"] = [n for n in c.grid["candidates"] if n <= STANCE_DEPTH] or [STANCE_DEPTH]
        if any(c.needs_stance for c in configs):
            rvr = any(c.name == RVR for c in configs)
            if rvr:
                prepare_side_hits(qcs, max([d for _, d, _ in RVR_BUDGETS] + [RVR_INDEX_DEPTH]))
            results["stance"] = stance_out_of_fold(qcs, data, Path(args.stance_cv), args.jobs, progress,
                                                   full=any(c.name == UNBOUNDED for c in configs), rvr=rvr,
                                                   shortlist=SHORTLIST_DEPTH if any(c.name == SHORTLIST
                                                                                    for c in configs) else 0)
            fold_of = json.loads((Path(args.stance_cv) / "folds.json").read_text())["fold"]
            scored = {f["fold"] for f in results["stance"]["folds"]}
            if len(qcs) != sum(fold_of[qc.question.id] in scored for qc in qcs):
                # fold models for some folds only (train_stance.py --folds): every row, stance or not, is
                # measured on the questions of those folds, so the rows stay comparable
                qcs = [qc for qc in qcs if fold_of[qc.question.id] in scored]
                results["stance"]["questions_scored"] = {"folds": sorted(scored), "questions": len(qcs)}
                log(f"stance fold models for folds {sorted(scored)} only: {len(qcs)} questions measured")
            results["folds"] = assign_folds(qcs, args.folds, args.seed, fold_of)
        else:
            results["folds"] = assign_folds(qcs, args.folds, args.seed)
        log(f"folds: {results['folds']}")
        prepare_sides(qcs)
        if any(c.name in (SIDE_READER, RVR_INDEX, SHORTLIST) for c in configs):
            if "stance" not in results:  # the fold heads were trained on folds.json's folds: the knobs use them too
                raise SystemExit("the side reader's rows need the stance folds: keep a stance row (e.g. the preset)")
            if not any(qc.side_hits for qc in qcs):
                prepare_side_hits(qcs, RVR_INDEX_DEPTH)
            results["side_reader"] = side_reader_out_of_fold(qcs, Path(args.side_reader_cv))
        results["side_accuracy"] = side_accuracy(qcs)
        res = evaluate(qcs, configs, results["folds"]["folds"], progress)
        tab = tables(qcs, res)
        results["tables"] = tab
        results["per_question"] = {"ids": [qc.question.id for qc in qcs], "corpus": [qc.corpus.name for qc in qcs],
                                   "metrics": list(METRICS), "rows": {n: r["oof"] for n, r in res.items()}}
        results["chosen"] = {name: {"per_fold": r["chosen_per_fold"], "on_all": r["chosen_on_all"],
                                    "settings": r["settings"]} for name, r in res.items()}
        print(markdown(tab, res))
        print("\n### side accuracy (candidates labelled with exactly one side; model out of fold)\n")
        print("| corpus | passages | questions | stance model | cosine-to-sides rule | side reader (stored vectors) |"
              "\n|---|---|---|---|---|---|")
        for name, s in results["side_accuracy"].items():
            model = f"{s['model']:.3f}" if s["model"] is not None and "stance" in results else "-"
            print(f"| {name} | {s['passages']} | {s['questions']} | {model} | {s['cosine_rule']:.3f} | "
                  f"{'-' if s.get('side_reader') is None else format(s['side_reader'], '.3f')} |")
        if RVR in res:
            results["rvr_diagnostics"] = rvr_diagnostics(qcs, res[RVR]["chosen_on_all"])
            print("\n### rvr with the setting chosen on all questions: what it does\n")
            print(", ".join(f"{k}: {v}" for k, v in results["rvr_diagnostics"].items()))
        print("\n### knobs chosen (per fold; and on all development questions = what ships)\n")
        for name, c in results["chosen"].items():
            if c["settings"] > 1:
                print(f"- {name}: on all {c['on_all']}; per fold {c['per_fold']}")
    if args.timing or args.timing_only:
        if not (data / "debate-sites" / "procon.json").exists():
            log("timing skipped: procon.json not found")
        else:
            results["timing"] = time_retrieve(data, args.timing_questions, args.timing_passages, args.repeat, progress,
                                              args.timing_pipeline, args.timing_no_preset)
            print()
            print(timing_markdown(results["timing"]))
    from berds_core.files.jsonio import atomic_write

    with atomic_write(args.out) as fh:
        json.dump(results, fh, indent=1, ensure_ascii=False, default=lambda o: o.tolist() if hasattr(o, "tolist") else str(o))
    log(f"JSON: {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
