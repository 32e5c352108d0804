"""The built-in demo bundle, shipped inside the package (``berds_core/demo``).

Files: ``questions_*.jsonl`` (question JSONL), ``corpus_*.jsonl``
(``{id, title, text, question_id, kind}``) and ``gold_*.jsonl`` (gold labels); all files of a kind
are concatenated in name order and checked together: unique ids across files,
every gold pair names an existing question, passage and perspective index.
Each passage belongs to one question's pool (``question_id``; ``Bundle.pools``): a demo question
retrieves from its own 40 passages, as BERDS's web setting does (``docs/demo.md``: how the pools
were written; ``kind`` says a passage's role, argument, background or distractor, and no method reads it).

Beside the bundle, for a speaker without network: ``perspective_pool.jsonl``
(perspective sentences for the demo questions and a few more claims; the pool
``berds discover --pool demo`` and the Playground's *Discover perspectives* use
by default) and ``web_recording.jsonl`` (a recorded web search with its pages,
replayed by the ``replay`` search backend, :mod:`berds_core.web.replay`).
"""
from __future__ import annotations

from importlib import resources
from pathlib import Path

from ..errors import InputError
from .bundle import Bundle, merge_unique, read_passages_jsonl, read_pools
from .generic import read_questions_jsonl
from .gold import read_gold, validate_gold


def demo_dir() -> Path:
    return Path(str(resources.files("berds_core") / "demo"))


DEMO_POOL = "perspective_pool.jsonl"  # perspective sentences for the demo questions and a few more claims
DEMO_RECORDING = "web_recording.jsonl"  # a recorded web search with its pages (berds_core.web.replay)


def demo_pool_path() -> Path:
    """The built-in perspective pool (JSONL ``{id, text, topic}``), written for this project."""
    return demo_dir() / DEMO_POOL


def demo_recording_path() -> Path:
    """The built-in web recording (searches and pages written for this project, fictional sites)."""
    return demo_dir() / DEMO_RECORDING


def load_demo(folder=None) -> Bundle:
    folder = Path(folder) if folder else demo_dir()
    qfiles = sorted(folder.glob("questions_*.jsonl"))
    cfiles = sorted(folder.glob("corpus_*.jsonl"))
    gfiles = sorted(folder.glob("gold_*.jsonl"))
    if not qfiles or not cfiles:
        raise InputError(folder, None, None, "demo data missing (need questions_*.jsonl and corpus_*.jsonl)")
    questions = merge_unique([(f, *read_questions_jsonl(f)) for f in qfiles], "question")
    passages = merge_unique([(f, *read_passages_jsonl(f)) for f in cfiles], "passage")
    gold: dict = {}
    for f in gfiles:
        part, lines = read_gold(f)
        validate_gold(part, questions, passages, f, lines)
        for qid, labels in part.items():
            for pid, persp in labels.items():
                gold.setdefault(qid, {}).setdefault(pid, set()).update(persp)
    pools: dict = {}
    for f in cfiles:
        for qid, ids in read_pools(f, questions).items():
            pools.setdefault(qid, []).extend(ids)
    if pools:  # a pool for every question, and every gold label inside its question's pool
        missing = [q.id for q in questions if q.id not in pools]
        if missing:
            raise InputError(cfiles[0], None, "question_id", f"no passage belongs to question {missing[0]!r}")
        for qid, labels in gold.items():
            outside = sorted(set(labels) - set(pools[qid]))
            if outside:
                raise InputError(gfiles[0], None, "passage_id",
                                 f"{outside[0]!r} is labelled for {qid!r} but belongs to another question's pool")
    return Bundle("demo", questions, passages, gold, pools)
