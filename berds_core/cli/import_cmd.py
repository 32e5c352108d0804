"""``berds import KIND FILE --out DIR``: convert a dataset to the project's files.

Writes ``DIR/questions.jsonl`` (``{"id", "question", "perspectives", ...}``)
and, for kinds that carry passages and labels (debate-sites),
``DIR/corpus.jsonl`` (``{"id", "title", "text"}``) and ``DIR/gold.jsonl``
(``{"question_id", "passage_id", "perspective"}``). Everything is read and
checked before anything is written; each file is written atomically. Existing
files are not replaced without ``--force``.

``berds import demo --out DIR`` exports the built-in demo bundle (no FILE):
the three files every other example of the README then reads, and each
question's own pool as ``DIR/corpora/<question>/passages.jsonl`` (the layout
``berds retrieve --corpus-per-question DIR/corpora`` reads: each demo question
retrieves from its own 40 passages, as BERDS's web setting does);
``corpus.jsonl`` is their union, each line with its ``question_id``.

``berds import argkp DIR --out OUT`` reads the IBM ArgKP / Key Point Analysis 2021 folder (per split NAME:
``arguments_NAME.csv``, ``key_points_NAME.csv``, ``labels_NAME.csv``) and writes each labelled split as
``OUT/argkp_NAME.tsv`` in the studio's pair format (question = topic, document = argument, perspective = key
point, label; the task's ``arg_id``, ``key_point_id`` and ``stance`` kept), the file ``berds judge-eval --pairs``
reads; ``--split`` picks one split.
"""
from __future__ import annotations

import sys
from pathlib import Path

from ..errors import InputError
from ._parsing import declare
from ..datasets.argkp import as_pairs, read_split
from ..files.jsonio import atomic_write, write_jsonl
from ..files.outputs import check_output_dir
from ..files.spreadsheet import delimited

KINDS = ("debate-sites", "perspectrum", "qe", "hub", "jsonl", "csv", "demo", "argkp")
OUTPUTS = ("questions.jsonl", "corpus.jsonl", "gold.jsonl")
POOLS = "corpora"  # DIR/corpora/<question>/passages.jsonl: one corpus per question (bundles with pools)


def register(sub) -> None:
    p = sub.add_parser("import", help="convert a dataset (debate-sites, perspectrum, qe, hub, ...) to questions/corpus/gold JSONL")
    p.add_argument("kind", choices=KINDS, help="source format")
    p.add_argument("file", nargs="?", help="source file (a hub id or local copy for 'hub'; none for 'demo')")
    p.add_argument("--out", required=True, help="output folder")
    p.add_argument("--force", action="store_true", help="replace existing output files")
    p.add_argument("--split", help="hub: the split to load (default: all); argkp: the split to write (default: "
                                   "every labelled split)")
    p.add_argument("--pool", help="perspectrum: perspective_pool JSON (default: next to FILE)")
    p.add_argument("--splits-file", help="perspectrum: dataset_split JSON (default: next to FILE)")
    p.set_defaults(func=run)
    declare(p, inputs=("file", "pool", "splits_file"), out_dirs=("out",),
            dir_files=lambda args: [Path(args.out) / name for name in _outputs(args)])


def _outputs(args) -> list[str]:
    if args.kind == "argkp":
        return [f"argkp_{s}.tsv" for s in _argkp_splits(args)] if args.file and Path(args.file).is_dir() else []
    return list(OUTPUTS)


def _argkp_splits(args) -> list[str]:
    if args.split:
        return [args.split]
    return sorted(p.name[len("labels_"):-len(".csv")] for p in Path(args.file).glob("labels_*.csv"))


ARGKP_COLUMNS = ["question", "id", "document", "perspective", "label", "arg_id", "key_point_id", "stance"]


def run_argkp(args) -> dict:
    """``berds import argkp DIR``: each labelled split as a pairs TSV (everything read before anything is written)."""
    if not args.file:
        raise InputError("FILE", None, None, "'argkp' needs the ArgKP folder")
    folder = Path(args.file)
    if not folder.is_dir():
        raise InputError(folder, None, "file", "expected the ArgKP folder (arguments_NAME.csv, key_points_NAME.csv, "
                                               "labels_NAME.csv)")
    splits = _argkp_splits(args)
    if not splits:
        raise InputError(folder, None, None, "no labels_NAME.csv: no labelled split to import")
    out = check_output_dir(args.out, "--out")
    texts = {}
    for name in splits:
        s = read_split(folder, name)
        if s.labels is None:
            raise InputError(folder / f"labels_{name}.csv", None, None, f"missing: split {name!r} has no labels")
        rows = as_pairs(s)
        texts[f"argkp_{name}.tsv"] = (delimited([[r[c] for c in ARGKP_COLUMNS] for r in rows], ARGKP_COLUMNS, "\t"),
                                      len(rows), sum(r["label"] for r in rows), len(s.arguments), len(s.key_points))
    if not args.force:
        for fname in texts:
            if (out / fname).exists():
                raise InputError(out / fname, None, None, "already exists; pass --force to replace it")
    out.mkdir(parents=True, exist_ok=True)
    for fname, (text, *_rest) in texts.items():
        with atomic_write(out / fname) as fh:
            fh.write(text)
    return {"kind": "argkp", "source": str(folder), "out": str(out),
            "splits": {f: {"pairs": n, "matching": pos, "arguments": na, "key_points": nk}
                       for f, (_t, n, pos, na, nk) in texts.items()},
            "files": [str(out / f) for f in texts]}


def _load(args):
    from .. import datasets as D

    if args.kind == "demo":
        if args.file:
            raise InputError(args.file, None, "file", "'demo' is built in and takes no FILE")
        return D.load_demo()
    if not args.file:
        raise InputError("FILE", None, None, f"'{args.kind}' needs a source file")
    if args.kind == "debate-sites":
        return D.load_debate_sites(args.file)
    if args.kind == "perspectrum":
        qs = D.load_perspectrum(args.file, pool=args.pool, splits=args.splits_file)
    elif args.kind == "hub":
        qs = D.load_hub(args.file, split=args.split)
    else:  # the formats load_questions reads (jsonl, csv, tsv, qe, ...)
        qs = D.load_questions(args.file, fmt=args.kind)
    return D.Bundle(Path(args.file).stem, qs, [], {})


def run(args) -> dict:
    from ..datasets import gold_rows

    if args.kind == "argkp":
        return run_argkp(args)

    out = check_output_dir(args.out, "--out")
    bundle = _load(args)
    writes = {"questions.jsonl": [q.to_json() for q in bundle.questions]}
    if bundle.passages:
        owner = {pid: qid for qid, ids in bundle.pools.items() for pid in ids}
        writes["corpus.jsonl"] = [{**p.to_json(), **({"question_id": owner[p.id]} if p.id in owner else {})}
                                  for p in bundle.passages]
        writes["gold.jsonl"] = gold_rows(bundle.gold, bundle.questions)
        if bundle.pools:
            from ..web.snapshot import PASSAGES, dir_name

            by_id = {p.id: p for p in bundle.passages}
            for qid, ids in bundle.pools.items():
                writes[f"{POOLS}/{dir_name(qid)}/{PASSAGES}"] = [by_id[i].to_json() for i in ids]
    if not args.force:
        for name in writes:
            if (out / name).exists():
                raise InputError(out / name, None, None, "already exists; pass --force to replace it")
    stale = [name for name in OUTPUTS if name not in writes and (out / name).exists()]
    if stale:
        sys.stderr.write(f"berds import: note: {', '.join(stale)} in {out} are from an earlier import and were left as they are\n")
    out.mkdir(parents=True, exist_ok=True)
    for name, rows in writes.items():
        (out / name).parent.mkdir(parents=True, exist_ok=True)
        write_jsonl(out / name, rows)
    return {
        "kind": args.kind, "source": str(args.file or "built-in demo"), "out": str(out),
        "questions": len(bundle.questions), "passages": len(bundle.passages),
        "gold_pairs": len(writes.get("gold.jsonl", [])),
        "corpus_per_question": str(out / POOLS) if bundle.pools else None,
        "files": [str(out / name) for name in writes],
    }
