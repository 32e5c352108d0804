"""Judge the labelled pairs of an annotation database: the one engine call behind the Agreement page's
"Run judge" button and ``berds agreement --judge SPEC``.

The labelled pairs are every pair some person or source has labelled: annotators' labels (skips left
out), adjudicated gold and reference labels (gold known in advance). A judge's verdicts are stored
once, under its stable name (``judge.name``, never the spec typed), and only for the pairs that have
none from that judge yet: a second call after new labels judges the new pairs alone.
"""
from __future__ import annotations

from .store import Store
from .tasks import judge_probabilities


def labelled_pair_ids(store: Store) -> list[str]:
    """The ids of the pairs with a label of any kind (annotators', adjudicated gold, reference), sorted."""
    return sorted({l.pair_id for l in store.labels(include_skips=False)} | set(store.gold())
                  | set(store.reference_labels()))


def judge_labelled_pairs(store: Store, judge) -> dict:
    """Store ``judge``'s verdicts on the labelled pairs that have none from it yet.

    Returns ``{"judge": its stored name, "labelled": pairs with a label, "judged": pairs judged now}``.
    A judge error (a server that went away) propagates; nothing of that call is stored.
    """
    ids = labelled_pair_ids(store)
    done = store.judge_preds(judge.name)
    pairs = store.pairs([pid for pid in ids if pid not in done])
    if pairs:  # the store's other pairs of those questions name the perspectives a group's members are read with
        keys = {p.question_key for p in pairs}
        context = [p for p in store.pairs() if p.question_key in keys]
        store.set_judge_preds(judge.name, judge_probabilities(pairs, judge, context))
    return {"judge": judge.name, "labelled": len(ids), "judged": len(pairs)}
