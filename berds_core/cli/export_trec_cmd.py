"""``berds export-trec``: judged runs as TREC run files and one subtopic qrels file.

    berds export-trec --run bm25.jsonl dense.jsonl --labels embedded --out-dir trec/ --json

Writes ``<out-dir>/<run name>.run`` per run (``qid Q0 docid rank score tag``)
and ``<out-dir>/qrels.txt`` (``qid subtopic docid relevance``: the perspective
index is the subtopic, as TREC diversity qrels and ndeval have it) for the
shared pool of the runs: the union of their judged passages (and, with
``--gold``, every gold-labelled passage). ``ir_measures``, ``ndeval`` and other
TREC tools read them; ``berds evaluate`` reports the same α-nDCG / ERR-IA /
P-IA / StRecall on the same pool (``berds_core.eval.diversity``).
"""
from __future__ import annotations

import sys
from pathlib import Path

from ..errors import InputError
from ._parsing import declare
from ..files.outputs import check_output_dir
from ..runs import read_run
from ..runs import align_runs, label_matrices


def register(sub) -> None:
    p = sub.add_parser("export-trec", help="write judged runs as TREC run files plus subtopic qrels (ndeval format)")
    p.add_argument("--run", nargs="+", required=True, metavar="RUN", help="run files (BERDS JSON Lines), same questions")
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--gold", help="gold labels JSONL: {question_id, passage_id, perspective}")
    src.add_argument("--labels", help="name of a judge whose <name>-preds are stored in the runs")
    p.add_argument("--out-dir", required=True, help="folder for <run>.run files and qrels.txt")
    p.set_defaults(func=run)
    declare(p, inputs=("run", "gold"), out_dirs=("out_dir",),
            dir_files=lambda args: [path for _, path, _ in targets(args)] + [Path(args.out_dir) / QRELS])


QRELS = "qrels.txt"


def targets(args) -> list[tuple[str, Path, str]]:
    """(run file, TREC file, tag) per run: ``<out-dir>/<tag>.run``, tags made distinct."""
    from ..eval.diversity import run_tag

    out, tags = [], set()
    for path in args.run:
        tag = base = run_tag(path)
        i = 1
        while tag in tags:  # two runs named alike (a/run.jsonl, b/run.jsonl)
            i += 1
            tag = f"{base}-{i}"
        tags.add(tag)
        out.append((path, Path(args.out_dir) / f"{tag}.run", tag))
    return out


def run(args) -> dict:
    from ..datasets import load_gold
    from ..datasets.gold import check_run_ids
    from ..eval.diversity import check_trec_ids, subtopic_qrels, write_trec_qrels, write_trec_run

    gold = load_gold(args.gold) if args.gold else None
    first = read_run(args.run[0])
    runs = [(args.run[0], first)] + [(path, align_runs(args.run[0], first, path, read_run(path)))
                                     for path in args.run[1:]]
    for path, entries in runs:
        label_matrices(path, entries, gold, args.labels, args.gold)  # missing predictions, bad gold indices
    try:  # the gold's own indices (also of passages no run ranked) before the ids are compared
        qrels = subtopic_qrels([entries for _, entries in runs], gold=gold, judge=args.labels)
    except ValueError as err:
        raise InputError(args.gold or args.run[0], None, "perspective", str(err)) from None
    for path, entries in runs:
        warning = check_run_ids(entries, gold, args.gold, path) if gold else None  # ids matching no qrel
        if warning:
            sys.stderr.write(f"berds export-trec: warning: {warning}\n")
    for path, entries in runs:  # every id checked before anything is written
        check_trec_ids(entries, qrels, run_path=path, qrels_source=args.gold or path)
    out_dir = check_output_dir(args.out_dir, "--out-dir")
    written = []
    for (path, entries), (_, target, tag) in zip(runs, targets(args)):
        n = write_trec_run(target, entries, tag)
        written.append({"run": str(path), "file": str(target), "tag": tag, "lines": n})
    qrels_path = out_dir / QRELS
    n_qrels = write_trec_qrels(qrels_path, qrels)
    return {"questions": len(first), "runs": written, "qrels": str(qrels_path), "qrels_lines": n_qrels,
            "labels": f"gold:{args.gold}" if gold else f"judge:{args.labels}",
            "pool": "union of the runs' judged passages" + (" and every gold-labelled passage" if gold else "")}
