"""BERDS datasets through Hugging Face ``datasets``.

``load_hub("timchen0618/Arguana")`` (or ``Kialo``, ``OpinionQA``) loads from
the hub; the same call takes a local copy: a folder written by
``Dataset.save_to_disk`` / ``DatasetDict.save_to_disk``, a folder of data
files, or one ``.parquet`` / ``.jsonl`` / ``.json`` / ``.csv`` file.

Columns are matched by name: the question from the first of
``QUESTION_COLUMNS``, the perspectives from ``PERSPECTIVE_COLUMNS`` (a list of
strings, a JSON-encoded list, or one statement per row -- rows of the same
question are then merged), the id from ``ID_COLUMNS`` (else the row index).
A missing column is an InputError naming it and the columns present.
"""
from __future__ import annotations

import json
from pathlib import Path

from ..errors import InputError
from ..net.hub import hub_offline_mode, looks_like_path, offline_note
from ..records import Question
from .checks import as_id, nonempty_str, str_list
from .expanded_queries import subset_from_name

QUESTION_COLUMNS = ("question", "query", "org_q", "claim", "topic")
PERSPECTIVE_COLUMNS = ("perspectives", "gold_perspectives", "perspective", "answers")
ID_COLUMNS = ("id", "org_id", "qid", "question_id", "_id")
GENERATED_COLUMNS = ("generated_perspectives",)
SUBSET_COLUMNS = ("subset", "source")
_FILE_BUILDERS = {".parquet": "parquet", ".jsonl": "json", ".json": "json", ".csv": "csv", ".tsv": "csv"}


def _open(name_or_path: str, split: str | None):
    """A ``{split: Dataset}`` dict."""
    import datasets

    p = Path(name_or_path)
    try:
        if p.is_dir() and ((p / "dataset_dict.json").exists() or (p / "state.json").exists()):
            ds = datasets.load_from_disk(str(p))
        elif p.is_file():
            builder = _FILE_BUILDERS.get(p.suffix.lower())
            if builder is None:
                raise InputError(p, None, None, f"unsupported dataset file type {p.suffix!r} (use {', '.join(_FILE_BUILDERS)})")
            kw = {"delimiter": "\t"} if p.suffix.lower() == ".tsv" else {}
            ds = datasets.load_dataset(builder, data_files={"train": str(p)}, **kw)
            if split is None:  # a lone file has no real split name
                return {None: ds["train"]}
        else:
            if looks_like_path(str(name_or_path)):
                raise InputError(name_or_path, None, None, "no such file or folder")
            with hub_offline_mode() as offline:  # the local cache only when the hub cannot be used
                try:
                    ds = datasets.load_dataset(str(name_or_path))
                except Exception as e:
                    if not offline:
                        raise

                    raise InputError(name_or_path, None, None, f"cannot load dataset: {offline_note()}") from None
    except InputError:
        raise
    except Exception as e:  # the hub/file layer raises many kinds; report one line
        msg = " ".join(str(e).split()) or type(e).__name__
        raise InputError(name_or_path, None, None, f"cannot load dataset: {msg[:300]}") from None
    if isinstance(ds, datasets.Dataset):
        ds = {split: ds}
    else:
        ds = dict(ds)
        if split is not None:
            if split not in ds:
                raise InputError(name_or_path, None, "split", f"no split {split!r} (has: {', '.join(ds)})")
            ds = {split: ds[split]}
    return ds


def _pick(columns, candidates, name, what, required=True):
    for c in candidates:
        if c in columns:
            return c
    if required:
        raise InputError(name, None, what, f"missing column (expected one of {', '.join(candidates)}; "
                                           f"has {', '.join(columns) or 'none'})")
    return None


def _perspectives(val, name, where, col) -> list[str]:
    if isinstance(val, str):
        s = val.strip()
        if s.startswith("["):
            try:
                val = json.loads(s)
            except json.JSONDecodeError as e:
                raise InputError(name, where, col, f"malformed JSON list ({e.msg})") from None
        else:
            val = [val]
    return str_list(val, name, where, col)


def load_hub(name_or_path, split: str | None = None) -> list[Question]:
    name = str(name_or_path)
    default_subset = subset_from_name(name)
    by_id: dict[str, Question] = {}
    for split_name, ds in _open(name, split).items():
        cols = list(ds.column_names)
        qcol = _pick(cols, QUESTION_COLUMNS, name, "question")
        pcol = _pick(cols, PERSPECTIVE_COLUMNS, name, "perspectives")
        icol = _pick(cols, ID_COLUMNS, name, "id", required=False)
        gcol = _pick(cols, GENERATED_COLUMNS, name, "generated_perspectives", required=False)
        scol = _pick(cols, SUBSET_COLUMNS, name, "subset", required=False)
        for i, row in enumerate(ds):
            where = f"{split_name + ' ' if split_name else ''}row {i}"
            text = nonempty_str(row.get(qcol), name, where, qcol)
            persp = _perspectives(row.get(pcol), name, where, pcol)
            raw_id = row.get(icol) if icol else None
            qid = as_id(raw_id, name, where, icol) if raw_id is not None else f"{split_name or 'row'}-{i}"
            if icol is None and pcol == "perspective":
                qid = text  # one statement per row and no ids: group by question text
            key = f"{split_name}/{qid}" if split is None and split_name else qid
            subset = (row.get(scol) if scol else None) or default_subset
            q = by_id.get(key)
            if q is None:
                gen = row.get(gcol) if gcol else None
                by_id[key] = Question(
                    qid, text, persp, subset=subset, split=split_name,
                    generated_perspectives=str_list(gen, name, where, gcol, nonempty=False) if gen else [])
            elif q.question != text:
                raise InputError(name, where, icol or qcol, f"duplicate id {qid!r} with a different question")
            else:
                q.perspectives.extend(p for p in persp if p not in q.perspectives)
    if not by_id:
        raise InputError(name, None, None, "no questions found (empty dataset)")
    questions = list(by_id.values())
    ids = [q.id for q in questions]
    if len(set(ids)) != len(ids):  # the same id in two splits: qualify with the split
        for q in questions:
            q.id = f"{q.split}-{q.id}"
    return questions
