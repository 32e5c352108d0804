"""What the sidebar selects: the :class:`Config` kept in ``st.session_state`` (hashable: it keys the caches),
and the choices the sidebar offers."""
from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path

import streamlit as st

from berds_core.retrieval import index_folder
from berds_core.runs import DEFAULT_POLICY, POLICIES
from berds_core.studio.data import DEMO, FROM_DATASET

UPLOAD = "Upload a file"
FORMATS = ["auto", "jsonl", "qe", "csv", "debate-sites", "perspectrum"]
LABEL_SOURCES = ["gold", "judge"]  # where a page's labels come from; the first one available is the default
DEFAULT_EMBEDDER_LABEL = "all-MiniLM-L6-v2"
JUDGE_CHOICES = ["embedded", "berds-evaluator", "custom spec"]
INDEX_FOLDER = "index folder"


@dataclass(frozen=True)
class Config:
    """What the sidebar selects; hashable, so it keys caches."""

    dataset: str = DEMO
    dataset_path: str = ""
    dataset_format: str = "auto"
    gold_path: str = ""
    corpus: str = FROM_DATASET
    corpus_path: str = ""
    retriever: str = "bm25"
    embedder: str = DEFAULT_EMBEDDER_LABEL
    judge: str = "embedded"

    def label(self) -> str:
        data = "demo" if self.dataset == DEMO else Path(self.dataset_path).name
        retriever, folder = self.retriever, index_folder(self.retriever)
        if folder is not None:
            retriever = "index " + Path(folder).name
        return f"{data} · {retriever} · judge {self.judge}"

    def as_dict(self) -> dict:
        return asdict(self)


def embedder_model(label: str) -> str | None:
    return None if not label or label == DEFAULT_EMBEDDER_LABEL else label


def current_config() -> Config:
    return st.session_state.get("config") or Config()


def config_key(cfg: Config) -> tuple:
    return tuple(asdict(cfg).items())


def choose_policy(where, key: str) -> str:
    """The label policy a page scores a judge's labels with (``runs.POLICIES``; default ``DEFAULT_POLICY``, as
    the CLI's ``--policy``): a radio in ``where`` (a column, or ``st``)."""
    names = list(POLICIES)
    return where.radio("Judge labels count", names, index=names.index(DEFAULT_POLICY), key=key, horizontal=True,
                       help=" · ".join(f"**{n}**: {POLICIES[n]}" for n in names)
                       + f". Default {DEFAULT_POLICY}, as `--policy` on the command line.")
