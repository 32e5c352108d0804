"""What the one passage embedding should be: title + text or text, cut at 128 or 256 tokens (quality and speed).

    python bench/embedding_choices.py --data ../shared/data [--repeat 3] [--encoding auto]

Quality: plain dense retrieval (packaged MiniLM, the CPU default precision, and fp32 for comparison)
with each choice on the gold-labelled development corpora that have titles
(procon: argument titles; demo: headlines): MRecall@5 and Precision@5, and
the judge's view is unchanged (BERDS judges read the passage text). Nothing
is tuned here: four fixed choices, all reported.

Speed: passages encoded per second with each choice on the same passages
(procon's and the demo's; and 200 of them repeated 3 times, 256+ tokens, to
show where truncation bites), and the ratio against the chosen default (text,
128 tokens). The four choices encode the same chunk of 64 passages back to
back, chunk after chunk, so a machine whose load changes during the run
slows them alike; ``--repeat`` rounds, the median taken. Nothing is cached:
the store is bypassed.

Markdown to stdout, JSON to bench/results/embedding_choices.json.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

# (what is embedded, max tokens, precision: "default" = the CPU default, embed.resolve_encoding("auto"))
CHOICES = [("text", 128, "default"), ("text", 256, "default"), ("title + text", 128, "default"),
           ("title + text", 256, "default"), ("text", 128, "fp32")]


def label(c) -> str:
    return f"{c[0]}, {c[1]}" + ("" if c[2] == "default" else f", {c[2]}")


def passage_string(p, what: str) -> str:
    return f"{p.title}. {p.text}" if what == "title + text" and p.title else p.text


def scores(bundle, P, Q) -> dict:
    from berds_core.eval.measures import mrecall_at_k, precision_at_k
    from berds_core.runs import gold_matrix

    top = np.argsort(-(Q @ P.T), axis=1)[:, :5]
    mr, pr = [], []
    for q, rows in zip(bundle.questions, top):
        L = gold_matrix(bundle.gold, q.id, len(q.perspectives), [bundle.passages[r].id for r in rows])
        mr.append(mrecall_at_k(L, 5))
        pr.append(precision_at_k(L, 5))
    return {"mrecall@5": float(np.mean(mr)), "precision@5": float(np.mean(pr))}


def interleaved(encoders, passages, repeat: int, chunk: int = 64):
    """Embeddings per choice (from the first round) and passages/s per choice (median over rounds)."""
    from berds_core.embeddings.text_encoders import encode_normalized

    emb = {c: [] for c in CHOICES}
    rate = {c: [] for c in CHOICES}
    for rnd in range(repeat):
        spent = {c: 0.0 for c in CHOICES}
        for start in range(0, len(passages), chunk):
            part = passages[start:start + chunk]
            for c in CHOICES:
                texts = [passage_string(p, c[0]) for p in part]
                t0 = time.perf_counter()
                e = encode_normalized(encoders[c], texts)
                spent[c] += time.perf_counter() - t0
                if rnd == 0:
                    emb[c].append(e)
        for c in CHOICES:
            rate[c].append(len(passages) / spent[c])
    return {c: np.concatenate(v) for c, v in emb.items()}, {c: statistics.median(v) for c, v in rate.items()}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default=str(ROOT.parent / "shared" / "data"))
    ap.add_argument("--repeat", type=int, default=1, help="rounds over all passages (median)")
    ap.add_argument("--encoding", default="auto", help="auto (the CPU default), fp32, bf16 or int8")
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "embedding_choices.json"))
    args = ap.parse_args(argv)
    from berds_core.datasets.devsets import dev_bundles
    from berds_core.embeddings.models import load_encoder, resolve_encoding
    from berds_core.embeddings.text_encoders import encode_normalized

    bundles, missing = dev_bundles(args.data, ["procon", "demo"])
    if "procon" not in bundles:
        print(f"skip: {missing.get('procon')}", file=sys.stderr)
        return 0
    enc = resolve_encoding(None if args.encoding == "auto" else args.encoding)
    encoders = {c: load_encoder(None, None, enc if c[2] == "default" else c[2], c[1]) for c in CHOICES}
    res = {"encoding": enc, "quality": {}, "speed": {}}
    names = list(bundles)
    passages = [p for b in bundles.values() for p in b.passages]
    emb, rate = interleaved(encoders, passages, args.repeat)
    res["speed"]["development passages"] = {label(c): v for c, v in rate.items()}
    long = [type(p)(p.id, p.title, " ".join([p.text] * 3)) for p in passages[:200]]
    _, rate = interleaved(encoders, long, args.repeat)
    res["speed"]["long passages (3x)"] = {label(c): v for c, v in rate.items()}
    offset = 0
    for name, b in bundles.items():
        n_p = len(b.passages)
        for c in CHOICES:
            P = emb[c][offset:offset + n_p]
            Q = encode_normalized(encoders[c], [q.question for q in b.questions])
            res["quality"].setdefault(label(c), {})[name] = scores(b, P, Q)
        offset += n_p
    print(f"### The passage embedding: quality (plain dense; default precision here: {enc}) and speed "
          f"(passages/s, median of {args.repeat})\n")
    print("| choice | " + " | ".join(f"{n} MRecall@5 | {n} Precision@5" for n in names)
          + " | " + " | ".join(res["speed"]) + " |")
    print("|---" * (1 + 2 * len(names) + len(res["speed"])) + "|")
    base = {lab: s_["text, 128"] for lab, s_ in res["speed"].items()}
    for c in CHOICES:
        key = label(c)
        q = res["quality"][key]
        cells = [f"{q[b]['mrecall@5']:.3f} | {q[b]['precision@5']:.3f}" for b in names]
        sp = [f"{res['speed'][lab][key]:.1f} ({res['speed'][lab][key] / base[lab]:.2f}x)" for lab in res["speed"]]
        print(f"| {key} | " + " | ".join(cells) + " | " + " | ".join(sp) + " |")
    from berds_core.files.jsonio import atomic_write

    with atomic_write(args.out) as fh:
        json.dump(res, fh, indent=1)
    print(f"\nJSON: {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
