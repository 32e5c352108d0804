"""The judge interface and its SQLite prediction cache.

A judge scores (passage, perspective) pairs: a probability that the passage
supports the perspective and a label (probability >= threshold). Every
probability is cached in ``cache_dir("judges")/predictions.sqlite`` under the
judge's stable name and the sha1 of passage and perspective, and committed as
each batch finishes: re-judging is instant and an interrupted run keeps what
was done.
"""
from __future__ import annotations

from pathlib import Path
from typing import Sequence

import numpy as np

from ..files.cache import cache_dir, text_hash
from ..files.kvcache import KeyValueCache
from ..naming import safe_name
from ..runs import document_text

Pair = tuple[str, str]


class JudgeError(RuntimeError):
    """A judge could not produce predictions (server down, garbage answer, model missing)."""


class PredictionCache(KeyValueCache):
    """Probabilities keyed by (judge name, sha1(passage), sha1(perspective)) in SQLite (``files.kvcache``)."""

    table, namespace, keys, value, value_type = "preds", "judge", ("passage", "perspective"), "prob", "REAL"
    chunk = 800  # 400 pairs per SELECT

    def __init__(self, path: Path | None = None):
        super().__init__(path or cache_dir("judges") / "predictions.sqlite")

    def encode(self, value) -> float:
        return float(value)


def prediction_cache() -> PredictionCache:
    """The cache of the current ``BERDS_CACHE`` (one connection per cache directory)."""
    return PredictionCache.shared(cache_dir("judges") / "predictions.sqlite")


class Judge:
    """Base class: subclasses set ``backend`` and implement ``_score(pairs) -> probs``.

    ``_score`` gets unique, uncached pairs in chunks of ``commit_every``; each
    chunk's probabilities are written to the cache before the next starts.
    A subclass may call ``self._commit(pairs, probs)`` itself for partial
    results of a failing chunk.
    """

    backend = "base"
    commit_every = 256
    band: tuple[float, float] | None = None  # probabilities it cannot tell from its threshold ("unsure"); None: none
    group_band: tuple[float, float] | None = None  # the same for members of opposite perspectives (a one-side rule)

    def __init__(self, threshold: float = 0.5):
        self.threshold = float(threshold)
        self.forward_calls = 0  # how many times _score ran (tests check cache hits)
        self.partial_commits = 0  # partial results of failing chunks saved by _commit

    # -- naming ---------------------------------------------------------
    @property
    def name(self) -> str:
        return safe_name(f"{self._name_stem()}-t{self.threshold:g}")

    def _name_stem(self) -> str:
        raise NotImplementedError

    @property
    def cache_key(self) -> str:
        """Cache namespace: the name without the threshold (probabilities don't depend on it)."""
        return safe_name(self._name_stem())

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name}>"

    # -- scoring --------------------------------------------------------
    def _score(self, pairs: list[Pair]) -> np.ndarray:
        raise NotImplementedError

    def _before_scoring(self) -> None:
        """Called once by :meth:`predict` when some pairs are not cached, before scoring starts."""

    def status(self) -> dict:
        """``{"ok": bool, "detail": str}`` for the app's sidebar (loaded / reachable / why not)."""
        return {"ok": True, "detail": "ready"}

    def topical(self, question: str, docs: Sequence[str]) -> np.ndarray | None:
        """Per passage text: is it about ``question``? A passage that is not supports nothing (``gate``).
        None: this judge has no topicality gate (an LLM judge reads the passage itself)."""
        return None

    def decide(self, question: str | None, docs: Sequence[str], perspectives: Sequence[str], probs: np.ndarray,
               labels: np.ndarray, groups) -> tuple[np.ndarray, np.ndarray]:
        """One passage, one side: probabilities and labels (passages x perspectives) after the judge's rule for
        the ``groups`` of perspectives that exclude each other (:mod:`berds_core.judges.groups`). A judge
        without such a rule (the LLM judges: the paper's evaluator reads each pair) keeps every pair's."""
        return probs, labels

    def document(self, ctx: dict) -> str:
        """The text this judge reads for a run passage ``{text, title?}``: by default what the BERDS
        evaluator reads, ``text + " " + title`` when the passage has a title (spec section 3.5)."""
        return document_text(ctx)

    def _commit(self, pairs: Sequence[Pair], probs: Sequence[float]) -> None:
        keys = [(text_hash(p), text_hash(s)) for p, s in pairs]
        prediction_cache().put_many(self.cache_key, zip(keys, probs))
        self.partial_commits += bool(len(keys))

    def _lookup(self, pairs: Sequence[Pair]):
        pairs = [(str(p), str(s)) for p, s in pairs]
        keys = [(text_hash(p), text_hash(s)) for p, s in pairs]
        known = prediction_cache().get_many(self.cache_key, list(dict.fromkeys(keys)))
        todo: dict[tuple[str, str], Pair] = {}
        for k, pair in zip(keys, pairs):
            if k not in known and k not in todo:
                todo[k] = pair
        return keys, known, todo

    def uncached(self, pairs: Sequence[Pair]) -> list[tuple[tuple[str, str], Pair]]:
        """``(cache key, pair)`` of the unique pairs not in the cache, in the order :meth:`predict` scores
        them (``commit_every`` at a time): what a cluster has left to judge (``berds_core.distributed``)."""
        return list(self._lookup(pairs)[2].items())

    def predict(self, pairs: Sequence[Pair], progress: bool = False, desc: str | None = None
                ) -> tuple[np.ndarray, np.ndarray]:
        """Probabilities (float32) and labels (bool) for ``pairs``, through the cache."""
        keys, known, todo = self._lookup(pairs)
        cache = prediction_cache()
        if todo:
            from tqdm.auto import tqdm

            self._before_scoring()  # e.g. load the model: a missing one fails before any progress bar

            items = list(todo.items())
            bar = tqdm(total=len(items), desc=desc or f"judge {self.name}", unit="pair",
                       disable=not progress, leave=False)
            try:
                for i in range(0, len(items), self.commit_every):
                    chunk = items[i:i + self.commit_every]
                    probs = np.asarray(self._score([pair for _, pair in chunk]), dtype=np.float64)
                    self.forward_calls += 1
                    if probs.shape != (len(chunk),) or not np.all(np.isfinite(probs)):
                        raise JudgeError(f"judge {self.name} returned invalid probabilities")
                    cache.put_many(self.cache_key, [(k, p) for (k, _), p in zip(chunk, probs)])
                    known.update({k: float(p) for (k, _), p in zip(chunk, probs)})
                    bar.update(len(chunk))
            finally:
                bar.close()
        probs = np.array([known[k] for k in keys], dtype=np.float32)
        return probs, probs >= self.threshold


def gate(judge: Judge, question: str | None, docs: Sequence[str], probs: np.ndarray, labels: np.ndarray
         ) -> tuple[np.ndarray, np.ndarray]:
    """Topicality first: probabilities (passages x perspectives) of passages the judge finds off the question's
    topic become 0 and their labels False (a copy; unchanged when the judge has no gate or no question)."""
    if question is None or not len(docs):
        return probs, labels
    on = judge.topical(question, list(docs))
    if on is None or on.all():
        return probs, labels
    probs, labels = np.array(probs, copy=True), np.array(labels, copy=True)
    probs[~on], labels[~on] = 0.0, False
    return probs, labels
