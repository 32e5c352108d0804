"""Two retrieval configurations, their answers and the answer metrics: what the Answers page runs.

A configuration is (retriever, diversifier method, prompt). For each, the question's top k
(``berds_core.experiment.run``: the method names a pipeline; ``none`` is the retriever's own order), an
answer from them (``answer_rows``) and its scores (``evaluate_answers``).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from .coverage import AnswerScoring, evaluate_answers
from .generate import answer_rows


@dataclass(frozen=True)
class AnswerConfig:
    """One side of the comparison; hashable (keys caches)."""

    retriever: str = "bm25"
    method: str = "none"
    prompt: str = "basic"

    def label(self) -> str:
        return f"{self.retriever} · {self.method} · {self.prompt}"


def answer_config(entries: Sequence[dict], generator, prompt: str, k: int, scoring: AnswerScoring, *,
                  max_new_tokens: int = 256) -> dict:
    """Answers for ``entries`` and their scores (``scoring``): ``{"rows", "summary", "per_question"}``."""
    rows = answer_rows(entries, generator, k=k, prompt=prompt, max_new_tokens=max_new_tokens)
    res = evaluate_answers(rows, scoring, k=k)
    return {"rows": rows, **res}
