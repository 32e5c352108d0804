"""What one request reads of the whole annotation store, read once (issue 54, item 4).

A reviewer's page (Agreement) draws the report, the annotators' table, the round's health and six downloads in
one run; each of them read every label, every pair and the gold labels again (the labels three times, the
pairs six times a run). :class:`RequestReads` stands in for the store for one request: the whole-store reads
(:meth:`pairs`, :meth:`labels`, :meth:`gold`, :meth:`reference_labels`, :meth:`judges`, :meth:`judge_preds`,
:meth:`labels_version`) are read on first use and then answered from memory, each variant (one annotator's
labels, without skips, some pairs) cut from the one read in the order the store gives it. It has those reads and
nothing else: a report that needs another table reads it from :attr:`RequestReads.store`
(:meth:`RequestReads.of` gives a report its reads whether it was handed the store or a request's reads). The
request's own writes go to the store and drop what was read (:meth:`berds_core.lab.access.Lab._changed`); a
long-lived caller uses the store itself.
"""
from __future__ import annotations

from typing import Iterable

from .records import Label, Pair


class RequestReads:
    """The store as one request reads it (see the module docstring)."""

    def __init__(self, store):
        self.store = store
        self._got: dict = {}

    @classmethod
    def of(cls, source) -> "RequestReads":
        """``source`` itself when it is a request's reads (what it read is shared), else fresh reads of the store
        ``source`` (read once for the one report that asks)."""
        return source if isinstance(source, cls) else cls(source)

    def _once(self, key, read):
        if key not in self._got:
            self._got[key] = read()
        return self._got[key]

    def pairs(self, pair_ids: Iterable[str] | None = None) -> list[Pair]:
        """:meth:`~berds_core.lab.store.Store.pairs`: every pair in insertion order, or ``pair_ids`` in the
        order asked (missing ones left out)."""
        every = self._once("pairs", self.store.pairs)
        if pair_ids is None:
            return list(every)
        by_id = self._once("pairs_by_id", lambda: {p.pair_id: p for p in every})
        return [by_id[p] for p in (str(p) for p in pair_ids) if p in by_id]

    def labels(self, annotator: str | None = None, *, include_skips: bool = True) -> list[Label]:
        """:meth:`~berds_core.lab.store.Store.labels`: cut from every label (skips included), in its order."""
        every = self._once("labels", self.store.labels)
        return [lab for lab in every
                if (annotator is None or lab.annotator == annotator) and (include_skips or not lab.skipped)]

    def gold(self) -> dict[str, int]:
        return dict(self._once("gold", self.store.gold))

    def reference_labels(self) -> dict[str, int]:
        return dict(self._once("reference_labels", self.store.reference_labels))

    def judge_preds(self, judge: str) -> dict[str, tuple[float | None, int]]:
        return dict(self._once(("judge_preds", judge), lambda: self.store.judge_preds(judge)))

    def judges(self) -> list[str]:
        return list(self._once("judges", self.store.judges))

    def labels_version(self) -> tuple:
        return self._once("labels_version", self.store.labels_version)
