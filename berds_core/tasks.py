"""Task sets: which (passage, perspective) pairs annotators label, and who labels what.

- :func:`read_pairs_tsv` reads a human-pairs TSV (``question, id, document,
  perspective, label``; CSV quoting with doubled quotes) with precise errors.
- :func:`pairs_from_runs` turns run files into pairs (top-k passages x perspectives).
- :func:`sample_pairs` picks ``n`` pairs: ``random``, ``stratified`` (equal share
  per subset / retriever, spare quota going to the larger strata) or
  ``uncertain`` (judge probability closest to 0.5 first).
- :func:`assign_pairs` spreads pairs over annotators, a share ``overlap`` of them
  to ``per_shared`` annotators each (for inter-annotator agreement).
"""
from __future__ import annotations

import csv
import io
from collections import defaultdict
from pathlib import Path
from typing import Callable, Sequence

import numpy as np

from .errors import InputError
from .jsonio import read_text
from .runs import judged_mask, judges_in, label_matrix
from .store import Pair

TSV_FIELDS = ("question", "id", "document", "perspective", "label")
STRATEGIES = ("random", "stratified", "uncertain")


def read_pairs_tsv(path) -> list[tuple[int, Pair, int | None]]:
    """``[(line, Pair, label or None)]`` from a human-pairs TSV; ``id`` becomes the pair id.

    ``line`` is the physical line where the record starts (quoted fields may
    span lines). The ``label`` column is optional; empty cells mean unlabelled.
    """
    text = read_text(path)
    source = Path(path).name
    reader = csv.reader(io.StringIO(text, newline=""), delimiter="\t", quotechar='"', doublequote=True, strict=True)
    try:
        header = next(reader)
    except StopIteration:
        raise InputError(path, None, None, "file is empty") from None
    except csv.Error as e:
        raise InputError(path, 1, None, f"malformed TSV header ({e})") from None
    header = [h.strip() for h in header]
    for need in ("question", "id", "document", "perspective"):
        if need not in header:
            raise InputError(path, 1, need, f"missing column (header has: {', '.join(header) or 'nothing'})")
    col = {name: header.index(name) for name in header}
    out, seen = [], {}
    start = reader.line_num + 1
    while True:
        try:
            row = next(reader)
        except StopIteration:
            break
        except csv.Error as e:
            raise InputError(path, start, None, f"malformed TSV ({e})") from None
        line, start = start, reader.line_num + 1
        if not row or all(not c.strip() for c in row):
            continue
        if len(row) != len(header):
            raise InputError(path, line, None, f"expected {len(header)} tab-separated fields, got {len(row)}")
        rec = {name: row[i] for name, i in col.items()}
        for name in ("question", "id", "document", "perspective"):
            if not rec[name].strip():
                raise InputError(path, line, name, "must not be empty")
        pid = rec["id"].strip()
        if pid in seen:
            raise InputError(path, line, "id", f"duplicate id {pid!r} (first on line {seen[pid]})")
        seen[pid] = line
        label = None
        raw = rec.get("label", "").strip()
        if raw:
            if raw not in ("0", "1"):
                raise InputError(path, line, "label", f"expected 0 or 1, got {raw!r}")
            label = int(raw)
        qid = rec.get("question_id", "").strip() or None
        subset = rec.get("subset", "").strip() or None
        out.append((line, Pair(pair_id=pid, question=rec["question"], document=rec["document"],
                               perspective=rec["perspective"], question_id=qid, subset=subset,
                               source=source), label))
    if not out:
        raise InputError(path, None, None, "no pairs in file")
    return out


def pairs_from_runs(runs: Sequence[tuple[str, list[dict]]], k: int | None = None) -> tuple[list[Pair], dict[str, dict[str, int]]]:
    """Pairs from run entries: each of the top-``k`` passages x each perspective.

    ``runs`` is ``[(run_name, entries)]``. The retriever of a pair is the
    entry's ``retriever`` field, else the run name. Returns the pairs and the
    judge labels already stored in the runs (``{judge: {pair_id: 0/1}}``).
    """
    pairs, stored = [], defaultdict(dict)
    for run_name, entries in runs:
        for e in entries:
            ctxs = e["ctxs"][:k] if k else e["ctxs"]
            verdicts = {name: (label_matrix(e, judge=name), judged_mask(e, name)) for name in judges_in(e)}
            for i, c in enumerate(ctxs):
                for j, persp in enumerate(e["perspectives"]):
                    pid = f"{run_name}:{e['id']}:{c['id']}:{j}"
                    title = (c.get("title") or "").strip()
                    doc = f"{title}\n{c['text']}" if title and not c["text"].startswith(title) else c["text"]
                    pairs.append(Pair(pair_id=pid, question=e["question"], document=doc, perspective=persp,
                                      question_id=str(e["id"]), passage_id=str(c["id"]), perspective_index=j,
                                      subset=e.get("subset"), retriever=e.get("retriever") or run_name,
                                      source=run_name))
                    for name, (L, judged) in verdicts.items():  # either run layout
                        if judged[i]:
                            stored[name][pid] = int(L[i, j])
    return pairs, dict(stored)


def judge_probabilities(pairs: Sequence[Pair], predict: Callable) -> dict[str, tuple[float, int]]:
    """``{pair_id: (prob, label)}`` from a judge's batch ``predict([(document, perspective)])``."""
    probs, labels = predict([(p.document, p.perspective) for p in pairs])
    return {p.pair_id: (float(pr), int(bool(lb))) for p, pr, lb in zip(pairs, probs, labels)}


def sample_pairs(pairs: Sequence[Pair], n: int, strategy: str = "random", *, by: str = "subset",
                 probs: dict[str, float] | None = None, seed: int = 0) -> list[Pair]:
    """Pick ``min(n, len(pairs))`` pairs, in queue order.

    - ``random``: a uniform sample without replacement, in random order.
    - ``stratified``: strata by ``by`` (``subset`` or ``retriever``; missing ->
      ``"(none)"``); each stratum gets an equal share of ``n`` (capped at its
      size, the rest redistributed); the queue interleaves strata round-robin.
    - ``uncertain``: ascending ``|p - 0.5|`` of the judge probability ``probs``
      (ties in random order), so the judge's hardest pairs come first.
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
    out, i = [], 0
    while len(out) < n:
        for s in names:
            if i < len(picked[s]):
                out.append(picked[s][i])
        i += 1
    return out


def assign_pairs(pair_ids: Sequence[str], annotators: Sequence[str], overlap: float = 0.0, *,
                 per_shared: int = 2, seed: int = 0) -> dict[str, list[str]]:
    """Spread pairs over annotators; ``{annotator: [pair_id, ...]}`` in the given pair order.

    ``round(overlap * len(pair_ids))`` pairs (chosen at random) go to
    ``per_shared`` different annotators each; the others to one. Every pair
    goes to the annotators with the fewest assignments so far (ties by
    rotation), so loads differ by at most one pair per kind.
    """
    annotators = [a.strip() for a in annotators if a and a.strip()]
    if not annotators:
        raise ValueError("at least one annotator is needed")
    if len(set(annotators)) != len(annotators):
        raise ValueError("annotator names must be distinct")
    if not 0.0 <= overlap <= 1.0:
        raise ValueError("overlap must be between 0 and 1")
    if overlap > 0 and len(annotators) < 2:
        raise ValueError("overlap needs at least two annotators")
    per_shared = min(max(per_shared, 2), len(annotators))
    n_shared = int(round(overlap * len(pair_ids)))
    rng = np.random.default_rng(seed)
    shared = set(rng.choice(len(pair_ids), size=n_shared, replace=False).tolist()) if n_shared else set()
    load = dict.fromkeys(annotators, 0)
    out = {a: [] for a in annotators}
    turn = 0
    for i, pid in enumerate(pair_ids):
        want = per_shared if i in shared else 1
        ranked = sorted(range(len(annotators)), key=lambda j: (load[annotators[j]], (j - turn) % len(annotators)))
        for j in ranked[:want]:
            out[annotators[j]].append(str(pid))
            load[annotators[j]] += 1
        turn += 1
    return out


def import_pairs_tsv(store, path, annotator: str | None = None, task_set: str | None = None) -> dict:
    """Add a human-pairs TSV to ``store``; with ``annotator``, queue its pairs for them and
    store the file's labels as theirs. An id already in the store must mean the same pair."""
    rows = read_pairs_tsv(path)
    for line, pair, _ in rows:
        if store.has_pair(pair.pair_id):
            old = store.pair(pair.pair_id)
            for field in ("question", "document", "perspective"):
                if getattr(old, field) != getattr(pair, field):
                    raise InputError(path, line, field,
                                     f"pair id {pair.pair_id!r} is already in {store.path} with a different {field}")
    added = store.add_pairs([p for _, p, _ in rows])
    labels = {p.pair_id: lab for _, p, lab in rows if lab is not None}
    name = task_set or Path(path).stem
    stored = 0
    if annotator and annotator.strip():
        store.create_task_set(name, {annotator.strip(): [p.pair_id for _, p, _ in rows]},
                              source=str(path), strategy="import")
        if labels:
            stored = store.import_labels(annotator.strip(), labels, source=str(path))
    return {"db": str(store.path), "pairs": len(rows), "new_pairs": added, "labels": stored,
            "labels_in_file": len(labels), "task_set": name if annotator else None}


def build_task_set(store, candidates: Sequence[Pair], *, n: int, strategy: str, annotators: Sequence[str],
                   overlap: float = 0.0, per_shared: int = 2, by: str = "subset", seed: int = 0,
                   name: str, source: str, judge=None, stored_preds: dict | None = None,
                   params: dict | None = None) -> dict:
    """Sample ``n`` of ``candidates``, assign them (with overlap) and save the task set.

    ``judge`` (an object with ``name`` and ``predict``) scores the candidates
    first; it is required by ``uncertain``. Its answers and any ``stored_preds``
    (``{judge: {pair_id: 0/1}}`` from the run files) are stored for the sampled pairs.
    """
    from dataclasses import replace

    preds = probs = None
    if judge is not None:
        preds = judge_probabilities(candidates, judge.predict)
        probs = {pid: pr for pid, (pr, _) in preds.items()}
    picked = sample_pairs(candidates, n, strategy, by=by, probs=probs, seed=seed)
    if probs is not None:
        picked = [replace(p, judge_prob=probs[p.pair_id]) for p in picked]
    plan = assign_pairs([p.pair_id for p in picked], annotators, overlap, per_shared=per_shared, seed=seed)
    store.add_pairs(picked)
    ids = {p.pair_id for p in picked}
    if preds is not None:
        store.set_judge_preds(judge.name, {pid: preds[pid] for pid in ids})
    for jname, lab in (stored_preds or {}).items():
        store.set_judge_preds(jname, {pid: (None, v) for pid, v in lab.items() if pid in ids})
    store.create_task_set(name, plan, source=source, strategy=strategy,
                          params={"n": n, "by": by, "overlap": overlap, "per_shared": per_shared, "seed": seed,
                                  "judge": getattr(judge, "name", None), **(params or {})})
    shared = sum(1 for pid in ids if sum(pid in v for v in plan.values()) > 1)
    return {"db": str(store.path), "task_set": name, "pairs": len(picked), "candidates": len(candidates),
            "shared": shared, "assignments": {a: len(v) for a, v in plan.items()},
            "judge": getattr(judge, "name", None)}
