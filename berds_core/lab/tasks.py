"""Task sets: which (passage, perspective) pairs annotators label, and who labels what.

- :func:`read_pairs_tsv` reads a human-pairs TSV (``question, id, document,
  perspective, label``; optional ``title``, ``side``, ``question_id``,
  ``subset``; CSV quoting with doubled quotes) with precise errors that never
  quote the file's contents.
- :func:`pairs_from_runs` turns run files into pairs (top-k passages x
  perspectives; the title kept apart from the text, the perspective's side
  from the run's stances).
- :func:`sample_pairs` picks ``n`` pairs: ``random``, ``stratified`` (equal share
  per subset / retriever, spare quota going to the larger strata; strata in random
  order within each block of the queue) or
  ``uncertain`` (judge probability closest to 0.5 first).
- :func:`assign_pairs` spreads pairs over annotators: a share ``overlap`` of
  them (``overlap=1``: every pair) to ``per_shared`` annotators each, plus any
  pairs named in ``shared`` (e.g. the judge-uncertain ones).
- :func:`build_task_set` samples, routes judge-uncertain pairs to a second
  annotator, mixes calibration pairs (pairs with a reference label) into every
  queue at random places, and saves the set; the set can also route pairs an
  annotator marks *unsure* to a second annotator as they are labelled (see
  :meth:`berds_core.lab.store.Store.label`).
- :func:`import_pairs_tsv` validates a whole TSV before it writes anything,
  then stores pairs, queue and labels in one transaction.
- :func:`demo_candidates` / :func:`build_demo_task_set`: a ready task set from
  the built-in demo bundle, its gold labels as reference labels.
"""
from __future__ import annotations

import csv
import io
from collections import defaultdict
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Sequence

import numpy as np

from ..errors import InputError
from ..files.jsonio import read_text
from ..datasets import load_demo
from ..eval.leaning import infer_sides
from ..files.csvio import explain
from ..judges.one_side import picked
from ..judges.verdicts import judge_groups, question_verdicts
from ..runs import judged_mask, judges_in, label_matrix, pair_band
from .controls import PREFIX as CONTROLS_PREFIX, RoundControls
from .exports import is_export_header, unneutralise
from .records import Pair
from .sample_weights import WEIGHTS_PREFIX

TSV_FIELDS = ("question", "id", "document", "perspective", "label")
OPTIONAL_FIELDS = ("title", "side", "question_id", "subset")
STRATEGIES = ("random", "stratified", "uncertain", "active")
LABELS_AS = ("annotator", "reference", "ignore")


def read_pairs_tsv(path, *, shown_as: str | None = None) -> list[tuple[int, Pair, int | None]]:
    """``[(line, Pair, label or None)]`` from a human-pairs TSV; ``id`` becomes the pair id.

    ``line`` is the physical line where the record starts (quoted fields may
    span lines). The ``label`` column is optional; empty cells mean unlabelled.
    ``shown_as`` names the file in errors (an upload's own name instead of its
    stored copy). Errors name the line and field, never the file's contents.
    """
    where = shown_as or path
    try:
        text = read_text(path)
    except InputError as e:
        raise InputError(where, e.line, e.field, e.message) from None
    source = shown_as or Path(path).name
    reader = csv.reader(io.StringIO(text, newline=""), delimiter="\t", quotechar='"', doublequote=True, strict=True)
    try:
        header = next(reader)
    except StopIteration:
        raise InputError(where, None, None, "file is empty") from None
    except csv.Error:
        raise InputError(where, 1, None, "malformed TSV header") from None

    exported = is_export_header(header)  # one of our label exports: its cells carry the formula guard
    header = [h.strip() for h in header]
    for need in ("question", "id", "document", "perspective"):
        if need not in header:
            raise InputError(where, 1, need, "missing column (a human-pairs TSV has the tab-separated columns "
                                             "question, id, document, perspective, label)")
    col = {name: header.index(name) for name in header}
    out, seen = [], {}
    start = reader.line_num + 1
    while True:
        try:
            row = next(reader)
        except StopIteration:
            break
        except csv.Error as e:
            raise InputError(where, start, None, explain(e, start, reader.line_num, "\t")) from None
        line, start = start, reader.line_num + 1
        if not row or all(not c.strip() for c in row):
            continue
        if len(row) != len(header):
            raise InputError(where, line, None, f"expected {len(header)} tab-separated fields, got {len(row)}")
        if exported:
            row = [unneutralise(c) for c in row]
        rec = {name: row[i] for name, i in col.items()}
        for name in ("question", "id", "document", "perspective"):
            if not rec[name].strip():
                raise InputError(where, line, name, "must not be empty")
        pid = rec["id"].strip()
        if pid in seen:
            raise InputError(where, line, "id", f"duplicate id (first on line {seen[pid]})")
        seen[pid] = line
        label = None
        raw = rec.get("label", "").strip()
        if raw:
            if raw not in ("0", "1"):
                raise InputError(where, line, "label", "expected 0, 1 or an empty cell")
            label = int(raw)
        opt = {name: (rec.get(name, "").strip() or None) for name in OPTIONAL_FIELDS}
        out.append((line, Pair(pair_id=pid, question=rec["question"], document=rec["document"],
                               perspective=rec["perspective"], question_id=opt["question_id"], subset=opt["subset"],
                               source=source, title=rec.get("title") if "title" in rec else None,
                               side=opt["side"]), label))
    if not out:
        raise InputError(where, None, None, "no pairs in file")
    return out


def _side(entry: dict, j: int) -> str | None:
    """The side of perspective ``j``: the run's stance, else the offline rule for two perspectives."""
    stances = entry.get("stances")
    if stances and j < len(stances):
        return str(stances[j]).lower() if stances[j] else "other"
    if len(entry["perspectives"]) == 2:
        sides = infer_sides(entry["question"], entry["perspectives"], None)
        if sides is not None:
            return "support" if j == sides.support else "oppose"
    return None


def pairs_from_runs(runs: Sequence[tuple[str, list[dict]]], k: int | None = None) -> tuple[list[Pair], dict[str, dict[str, int]]]:
    """Pairs from run entries: each of the top-``k`` passages x each perspective.

    ``runs`` is ``[(run_name, entries)]``. The retriever of a pair is the
    entry's ``retriever`` field, else the run name. Returns the pairs and the
    judge labels already stored in the runs (``{judge: {pair_id: 0/1}}``),
    read through :func:`berds_core.runs.label_matrix`.
    """
    pairs, stored = [], defaultdict(dict)
    for run_name, entries in runs:
        for e in entries:
            ctxs = e["ctxs"][:k] if k else e["ctxs"]
            mats = {name: (label_matrix(e, judge=name), judged_mask(e, name)) for name in judges_in(e)}
            sides = [_side(e, j) for j in range(len(e["perspectives"]))]
            for i, c in enumerate(ctxs):
                for j, persp in enumerate(e["perspectives"]):
                    pid = f"{run_name}:{e['id']}:{c['id']}:{j}"
                    pairs.append(Pair(pair_id=pid, question=e["question"], document=c["text"], perspective=persp,
                                      question_id=str(e["id"]), passage_id=str(c["id"]), perspective_index=j,
                                      subset=e.get("subset"), retriever=e.get("retriever") or run_name,
                                      source=run_name, title=c.get("title"), side=sides[j]))
                    for name, (mat, judged) in mats.items():
                        if judged[i]:  # passages the judge labelled (either run layout)
                            stored[name][pid] = int(bool(mat[i, j]))
    return pairs, dict(stored)


def judge_probabilities(pairs: Sequence[Pair], judge, context: Sequence[Pair] = (), picks: dict | None = None,
                        unsure: set | None = None) -> dict[str, tuple[float, int]]:
    """``{pair_id: (prob, label)}`` from a judge (or its bound ``predict``) over ``(passage, perspective)``.

    The passage is what that judge reads (:meth:`Pair.judge_text`): the same text as when it judges a run, and
    a judge (a :class:`~berds_core.judges.Judge`) decides as it decides a run line
    (:func:`berds_core.judges.verdicts.question_verdicts`: a passage off its question's topic supports nothing;
    of two opposite perspectives a passage supports at most one), so a pair's verdict equals the run's. The
    question's perspectives come from ``pairs`` and ``context`` (other pairs of the same questions, e.g. the
    store's): a member of a group of opposite perspectives is decided with its partner, labelled or not.
    ``picks`` (a dict, filled): per pair, whether its own probability decides it (not a group's less probable
    member: :func:`berds_core.judges.one_side.picked`), what a lab's refit reads (:mod:`.judge_fit`);
    ``unsure`` (a set, filled): the pairs whose probability lies inside the judge's unsure band (a group
    member's: the group band), what the ``active`` strategy puts first.
    """
    predict = judge.predict if hasattr(judge, "predict") else judge
    owner = judge if hasattr(judge, "predict") else getattr(judge, "__self__", None)
    if not hasattr(owner, "decide"):  # a bare scorer: each pair alone
        probs, labels = predict([(p.judge_text(owner), p.perspective) for p in pairs])
        if picks is not None:
            picks.update({p.pair_id: True for p in pairs})
        band = getattr(owner, "band", None)
        if unsure is not None and band is not None:
            unsure.update(p.pair_id for p, pr in zip(pairs, probs) if band[0] <= pr < band[1])
        return {p.pair_id: (float(pr), int(bool(lb))) for p, pr, lb in zip(pairs, probs, labels)}
    grouped = getattr(owner, "group_band", None) is not None
    persp: dict[str, dict[str, int]] = defaultdict(dict)  # question -> perspective -> its index (file order)
    for p in sorted([*pairs, *(c for c in context if grouped)],
                    key=lambda p: (p.perspective_index is None, p.perspective_index or 0)):
        persp[p.question_key].setdefault(p.perspective, len(persp[p.question_key]))
    by_q: dict[str, list[Pair]] = defaultdict(list)
    for p in pairs:
        by_q[p.question_key].append(p)
    grids = []
    for q, ps in by_q.items():
        docs = list(dict.fromkeys(p.judge_text(owner) for p in ps))
        names = list(persp[q]) if grouped else list(dict.fromkeys(p.perspective for p in ps))
        grids.append((q, ps[0].question, docs, names))
    flat = [(d, s) for _, _, docs, names in grids for d in docs for s in names]
    probs, labels = predict(flat)
    out, i = {}, 0
    for q, text, docs, names in grids:
        n, m = len(docs), len(names)
        groups = judge_groups(owner, names, text) if grouped else []
        P, L = question_verdicts(owner, text, docs, names, np.asarray(probs[i:i + n * m], float).reshape(n, m),
                                 np.asarray(labels[i:i + n * m], bool).reshape(n, m), groups)
        own = picked(P, groups)
        pb = pair_band(getattr(owner, "band", None), getattr(owner, "group_band", None), groups, P.shape)
        lo, hi = (None, None) if pb is None else (np.broadcast_to(pb[0], P.shape), np.broadcast_to(pb[1], P.shape))
        i += n * m
        for p in by_q[q]:
            a, b = docs.index(p.judge_text(owner)), names.index(p.perspective)
            out[p.pair_id] = (float(P[a, b]), int(bool(L[a, b])))
            if picks is not None:
                picks[p.pair_id] = bool(own[a, b])
            if unsure is not None and lo is not None and lo[a, b] <= P[a, b] < hi[a, b]:
                unsure.add(p.pair_id)
    return out


def sample_pairs(pairs: Sequence[Pair], n: int, strategy: str = "random", *, by: str = "subset",
                 probs: dict[str, float] | None = None, seed: int = 0, unsure: set[str] | None = None,
                 weights: dict | None = None) -> list[Pair]:
    """Pick ``min(n, len(pairs))`` pairs, in queue order.

    - ``random``: a uniform sample without replacement, in random order.
    - ``stratified``: strata by ``by`` (``subset`` or ``retriever``; missing ->
      ``"(none)"``); each stratum gets an equal share of ``n`` (capped at its
      size, the rest redistributed); the queue takes one pair of each stratum per block, the strata in
      random order within each block (balanced as it goes, with no cycle for a gold check to break).
    - ``uncertain``: ascending ``|p - 0.5|`` of the judge probability ``probs``
      (ties in random order), so the judge's hardest pairs come first.
    - ``active``: half of ``n`` from the pairs the judge is unsure of (``unsure``: inside its band), half at
      random from the others, interleaved (an unsure pair, then another), so the first labels teach the judge
      where it is unsure while the round's estimate stays unbiased: ``weights`` (a dict, filled) gets each
      pair's inverse inclusion probability (stratum size / sample size, scaled to mean 1), which the fit and
      its agreement figures read (:mod:`berds_core.lab.judge_fit`).
    """
    if strategy not in STRATEGIES:
        raise ValueError(f"unknown strategy {strategy!r} (choose from {', '.join(STRATEGIES)})")
    if n < 1:
        raise ValueError("n must be at least 1")
    rng = np.random.default_rng(seed)
    order = rng.permutation(len(pairs))
    shuffled = [pairs[i] for i in order]
    n = min(n, len(pairs))
    if strategy == "random":
        return shuffled[:n]
    if strategy == "active":
        if unsure is None:
            raise ValueError("the active strategy needs the judge's unsure pairs (a judge with an unsure band)")
        U = [p for p in shuffled if p.pair_id in unsure]
        R = [p for p in shuffled if p.pair_id not in unsure]
        nr = min(len(R), n - min(len(U), n // 2))
        nu = min(len(U), n - nr)
        out = [x for pair in zip(U[:nu], R[:nr]) for x in pair]
        out += U[min(nu, nr):nu] + R[min(nu, nr):nr]
        if weights is not None:
            w = {p.pair_id: len(U) / nu for p in U[:nu]} | {p.pair_id: len(R) / nr for p in R[:nr]}
            mean = sum(w.values()) / len(w)
            weights.update({k: v / mean for k, v in w.items()})
        return out
    if strategy == "uncertain":
        if probs is None:
            raise ValueError("the uncertain strategy needs judge probabilities")
        missing = [p.pair_id for p in shuffled if p.pair_id not in probs]
        if missing:
            raise ValueError(f"no judge probability for pair {missing[0]!r}")
        # stable sort of the shuffled list -> random tie-breaking
        return sorted(shuffled, key=lambda p: abs(probs[p.pair_id] - 0.5))[:n]
    if by not in ("subset", "retriever"):
        raise ValueError("stratify by 'subset' or 'retriever'")
    strata: dict[str, list[Pair]] = defaultdict(list)
    for p in shuffled:
        strata[getattr(p, by) or "(none)"].append(p)
    names = sorted(strata)
    quota = dict.fromkeys(names, 0)
    left = n
    open_ = [s for s in names]
    while left > 0 and open_:  # equal shares, capped at the stratum size, spare quota redistributed
        share = max(left // len(open_), 1)
        for s in list(open_):
            take = min(share, len(strata[s]) - quota[s], left)
            quota[s] += take
            left -= take
            if quota[s] >= len(strata[s]):
                open_.remove(s)
            if left == 0:
                break
    picked = {s: strata[s][:quota[s]] for s in names}
    out = []
    for i in range(max(quota.values(), default=0)):  # block i: the i-th pair of each stratum, in random order
        block = [picked[s][i] for s in names if i < len(picked[s])]
        out += [block[j] for j in rng.permutation(len(block))]
    return out


def assign_pairs(pair_ids: Sequence[str], annotators: Sequence[str], overlap: float = 0.0, *,
                 per_shared: int = 2, seed: int = 0, shared: Sequence[str] = ()) -> dict[str, list[str]]:
    """Spread pairs over annotators; ``{annotator: [pair_id, ...]}`` in the given pair order.

    ``round(overlap * len(pair_ids))`` pairs (chosen at random; all of them
    when ``overlap`` is 1) go to ``per_shared`` different annotators each, and
    so do the pairs listed in ``shared``; the others to one. Every pair goes
    to the annotators with the fewest assignments so far (ties by rotation),
    so loads differ by at most one pair per kind.
    """
    annotators = [a.strip() for a in annotators if a and a.strip()]
    if not annotators:
        raise ValueError("at least one annotator is needed")
    if len(set(annotators)) != len(annotators):
        raise ValueError("annotator names must be distinct")
    if not 0.0 <= overlap <= 1.0:
        raise ValueError("overlap must be between 0 and 1")
    if (overlap > 0 or shared) and len(annotators) < 2:
        raise ValueError("overlap needs at least two annotators")
    per_shared = min(max(per_shared, 2), len(annotators))
    n_shared = int(round(overlap * len(pair_ids)))
    rng = np.random.default_rng(seed)
    chosen = set(rng.choice(len(pair_ids), size=n_shared, replace=False).tolist()) if n_shared else set()
    also = {str(p) for p in shared}
    load = dict.fromkeys(annotators, 0)
    out = {a: [] for a in annotators}
    turn = 0
    for i, pid in enumerate(pair_ids):
        want = per_shared if (i in chosen or str(pid) in also) else 1
        ranked = sorted(range(len(annotators)), key=lambda j: (load[annotators[j]], (j - turn) % len(annotators)))
        for j in ranked[:want]:
            out[annotators[j]].append(str(pid))
            load[annotators[j]] += 1
        turn += 1
    return out


def mix_calibration(plan: dict[str, list[str]], calibration: Sequence[str], *, seed: int = 0) -> dict[str, list[str]]:
    """Insert every calibration pair into every annotator's queue at random places (seeded).

    A calibration pair already in a queue stays where it is (no duplicates).
    """
    rng = np.random.default_rng(seed + 7919)
    out = {}
    for a, queue in plan.items():
        q = list(queue)
        for pid in calibration:
            if pid not in q:
                q.insert(int(rng.integers(0, len(q) + 1)), pid)
        out[a] = q
    return out


def import_pairs_tsv(store, path, annotator: str | None = None, task_set: str | None = None, *,
                     labels_as: str | None = None, shown_as: str | None = None) -> dict:
    """Add a human-pairs TSV to ``store``, all or nothing.

    The whole file is read and checked (and every id already in the store
    must mean the same pair) before anything is written; then pairs, queue
    and labels go in one transaction. ``labels_as`` says what the file's
    labels are: ``annotator`` (``annotator``'s own labels; the default when an
    annotator is given), ``reference`` (labels known in advance, e.g. the
    paper's, used for calibration) or ``ignore``. A file with labels and no
    choice is refused. With ``annotator``, the pairs are queued for them.
    """
    where = shown_as or path
    rows = read_pairs_tsv(path, shown_as=shown_as)
    annotator = (annotator or "").strip() or None
    labels = {p.pair_id: lab for _, p, lab in rows if lab is not None}
    if labels_as is None:
        if labels and annotator is None:
            raise InputError(where, None, "label", "the file carries labels: say whether they are reference labels "
                                                   "(gold) or an annotator's (or ignore them)")
        labels_as = "annotator" if annotator else "ignore"
    if labels_as not in LABELS_AS:
        raise InputError(where, None, "label", f"labels are one of {', '.join(LABELS_AS)}")
    if labels_as == "annotator" and labels and annotator is None:
        raise InputError(where, None, "label", "name the annotator whose labels these are")
    for line, pair, _ in rows:
        if store.has_pair(pair.pair_id):
            old = store.pair(pair.pair_id)
            for field in ("question", "document", "perspective"):
                if getattr(old, field) != getattr(pair, field):
                    raise InputError(where, line, field, "this pair id is already in the database with a different "
                                                         f"{field}")
    name = task_set or Path(shown_as or path).stem
    stored = 0
    with store.batch():
        added = store.add_pairs([p for _, p, _ in rows])
        if annotator:
            store.tasks.create(name, {annotator: [p.pair_id for _, p, _ in rows]},
                               source=str(shown_as or path), strategy="import")
        if labels and labels_as == "annotator":
            stored = store.import_labels(annotator, labels, source=str(shown_as or path))
        elif labels and labels_as == "reference":
            stored = store.set_reference_labels(labels, source=str(shown_as or path))
    return {"db": str(store.path), "pairs": len(rows), "new_pairs": added, "labels": stored,
            "labels_in_file": len(labels), "labels_as": labels_as if labels else None,
            "task_set": name if annotator else None}


@dataclass(frozen=True)
class TaskSetSpec:
    """What a task set is to be: its name and source, how many pairs are drawn and how, who labels them.

    ``strategy`` / ``by`` / ``seed``: :func:`sample_pairs`; ``overlap`` / ``per_shared``: :func:`assign_pairs`;
    ``route_uncertain``, ``route_unsure``, ``calibration``: see :func:`build_task_set`; ``params``: more
    settings recorded with the task set (e.g. the run depth ``k``); ``controls``: the round's quality
    controls (gold checks, their floor, qualification; :class:`~berds_core.lab.controls.RoundControls`);
    ``check_pool``: how many candidates with a reference label to set aside as gold checks (None: as many
    as the round needs, when ``controls`` asks for checks or a qualification).
    """

    name: str
    source: str
    n: int
    strategy: str
    annotators: tuple[str, ...]
    overlap: float = 0.0
    per_shared: int = 2
    by: str = "subset"
    seed: int = 0
    route_uncertain: float | None = None
    route_unsure: bool = False
    calibration: int = 0
    params: dict = field(default_factory=dict)
    controls: RoundControls | None = None
    check_pool: int | None = None


def build_task_set(store, candidates: Sequence[Pair], spec: TaskSetSpec, *, judge=None,
                   stored_preds: dict | None = None, reference: dict[str, int] | None = None) -> dict:
    """Sample ``spec.n`` of ``candidates``, assign them (with overlap and routing) and save the task set.

    ``judge`` (an object with ``name`` and ``predict``) scores the candidates
    first; it is required by ``uncertain`` and by ``route_uncertain``. Its
    answers and any ``stored_preds`` (``{judge: {pair_id: 0/1}}`` from the run
    files) are stored for the sampled pairs.

    - ``route_uncertain=b``: sampled pairs with ``|p - 0.5| <= b`` go to
      ``per_shared`` annotators (a second opinion where the judge is unsure).
    - ``route_unsure``: a pair an annotator marks unsure goes to one more
      annotator of the set when it is labelled.
    - ``calibration=c``: ``c`` pairs with a reference label (``reference``,
      ``{pair_id: 0/1}``, for candidates; or the store's reference labels) are
      put into every annotator's queue at random places, unmarked.
    All writes are one transaction.
    """
    n, strategy, annotators, overlap, per_shared = spec.n, spec.strategy, spec.annotators, spec.overlap, spec.per_shared
    by, seed, name, source, params = spec.by, spec.seed, spec.name, spec.source, spec.params
    route_uncertain, route_unsure, calibration = spec.route_uncertain, spec.route_unsure, spec.calibration
    if route_uncertain is not None and judge is None:
        raise ValueError("routing judge-uncertain pairs needs a judge")
    if calibration < 0:
        raise ValueError("calibration must be 0 or more")
    preds = probs = None
    unsure: set[str] = set()
    weights: dict[str, float] = {}
    if strategy == "active" and judge is None:
        raise ValueError("the active strategy needs a judge (its unsure band)")
    if judge is not None:
        preds = judge_probabilities(candidates, judge, unsure=unsure)
        probs = {pid: pr for pid, (pr, _) in preds.items()}
    picked = sample_pairs(candidates, n, strategy, by=by, probs=probs, seed=seed, unsure=unsure, weights=weights)
    if probs is not None:
        picked = [replace(p, judge_prob=probs[p.pair_id]) for p in picked]
    routed = [p.pair_id for p in picked if route_uncertain is not None and abs(probs[p.pair_id] - 0.5) <= route_uncertain]
    if routed and len([a for a in annotators if a.strip()]) < 2:
        raise ValueError("routing judge-uncertain pairs needs at least two annotators")
    plan = assign_pairs([p.pair_id for p in picked], annotators, overlap, per_shared=per_shared, seed=seed,
                        shared=routed)
    ref = dict(reference or {})
    calib_pairs: list[Pair] = []
    if calibration:
        picked_ids = {p.pair_id for p in picked}
        by_id = {p.pair_id: p for p in candidates}
        known = store.reference_labels()
        pool = [by_id[pid] for pid in ref if pid in by_id and pid not in picked_ids]
        pool += [p for p in store.pairs(sorted(set(known) - picked_ids - {q.pair_id for q in pool}))]
        if len(pool) < calibration:
            raise ValueError(f"only {len(pool)} pairs with a reference label are available for calibration")
        rng = np.random.default_rng(seed + 104729)
        calib_pairs = [pool[i] for i in sorted(rng.choice(len(pool), size=calibration, replace=False).tolist())]
        plan = mix_calibration(plan, [p.pair_id for p in calib_pairs], seed=seed)
    ids = {p.pair_id for p in picked}
    answers, by_text = candidate_answers(store, candidates, ref) if _wants_pool(spec) else ({}, set())
    pool_pairs, warnings = _check_pool(candidates, answers, ids | {p.pair_id for p in calib_pairs}, plan, spec, picked)
    ref.update({p.pair_id: answers[p.pair_id] for p in pool_pairs if p.pair_id in by_text})  # under its own id
    if probs is not None:
        pool_pairs = [replace(p, judge_prob=probs[p.pair_id]) if p.pair_id in probs else p for p in pool_pairs]
    q = spec.controls.qualification_n if spec.controls is not None else 0
    if q:
        known = ({p.pair_id for p in pool_pairs} | set(store.reference_labels()) | set(store.gold())) - ids
        if q > len(known):
            raise ValueError(f"the qualification asks for {q} pairs with a known answer; only {len(known)} are "
                             "outside the round's tasks")
        chance = spec.controls.chance_pass
        if chance > 0.05:
            warnings.append(f"a qualification of {q} pairs at {spec.controls.qualification_pass:.0%} is passed by "
                            f"{chance:.0%} of annotators who guess every answer; more pairs (or a higher pass mark) "
                            "make guessing pass less often")
    with store.batch():
        store.add_pairs(picked + calib_pairs + pool_pairs)
        new_ref = {pid: lab for pid, lab in ref.items() if pid in ids | {p.pair_id for p in calib_pairs + pool_pairs}}
        if new_ref:
            store.set_reference_labels(new_ref, source=source)
        # the judge's answers on every pair an annotator may be shown, gold checks' pool included: revealing
        # the judge after deciding reads the same for a check as for a task pair
        shown = ids | {p.pair_id for p in calib_pairs + pool_pairs}
        if preds is not None:
            store.set_judge_preds(judge.name, {pid: preds[pid] for pid in shown if pid in preds})
        for jname, lab in (stored_preds or {}).items():
            store.set_judge_preds(jname, {pid: (None, v) for pid, v in lab.items() if pid in shown})
        store.tasks.create(name, plan, source=source, strategy=strategy,
                           params={"n": n, "by": by, "overlap": overlap, "per_shared": per_shared, "seed": seed,
                                   "judge": getattr(judge, "name", None), "route_uncertain": route_uncertain,
                                   "route_unsure": bool(route_unsure), "route_max": per_shared,
                                   "calibration": calibration, **(params or {})},
                           calibration=[p.pair_id for p in calib_pairs])
        if spec.controls is not None:
            store.settings.set(CONTROLS_PREFIX + name, spec.controls.to_json(), by="build_task_set")
        if weights:  # the active strategy: each pair's inverse inclusion probability (the fit's weights)
            store.settings.set(WEIGHTS_PREFIX + name, {k: round(v, 9) for k, v in weights.items()},
                               by="build_task_set")
        if pool_pairs:
            store.checks.add_to_pool(name, [p.pair_id for p in pool_pairs], "build")
    shared = sum(1 for pid in ids if sum(pid in v for v in plan.values()) > 1)
    out = {"db": str(store.path), "task_set": name, "pairs": len(picked), "candidates": len(candidates),
           "shared": shared, "routed_uncertain": len(routed), "calibration": len(calib_pairs),
           "assignments": {a: len(v) for a, v in plan.items()}, "judge": getattr(judge, "name", None)}
    if spec.controls is not None:
        out.update({"controls": spec.controls.to_json(), "check_pool": len(pool_pairs), "warnings": warnings})
    if strategy == "active":
        out["active"] = {"unsure_candidates": len(unsure), "unsure_picked": sum(p.pair_id in unsure for p in picked),
                         "weights": "recorded (the fit and its agreement figures read them)"}
    return out



def _wants_pool(spec: TaskSetSpec) -> bool:
    c = spec.controls
    return c is not None and (c.checks_on or c.qualification_n > 0)


def _text_key(p) -> tuple[str, str, str]:
    return tuple(" ".join(str(x or "").split()) for x in (p.question, p.document, p.perspective))


def candidate_answers(store, candidates: Sequence[Pair], reference: dict[str, int]) -> tuple[dict[str, int], set[str]]:
    """``({pair_id: 0/1}, ids known by text)`` of the candidates whose answer is known: given with the build
    (``reference``), else in the store (an adjudication over a reference label) under the same pair id, else in
    the store for a pair with the same question, passage and perspective (an imported labelled set whose ids
    differ from a run's; texts with two different answers are left out): those are the second element."""
    out = {pid: int(v) for pid, v in reference.items()}
    stored = store.reference_labels()
    stored.update(store.gold())
    left = [p for p in candidates if p.pair_id not in out]
    for p in left:
        if p.pair_id in stored:
            out[p.pair_id] = int(stored[p.pair_id])
    left, texts = [p for p in left if p.pair_id not in out], set()
    if left:
        by_text: dict[tuple, int | None] = {}
        for r in store.checks.known_answer_texts():
            key = _text_key(Pair(pair_id="", question=r["question"], document=r["document"],
                                 perspective=r["perspective"]))
            by_text[key] = int(r["answer"]) if by_text.get(key, int(r["answer"])) == int(r["answer"]) else None
        for p in left:
            got = by_text.get(_text_key(p))
            if got is not None:
                out[p.pair_id] = got
                texts.add(p.pair_id)
    return out, texts


def _check_pool(candidates: Sequence[Pair], known: dict[str, int], taken: set[str], plan: dict[str, list[str]],
                spec: TaskSetSpec, picked: Sequence[Pair]) -> tuple[list[Pair], list[str]]:
    """Candidates with a known answer, not in the round, set aside as gold checks and qualification pairs.

    The pool comes from the set's own candidates (the distribution its task pairs come from), stratified like
    the task pairs (strata by ``spec.by``, each in proportion to its share of the task pairs, at least two) and
    half of each class within a stratum where the candidates allow: a check takes the place of a task of its
    stratum (:func:`berds_core.lab.checks.pick_check`), with classes balanced. Its size: for the annotator with
    the longest queue, their expected checks (``L·r/(1 − r)``) and two qualification attempts, about ``1.5 x``
    in all and per stratum its share ``λ`` plus ``3√λ + 2`` (where the slots land varies); every annotator
    draws from the same pool (never twice the same pair). Fewer available: all of them, and a warning. Checks asked for and no candidate with a known answer: refused
    (checks from other pairs would stand out: another length, no judge answer)."""
    c = spec.controls
    if not _wants_pool(spec):
        return [], []
    longest = max((len(v) for v in plan.values()), default=0)
    expected = int(np.ceil(longest * c.check_rate / (1 - c.check_rate))) if c.checks_on else 0
    need = spec.check_pool if spec.check_pool is not None else int(np.ceil(1.5 * expected)) + 2 * c.qualification_n + 5
    by_id: dict[str, Pair] = {}
    for p in candidates:
        if p.pair_id in known and p.pair_id not in taken:
            by_id.setdefault(p.pair_id, p)
    if c.checks_on and not by_id:
        raise ValueError(f"no gold checks can be drawn: none of the {len(candidates)} candidate pairs outside the "
                         "round's tasks has a known answer (import reference labels for these pairs, or pairs with "
                         "the same question, passage and perspective, with --labels-are reference; or set no "
                         "--check-rate)")

    def stratum(p):
        return getattr(p, spec.by, None) or "(none)"

    groups: dict[tuple[str, int], list[str]] = defaultdict(list)
    for pid in sorted(by_id):
        groups[(stratum(by_id[pid]), int(known[pid]))].append(pid)
    rng = np.random.default_rng(spec.seed + 15485863)
    for key in sorted(groups):
        groups[key] = [groups[key][i] for i in rng.permutation(len(groups[key]))]
    shares = defaultdict(int)
    for p in picked:
        shares[stratum(p)] += 1
    strata = sorted(set(shares) | {s for s, _ in groups})
    total = max(1, len(picked))
    # a stratum's checks in the longest queue: about lam = expected x its share, more by chance (the slots land
    # where they land): lam + 3 sqrt(lam) + 2, or its share of an explicit --check-pool
    spread = (lambda lam: int(np.ceil(lam + 3 * np.sqrt(lam))) + 2) if spec.check_pool is None else \
        (lambda lam: int(np.ceil(lam)))
    target = {s: (max(2, spread(need * shares[s] / total if spec.check_pool is not None else
                                (expected + 2 * c.qualification_n) * shares[s] / total)) if shares[s] else 0)
              for s in strata}
    need = max(need, sum(target.values()))
    chosen: list[str] = []
    for s in strata:  # half of each class in the stratum, the other class making up a shortfall
        pos, neg = groups.get((s, 1), []), groups.get((s, 0), [])
        want_pos = min(len(pos), (target[s] + 1) // 2)
        want_neg = min(len(neg), target[s] - want_pos)
        want_pos = min(len(pos), target[s] - want_neg)
        chosen += pos[:want_pos] + neg[:want_neg]
        groups[(s, 1)], groups[(s, 0)] = pos[want_pos:], neg[want_neg:]
    spare = [pid for key in sorted(groups) for pid in groups[key]]
    if len(chosen) < need and spare:  # a stratum short of pairs: others make up the count
        extra = need - len(chosen)
        chosen += [spare[i] for i in sorted(rng.choice(len(spare), size=min(extra, len(spare)), replace=False))]
    warnings = []
    if len(chosen) < need:
        warnings.append(f"only {len(chosen)} candidate pairs with a known answer are left for gold checks and "
                        f"qualification (about {need} wanted); adjudicated and typed answers join the pool as the "
                        "round runs")
    have = {stratum(by_id[pid]) for pid in chosen}
    short = sorted(s for s in shares if s not in have)
    if c.checks_on and short and spec.strategy == "stratified":
        warnings.append(f"no gold check for the stratum {', '.join(short[:5])}{' ...' if len(short) > 5 else ''}: "
                        "a check takes the place of a task of its own stratum, so slots before those tasks run dry")
    return [by_id[pid] for pid in sorted(chosen)], warnings


# --------------------------------------------------------------------------- the demo task set


def demo_candidates() -> tuple[list[Pair], dict[str, int]]:
    """Every (passage, perspective) pair of the built-in demo bundle, and its gold labels as 0/1.

    A demo passage belongs to its question's pool (``Bundle.pools``); the pair id is
    ``demo:<passage>:<perspective index>``.
    """
    bundle = load_demo()
    by_id = {p.id: p for p in bundle.passages}
    by_q = {qid: [by_id[i] for i in ids] for qid, ids in bundle.pools.items()}
    pairs, labels = [], {}
    for q in bundle.questions:
        entry = {"question": q.question, "perspectives": q.perspectives, "stances": q.stances}
        gold = bundle.gold.get(q.id, {})
        for psg in by_q.get(q.id, []):
            for j, persp in enumerate(q.perspectives):
                pid = f"demo:{psg.id}:{j}"
                pairs.append(Pair(pair_id=pid, question=q.question, document=psg.text, perspective=persp,
                                  question_id=q.id, passage_id=psg.id, perspective_index=j, subset=q.subset,
                                  retriever="demo", source="demo", title=psg.title or None, side=_side(entry, j)))
                labels[pid] = int(j in gold.get(psg.id, ()))
    return pairs, labels


def demo_task_set(annotators: Sequence[str], *, name: str = "demo", n: int = 40, seed: int = 0,
                  **rounds) -> tuple[list[Pair], TaskSetSpec, dict[str, int]]:
    """The built-in demo's round: its candidate pairs, the spec (``n`` pairs stratified by subset; ``rounds``:
    ``overlap``, ``per_shared``, ``calibration``, ``route_unsure``, ``controls``) and its gold labels as reference
    labels (with ``controls`` asking for checks or a qualification, also the pool of gold checks).
    What ``berds annotations demo`` and the Annotate page's one click both build."""
    pairs, labels = demo_candidates()
    spec = TaskSetSpec(name=name, source="built-in demo", n=n, strategy="stratified", annotators=tuple(annotators),
                       by="subset", seed=seed, params={"demo": True}, **rounds)
    return pairs, spec, labels


def build_demo_task_set(store, annotators: Sequence[str], **options) -> dict:
    """The demo round of :func:`demo_task_set` (``options``: its keywords), saved in ``store``."""
    pairs, spec, labels = demo_task_set(annotators, **options)
    return build_task_set(store, pairs, spec, reference=labels)
