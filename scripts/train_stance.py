#!/usr/bin/env python
"""Train the studio's one stance model: question-grouped cross-validation on development data, then the shipped weights.

    python scripts/train_stance.py --data ../shared/data [--work bench/results/stance_cv] [--jobs 2]
        [--stage cv|final|all] [--out berds_core/stance/weights/stance_v3.npz]

Examples (``berds_core.stance.examples``): procon, PERSPECTRUM train + dev
claims, the demo bundle, the BERDS development questions' Yes/No perspective
texts and the human pairs' development half (``pers_det.dev.tsv``); never
PERSPECTRUM's test split, never the human pairs' other half.

**Folds.** Every question of every source is one unit; near-duplicate
questions (equal normalised text or MiniLM cosine >= 0.9, across sources:
``devsets.question_groups``) form one group, and groups are dealt into 5
folds (``devsets.grouped_folds``, seed 0). ``bench/diversity.py`` and
``bench/discovery.py`` read the same assignment (``folds.json``) and the same
fold models, so a question is never scored by a model that trained on it.

**Stage cv.** One model per fold, trained on the other four folds' examples
with the fixed recipe (``stance.training.DEFAULTS``); a fold model is a file
named by the hash of its training set and options, reused when it exists
(``--jobs`` trained at once, each a niced process with one thread;
resumable). Each fold model scores its held-out questions' evaluation pairs
(out of fold): the preset's candidates (question, each passage of the union
of the dense and BM25 top 20), PERSPECTRUM's T2 pairs (claim, each gold
perspective sentence of known stance; and with the claim's negation, the
consistency cue), the human pairs (perspective, document; and with the
perspective's negation). Then, **nested** (for each held-out fold, chosen on
the other folds' out-of-fold outputs only): each use's temperature (log-loss),
whether a use reads the pair alone or averages it with the negated target's
swapped probabilities (``consistency``: T2 and the judge), and the decision
threshold (T2 accuracy; judge F1). The figures printed are out of fold.

**Stage final.** The shipped model is trained on all examples (same recipe);
each use's calibration and rule are the ones chosen on all out-of-fold
outputs; the out-of-fold report goes into the weights' ``meta``.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from dataclasses import asdict
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from berds_core.stance.examples import OPPOSE, SUPPORT, UNRELATED, Example, passage_string  # noqa: E402
from berds_core.stance.rules import (accuracy_at, choose_rule, f1_at, fit_temperature, judge_scores,  # noqa: E402
                                     softmax, stance_scores, support_share)

N_FOLDS = 5
EVAL_DEPTH = 20  # the preset's candidates are scored for the union of the dense and BM25 top EVAL_DEPTH
NEG_DEPTH = 30   # hard negatives come from the union of the top NEG_DEPTH
EXAMPLES_VERSION = "v3-2"  # bump when examples.py changes what it produces
USES = ("preset", "discovery", "judge")
WORK = ROOT / "bench" / "results" / "stance_cv"
OUT = ROOT / "berds_core" / "stance" / "weights" / "stance_v3.npz"


def log(msg: str) -> None:
    sys.stderr.write(f"[{time.strftime('%H:%M:%S')}] {msg}\n")
    sys.stderr.flush()


# ------------------------------------------------------------------ data

def _data_stamp(data: Path) -> list:
    files = sorted(p for p in data.rglob("*") if p.is_file())
    return [[str(p.relative_to(data)), p.stat().st_size] for p in files]


def load_dataset(data: Path, work: Path, progress: bool = True, trust_cache: bool = False) -> dict:
    """Examples, questions and evaluation pairs of every source (cached in ``work/dataset.json``);
    ``trust_cache``: read the cache without the data folder (its version must still match)."""
    from berds_core.datasets.devsets import dev_bundles, question_groups
    from berds_core.stance import examples as E

    cache = work / "dataset.json"
    if trust_cache and not cache.exists():
        raise SystemExit(f"{cache}: not found (--cached-dataset reads it as it is)")
    stamp = {"version": EXAMPLES_VERSION, "data": _data_stamp(data) if not trust_cache else None}
    if cache.exists():
        d = json.loads(cache.read_text())
        if trust_cache:
            if d.get("stamp", {}).get("version") != EXAMPLES_VERSION:
                raise SystemExit(f"{cache}: examples version {d.get('stamp', {}).get('version')!r}, "
                                 f"this script writes {EXAMPLES_VERSION!r}")
            stamp = d["stamp"]
        if d.get("stamp") == stamp:
            d["examples"] = [Example(**{**e, "allowed": tuple(e["allowed"])}) for e in d["examples"]]
            return d
    questions: dict[str, str] = {}
    source_of: dict[str, str] = {}
    examples: list[Example] = []
    preset_pairs, t2_pairs = [], []
    bundles, missing = dev_bundles(data)
    if missing:
        log(f"left out: {missing}")
    for name, b in bundles.items():
        for q in b.questions:
            questions[q.id] = q.question
            source_of[q.id] = name
    b_questions = [q for b in bundles.values() for q in b.questions]
    groups = question_groups(b_questions)
    for name, b in bundles.items():
        pools = E.candidate_pools(b, NEG_DEPTH, progress=progress)
        examples += E.bundle_examples(b, name, pools, 2, groups)
        # the preset's candidates with their labels (side of the question, unrelated, or None: unclear)
        labelled_in_group: dict[str, set] = {}
        for q in b.questions:
            labelled_in_group.setdefault(groups[q.id], set()).update(b.gold.get(q.id, {}))
        ev = E.candidate_pools(b, EVAL_DEPTH)
        for q in b.questions:
            gold = b.gold.get(q.id, {})
            for r in ev[q.id]:
                p = b.passages[r]
                if p.id in gold:
                    lab = E.side_of(q, set(gold[p.id]))
                elif p.id in labelled_in_group[groups[q.id]]:
                    lab = None
                else:
                    lab = UNRELATED
                preset_pairs.append({"qid": q.id, "corpus": name, "pid": p.id, "target": q.question,
                                     "text": passage_string(p), "label": lab})
        if name == "perspectrum":
            row_of = {p.id: i for i, p in enumerate(b.passages)}
            for q in b.questions:
                claim, negation = E.side_statements(q)
                for pid in sorted(b.gold.get(q.id, {})):
                    lab = E.side_of(q, set(b.gold[q.id][pid]))
                    if lab is None or pid not in row_of:
                        continue
                    t2_pairs.append({"qid": q.id, "pid": pid, "claim": claim, "negation": negation,
                                     "text": passage_string(b.passages[row_of[pid]]), "label": lab})
    bd, bd_questions = E.berds_dev_examples(data / "berds-dev")
    examples += bd
    for q in bd_questions:
        questions[q.id] = q.question
        source_of[q.id] = "berds-dev"
    human_path = data / "berds-human" / "pers_det.dev.tsv"
    human_pairs = []
    if human_path.exists():
        from berds_core.datasets.human_pairs import read_pairs
        from berds_core.datasets.phrasing import negate_claim

        hx = E.human_examples(human_path)
        examples += hx
        for r in read_pairs(human_path):
            qid = E.human_qid(r["question"])
            questions[qid] = r["question"]
            source_of[qid] = "human"
            human_pairs.append({"qid": qid, "perspective": r["perspective"],
                                "negation": negate_claim(r["perspective"]), "text": r["document"],
                                "label": int(r["label"].strip())})
    d = {"stamp": stamp, "questions": questions, "source_of": source_of,
         "examples": [asdict(e) for e in examples], "preset_pairs": preset_pairs, "t2_pairs": t2_pairs,
         "human_pairs": human_pairs}
    work.mkdir(parents=True, exist_ok=True)
    tmp = cache.with_suffix(".tmp")
    tmp.write_text(json.dumps(d))
    tmp.replace(cache)
    d["examples"] = examples
    return d


def demo_pairs() -> list[dict]:
    """Every (passage, perspective) pair of the built-in demo bundle with its gold label (the Agreement page's
    demo round draws its pairs from these), and whether the demo round's 40 pairs include it."""
    from berds_core.stance import negation
    from berds_core.lab.tasks import demo_candidates, sample_pairs

    pairs, labels = demo_candidates()
    round_ids = {p.pair_id for p in sample_pairs(pairs, 40, "stratified", by="subset", seed=0)}
    return [{"qid": p.question_id, "perspective": p.perspective, "negation": negation(p.perspective),
             "text": passage_string({"title": p.title or "", "text": p.document}), "label": labels[p.pair_id],
             "demo_round": p.pair_id in round_ids} for p in pairs]


class _Q:
    def __init__(self, qid, text):
        self.id, self.question = qid, text


def assign_folds(ds: dict, work: Path, n_folds: int = N_FOLDS, seed: int = 0) -> dict:
    """Question id -> fold over every source's questions (grouped; cached in ``work/folds.json``)."""
    from berds_core.datasets.devsets import question_groups
    from berds_core.embeddings.models import resolve_encoding

    path = work / "folds.json"
    key = {"questions": len(ds["questions"]), "n_folds": n_folds, "seed": seed,
           "encoding": resolve_encoding(None, "cpu"), "version": EXAMPLES_VERSION}
    if path.exists():
        d = json.loads(path.read_text())
        if d.get("key") == key:
            return d
    qs = [_Q(qid, text) for qid, text in sorted(ds["questions"].items())]
    groups = question_groups(qs)
    folds = stratified_folds(groups, ds["source_of"], n_folds, seed)
    d = {"key": key, "fold": folds, "group": groups,
         "sizes": {src: [sum(1 for q, f in folds.items() if f == k and ds["source_of"][q] == src)
                         for k in range(n_folds)] for src in sorted(set(ds["source_of"].values()))}}
    path.write_text(json.dumps(d))
    return d


def stratified_folds(group_of: dict, source_of: dict, n_folds: int, seed: int) -> dict:
    """Question id -> fold, whole groups per fold, each source spread evenly: the sources are dealt in
    order of size (the 15 human-pair questions first), each group (shuffled, seeded, largest first) to
    the fold with the fewest questions of that source so far (then the fewest questions)."""
    import random

    members: dict[str, list[str]] = {}
    for qid, g in group_of.items():
        members.setdefault(g, []).append(qid)
    counts: dict[str, int] = {}
    for s in source_of.values():
        counts[s] = counts.get(s, 0) + 1
    fold: dict[str, int] = {}
    size = [0] * n_folds
    per_source = {s: [0] * n_folds for s in counts}
    for src in sorted(counts, key=lambda s: (counts[s], s)):
        gs = sorted({group_of[q] for q, s in source_of.items() if s == src and q not in fold})
        random.Random(f"{seed}-{src}").shuffle(gs)
        gs.sort(key=lambda g: -len(members[g]))
        for g in gs:
            if members[g][0] in fold:
                continue
            f = min(range(n_folds), key=lambda i: (per_source[src][i], size[i], i))
            for q in members[g]:
                fold[q] = f
                size[f] += 1
                per_source[source_of[q]][f] += 1
    return fold


# ------------------------------------------------------------------ fold models

def train_examples(ds: dict, folds: dict | None, exclude_fold: int | None) -> list[Example]:
    if exclude_fold is None:
        return list(ds["examples"])
    return [e for e in ds["examples"] if folds["fold"][e.qid] != exclude_fold]


def model_path(ds, folds, fold: int | None, work: Path, opts: dict, stop_at: int | None = None) -> Path:
    """The model file: named by the hash of its training set and options; a training stopped early
    (``stop_at``) gets ``-step<N>`` (its checkpoint stays that of the whole training, to go on later)."""
    from berds_core.stance.training import DEFAULTS, signature

    ex = train_examples(ds, folds, fold)
    sig = signature(ex, {**DEFAULTS, **opts})
    name = f"fold{fold}-{sig}" if fold is not None else f"all-{sig}"
    return work / "models" / (f"{name}-step{int(stop_at)}.npz" if stop_at is not None else f"{name}.npz")


def checkpoint_path(ds, folds, fold: int | None, work: Path, opts: dict) -> Path:
    full = model_path(ds, folds, fold, work, opts)
    return full.with_name(full.name + ".ckpt.pt")


def _locked(path: Path) -> bool:
    """True while another process holds the training lock of ``path`` (a model being trained)."""
    import fcntl

    lock = path.with_name(path.name + ".lock")
    if not lock.exists():
        return False
    with open(lock, "a") as fh:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            return True
        fcntl.flock(fh, fcntl.LOCK_UN)
    return False


def ensure_models(data: Path, work: Path, folds_wanted: list, opts: dict, jobs: int, ds=None, folds=None,
                  stop_at: dict | None = None) -> dict:
    """Train the missing models (``None`` in ``folds_wanted``: on all examples), ``jobs`` at once,
    each a niced subprocess of this script (``fit``); a model another process is training (its lock is
    held) is waited for, never trained twice. ``stop_at``: fold (None: the model on all) -> the step its
    training stops at. Returns fold -> path."""
    ds = ds or load_dataset(data, work)
    folds = folds or assign_folds(ds, work)
    stop_at = stop_at or {}
    paths = {f: model_path(ds, folds, f, work, opts, stop_at.get(f)) for f in folds_wanted}
    todo = [f for f in folds_wanted if not paths[f].exists()]
    running: list = []
    t0 = time.time()
    while todo or running:
        for f in list(todo):
            if _locked(paths[f]):  # trained elsewhere: wait for its file
                todo.remove(f)
                running.append((f, None, None))
        while todo and sum(1 for _, p, _ in running if p is not None) < max(1, jobs):
            f = todo.pop(0)
            paths[f].parent.mkdir(parents=True, exist_ok=True)
            cmd = ["nice", "-n", "19", sys.executable, str(Path(__file__).resolve()), "fit", "--data", str(data),
                   "--work", str(work), "--opts", json.dumps(opts), "--threads", "1" if jobs > 1 else "0"]
            if f is not None:
                cmd += ["--fold", str(f)]
            if stop_at.get(f) is not None:
                cmd += ["--stop-at", str(stop_at[f])]
            logf = paths[f].with_suffix(".log")
            log(f"training {'fold ' + str(f) if f is not None else 'on all examples'} -> {paths[f].name} "
                f"(log {logf})")
            fh = open(logf, "a")
            running.append((f, subprocess.Popen(cmd, stdout=fh, stderr=subprocess.STDOUT), fh))
        for item in list(running):
            f, proc, fh = item
            if proc is None:
                if paths[f].exists():
                    running.remove(item)
                    log(f"fold {f} trained by another process")
                elif not _locked(paths[f]):
                    running.remove(item)
                    todo.append(f)  # that process stopped without finishing: train it here (it resumes)
                continue
            if proc.poll() is not None:
                fh.close()
                running.remove(item)
                if proc.returncode != 0 or not paths[f].exists():
                    tail = paths[f].with_suffix(".log").read_text().strip().splitlines()[-3:]
                    raise RuntimeError(f"training of fold {f} failed: {tail}")
                log(f"trained fold {f} ({time.time() - t0:.0f}s since start)")
        time.sleep(5)
    return paths


def fit_main(args) -> int:
    from berds_core.stance.training import train

    data, work = Path(args.data), Path(args.work)
    ds = load_dataset(data, work, progress=False, trust_cache=args.cached_dataset)
    folds = assign_folds(ds, work)
    fold = args.fold
    opts = json.loads(args.opts)
    ex = train_examples(ds, folds, fold)
    out = model_path(ds, folds, fold, work, opts, args.stop_at)
    ckpt = checkpoint_path(ds, folds, fold, work, opts)
    counts: dict = {}
    for e in ex:
        counts.setdefault(e.source, 0)
        counts[e.source] += 1
    log(f"fit {'fold ' + str(fold) if fold is not None else 'all'}: {len(ex)} examples {counts} -> {out.name}")
    import fcntl

    out.parent.mkdir(parents=True, exist_ok=True)
    lock = open(out.with_name(out.name + ".lock"), "a")
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        log(f"{out.name} is being trained by another process")
        return 3
    if out.exists():
        log(f"{out.name} exists")
        return 0
    train(ex, opts, out, threads=args.threads, version=out.stem, stop_at=args.stop_at, ckpt=ckpt,
          device=args.device, base_dir=args.base_dir,
          meta={"trained_on": counts, "excluded_fold": fold,
                "data": "development only: procon, PERSPECTRUM train+dev, demo, BERDS dev (silver), "
                        "human pairs dev half"})
    log("done")
    return 0


def fold_stance_models(work: Path = WORK, encoding: str | None = None) -> tuple[dict, dict]:
    """(question id -> fold, fold -> ``StanceModel``) of a finished cv stage: each fold model with the rules
    chosen for its fold on the other folds (``report.json``), for out-of-fold figures elsewhere
    (bench/diversity.py, bench/discovery.py, scripts/train_discovery.py)."""
    from berds_core.stance import StanceModel

    work = Path(work)
    if not (work / "report.json").exists():
        raise FileNotFoundError(f"{work}/report.json missing: run scripts/train_stance.py --stage cv first")
    report = json.loads((work / "report.json").read_text())
    fold_of = json.loads((work / "folds.json").read_text())["fold"]
    models = {int(f): StanceModel(work / "models" / name, encoding=encoding, uses=report["rules_per_fold"][str(f)])
              for f, name in report["fold_models"].items()}
    return fold_of, models


# ------------------------------------------------------------------ out-of-fold outputs

def oof_logits(ds: dict, folds: dict, paths: dict, work: Path, progress: bool = True) -> dict:
    """Out-of-fold logits of every evaluation pair (each scored by the model of its question's fold)."""
    from berds_core.stance.model import StanceModel

    fold = folds["fold"]
    sets = {
        "preset": [(p["qid"], p["target"], p["text"]) for p in ds["preset_pairs"]],
        "t2": [(p["qid"], p["claim"], p["text"]) for p in ds["t2_pairs"]],
        "t2_neg": [(p["qid"], p["negation"], p["text"]) for p in ds["t2_pairs"]],
        "judge": [(p["qid"], p["perspective"], p["text"]) for p in ds["human_pairs"]],
        "judge_neg": [(p["qid"], p["negation"], p["text"]) for p in ds["human_pairs"]],
        "demo": [(p["qid"], p["perspective"], p["text"]) for p in ds["demo_pairs"]],
        "demo_neg": [(p["qid"], p["negation"], p["text"]) for p in ds["demo_pairs"]],
    }
    out = {k: np.zeros((len(v), 3)) for k, v in sets.items()}
    for f in sorted(paths):
        model = StanceModel(paths[f])
        for name, items in sets.items():
            idx = [i for i, (qid, _, _) in enumerate(items) if fold[qid] == f]
            if not idx:
                continue
            t0 = time.time()
            out[name][idx] = model.logits([(items[i][1], items[i][2]) for i in idx], progress=progress)
            if progress:
                log(f"fold {f} {name}: {len(idx)} pairs ({model.n_encoded} encoded so far, {time.time() - t0:.0f}s)")
    return out


# ------------------------------------------------------------------ nested choices and figures

def rules_on(ds, Z, idx: dict) -> dict:
    """Each use's calibration and rule chosen on the pairs ``idx[set]`` (index arrays)."""
    rules = {}
    pp = ds["preset_pairs"]
    ip = [i for i in idx["preset"] if pp[i]["label"] is not None]
    rules["preset"] = {"temperature": fit_temperature(Z["preset"][ip], [(pp[i]["label"],) for i in ip])}
    tp = ds["t2_pairs"]
    it = idx["t2"]
    y2 = np.array([tp[i]["label"] == SUPPORT for i in it])
    allowed = [(tp[i]["label"],) for i in it]
    T2 = fit_temperature(np.vstack([Z["t2"][it], Z["t2_neg"][it][:, [1, 0, 2]]]), allowed + allowed)
    score, cons, t = choose_rule(lambda c: stance_scores(Z["t2"][it], Z["t2_neg"][it], T2, c), y2, accuracy_at)
    rules["discovery"] = {"temperature": T2, "consistency": cons, "threshold": t, "chosen_on_accuracy": round(score, 4)}
    hp = ds["human_pairs"]
    ih = idx["judge"]
    yh = np.array([hp[i]["label"] for i in ih])
    allowed = [((SUPPORT,) if hp[i]["label"] == 1 else (OPPOSE, UNRELATED)) for i in ih]
    TJ = fit_temperature(Z["judge"][ih], allowed)
    score, cons, t = choose_rule(lambda c: judge_scores(Z["judge"][ih], Z["judge_neg"][ih], TJ, c), yh, f1_at)
    rules["judge"] = {"temperature": TJ, "consistency": cons, "threshold": t, "chosen_on_f1": round(score, 4)}
    return rules


def indices(ds, folds, pick) -> dict:
    fold = folds["fold"]
    return {"preset": np.array([i for i, p in enumerate(ds["preset_pairs"]) if pick(fold[p["qid"]])], int),
            "t2": np.array([i for i, p in enumerate(ds["t2_pairs"]) if pick(fold[p["qid"]])], int),
            "judge": np.array([i for i, p in enumerate(ds["human_pairs"]) if pick(fold[p["qid"]])], int)}


def kappa(y, pred) -> float:
    from sklearn.metrics import cohen_kappa_score

    return float(cohen_kappa_score(y, pred))


def evaluate_nested(ds, folds, Z, fold_ids: list | None = None) -> dict:
    """Out-of-fold figures with every choice made on the other folds; and the choices on all folds.
    ``fold_ids``: the folds that have a fold model (default: all); the questions of the others are left out
    of every figure and every choice."""
    from sklearn.metrics import average_precision_score, roc_auc_score

    nf = 1 + max(folds["fold"].values())
    fold_ids = sorted(fold_ids if fold_ids is not None else range(nf))
    scored = set(fold_ids)
    per_fold_rules = []
    t2_s = np.zeros(len(ds["t2_pairs"]))
    t2_pred = np.zeros(len(ds["t2_pairs"]), bool)
    t2_plain = np.zeros(len(ds["t2_pairs"]), bool)
    j_p = np.zeros(len(ds["human_pairs"]))
    j_pred = np.zeros(len(ds["human_pairs"]), bool)
    pre_P = np.zeros((len(ds["preset_pairs"]), 3))
    dp = ds.get("demo_pairs") or []
    d_pred = np.zeros(len(dp), bool)
    for f in fold_ids:
        rules = rules_on(ds, Z, indices(ds, folds, lambda g: g in scored and g != f))
        per_fold_rules.append(rules)
        te = indices(ds, folds, lambda g: g == f)
        r = rules["discovery"]
        s = stance_scores(Z["t2"][te["t2"]], Z["t2_neg"][te["t2"]], r["temperature"], r["consistency"])
        t2_s[te["t2"]] = s
        t2_pred[te["t2"]] = s >= r["threshold"]
        t2_plain[te["t2"]] = support_share(softmax(Z["t2"][te["t2"]])) >= 0.5
        r = rules["judge"]
        p = judge_scores(Z["judge"][te["judge"]], Z["judge_neg"][te["judge"]], r["temperature"], r["consistency"])
        j_p[te["judge"]] = p
        j_pred[te["judge"]] = p >= r["threshold"]
        pre_P[te["preset"]] = softmax(Z["preset"][te["preset"]] / rules["preset"]["temperature"])
        di = [i for i, p in enumerate(dp) if folds["fold"][p["qid"]] == f]
        if di and "demo" in Z:
            d_pred[di] = judge_scores(Z["demo"][di], Z["demo_neg"][di], r["temperature"], r["consistency"]) >= r["threshold"]
    report: dict = {"rules_per_fold": {str(f): r for f, r in zip(fold_ids, per_fold_rules)}, "scored_folds": fold_ids}
    m2 = np.array([folds["fold"][p["qid"]] in scored for p in ds["t2_pairs"]], bool)
    mh = np.array([folds["fold"][p["qid"]] in scored for p in ds["human_pairs"]], bool)
    md = np.array([folds["fold"][p["qid"]] in scored for p in dp], bool)
    # T2
    from berds_core.discovery.evaluate import t2_scores

    y2 = np.array([p["label"] == SUPPORT for p in ds["t2_pairs"]])[m2]
    t2_pred, t2_plain = t2_pred[m2], t2_plain[m2]
    t2_list = [p for p, m in zip(ds["t2_pairs"], m2) if m]
    names = np.array(["support" if v else "undermine" for v in y2], dtype=object)
    split = {}
    try:
        sp = json.loads((Path(ds.get("_data", "")) / "perspectrum" / "dataset_split_v1.0.json").read_text())
    except (OSError, ValueError):
        sp = {}
    for i, p in enumerate(t2_list):
        split.setdefault(sp.get(p["qid"].split("-", 1)[1], "?"), []).append(i)
    report["t2"] = {"all": t2_scores(list(names), ["support" if v else "undermine" for v in t2_pred]),
                    "plain_argmax_accuracy": float(np.mean(t2_plain == y2)),
                    "claims": len({p["qid"] for p in t2_list}),
                    "always_support": float(np.mean(y2))}
    for sname, ii in split.items():
        ii = np.array(ii)
        report["t2"][f"split_{sname}"] = {"pairs": int(len(ii)), "accuracy": float(np.mean(t2_pred[ii] == y2[ii])),
                                          "claims": len({t2_list[i]["qid"] for i in ii})}
    # judge
    yh = np.array([p["label"] for p in ds["human_pairs"]])[mh]
    j_pred, j_p = j_pred[mh], j_p[mh]
    if len(yh):
        tp = int((j_pred & (yh == 1)).sum())
        report["judge"] = {"pairs": int(len(yh)), "positives": int(yh.sum()),
                           "questions": len({p["qid"] for p, m in zip(ds["human_pairs"], mh) if m}),
                           "f1": f1_at(yh, j_pred.astype(float), 0.5),
                           "precision": tp / max(1, int(j_pred.sum())), "recall": tp / max(1, int(yh.sum())),
                           "kappa": kappa(yh, j_pred.astype(int)),
                           "auc": float(roc_auc_score(yh, j_p)), "average_precision": float(average_precision_score(yh, j_p)),
                           "predicted_positive": int(j_pred.sum())}
    if dp and "demo" in Z:
        yd = np.array([p["label"] for p in dp])
        rd = np.array([p["demo_round"] for p in dp])
        report["judge_demo"] = {}
        for name, m in (("all demo pairs", md), ("the demo round (40 pairs)", rd & md)):
            tp = int((d_pred[m] & (yd[m] == 1)).sum())
            report["judge_demo"][name] = {"pairs": int(m.sum()), "positives": int(yd[m].sum()),
                                          "f1": f1_at(yd[m], d_pred[m].astype(float), 0.5),
                                          "precision": tp / max(1, int(d_pred[m].sum())),
                                          "recall": tp / max(1, int(yd[m].sum())),
                                          "kappa": kappa(yd[m], d_pred[m].astype(int))}
    # preset candidates: side accuracy (P(support) > P(oppose)) on one-sided candidates, on-topic AUC
    pp = ds["preset_pairs"]
    out = {}
    for corpus in sorted({p["corpus"] for p in pp}) + ["pooled"]:
        ii = [i for i, p in enumerate(pp) if (corpus == "pooled" or p["corpus"] == corpus)
              and folds["fold"][p["qid"]] in scored]
        sided = [i for i in ii if pp[i]["label"] in (SUPPORT, OPPOSE)]
        lab = [i for i in ii if pp[i]["label"] is not None]
        on = np.array([pp[i]["label"] != UNRELATED for i in lab])
        acc = float(np.mean([(pre_P[i, 0] > pre_P[i, 1]) == (pp[i]["label"] == SUPPORT) for i in sided])) if sided else None
        auc = float(roc_auc_score(on, 1 - pre_P[lab, 2])) if 0 < on.sum() < len(on) else None
        out[corpus] = {"sided_candidates": len(sided), "side_accuracy": acc, "labelled_candidates": len(lab),
                       "on_topic_auc": auc, "questions": len({pp[i]["qid"] for i in ii})}
    report["preset_candidates"] = out
    report["shipped_rules"] = rules_on(ds, Z, indices(ds, folds, lambda g: g in scored))
    return report


def cosine_baseline(ds, folds, fold_ids: list, cos=None) -> dict:
    """The earlier embedded judge measured the same way: its score was a monotone function of one feature,
    the cosine of the packaged MiniLM's embeddings of the perspective and the passage text, so its decisions
    are a threshold on that cosine; here the threshold of each held-out fold is chosen for F1 on the other
    scored folds' pairs, exactly as the stance model's judge threshold. ``cos``: the cosines (computed when
    None)."""
    from sklearn.metrics import average_precision_score, roc_auc_score

    from berds_core.stance.rules import THRESHOLDS

    hp = ds["human_pairs"]
    if not hp:
        return {}
    if cos is None:
        from berds_core.embeddings.text_encoders import text_encoder

        te = text_encoder(None)
        P = te.embed([p["perspective"] for p in hp])
        D = te.embed([p["text"] for p in hp])
        cos = np.sum(P * D, axis=1) / np.clip(np.linalg.norm(P, axis=1) * np.linalg.norm(D, axis=1), 1e-12, None)
    cos = np.asarray(cos, float)
    y = np.array([p["label"] for p in hp])
    fold = np.array([folds["fold"][p["qid"]] for p in hp])
    scored = np.isin(fold, fold_ids)
    grid = np.unique(np.concatenate([THRESHOLDS * 2 - 1, np.quantile(cos[scored], np.linspace(0, 1, 101))]))
    pred = np.zeros(len(hp), bool)
    for f in fold_ids:
        tr, te_ = scored & (fold != f), fold == f
        t = max(grid, key=lambda t: (f1_at(y[tr], cos[tr], t), -abs(t)))
        pred[te_] = cos[te_] >= t
    y, pred, c = y[scored], pred[scored], cos[scored]
    tp = int((pred & (y == 1)).sum())
    return {"pairs": int(len(y)), "f1": f1_at(y, pred.astype(float), 0.5),
            "precision": tp / max(1, int(pred.sum())), "recall": tp / max(1, int(y.sum())),
            "kappa": kappa(y, pred.astype(int)), "auc": float(roc_auc_score(y, c)),
            "average_precision": float(average_precision_score(y, c))}


def markdown(report: dict) -> str:
    t2 = report["t2"]
    lines = []
    scored = report.get("scored_folds")
    if scored is not None:
        lines += [f"Folds scored: {', '.join(map(str, scored))} (the questions of the other folds are in no figure "
                  "below and in no choice).", ""]
    for f, t in (report.get("fold_training") or {}).items():
        lines.append(f"- fold {f} model: {t['examples']} examples, step {t['steps_done']} of {t['steps']}")
    if report.get("fold_training"):
        lines.append("")
    lines += ["### PERSPECTRUM T2 (claim, gold perspective sentence), out of fold", "",
             "| pairs | claims | accuracy | F1 support | F1 undermine | argmax at T=1, no consistency | always support |",
             "|---|---|---|---|---|---|---|",
             f"| {t2['all']['pairs']} | {t2['claims']} | {t2['all']['accuracy']:.3f} | "
             f"{t2['all']['support']['f1']:.3f} | {t2['all']['undermine']['f1']:.3f} | "
             f"{t2['plain_argmax_accuracy']:.3f} | {t2['always_support']:.3f} |"]
    for k, v in t2.items():
        if k.startswith("split_"):
            lines.append(f"\n- {k[6:]} claims: {v['claims']}, pairs {v['pairs']}, accuracy {v['accuracy']:.3f}")
    j = report.get("judge")
    if j:
        lines += ["", "### Embedded judge on the BERDS human pairs (dev half), out of fold", "",
                  "| pairs | questions | F1 | precision | recall | Cohen's kappa | AUC | average precision |",
                  "|---|---|---|---|---|---|---|---|",
                  f"| {j['pairs']} ({j['positives']} positive) | {j['questions']} | {j['f1']:.3f} | "
                  f"{j['precision']:.3f} | {j['recall']:.3f} | {j['kappa']:.3f} | {j['auc']:.3f} | "
                  f"{j['average_precision']:.3f} |"]
    cb = report.get("judge_cosine_baseline")
    if cb:
        lines.append(f"| earlier embedded judge (MiniLM cosine, threshold chosen the same way): {cb['pairs']} | | "
                     f"{cb['f1']:.3f} | {cb['precision']:.3f} | {cb['recall']:.3f} | {cb['kappa']:.3f} | "
                     f"{cb['auc']:.3f} | {cb['average_precision']:.3f} |")
    for name, v in (report.get("judge_demo") or {}).items():
        lines.append(f"\nDemo bundle, {name} ({v['positives']} positive): F1 {v['f1']:.3f}, precision "
                     f"{v['precision']:.3f}, recall {v['recall']:.3f}, kappa {v['kappa']:.3f} (the judge rule of each "
                     "question's fold)")
    lines += ["", "### The preset's candidates (union of the dense and BM25 top 20), out of fold", "",
              "| corpus | questions | one-sided candidates | side accuracy | labelled candidates | on-topic AUC |",
              "|---|---|---|---|---|---|"]
    for c, v in report["preset_candidates"].items():
        acc = f"{v['side_accuracy']:.3f}" if v["side_accuracy"] is not None else "-"
        auc = f"{v['on_topic_auc']:.3f}" if v["on_topic_auc"] is not None else "-"
        lines.append(f"| {c} | {v['questions']} | {v['sided_candidates']} | {acc} | {v['labelled_candidates']} | {auc} |")
    lines += ["", "### Choices per held-out fold (made on the other folds) and on all folds (shipped)", ""]
    for f, r in report["rules_per_fold"].items():
        lines.append(f"- fold {f}: {json.dumps(r)}")
    lines.append(f"- all: {json.dumps(report['shipped_rules'])}")
    return "\n".join(lines)


# ------------------------------------------------------------------ main

def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd")
    fit = sub.add_parser("fit", help="train one model (internal: run by the cv and final stages)")
    for p in (ap, fit):
        p.add_argument("--data", default=str(ROOT.parent / "shared" / "data"))
        p.add_argument("--work", default=str(WORK))
        p.add_argument("--opts", default="{}", help="JSON overriding stance.training.DEFAULTS")
    fit.add_argument("--fold", type=int, default=None)
    fit.add_argument("--threads", type=int, default=0)
    fit.add_argument("--stop-at", type=int, default=None, help="stop after this many steps of the recipe")
    fit.add_argument("--device", default="cpu", help="torch device to train on: cpu (default) or cuda")
    fit.add_argument("--base-dir", default=None, help="read the base network from this folder (a copy of the "
                                                       "packaged MiniLM); the weights still name the packaged model")
    fit.add_argument("--cached-dataset", action="store_true",
                     help="read --work's dataset.json as it is, without --data (a GPU machine without the data "
                          "folder: the data's stamp was checked where the file was written)")
    ap.add_argument("--stage", choices=("cv", "final", "all"), default="all")
    ap.add_argument("--jobs", type=int, default=2, help="models trained at once")
    ap.add_argument("--folds", default=None, help="comma-separated fold models to train and score with (default: "
                    "all); questions of the other folds are left out of every figure")
    ap.add_argument("--cv-stop-at", type=int, default=None,
                    help="stage cv: stop each fold model after this many steps of the recipe (checkpoints kept)")
    ap.add_argument("--final-stop-at", type=int, default=None,
                    help="stage final: stop the model on all examples after this many steps of the recipe "
                         "(its checkpoint is kept; a later run without it goes on to the end)")
    ap.add_argument("--out", default=str(OUT))
    ap.add_argument("--quiet", action="store_true")
    args = ap.parse_args(argv)
    if args.cmd == "fit":
        return fit_main(args)
    data, work = Path(args.data), Path(args.work)
    if not data.exists():
        print(f"skip: {data} not found", file=sys.stderr)
        return 0
    work.mkdir(parents=True, exist_ok=True)
    opts = json.loads(args.opts)
    ds = load_dataset(data, work, progress=not args.quiet)
    ds["_data"] = str(data)
    ds["demo_pairs"] = demo_pairs()
    folds = assign_folds(ds, work)
    log(f"{len(ds['examples'])} examples, {len(ds['questions'])} questions, folds {folds['sizes']}")
    fold_ids = [int(f) for f in args.folds.split(",")] if args.folds else list(range(N_FOLDS))
    wanted = list(fold_ids) if args.stage in ("cv", "all") else []
    if args.stage in ("final", "all"):
        wanted.append(None)
    stops = {f: args.cv_stop_at for f in fold_ids}
    stops[None] = args.final_stop_at
    paths = ensure_models(data, work, wanted, opts, args.jobs, ds, folds, stops)
    fold_paths = {f: p for f, p in paths.items() if f is not None}
    report_path = work / "report.json"
    if fold_paths:
        Z = oof_logits(ds, folds, fold_paths, work, progress=not args.quiet)
        np.savez(work / "oof_logits.npz", **Z)
        report = evaluate_nested(ds, folds, Z, sorted(fold_paths))
        report["judge_cosine_baseline"] = cosine_baseline(ds, folds, sorted(fold_paths))
        report["fold_models"] = {f: p.name for f, p in fold_paths.items()}
        from berds_core.stance.network import load_weights as _lw

        report["fold_training"] = {}
        for f, p in fold_paths.items():
            m = _lw(p)["meta"]
            report["fold_training"][f] = {"examples": m.get("examples"), "steps": m.get("steps"),
                                          "steps_done": m.get("steps_done", m.get("steps"))}
        report["options"] = opts
        report_path.write_text(json.dumps(report, indent=1, default=float))
        print(markdown(report))
    if None in paths:
        from berds_core.stance.network import load_weights, save_weights

        report = json.loads(report_path.read_text())
        w = load_weights(paths[None])
        meta = dict(w["meta"], oof=report, folds={"n": N_FOLDS, "seed": 0, "groups": "devsets.question_groups",
                                                  "scored": report.get("scored_folds")})
        cfg = dict(w["config"], version="v3")
        out = save_weights(args.out, _lora_flat(w), w["head"][0], w["head"][1], cfg, report["shipped_rules"], meta)
        log(f"wrote {out} ({out.stat().st_size / 1e6:.2f} MB)")
    return 0


def _lora_flat(w) -> dict:
    out = {}
    for name, (A, B) in w["lora"].items():
        out["lora_A:" + name] = A
        out["lora_B:" + name] = B
    return out


if __name__ == "__main__":
    sys.exit(main())
