#!/usr/bin/env python
"""The lab teaches the judge: ``berds agreement --fit`` on two rounds a lab could have labelled, and labels
chosen actively against labels chosen at random.

    python bench/lab_fit.py [--data ../shared/data] [--part rounds|active|all] [--json]

**Rounds.** Each is a fresh annotation database built with the CLI a lab uses (``berds annotations import
--labels-are reference``), then ``berds agreement --fit NAME`` (the embedded judge v5 refitted: its map,
threshold and band; five question-grouped folds, fold seeds 0-4):

- ``argkp-train``: IBM ArgKP's train split (24 topics, 20,635 argument / key-point pairs, its labels as
  reference labels: short arguments, another positive rate); question = topic, passage = argument,
  perspective = key point;
- ``berds-dev``: the BERDS human pairs' development half (15 questions, 276 pairs). The shipped judge was
  chosen on these questions, so its "before" is in-sample and flatters it (said in the output).

The TSVs are written to a temporary folder and removed: the data is read by path, never copied in.

**Active against random** (``--part active``): on a pool of labelled pairs (the development half, and ArgKP
train), question-grouped: five outer folds (fold seeds 0-4); in each, a lab labels ``n`` pairs (50, 100, 200)
of the other folds' questions, chosen at random or actively (half from the pairs the base judge is unsure of,
inside its band, half at random from the rest; weights = stratum size / sample size, so the fit and the round's
estimate stay unbiased), the map is fitted on them (:func:`berds_core.lab.judge_fit.fit_map`), and the held-out
fold's pairs are decided. Kappa of all out-of-fold decisions against the pool's labels, medians over the five
fold seeds (three draws each).
"""
from __future__ import annotations

import argparse
import csv
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from machine import cpu_model, load  # noqa: E402

SIZES = (50, 100, 200)


def log(msg: str) -> None:
    sys.stderr.write(f"[{time.strftime('%H:%M:%S')}] {msg}\n")


def argkp_tsv(data: Path, out: Path, split: str = "train") -> Path:
    """ArgKP's ``split`` as a human-pairs TSV (question = topic, document = argument, perspective = key point)."""
    d = data / "argkp"
    args = {r["arg_id"]: r for r in csv.DictReader(open(d / f"arguments_{split}.csv", encoding="utf-8"))}
    kps = {r["key_point_id"]: r for r in csv.DictReader(open(d / f"key_points_{split}.csv", encoding="utf-8"))}
    path = out / f"argkp_{split}.tsv"
    with open(path, "w", encoding="utf-8", newline="") as fh:
        w = csv.writer(fh, delimiter="\t", quotechar='"', doublequote=True, lineterminator="\n")
        w.writerow(["question", "id", "document", "perspective", "label"])
        for r in csv.DictReader(open(d / f"labels_{split}.csv", encoding="utf-8")):
            a, k = args[r["arg_id"]], kps[r["key_point_id"]]
            w.writerow([a["topic"], f"{r['arg_id']}|{r['key_point_id']}", a["argument"], k["key_point"], r["label"]])
    return path


def berds(*argv, env) -> dict:
    p = subprocess.run([sys.executable, "-m", "berds_core", *argv, "--json"], capture_output=True, text=True, env=env,
                       cwd=ROOT)
    if p.returncode != 0:
        raise SystemExit(f"berds {' '.join(argv)}: rc {p.returncode}: {p.stderr.strip().splitlines()[-1:]}")
    return json.loads(p.stdout)


def rounds(data: Path, work: Path, env: dict) -> dict:
    out = {}
    for name, tsv in (("argkp-train", argkp_tsv(data, work)),
                      ("berds-dev", data / "berds-human" / "pers_det.dev.tsv")):
        db = work / f"{name}.db"
        t0 = time.perf_counter()
        berds("annotations", "import", "--db", str(db), "--pairs", str(tsv), "--labels-are", "reference",
              "--task-set", name, "--quiet", env=env)
        t1 = time.perf_counter()
        rep = berds("agreement", "--db", str(db), "--fit", name, "--keep-anyway", env=env)
        t2 = time.perf_counter()
        # the same fit again (base reads cached): reproducible to the byte, and the fit's own time
        first = Path(rep["written"]).read_bytes()
        berds("agreement", "--db", str(db), "--fit", name, "--keep-anyway", env=env)
        t3 = time.perf_counter()
        same = Path(rep["written"]).read_bytes() == first
        out[name] = {"round": rep["round"], "before": rep["before"], "after": rep["after"],
                     "after_median": rep["after_median"], "beats_base": rep["beats_base"], "map": rep["map"],
                     "kinds_chosen": rep["kinds_chosen"], "same_bytes_twice": same, "import_s": round(t1 - t0, 1),
                     "fit_s_cold": round(t2 - t1, 1), "fit_s_warm": round(t3 - t2, 1)}
        log(f"{name}: kappa {rep['before']['kappa']:.3f} -> {rep['after']['kappa']:.3f} (median "
            f"{rep['after_median']['kappa']:.3f}); F1 {rep['before']['f1']:.3f} -> {rep['after']['f1']:.3f}")
    return out


# ------------------------------------------------------------------ active against random

def pool(db: Path, env: dict):
    """The pool's base reads (a RoundData) from a database holding it as reference labels."""
    os.environ.update(env)
    from berds_core.judges import get_judge
    from berds_core.lab.judge_fit import read_round, round_labels
    from berds_core.lab.store import Store

    with Store(db) as store:
        labels, _ = round_labels(store, "reference")
        judge = get_judge("embedded")
        return read_round(store, judge, labels, db.name), judge


def choose(rng, cand: np.ndarray, unsure: np.ndarray, n: int, active: bool) -> tuple[np.ndarray, np.ndarray]:
    """``n`` of the candidate rows and their weights (stratum size / sample size)."""
    n = min(n, len(cand))
    if not active:
        return rng.choice(cand, n, replace=False), np.ones(n)
    U, R = cand[unsure[cand]], cand[~unsure[cand]]
    nu = min(len(U), n // 2)
    nr = min(len(R), n - nu)
    nu = min(len(U), n - nr)
    pick_u, pick_r = rng.choice(U, nu, replace=False), rng.choice(R, nr, replace=False)
    w = np.concatenate([np.full(nu, len(U) / max(nu, 1)), np.full(nr, len(R) / max(nr, 1))])
    return np.concatenate([pick_u, pick_r]), w / w.mean()


def simulate(data, band: tuple[float, float], seeds: int = 5, draws: int = 3) -> dict:
    from sklearn.metrics import cohen_kappa_score

    from berds_core.lab.judge_fit import decisions, fit_map, question_folds

    lo, hi = band
    d_own = np.where(data.own, data.p, 0.0)
    unsure = (d_own >= lo) & (d_own < hi)
    out = {"pool": int(len(data.y)), "questions": int(len(set(data.questions))), "unsure_share": float(unsure.mean()),
           "base_kappa": float(cohen_kappa_score(data.y, data.base_label)), "sizes": {}}
    for n in SIZES:
        res = {"random": [], "active": []}
        for seed in range(seeds):
            folds = question_folds(data.questions, seed)
            for how in ("random", "active"):
                ks = []
                for draw in range(draws):
                    rng = np.random.default_rng(1000 * seed + draw)
                    pred = np.zeros(len(data.y), bool)
                    for k in range(5):
                        te, cand = folds == k, np.flatnonzero(folds != k)
                        rows, w = choose(rng, cand, unsure, n, how == "active")
                        qs = data.questions[rows]
                        nq = len(set(qs))
                        inner = question_folds(qs, seed, min(5, nq)) if nq >= 2 else np.zeros(len(rows), int)
                        try:
                            fit = fit_map(data.p[rows], data.y[rows], data.own[rows], qs, inner,
                                          w if how == "active" else None)
                        except ValueError:  # a draw with one class only: the base judge's decision stands
                            pred[te] = data.base_label[te].astype(bool)
                            continue
                        pred[te] = decisions(fit, data.p[te], data.own[te])[1]
                    ks.append(float(cohen_kappa_score(data.y, pred)))
                res[how].append(statistics.median(ks))
        out["sizes"][n] = {h: {"median": statistics.median(v), "per_seed": [round(x, 4) for x in v]}
                           for h, v in res.items()}
        log(f"n={n}: random {out['sizes'][n]['random']['median']:.3f}, active {out['sizes'][n]['active']['median']:.3f}")
    return out


def active(data_dir: Path, work: Path, env: dict) -> dict:
    out = {}
    for name, tsv in (("berds-dev", data_dir / "berds-human" / "pers_det.dev.tsv"),
                      ("argkp-train", argkp_tsv(data_dir, work))):
        db = work / f"pool-{name}.db"
        berds("annotations", "import", "--db", str(db), "--pairs", str(tsv), "--labels-are", "reference",
              "--task-set", name, "--quiet", env=env)
        data, judge = pool(db, env)
        out[name] = simulate(data, judge.band)
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[1])
    ap.add_argument("--data", default=str(ROOT.parent / "shared" / "data"))
    ap.add_argument("--part", choices=["rounds", "active", "all"], default="all")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    data = Path(args.data)
    if not (data / "argkp").exists() or not (data / "berds-human").exists():
        print(f"skipped: {data} has no argkp/ or berds-human/")
        return 0
    result = {"cpu": cpu_model(), "load_before": load()}
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        env = {**os.environ, "BERDS_CACHE": os.environ.get("BERDS_CACHE", str(ROOT / "bench" / "results" / "cache")),
               "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "BERDS_LAB_JUDGES": str(work / "judges")}
        if args.part in ("rounds", "all"):
            result["rounds"] = rounds(data, work, env)
        if args.part in ("active", "all"):
            result["active"] = active(data, work, env)
    result["load_after"] = load()
    print(json.dumps(result, indent=1) if args.json else json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
