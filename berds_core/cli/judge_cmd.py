"""``berds judge`` (add a judge's predictions to a run), ``berds judge-eval`` (judge vs human labels) and
``berds kpa-match`` (a judge's predictions for the Key Point Analysis 2021 task, track 1, and their mAP).

``kpa-match`` scores every argument of the split against every key point of its topic and stance (the judge
reads the argument as the passage and the key point as the perspective, through the prediction cache) and
writes the task's predictions format, ``{arg_id: {key_point_id: score}}``, which the task's own scorer reads
unchanged; when the split has ``labels_NAME.csv`` the report adds mAP strict / relaxed as that scorer
computes them (``berds_core.eval.kpa_track1``).
"""
from __future__ import annotations

import argparse
import json
import os
import re

import numpy as np

from ..datasets.argkp import candidate_pairs, read_split, split_files
from ..errors import InputError
from ..eval.kpa_track1 import track1_map
from ..files.jsonio import atomic_write
from ..files.outputs import report_stream
from ._parsing import add_policy_arg, declare
from ..files.spreadsheet import delimited_lines

from ..datasets.human_pairs import read_pairs


def _inference_spec(text: str) -> str:
    """``--inference``: checked when the command line is read (before a model folder or server is looked at),
    kept as the text the judge parses again."""
    from ..generators.hf_inference import InferenceOptions

    try:
        InferenceOptions.parse(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None
    return text


def _judge_args(p) -> None:
    p.add_argument("--judge", default="embedded",
                   help="embedded (offline: a calibrated MiniLM cosine gated on the question's topic; it reads how close a "
                        "passage is to a perspective and cannot tell for from against) | argkp (offline ArgKP cross-encoder, "
                        "partly trained, below embedded: docs/judge.md) | berds-evaluator[:<vllm base_url>] (the "
                        "paper's evaluator) | hf:<model>[+<adapter>] | openai:<model>@<base_url> | "
                        "vllm[:<model>[+<adapter>]] (with --ray: vLLM engines through ray.data.llm)")
    p.add_argument("--threshold", type=float, help="probability at or above which a pair is 'supports'")
    p.add_argument("--prompt", help="LLM judges: named prompt, berds (the paper's, default) or studio")
    p.add_argument("--shot", type=int, choices=[0, 1], help="LLM judges: zero- or one-shot prompt")
    p.add_argument("--decode", choices=["logits", "generate"],
                   help="LLM judges: logits (one forward pass, Yes/No probability; default) or generate "
                        "(the authors' greedy 16 tokens + their parser)")
    p.add_argument("--system", choices=["auto", "keep", "drop"],
                   help="LLM judges: the prompt's system turn (auto: dropped for Mistral models, as the authors do)")
    p.add_argument("--compare-decode", action="store_true", dest="compare_decode",
                   help="LLM judges: also decide with the other decoding and report how often the two disagree")
    p.add_argument("--device", help="hf/embedded: cpu, cuda, cuda:1, mps (default: automatic)")
    p.add_argument("--dtype", help="hf: torch dtype (default bfloat16 on GPU, float32 on CPU)")
    p.add_argument("--batch-size", type=at_least(int, 1), dest="batch_size")
    p.add_argument("--inference", type=_inference_spec,
                   help="hf: auto (default: the fast path on CUDA, plain elsewhere) | plain | fast, then changes "
                        "such as no-prefix, no-merge, bucket, compile (same decisions either way)")
    p.add_argument("--encoding", choices=["auto", "fp32", "bf16", "int8"], help="embedded, argkp: MiniLM precision")
    p.add_argument("--concurrency", type=at_least(int, 1), help="openai: parallel requests")
    p.add_argument("--timeout", type=at_least(float, 0, strict=True), help="openai: seconds per request")
    p.add_argument("--retries", type=at_least(int, 0), help="openai: retries on 429/5xx/timeouts")
    from ._ray import add_ray_args  # --ray (issue 27)

    add_ray_args(p)


def register(sub) -> None:
    p = sub.add_parser("judge", help="add a judge's predictions (<name>-preds) to a run")
    p.add_argument("--run", required=True, help="run file (BERDS JSON Lines)")
    p.add_argument("--out", required=True, help="where to write the judged run (a new file, not --run)")
    _judge_args(p)
    add_policy_arg(p)
    p.set_defaults(func=run_judge)
    declare(p, inputs=("run",), outputs=("out",), servers=("judge",))

    q = sub.add_parser("judge-eval", help="score a judge against human pair labels (TSV)")
    q.add_argument("--pairs", required=True, help="TSV: question, id, document, perspective, label")
    q.add_argument("--out", help="write the TSV with probability and prediction columns")
    _judge_args(q)
    q.set_defaults(func=run_eval)
    declare(q, inputs=("pairs",), outputs=("out",), servers=("judge",))

    k = sub.add_parser("kpa-match", help="a judge's key point matching predictions (KPA 2021 track 1) and their mAP")
    k.add_argument("--data", required=True, help="folder with arguments_NAME.csv, key_points_NAME.csv "
                                                 "(and labels_NAME.csv)")
    k.add_argument("--split", required=True, help="the split NAME (train, dev, test)")
    k.add_argument("--out", required=True, help="predictions JSON to write")
    _judge_args(k)
    k.set_defaults(func=run_kpa_match)
    declare(k, inputs=("data",), outputs=("out",), servers=("judge",), more_inputs=_kpa_inputs)



def at_least(kind, least, *, strict: bool = False):
    """An argparse type: a number of ``kind`` at least ``least`` (more than it with ``strict``; nan refused),
    checked when the command line is read, before any server is asked."""
    def parse(text: str):
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
        if not (value > least if strict else value >= least):
            raise argparse.ArgumentTypeError(f"must be more than {least}" if strict else f"must be {least} or more")
        return value

    return parse


DEVICE = re.compile(r"^(cpu|mps|cuda(:\d+)?)$")


def check_device(device: str | None) -> None:
    """``--device``: cpu, mps, cuda or cuda:N, and a CUDA device only where the machine has one (its device
    files, read before any model or torch is loaded: one line at once, not a traceback after the load)."""
    if device is None:
        return
    if not DEVICE.match(device):
        raise InputError("--device", None, None, f"{device!r} is not a device: cpu, cuda, cuda:N or mps")
    if device.startswith("cuda") and not any(os.path.exists(p) for p in ("/dev/nvidiactl", "/dev/nvidia0", "/dev/kfd")):
        raise InputError("--device", None, None, f"{device}: this machine has no CUDA device (use --device cpu)")


def check_encoding(spec: str | None, encoding: str | None) -> None:
    """``--encoding`` is MiniLM's precision: the embedded and argkp judges take it; any other judge would
    ignore it, so it is one line, before anything loads."""
    if encoding in (None, "auto"):
        return
    from ..judges.registry import parse_spec

    try:
        backend = parse_spec(spec)[0]
    except ValueError:
        return  # an unknown judge: --judge says so
    if backend not in ("embedded", "argkp"):
        raise InputError("--encoding", None, None, f"only the embedded and argkp judges take this option (MiniLM's "
                                                   f"precision); {spec} has no MiniLM")


def make_judge(args, **overrides):
    from ..judges import JudgeError, get_judge

    opts = {k: getattr(args, k, None) for k in
            ("threshold", "prompt", "shot", "decode", "system", "device", "dtype", "batch_size", "concurrency",
             "timeout", "retries", "encoding", "inference")}
    opts.update(overrides)
    if opts["threshold"] is not None and not 0.0 <= opts["threshold"] <= 1.0:
        raise InputError("--threshold", None, None, "must be between 0 and 1")
    check_device(opts.get("device"))
    check_encoding(args.judge, opts.get("encoding"))
    if opts["inference"] is not None:
        from ..generators.hf_inference import InferenceOptions

        try:
            InferenceOptions.parse(opts["inference"])
        except ValueError as e:
            raise InputError("--inference", None, None, str(e)) from None
    try:
        judge = get_judge(args.judge, **opts)
    except InputError:  # e.g. a read-only cache: it names itself
        raise
    except (ValueError, JudgeError) as e:
        raise InputError("--judge", None, None, str(e)) from None
    if opts["inference"] is not None and judge.backend != "hf":
        raise InputError("--inference", None, None, "only transformers judges (hf:, berds-evaluator) take this option")
    llm_only = [f"--{k.replace('_', '-')}" for k in ("prompt", "decode", "system") if opts.get(k) is not None]
    if judge.backend in ("embedded", "argkp") and (llm_only or getattr(args, "compare_decode", False)):
        raise InputError(llm_only[0] if llm_only else "--compare-decode", None, None,
                         "only LLM judges (hf:, openai:, berds-evaluator) take this option")
    return judge


def decode_comparison(args, judge, pairs, labels) -> tuple[dict, object, np.ndarray]:
    """``--compare-decode``: the same pairs decided by the other decoding of the same judge.

    Returns (how often the two disagree, and in which direction; the other judge; its labels).
    """
    other_mode = "generate" if judge.decode == "logits" else "logits"
    other = make_judge(args, decode=other_mode)
    from ._ray import judge_on_ray

    judge_on_ray(args, other, pairs)  # --ray: judged on the cluster first; None otherwise
    _, other_labels = _predict(other, pairs, args, "--judge")
    mine = {judge.decode: np.asarray(labels, bool), other_mode: np.asarray(other_labels, bool)}
    lg, gen = mine["logits"], mine["generate"]
    n = int(len(lg))
    report = {"logits_judge": judge.name if judge.decode == "logits" else other.name,
              "generate_judge": judge.name if judge.decode == "generate" else other.name,
              "pairs": n, "disagree": int((lg != gen).sum()), "rate": float((lg != gen).mean()) if n else 0.0,
              "logits_yes_generate_no": int((lg & ~gen).sum()), "logits_no_generate_yes": int((~lg & gen).sum())}
    return report, other, mine[other_mode]


def _resume_note(judge) -> str:
    """Only when something was scored before the failure (not for a model that did not load)."""
    done = judge.forward_calls or getattr(judge, "partial_commits", 0)
    return " (predictions made so far are cached; rerun to resume)" if done else ""


def _decided_by(judge) -> dict:
    return {"decided_by": dict(judge.decided_by)} if getattr(judge, "decided_by", None) else {}


def _predict(judge, pairs, args, where):
    from ..judges import JudgeError

    try:
        return judge.predict(pairs, progress=not args.quiet)
    except JudgeError as e:
        raise InputError(where, None, None, f"{e}{_resume_note(judge)}") from None


def run_judge(args) -> dict:
    from ..experiment import score
    from ..judges import JudgeError, judge_run, passage_text
    from ..runs import label_matrix, read_run, write_run

    from ._ray import check_judge_ray, judge_on_ray, run_pairs

    entries = read_run(args.run)
    judge = make_judge(args)
    check_judge_ray(args, judge)  # before any work, even when every pair turns out cached
    ray_info = judge_on_ray(args, judge, run_pairs(entries, judge))  # --ray: the cluster fills the cache
    try:
        judge_run(entries, judge, progress=not args.quiet)
    except JudgeError as e:
        raise InputError("--judge", None, None, f"{e}{_resume_note(judge)}") from None
    write_run(args.out, entries)
    report = score(entries, judge=judge.name, policy=args.policy)  # the positive rate as the policy counts
    mats = [label_matrix(e, judge=judge.name) for e in entries]  # the threshold's, stored in the run
    n_pairs = sum(L.size for L in mats)
    n_pos = sum(int(L.sum()) for L in report.matrices)
    out = {"judge": judge.name, "out": str(args.out), "questions": len(entries), "pairs": n_pairs,
           "policy": report.policy, "positive_rate": (n_pos / n_pairs) if n_pairs else 0.0, **_decided_by(judge)}
    if report.policy == "confident":
        out["unsure"] = report.unsure
    if ray_info is not None:
        out["ray"] = ray_info
    if getattr(args, "compare_decode", False):
        pairs = [(passage_text(c, judge), p) for e in entries for c in e["ctxs"] for p in e["perspectives"]]
        out["decode_comparison"] = decode_comparison(args, judge, pairs,
                                                     np.concatenate([L.ravel() for L in mats]))[0]
    return out


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


def question_grids(rows, grouped: bool) -> list[tuple[str, list[str], list[str]]]:
    """Per question of human-pair rows (in file order): its documents and its perspectives, each once, in the
    order the rows first name them: the (documents x perspectives) grid the judge decides together. A judge
    without a one-side rule reads each row alone: one grid per row."""
    if not grouped:
        return [(r["question"], [r["document"]], [r["perspective"]]) for r in rows]
    grids: dict[str, tuple[list[str], list[str]]] = {}
    for r in rows:
        docs, persp = grids.setdefault(r["question"], ([], []))
        if r["document"] not in docs:
            docs.append(r["document"])
        if r["perspective"] not in persp:
            persp.append(r["perspective"])
    return [(q, d, p) for q, (d, p) in grids.items()]


def grid_pairs(grids) -> list[tuple[str, str]]:
    return [(d, p) for _, docs, persp in grids for d in docs for p in persp]


def rows_verdicts(judge, rows, grids, probs, preds):
    """Each row's probability and decision as ``berds judge`` decides a run line (``judges.verdicts.question_verdicts``:
    topicality first, one side of opposite perspectives), from the judge's ``probs`` / ``preds`` of
    :func:`grid_pairs`: every document of a question against every perspective of it."""
    from ..judges.verdicts import judge_groups, question_verdicts

    cell, i = {}, 0
    for q, docs, persp in grids:
        n, m = len(docs), len(persp)
        P, L = question_verdicts(judge, q, docs, persp, np.asarray(probs[i:i + n * m], float).reshape(n, m),
                                 np.asarray(preds[i:i + n * m], bool).reshape(n, m), judge_groups(judge, persp, q))
        i += n * m
        for a, d in enumerate(docs):
            for b, s in enumerate(persp):
                cell[(q, d, s)] = (P[a, b], L[a, b])
    got = [cell[(r["question"], r["document"], r["perspective"])] for r in rows]
    return np.array([g[0] for g in got], dtype=float), np.array([g[1] for g in got], dtype=bool)


def run_eval(args):
    from ._ray import check_judge_ray

    rows = read_pairs(args.pairs)
    judge = make_judge(args)
    check_judge_ray(args, judge)  # before any work, even when every pair turns out cached
    pairs = [(r["document"], r["perspective"]) for r in rows]
    # a passage's opposite perspectives are decided together, labelled or not (judges with a one-side rule)
    grids = question_grids(rows, getattr(judge, "group_band", None) is not None)
    grid = grid_pairs(grids)
    from ._ray import judge_on_ray

    ray_info = judge_on_ray(args, judge, grid)  # --ray: the cluster fills the cache
    probs, preds = rows_verdicts(judge, rows, grids, *_predict(judge, grid, args, "--judge"))
    labels = np.array([r["label"].strip() == "1" for r in rows])
    result = {**agreement(labels, preds), "judge": judge.name, **_decided_by(judge)}
    if ray_info is not None:
        result["ray"] = ray_info
    if getattr(args, "compare_decode", False):
        cmp, other, other_preds = decode_comparison(args, judge, pairs, preds)
        cmp["other_vs_humans"] = {**agreement(labels, other_preds), "judge": other.name}
        result["decode_comparison"] = cmp
    if args.out:
        cols = list(k for k in rows[0] if k != "_line")
        with atomic_write(args.out) as fh:  # the spreadsheet formula guard too
            for line in delimited_lines(([r[c] for c in cols] + [f"{float(p):.6f}", int(y)]
                                         for r, p, y in zip(rows, probs, preds)),
                                        cols + ["probability", "prediction"], "\t"):
                fh.write(line)
    if args.json:
        return result
    rows = [(judge.name, result)]
    if "decode_comparison" in result:
        rows.append((result["decode_comparison"]["other_vs_humans"]["judge"],
                     result["decode_comparison"]["other_vs_humans"]))
    to = report_stream(args)  # stderr when ``--out -`` put the TSV on stdout
    to.write(table(rows) + "\n")
    if "decode_comparison" in result:
        c = result["decode_comparison"]
        to.write(f"logits vs generate: {c['disagree']} of {c['pairs']} pairs disagree ({100 * c['rate']:.1f}%)\n")
    if args.out:
        to.write(f"wrote {args.out}\n")
    return None


def _kpa_inputs(args) -> list:
    """The split's CSV files (read inside --data): --out may not be one of them."""
    return [("--data", p) for p in split_files(args.data, args.split).values()] if args.data and args.split else []


def run_kpa_match(args) -> dict:
    if not args.split.replace("-", "").replace("_", "").isalnum():
        raise InputError("--split", None, None, f"expected a split name such as dev, got {args.split!r}")
    s = read_split(args.data, args.split)
    cand = candidate_pairs(s)
    if not cand:
        raise InputError(args.data, None, None, f"split {args.split!r}: no argument has a key point of its topic "
                                                "and stance")
    judge = make_judge(args)
    pairs = [(s.arguments[a]["text"], s.key_points[k]["text"]) for a, k in cand]
    probs, _ = _predict(judge, pairs, args, "--judge")
    preds: dict[str, dict[str, float]] = {}
    for (a, k), p in zip(cand, probs):
        preds.setdefault(a, {})[k] = round(float(p), 6)
    with atomic_write(args.out) as fh:
        json.dump(preds, fh)
    out = {"judge": judge.name, "split": args.split, "out": str(args.out), "arguments": len(s.arguments),
           "key_points": len(s.key_points), "pairs": len(cand)}
    if s.labels is not None:
        try:
            m = track1_map(preds, s.arguments, s.key_points, s.labels)
        except ValueError as e:
            raise InputError(args.data, None, None, f"split {args.split!r}: {e}") from None
        out.update(map_strict=m["map_strict"], map_relaxed=m["map_relaxed"], groups=m["groups"],
                   groups_skipped=m["groups_skipped"], undecided_best=m["undecided"])
    return out
