"""Retrieve, verify, retrieve again: the pieces of the ``rvr`` stage (:mod:`.stages`) that need no model.

A first round (any retriever or pipeline) ranks the candidates. A stance reader (the studio's stance model:
P(yes side), P(no side), P(off the question) of a (question, passage) pair) reads the first ``read`` of them;
a side is *covered* when one of them argues it (:func:`sides_covered`). For each side nobody argues, a second
search runs with that side's statement (``datasets.sides.yes_no_sides``: the question as an affirmative
statement, or its negation), the new passages are read the same way and kept when they argue that side
(:func:`verified`), and :func:`merge` places up to ``add`` of them per missing side after the first round's
best ``keep``; the first round's other candidates follow in their order.

Everything here is deterministic: the second round's passages are ordered by score, ties broken by passage
id, and the missing sides are served in side order (yes, then no).
"""
from __future__ import annotations

import numpy as np

from ..records import Hits

RVR_SOURCES = ("sides", "dataset")  # where the second round's queries come from (the stage's ``source``)
SIDES = (0, 1)  # columns of the stance reader's output: P(yes side), P(no side); column 2 is P(off the question)


def side_of(p, threshold: float) -> int | None:
    """The side a passage argues by its stance probabilities ``p`` ([yes, no, off]): the larger of the two
    when it reaches ``threshold``; None when neither does."""
    s = 0 if p[0] >= p[1] else 1
    return s if p[s] >= threshold else None


def sides_covered(P, threshold: float) -> set[int]:
    """The sides (0 yes, 1 no) that at least one row of ``P`` (n x 3 stance probabilities) argues."""
    return {s for s in (side_of(p, threshold) for p in np.asarray(P, dtype=np.float64)) if s is not None}


def missing_sides(P, threshold: float) -> list[int]:
    """The sides nobody among the read rows argues, in side order."""
    got = sides_covered(P, threshold)
    return [s for s in SIDES if s not in got]


def second_round_order(hits, ids) -> list[tuple[int, float]]:
    """A search's ``(row, score)`` hits, best score first, ties broken by passage id (``ids[row]``), each row once."""
    seen, out = set(), []
    for r, sc in sorted(((int(r), float(s)) for r, s in hits), key=lambda t: (-t[1], str(ids(t[0])))):
        if r not in seen:
            seen.add(r)
            out.append((r, sc))
    return out


def verified(hits, P, side: int, threshold: float) -> list[tuple[int, float]]:
    """The ``(row, score)`` hits whose stance probabilities (``P``, one row per hit) argue ``side``, in order."""
    return [h for h, p in zip(hits, np.asarray(P, dtype=np.float64).reshape(len(hits), 3))
            if side_of(p, threshold) == side]


def merge(first: list[tuple[int, float]], found: dict[int, list[tuple[int, float]]], keep: int,
          add: int) -> list[tuple[int, float]]:
    """The merged ranking: the first round's ``keep`` best, then up to ``add`` verified passages of each missing
    side (``found``: side -> its verified ``(row, score)``, in order; the sides taken in turn, yes first), then
    the rest of the first round in its order. No row twice; nothing of the first round is dropped (the
    caller cuts at k)."""
    head = list(first[:max(0, int(keep))])
    seen = {r for r, _ in head}
    extra: list[tuple[int, float]] = []
    queues = {s: [h for h in found[s]] for s in sorted(found)}
    taken = {s: 0 for s in queues}
    while True:
        moved = False
        for s, q in queues.items():
            while q and taken[s] < add:
                r, sc = q.pop(0)
                if r in seen:
                    continue
                extra.append((r, sc))
                seen.add(r)
                taken[s] += 1
                moved = True
                break
        if not moved:
            break
    rest = [(r, sc) for r, sc in first[len(head):] if r not in seen]
    return head + extra + rest


def retrieve_verify(first: Hits, read_probs, search, ids, *, read: int, keep: int, add: int,
                    threshold: float) -> Hits:
    """One question through retrieve-verify-retrieve.

    ``first``: the first round's hits (a :class:`~berds_core.records.Hits` or ``(row, score)`` pairs), best
    first; ``read_probs(rows)``: the stance reader's (len(rows), 3) [yes, no, off] for the question;
    ``search(side)``: the second round's hits (``Hits`` or ``(row, score)`` pairs) for a side's statement; ``ids(row)``: a passage id (ties). Returns :func:`merge`'s ranking as ``Hits``
    (``first`` itself when the read rows argue both sides). The reader sees each row once per call."""
    read_rows = [r for r, _ in first[:max(1, int(read))]]
    missing = missing_sides(read_probs(read_rows), threshold)
    if not missing:
        return Hits.of(first)
    done = set(read_rows)
    found: dict[int, list[tuple[int, float]]] = {}
    hits_of = {s: [h for h in second_round_order(search(s), ids) if h[0] not in done] for s in missing}
    rows = list(dict.fromkeys(r for s in missing for r, _ in hits_of[s]))  # one read per row for both sides
    P = dict(zip(rows, np.asarray(read_probs(rows), dtype=np.float64).reshape(len(rows), 3))) if rows else {}
    for s in missing:
        found[s] = verified(hits_of[s], [P[r] for r, _ in hits_of[s]], s, threshold)
    return Hits.of(merge(list(first), found, keep, add))
