"""Train the side reader on stored embeddings (``berds_core.stance.side_reader``), out of fold and on all.

    python scripts/train_side_reader.py --work bench/results/stance_cv          # fold heads + report + shipped

Data: the stance model's own training examples and folds (``scripts/train_stance.py``: ``dataset.json``,
``folds.json`` in ``--work``): every example whose target is the question itself (``kind == "question"``:
the passage's side of the question, or unrelated), the question's yes/no side statements
(``datasets.sides.yes_no_sides``) and the passage's MiniLM embedding as the dense index stores it
(``embed_text``: the passage text; the examples hold ``title. text``, mapped back through the development
bundles). Every pair is also read with the two sides swapped (yes <-> no), so the head treats the sides alike.

Out of fold: for each of the stance cross-validation's question-grouped folds a head is trained on the other
folds' questions and reads the fold's preset candidates (``preset_pairs``: the union of the dense and BM25
top 20, labelled yes / no / unrelated), the pairs on which the stance model's side accuracy (0.745 pooled) is
reported. The recipe is fixed (nothing tuned on these figures): rank 128, hidden 64, AdamW 1e-3, weight
decay 1e-4, 40 epochs of batches of 256, seed 0. Fold heads go to ``--out-dir`` (``bench/diversity.py``
reads them), the head on every example to ``--weights`` (shipped).
"""
from __future__ import annotations

import argparse
import hashlib
import json
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

VERSION = "side_reader_v1"
RECIPE = {"rank": 128, "hidden": 64, "lr": 1e-3, "weight_decay": 1e-4, "epochs": 40, "batch_size": 256, "seed": 0,
          "swap_sides": True, "examples": "kind == question"}


def log(msg: str) -> None:
    sys.stderr.write(msg + "\n")
    sys.stderr.flush()


def build(work: Path, data: Path) -> dict:
    """Embeddings and labels of the training examples and the evaluation pairs (one encoder, the store)."""
    from berds_core.datasets.devsets import dev_bundles
    from berds_core.datasets.sides import yes_no_sides
    from berds_core.embeddings.text_encoders import embed_text, text_encoder
    from berds_core.stance import passage_string

    ds = json.loads((work / "dataset.json").read_text())
    fold_of = json.loads((work / "folds.json").read_text())["fold"]
    bundles, _ = dev_bundles(data)
    tmap: dict[str, str] = {}
    for b in bundles.values():
        for p in b.passages:
            tmap.setdefault(passage_string(p), embed_text(p))
    sides = {qid: yes_no_sides(q) for qid, q in ds["questions"].items()}
    train = [(e["qid"], tmap.get(e["text"], e["text"]), e["allowed"][0]) for e in ds["examples"]
             if e["kind"] == "question" and len(e["allowed"]) == 1 and all(sides.get(e["qid"], ("", "")))]
    evalp = [(p["qid"], tmap.get(p["text"], p["text"]), p["label"], p["corpus"]) for p in ds["preset_pairs"]
             if p["label"] is not None and all(sides.get(p["qid"], ("", "")))]
    te = text_encoder(None)
    texts = sorted({t for _, t, _ in train} | {t for _, t, _, _ in evalp})
    stm = sorted({s for qid in {q for q, *_ in train + evalp} for s in sides[qid]})
    t0 = time.perf_counter()
    T = dict(zip(texts, te.embed(texts)))
    S = dict(zip(stm, te.embed(stm)))
    log(f"embeddings: {len(texts)} passages, {len(stm)} side statements ({time.perf_counter() - t0:.0f}s)")

    def arrays(rows):
        P = np.stack([T[t] for _, t, *_ in rows]).astype(np.float32)
        Y = np.stack([S[sides[q][0]] for q, *_ in rows]).astype(np.float32)
        N = np.stack([S[sides[q][1]] for q, *_ in rows]).astype(np.float32)
        return P, Y, N, np.array([r[2] for r in rows], dtype=np.int64)

    return {"train": arrays(train), "train_qids": [q for q, *_ in train], "eval": arrays(evalp),
            "eval_qids": [q for q, *_ in evalp], "eval_corpus": [c for *_, c in evalp], "fold_of": fold_of,
            "encoder": te.key}


def fit(P, Y, N, labels, recipe=RECIPE) -> dict:
    """The head's arrays (float32 training, returned as float64 numpy) trained on ``(P, Y, N, labels)``."""
    import torch

    torch.set_num_threads(1)  # tiny matmuls: one thread is faster than two contending ones (and the same result)
    torch.manual_seed(recipe["seed"])
    rng = np.random.default_rng(recipe["seed"])
    if recipe["swap_sides"]:  # the same pair with the sides swapped: yes <-> no
        swap = np.array([1, 0, 2])[labels]
        P, Y, N, labels = (np.concatenate([P, P]), np.concatenate([Y, N]), np.concatenate([N, Y]),
                           np.concatenate([labels, swap]))
    dim, r, h = P.shape[1], recipe["rank"], recipe["hidden"]
    V, U = torch.nn.Linear(dim, r), torch.nn.Linear(dim, r)
    mlp = torch.nn.Sequential(torch.nn.Linear(3 * r, h), torch.nn.ReLU(), torch.nn.Linear(h, 3))
    params = [*V.parameters(), *U.parameters(), *mlp.parameters()]
    opt = torch.optim.AdamW(params, lr=recipe["lr"], weight_decay=recipe["weight_decay"])
    Pt, Yt, Nt, Lt = (torch.from_numpy(np.ascontiguousarray(x)) for x in (P, Y, N, labels))
    for _ in range(recipe["epochs"]):
        order = torch.from_numpy(rng.permutation(len(Lt)))
        for i in range(0, len(order), recipe["batch_size"]):
            j = order[i:i + recipe["batch_size"]]
            z, a, b = torch.tanh(V(Pt[j])), torch.tanh(U(Yt[j])), torch.tanh(U(Nt[j]))
            loss = torch.nn.functional.cross_entropy(mlp(torch.cat([z * a, z * b, z], dim=1)), Lt[j])
            opt.zero_grad()
            loss.backward()
            opt.step()
    t = lambda x: x.detach().double().numpy()  # noqa: E731
    return {"V": t(V.weight).T, "c": t(V.bias), "U": t(U.weight).T, "d": t(U.bias),
            "W1": t(mlp[0].weight).T, "b1": t(mlp[0].bias), "W2": t(mlp[2].weight).T, "b2": t(mlp[2].bias)}


def save(path: Path, arrays: dict, meta: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp.npz")
    np.savez_compressed(tmp, meta=json.dumps(meta, sort_keys=True), **{k: v.astype(np.float32) for k, v in arrays.items()})
    tmp.replace(path)


def side_accuracy(probs, labels) -> float:
    one = labels < 2
    return float(np.mean(np.argmax(probs[one, :2], axis=1) == labels[one])) if one.any() else float("nan")


def main(argv=None) -> int:
    from berds_core.stance.side_reader import WEIGHTS, SideReader

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--work", default=str(ROOT / "bench" / "results" / "stance_cv"),
                    help="the stance cross-validation folder (dataset.json, folds.json)")
    ap.add_argument("--data", default=str(ROOT.parent / "shared" / "data"))
    ap.add_argument("--out-dir", default=str(ROOT / "bench" / "results" / "side_reader_cv"),
                    help="fold heads (fold<N>.npz) and report.json")
    ap.add_argument("--weights", default=str(WEIGHTS), help="the head on every example (shipped); '' skips it")
    args = ap.parse_args(argv)
    work, out = Path(args.work), Path(args.out_dir)
    d = build(work, Path(args.data))
    P, Y, N, L = d["train"]
    EP, EY, EN, EL = d["eval"]
    tq = np.array([d["fold_of"][q] for q in d["train_qids"]])
    eq = np.array([d["fold_of"][q] for q in d["eval_qids"]])
    corpus = np.array(d["eval_corpus"])
    qids = np.array(d["eval_qids"])
    sig = hashlib.sha1(json.dumps([RECIPE, len(L), d["encoder"]], sort_keys=True).encode()).hexdigest()[:12]
    oof = np.zeros((len(EL), 3))
    report = {"version": VERSION, "recipe": RECIPE, "encoder": d["encoder"], "folds": {}}
    for f in sorted(set(tq.tolist())):
        t0 = time.perf_counter()
        arrays = fit(P[tq != f], Y[tq != f], N[tq != f], L[tq != f])
        meta = {"version": VERSION, "signature": f"{sig}-fold{f}", "excluded_fold": int(f), "recipe": RECIPE,
                "examples": int((tq != f).sum()), "encoder": d["encoder"]}
        save(out / f"fold{f}.npz", arrays, meta)
        m = eq == f
        reader = SideReader(arrays=arrays, meta=meta)
        for q in sorted({d["eval_qids"][i] for i in np.flatnonzero(m)}):
            rows = np.flatnonzero(m & (qids == q))
            oof[rows] = reader.probs(EP[rows], EY[rows[0]], EN[rows[0]])
        report["folds"][str(f)] = {"train_examples": int((tq != f).sum()), "eval_pairs": int(m.sum()),
                                   "side_accuracy": side_accuracy(oof[m], EL[m]),
                                   "seconds": round(time.perf_counter() - t0, 1)}
        log(f"fold {f}: {report['folds'][str(f)]}")
    cos = np.where(np.sum(EP * EY, 1) >= np.sum(EP * EN, 1), 0, 1)
    report["oof"] = {}
    for name in ["pooled", *sorted(set(corpus.tolist()))]:
        m = np.ones(len(EL), bool) if name == "pooled" else corpus == name
        one = m & (EL < 2)
        report["oof"][name] = {"one_sided": int(one.sum()), "side_accuracy": side_accuracy(oof[m], EL[m]),
                               "cosine_difference": float(np.mean(cos[one] == EL[one]))}
    (out / "report.json").write_text(json.dumps(report, indent=1))
    print(json.dumps(report["oof"], indent=1))
    if args.weights:
        arrays = fit(P, Y, N, L)
        save(Path(args.weights), arrays, {"version": VERSION, "signature": f"{sig}-all", "excluded_fold": None,
                                          "recipe": RECIPE, "examples": int(len(L)), "encoder": d["encoder"],
                                          "data": "scripts/train_stance.py's examples whose target is the question "
                                                  "(procon, PERSPECTRUM train+dev, demo, BERDS dev silver)",
                                          "oof": report["oof"]})
        log(f"shipped head: {args.weights}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
