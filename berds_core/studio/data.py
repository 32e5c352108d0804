"""The data a studio page works on: the dataset, corpus and gold labels its sidebar names, loaded with every
path checked against the allowed roots (``files.safepaths``). No Streamlit here: ``studio_ui/engines.py`` caches
what :func:`load_data` returns.

``load_data(source)`` reads the fields of the sidebar's ``Config`` (``dataset``, ``dataset_path``,
``dataset_format``, ``gold_path``, ``corpus``, ``corpus_path``, ``retriever``); any object with them will do.
:func:`without_subsets` is the same data with the subsets taken off (a lab annotator's view).
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass, field, replace
from pathlib import Path

from .. import datasets
from ..corpora import open_corpus
from ..corpora.memory import corpus_from_passages
from ..errors import InputError
from ..files.safepaths import resolve_user_path
from ..retrieval import index_folder as index_folder_of
from ..retrieval.index_dir import index_corpus_source

DEMO = "Built-in demo"  # dataset: the bundle the package ships
FROM_PATH = "File path"  # corpus: a file or folder the visitor names
FROM_DATASET = "From the dataset"  # corpus: the passages the dataset carries


@dataclass
class Data:
    """A loaded dataset: questions, corpus (or None), gold labels (or None)."""

    name: str
    questions: list
    corpus: object | None
    gold: dict | None
    key: str = ""
    subsets: list = field(default_factory=list)
    # question id -> the corpus it retrieves from (the built-in demo: each question's own pool, as BERDS's web
    # setting); a question without one retrieves from ``corpus``
    pools: dict = field(default_factory=dict)

    def corpus_for(self, question_id: str):
        """The corpus a question retrieves from: its pool, else the dataset's corpus."""
        return self.pools.get(question_id, self.corpus)


def load_data(cfg) -> Data:
    """Load the dataset, corpus and gold labels a config names (InputError on bad input).

    Every path comes from a visitor of the page (typed, or an upload's stored
    copy): it goes through ``resolve_user_path`` first, so nothing outside the
    allowed roots is opened (``berds_core.files.safepaths``).
    """
    passages, gold, pool_ids = [], None, {}
    if cfg.dataset == DEMO:
        bundle = datasets.load_demo()
        name, questions, passages, gold, pool_ids = "demo", bundle.questions, bundle.passages, bundle.gold, bundle.pools
    else:
        if not cfg.dataset_path.strip():
            raise InputError("dataset", None, "path", "give the path of a questions file")
        path = str(resolve_user_path(cfg.dataset_path, what="questions file"))
        name = Path(cfg.dataset_path.strip()).stem
        if cfg.dataset_format == "debate-sites":
            questions, passages, gold = datasets.load_debate_sites(path)
        else:
            questions = datasets.load_questions(path, None if cfg.dataset_format == "auto" else cfg.dataset_format)
    if not questions:
        raise InputError(cfg.dataset_path or "dataset", None, None, "no questions in this dataset")
    if cfg.gold_path.strip():
        gold = datasets.load_gold(resolve_user_path(cfg.gold_path, what="gold labels file"))
    index_folder = index_folder_of(cfg.retriever)
    if index_folder is not None:  # a prebuilt index folder: typed, so checked like any path
        index_folder = resolve_user_path(index_folder, what="index folder")
    pools = {}
    if cfg.corpus == FROM_DATASET:
        corpus = corpus_from_passages(passages, name) if passages else None
        if corpus is not None and pool_ids and index_folder is None:
            by_id = {p.id: p for p in passages}
            pools = {qid: corpus_from_passages([by_id[i] for i in ids], f"{name}:{qid}") for qid, ids in pool_ids.items()}
    else:
        corpus_path = cfg.corpus_path.strip()
        if not corpus_path and cfg.corpus == FROM_PATH and index_folder is not None:
            corpus_path = index_corpus_source(index_folder) or ""  # the corpus the folder names
        if not corpus_path:
            raise InputError("corpus", None, "path", "give the path of a corpus file or folder")
        # large corpora open from the on-disk store (ingested once): passages are read by row, never all
        corpus = open_corpus(resolve_user_path(corpus_path, what="corpus path"))
    subsets = sorted({q.subset for q in questions if q.subset})
    key = hashlib.sha1(repr((cfg.dataset, cfg.dataset_path, cfg.dataset_format, cfg.gold_path,
                             cfg.corpus, cfg.corpus_path)).encode()).hexdigest()[:12]
    return Data(name, list(questions), corpus, gold, key, subsets, pools)


def without_subsets(data: Data) -> Data:
    """``data`` with no question's subset (and no list of subsets): what a lab annotator's tool pages show, so
    the subsets a round's queue is stratified by are not theirs to read (the Playground's question list wrote
    ``question · subset``). The same questions, corpus, gold and key."""
    return replace(data, questions=[replace(q, subset=None) for q in data.questions], subsets=[])

