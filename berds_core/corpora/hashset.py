"""A bounded-memory map from 64-bit keys to rows, for de-duplicating a corpus while it streams.

The on-disk store must drop a passage whose text repeats an earlier one and
refuse a repeated id, as the in-memory loader does, without holding 21M texts
or ids in a Python set. Each text (id) is hashed to 64 bits; the
``(hash, row)`` pairs live in sorted numpy runs (12 bytes a passage: rows are
32-bit up to 2^31 passages), merged log-structured (a new run merges into the
previous one while it is at least half its size) by insertion at binary-searched
positions (no sort, no 64-bit permutation array), so a lookup is one binary
search per run and memory stays linear and small. A hash match is only a *candidate*: the caller compares the
real text (id) of the candidate row, so a 64-bit collision never drops a
passage.
"""
from __future__ import annotations

import numpy as np


class HashRuns:
    """uint64 key -> rows (several rows per key allowed), in sorted runs."""

    def __init__(self):
        self.runs: list[tuple[np.ndarray, np.ndarray]] = []

    def __len__(self) -> int:
        return sum(len(k) for k, _ in self.runs)

    @property
    def nbytes(self) -> int:
        return sum(k.nbytes + r.nbytes for k, r in self.runs)

    def add(self, keys, rows) -> None:
        keys = np.asarray(keys, dtype=np.uint64)
        rows = np.asarray(rows, dtype=np.int64)
        if not len(keys):
            return
        row_type = np.int32 if rows.max() < 2 ** 31 else np.int64
        order = np.argsort(keys, kind="stable")  # one batch: small
        self.runs.append((keys[order], rows[order].astype(row_type)))
        while len(self.runs) > 1 and len(self.runs[-1][0]) * 2 >= len(self.runs[-2][0]):
            (k2, r2), (k1, r1) = self.runs.pop(), self.runs.pop()
            at = np.searchsorted(k1, k2, side="right")  # where each of the newer keys goes, in order
            rt = np.promote_types(r1.dtype, r2.dtype)
            self.runs.append((np.insert(k1, at, k2), np.insert(r1.astype(rt, copy=False), at, r2.astype(rt))))

    def candidates(self, keys) -> dict[int, list[int]]:
        """``{position in keys: [rows with the same key]}`` for the keys already present."""
        keys = np.asarray(keys, dtype=np.uint64)
        out: dict[int, list[int]] = {}
        if not len(keys):
            return out
        for run_keys, run_rows in self.runs:
            lo = np.searchsorted(run_keys, keys, side="left")
            hi = np.searchsorted(run_keys, keys, side="right")
            for pos in np.flatnonzero(hi > lo).tolist():
                out.setdefault(pos, []).extend(run_rows[lo[pos]:hi[pos]].tolist())
        return out
