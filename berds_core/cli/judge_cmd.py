"""``berds judge`` (add a judge's predictions to a run) and ``berds judge-eval`` (judge vs human labels)."""
from __future__ import annotations

import csv
import io
import sys

import numpy as np

from ..errors import InputError
from ..jsonio import atomic_write, read_text

PAIR_FIELDS = ["question", "id", "document", "perspective", "label"]


def _judge_args(p) -> None:
    p.add_argument("--judge", default="embedded",
                   help="embedded | hf:<model>[+<adapter>] | openai:<model>@<base_url>")
    p.add_argument("--threshold", type=float, help="probability at or above which a pair is 'supports'")
    p.add_argument("--shot", type=int, choices=[0, 1], help="LLM judges: zero- or one-shot prompt")
    p.add_argument("--device", help="hf/embedded: cpu, cuda, cuda:1, mps (default: automatic)")
    p.add_argument("--dtype", help="hf: torch dtype (default bfloat16 on GPU, float32 on CPU)")
    p.add_argument("--batch-size", type=int, dest="batch_size")
    p.add_argument("--encoding", choices=["auto", "fp32", "bf16", "int8"], help="embedded: MiniLM precision")
    p.add_argument("--concurrency", type=int, help="openai: parallel requests")
    p.add_argument("--timeout", type=float, help="openai: seconds per request")
    p.add_argument("--retries", type=int, help="openai: retries on 429/5xx/timeouts")


def register(sub) -> None:
    p = sub.add_parser("judge", help="add a judge's predictions (<name>-preds) to a run")
    p.add_argument("--run", required=True, help="run file (BERDS JSON Lines)")
    p.add_argument("--out", required=True, help="where to write the judged run (may equal --run)")
    _judge_args(p)
    p.set_defaults(func=run_judge)

    q = sub.add_parser("judge-eval", help="score a judge against human pair labels (TSV)")
    q.add_argument("--pairs", required=True, help="TSV: question, id, document, perspective, label")
    q.add_argument("--out", help="write the TSV with probability and prediction columns")
    _judge_args(q)
    q.set_defaults(func=run_eval)


def make_judge(args):
    from ..judges import JudgeError, get_judge

    opts = {k: getattr(args, k, None) for k in
            ("threshold", "shot", "device", "dtype", "batch_size", "concurrency", "timeout", "retries",
             "encoding")}
    if opts["threshold"] is not None and not 0.0 <= opts["threshold"] <= 1.0:
        raise InputError("--threshold", None, None, "must be between 0 and 1")
    try:
        return get_judge(args.judge, **opts)
    except InputError:  # e.g. a read-only cache: it names itself
        raise
    except (ValueError, JudgeError) as e:
        raise InputError("--judge", None, None, str(e)) from None


def _predict(judge, pairs, args, where):
    from ..judges import JudgeError

    try:
        return judge.predict(pairs, progress=not args.quiet)
    except JudgeError as e:
        raise InputError(where, None, None, f"{e} (predictions made so far are cached; rerun to resume)") from None


def run_judge(args) -> dict:
    from ..judges import JudgeError, judge_run
    from ..runs import read_run, write_run

    entries = read_run(args.run)
    judge = make_judge(args)
    try:
        judge_run(entries, judge, progress=not args.quiet)
    except JudgeError as e:
        raise InputError("--judge", None, None, f"{e} (predictions made so far are cached; rerun to resume)") from None
    write_run(args.out, entries)
    n_pairs = sum(len(e["ctxs"]) * len(e["perspectives"]) for e in entries)
    n_pos = sum(sum(map(sum, e[judge.name + "-preds"])) for e in entries)
    return {"judge": judge.name, "out": str(args.out), "questions": len(entries), "pairs": n_pairs,
            "positive_rate": (n_pos / n_pairs) if n_pairs else 0.0}


def read_pairs(path) -> list[dict]:
    """Rows of a human-pairs TSV (CSV-style quoting with doubled quotes); label must be 0 or 1."""
    text = read_text(path)
    reader = csv.reader(io.StringIO(text, newline=""), delimiter="\t", quotechar='"', doublequote=True,
                        strict=True)
    rows: list[dict] = []
    header = None
    start = 1
    try:
        for rec in reader:
            line = start
            start = reader.line_num + 1
            if header is None:
                header = [h.strip() for h in rec]
                missing = [f for f in PAIR_FIELDS if f not in header]
                if missing:
                    raise InputError(path, line, missing[0], f"missing column (header needs {', '.join(PAIR_FIELDS)})")
                continue
            if not any(c.strip() for c in rec):
                continue
            if len(rec) != len(header):
                raise InputError(path, line, None, f"expected {len(header)} tab-separated fields, got {len(rec)}")
            row = dict(zip(header, rec))
            for f in ("document", "perspective"):
                if not row[f].strip():
                    raise InputError(path, line, f, "must not be empty")
            lab = row["label"].strip()
            if lab not in ("0", "1"):
                raise InputError(path, line, "label", f"expected 0 or 1, got {lab!r}")
            row["_line"] = line
            rows.append(row)
    except csv.Error as e:
        raise InputError(path, reader.line_num, None, f"malformed TSV ({e})") from None
    if header is None:
        raise InputError(path, None, None, "file is empty")
    if not rows:
        raise InputError(path, None, None, "no pairs after the header")
    return rows


def agreement(labels: np.ndarray, preds: np.ndarray) -> dict:
    """n, positive rate of the judge, accuracy, F1 of the positive class, Cohen's kappa."""
    from sklearn.metrics import cohen_kappa_score, f1_score

    labels, preds = np.asarray(labels, bool), np.asarray(preds, bool)
    if (labels == preds).all():
        kappa = 1.0
    else:
        kappa = float(cohen_kappa_score(labels, preds))
    return {"n": int(len(labels)), "positive_rate": float(preds.mean()),
            "accuracy": float((labels == preds).mean()),
            "f1": float(f1_score(labels, preds, zero_division=0.0)), "kappa": kappa}


def table(rows: list[tuple[str, dict]]) -> str:
    """The paper's Table 4 layout: judge, positive rate, accuracy, F1, kappa (percent, kappa x100)."""
    w = max(12, *(len(n) for n, _ in rows))
    out = [f"{'Judge':<{w}}  {'Pos. rate':>9}  {'Acc.':>6}  {'F1':>6}  {'Kappa':>6}"]
    out.append("-" * len(out[0]))
    for name, m in rows:
        out.append(f"{name:<{w}}  {100 * m['positive_rate']:9.1f}  {100 * m['accuracy']:6.1f}  "
                   f"{100 * m['f1']:6.1f}  {100 * m['kappa']:6.1f}")
    return "\n".join(out)


def run_eval(args):
    rows = read_pairs(args.pairs)
    judge = make_judge(args)
    pairs = [(r["document"], r["perspective"]) for r in rows]
    probs, preds = _predict(judge, pairs, args, "--judge")
    labels = np.array([r["label"].strip() == "1" for r in rows])
    result = {**agreement(labels, preds), "judge": judge.name}
    if args.out:
        with atomic_write(args.out) as fh:
            w = csv.writer(fh, delimiter="\t", quotechar='"', doublequote=True, lineterminator="\n")
            cols = list(k for k in rows[0] if k != "_line")
            w.writerow(cols + ["probability", "prediction"])
            for r, p, y in zip(rows, probs, preds):
                w.writerow([r[c] for c in cols] + [f"{float(p):.6f}", int(y)])
    if args.json:
        return result
    sys.stdout.write(table([(judge.name, result)]) + "\n")
    if args.out:
        sys.stdout.write(f"wrote {args.out}\n")
    return None
