#!/usr/bin/env python
"""Probe (nothing shipped): can a MiniLM cross-encoder trained on PERSPECTRUM stances tell the side of a BERDS passage?

    python scripts/probe_stance_crossencoder.py --data ../shared/data [--layers 6] [--epochs 3]
        [--per-claim 3] [--max-length 160] [--lr 5e-5] [--json]

Why: the shipped embedded judge is a MiniLM cosine, which measures topicality;
the two sides of a BERDS question ("X" / "X is not ...") embed almost the same.
With the true side known for every passage, the same cosine would reach F1
~0.59 on the human pairs (the ``oracle_side_f1`` line), so the missing piece
is stance. This trains the packaged all-MiniLM-L6-v2 (first ``--layers``
layers, mean pooling, a linear head) as a cross-encoder on development data
only and measures what transfers:

- training pairs: PERSPECTRUM train-split claims C and their negation
  (``phrasing.negate_claim``) against pseudo-passages of 1-4 perspective
  sentences of one side (C + supporting side = 1, C + undermining side = 0,
  and the reverse for not-C; sentences of another claim = 0), plus every
  (passage, perspective) pair of the demo bundle with its gold label;
- ``perspectrum_dev``: accuracy / AUC on the same construction over
  PERSPECTRUM dev claims (in-domain stance);
- ``human``: on ``berds-human/pers_det.dev.tsv`` (never trained on): AUC,
  F1 with the threshold picked on the other questions, and ``side_accuracy``
  -- for passages labelled positive for exactly one side, how often the
  model scores that side above the other;
- ``cosine_and_side_f1``: the shipped judge's cosine for "is it on topic"
  combined with the cross-encoder's side choice (only the higher-scoring side
  of a passage can be positive), threshold picked on the other questions.

Measured with the defaults (2026-11-21, this 2-core machine): PERSPECTRUM dev
accuracy 0.766 / AUC 0.834 (stance is learned in-domain), but on the human
pairs AUC 0.656, F1 0.329, side_accuracy 0.523 on 44 one-sided passages
(chance), cosine_and_side_f1 0.262 against oracle_side_f1 0.579; scoring
102 pairs/s. The stance learned on debate sentences does not transfer to
BERDS passages, so nothing from this probe ships.

Costs ~13 min on 2 CPU cores with the defaults. Scoring speed of such a model
is in ``pairs_per_s`` (no passage reuse across perspectives: one forward pass
per pair).
"""
from __future__ import annotations

import argparse
import collections
import json
import random
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def log(msg: str) -> None:
    sys.stderr.write(msg + "\n")


def perspectrum_claims(folder: Path):
    claims = json.loads((folder / "perspectrum_with_answers_v1.0.train_dev.json").read_text())
    pool = {str(p["pId"]): p["text"] for p in json.loads((folder / "perspective_pool_v1.0.json").read_text())}
    split = json.loads((folder / "dataset_split_v1.0.json").read_text())
    by = collections.defaultdict(list)
    for c in claims:
        by[split.get(str(c["cId"]), "train")].append(c)
    return by, pool


def stance_pairs(claims, pool, per_claim: int, rng: random.Random):
    from berds_core.datasets.phrasing import negate_claim

    out = []
    for c in claims:
        claim, neg = c["text"], negate_claim(c["text"])
        side = {"SUPPORT": [], "UNDERMINE": []}
        for cl in c["perspectives"]:
            if cl.get("stance_label_3") in side:
                sents = [pool[str(p)] for p in cl["pids"] if str(p) in pool]
                if sents:
                    side[cl["stance_label_3"]].append(sents)
        for _ in range(per_claim):
            for s, clusters in side.items():
                if not clusters:
                    continue
                doc = " ".join(rng.choice(x) for x in rng.sample(clusters, rng.randint(1, min(4, len(clusters)))))
                out += [(claim, doc, int(s == "SUPPORT")), (neg, doc, int(s == "UNDERMINE"))]
            other = rng.choice(claims)
            if other is not c and other["perspectives"]:
                picks = rng.sample(other["perspectives"], min(3, len(other["perspectives"])))
                doc = " ".join(pool[str(rng.choice(x["pids"]))] for x in picks if str(x["pids"][0]) in pool)
                if doc:
                    out.append((rng.choice([claim, neg]), doc, 0))
    return out


def demo_pairs():
    from berds_core.datasets.demo import load_demo

    b = load_demo()
    out = []
    for q in b.questions:
        gold = b.gold.get(q.id, {})
        for p in b.passages:
            if p.id.startswith(q.id + "-"):
                out += [(persp, p.text, int(i in gold.get(p.id, set()))) for i, persp in enumerate(q.perspectives)]
    return out


def f1(y, p):
    tp = int(((p == 1) & (y == 1)).sum())
    return 2 * tp / max(1, 2 * tp + int(((p == 1) & (y == 0)).sum()) + int(((p == 0) & (y == 1)).sum()))


def threshold_on_other_questions(y, score, groups, mask=None):
    """Predictions where each question's threshold is the F1-optimal one on the other questions."""
    mask = np.ones(len(y), bool) if mask is None else mask
    out = np.zeros(len(y), int)
    grid = np.unique(score)
    for g in set(groups):
        te = np.array([x == g for x in groups])
        tr = ~te
        best = max(grid, key=lambda t: f1(y[tr], ((score[tr] >= t) & mask[tr]).astype(int)))
        out[te] = ((score[te] >= best) & mask[te]).astype(int)
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", default=str(ROOT.parent / "shared" / "data"))
    ap.add_argument("--layers", type=int, default=6)
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--per-claim", type=int, default=3)
    ap.add_argument("--max-length", type=int, default=160)
    ap.add_argument("--lr", type=float, default=5e-5)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    data = Path(args.data)
    human_tsv = data / "berds-human" / "pers_det.dev.tsv"
    if not human_tsv.exists() or not (data / "perspectrum").exists():
        print(json.dumps({"skipped": f"data not found under {data}"}))
        return 0

    import torch
    from sklearn.metrics import roc_auc_score
    from transformers import AutoModel, AutoTokenizer

    from berds_core.cli.judge_cmd import read_pairs
    from berds_core.embeddings.models import resolve_model
    from berds_core.judges import get_judge

    rng = random.Random(args.seed)
    torch.manual_seed(args.seed)
    by, pool = perspectrum_claims(data / "perspectrum")
    train = stance_pairs(by["train"], pool, args.per_claim, rng) + demo_pairs()
    dev = stance_pairs(by["dev"], pool, 1, rng)
    rows = read_pairs(human_tsv)
    human = [(r["perspective"], r["document"], int(r["label"])) for r in rows]
    groups = [r["question"] for r in rows]
    log(f"training pairs {len(train)} (positive {np.mean([t[2] for t in train]):.3f}); perspectrum dev {len(dev)}")

    path = resolve_model(None)
    tok = AutoTokenizer.from_pretrained(path)

    class CrossEncoder(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.enc = AutoModel.from_pretrained(path)
            self.enc.encoder.layer = self.enc.encoder.layer[:args.layers]
            self.head = torch.nn.Linear(self.enc.config.hidden_size, 1)

        def forward(self, **enc):
            h = self.enc(**enc).last_hidden_state
            m = enc["attention_mask"].unsqueeze(-1).float()
            return self.head((h * m).sum(1) / m.sum(1)).squeeze(-1)

    def batches(pairs, bs, shuffle):
        idx = list(range(len(pairs)))
        if shuffle:
            rng.shuffle(idx)
        for i in range(0, len(idx), bs):
            chunk = [pairs[j] for j in idx[i:i + bs]]
            enc = tok([c[0] for c in chunk], [c[1] for c in chunk], truncation="only_second",
                      max_length=args.max_length, padding=True, return_tensors="pt")
            yield enc, torch.tensor([c[2] for c in chunk], dtype=torch.float32)

    def predict(model, pairs):
        model.eval()
        out = []
        with torch.inference_mode(), torch.autocast("cpu", dtype=torch.bfloat16):
            for enc, _ in batches(pairs, 64, False):
                out.append(model(**enc).float())
        model.train()
        return torch.sigmoid(torch.cat(out)).numpy()

    model = CrossEncoder()
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.01)
    steps = args.epochs * ((len(train) + 15) // 16)
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: min(1.0, (s + 1) / (0.1 * steps)) * max(0.0, 1 - s / steps))
    t0 = time.time()
    for _ in range(args.epochs):
        for n, (enc, y) in enumerate(batches(train, 16, True), 1):
            with torch.autocast("cpu", dtype=torch.bfloat16):
                loss = torch.nn.functional.binary_cross_entropy_with_logits(model(**enc).float(), y)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            sched.step()
            opt.zero_grad()
            if n % 100 == 0:
                log(f"  step {n} loss {loss.item():.3f} ({time.time() - t0:.0f}s)")
    train_s = time.time() - t0

    yd = np.array([t[2] for t in dev])
    pd_ = predict(model, dev)
    yh = np.array([t[2] for t in human])
    t = time.perf_counter()
    ph = predict(model, human)
    rate = len(human) / (time.perf_counter() - t)
    pred = threshold_on_other_questions(yh, ph, groups)

    docs = collections.defaultdict(list)
    for i, r in enumerate(rows):
        docs[(r["question"], r["document"])].append(i)
    one_side = [ix for ix in docs.values() if len(ix) == 2 and yh[ix].sum() == 1]
    side_acc = float(np.mean([ph[ix[int(np.argmax(yh[ix]))]] > ph[ix[1 - int(np.argmax(yh[ix]))]]
                              for ix in one_side]))
    # the shipped judge's cosine (topicality) + this model's side choice
    judge = get_judge("embedded")
    cos = judge._score([(r["document"], r["perspective"]) for r in rows])
    side = np.zeros(len(rows), bool)
    oracle = np.zeros(len(rows), bool)
    for ix in docs.values():
        side[max(ix, key=lambda i: ph[i])] = True
        pos = [i for i in ix if yh[i]]
        oracle[pos[0] if pos else ix[0]] = True
    combo = threshold_on_other_questions(yh, cos, groups, side)
    oracle_f1 = max(f1(yh, ((cos >= t) & oracle).astype(int)) for t in np.unique(cos))
    result = {
        "config": vars(args), "training_pairs": len(train), "train_seconds": round(train_s),
        "perspectrum_dev": {"accuracy": round(float(((pd_ >= 0.5) == yd).mean()), 3),
                            "auc": round(float(roc_auc_score(yd, pd_)), 3)},
        "human": {"auc": round(float(roc_auc_score(yh, ph)), 3), "f1": round(f1(yh, pred), 3),
                  "side_accuracy": round(side_acc, 3), "one_side_passages": len(one_side)},
        "cosine_and_side_f1": round(f1(yh, combo), 3),
        "oracle_side_f1": round(oracle_f1, 3),
        "pairs_per_s": round(rate, 1),
    }
    print(json.dumps(result) if args.json else json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
