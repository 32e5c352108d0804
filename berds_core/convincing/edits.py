"""Counterfactual edits of a paragraph and their effect on its win-rate (ConflictingQA, section 6).

Deterministic edits (always available):

- ``control``: the suffix " Thanks for reading!" -- changes the text without
  changing relevance or style; every other edit is measured against it;
- ``prefix``: "The following text is about the question: [question]. " before the paragraph;
- ``keywords``: keyword stuffing -- the question's content words (stop words
  removed, in the question's order, once each) appended as a sentence.

LLM-written edits (through a generator, greedy and cached): ``science`` (add
a scientific reference), ``information`` (add relevant information),
``objective`` (rewrite in an objective tone) -- the stylistic edits -- and
``stance`` (add one sentence that states the paragraph's answer), a relevance edit.

:func:`counterfactuals` re-asks every comparison of a paragraph (against the
same opponents, both orders) with the paragraph replaced by each edit, and
reports per edit the mean change in win-rate against ``control`` with a
bootstrap interval over edited paragraphs.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from .data import QuestionSet
from .features import STOP, words
from .pairs import decide, win_indicator
from ..eval.evaluation import bootstrap_ci

CONTROL_SUFFIX = " Thanks for reading!"
DETERMINISTIC = ("control", "prefix", "keywords")
LLM_EDITS = {
    "science": ("Rewrite the paragraph below so that it supports what it says with a reference to a scientific "
                "study or expert source. Keep its position and everything else it says."),
    "information": ("Rewrite the paragraph below adding one or two sentences of relevant, specific information "
                    "that supports its position. Keep everything else it says."),
    "objective": ("Rewrite the paragraph below in a neutral, objective, encyclopedic tone. Keep its position and "
                  "its facts."),
    "stance": ("Add one sentence at the start of the paragraph below that states plainly that the answer to the "
               "question \"{question}\" is {answer}. Keep the rest of the paragraph unchanged."),
}
EDITS = DETERMINISTIC + tuple(LLM_EDITS)


def keywords(question: str) -> list[str]:
    return list(dict.fromkeys(w for w in words(question) if w not in STOP))


def deterministic_edit(name: str, question: str, text: str) -> str:
    if name == "control":
        return text + CONTROL_SUFFIX
    if name == "prefix":
        return f"The following text is about the question: {question}. {text}"
    if name == "keywords":
        return f"{text} {' '.join(keywords(question))}."
    raise ValueError(f"unknown deterministic edit {name!r}; choose from {', '.join(DETERMINISTIC)}")


def edit_messages(name: str, question: str, text: str, side: str) -> list[dict]:
    instr = LLM_EDITS[name].format(question=question, answer="Yes" if side == "yes" else "No")
    return [{"role": "user", "content": f"{instr} Reply with the rewritten paragraph only.\n\n"
                                        f"Question: {question}\nParagraph: {text}"}]


def apply_edits(names: Sequence[str], items: Sequence[tuple[str, object]], editor=None,
                max_new_tokens: int = 384) -> dict[str, list[str]]:
    """Edited texts per edit name, for (question, Paragraph) items; LLM edits need ``editor``."""
    out: dict[str, list[str]] = {}
    for name in names:
        if name in DETERMINISTIC:
            out[name] = [deterministic_edit(name, q, p.text) for q, p in items]
        elif name in LLM_EDITS:
            if editor is None:
                raise ValueError(f"edit {name!r} is written by an LLM: give an editor generator")
            texts = editor.generate([edit_messages(name, q, p.text, p.side) for q, p in items],
                                    max_new_tokens=max_new_tokens)
            out[name] = [t.strip() or p.text for t, (_, p) in zip(texts, items)]
        else:
            raise ValueError(f"unknown edit {name!r}; choose from {', '.join(EDITS)}")
    return out


def counterfactuals(sets: Sequence[QuestionSet], outcomes: Sequence[dict], paragraph_ids: Sequence[str],
                    generator, *, edits: Sequence[str] = DETERMINISTIC, editor=None, n_boot: int = 1000,
                    seed: int = 0, level: float = 0.95) -> dict:
    """Win-rate of each chosen paragraph under each edit (same opponents, both orders) and the change
    against ``control``.

    Returns ``{"edits": {name: {"delta", "lo", "hi", "n"}}, "paragraphs": {pid: {name: win_rate, "original": ...}},
    "texts": {pid: {name: text}}}``; ``delta`` is mean(win-rate(edit) - win-rate(control)).
    """
    edits = list(dict.fromkeys(["control", *edits]))
    by_id = {p.id: (qs, p) for qs in sets for p in qs.paragraphs}
    chosen = [pid for pid in paragraph_ids if pid in by_id]
    items = [(by_id[pid][0].question, by_id[pid][1]) for pid in chosen]
    edited = apply_edits(edits, items, editor)
    asked = {}  # pid -> list of (opponent id, paragraph first?) from the original outcomes
    for o in outcomes:
        for pid, first in ((o["first"], True), (o["second"], False)):
            asked.setdefault(pid, []).append((o["second"] if first else o["first"], first))
    comps, owner = [], []
    for i, pid in enumerate(chosen):
        qs, p = by_id[pid]
        for name in edits:
            text = edited[name][i]
            for opp_id, first in asked.get(pid, []):
                opp = by_id[opp_id][1]
                a, b = ((p, text), (opp, opp.text)) if first else ((opp, opp.text), (p, text))
                comps.append({"question_id": qs.id, "question": qs.question, "first": a[0].id, "second": b[0].id,
                              "first_side": a[0].side, "second_side": b[0].side, "first_text": a[1],
                              "second_text": b[1]})
                owner.append((pid, name, opp_id))
    outs = decide(generator, comps)
    orig: dict[str, dict[str, list[float]]] = {}
    for o in outcomes:
        for pid, other, side in ((o["first"], o["second"], o["first_side"]), (o["second"], o["first"], o["second_side"])):
            orig.setdefault(pid, {}).setdefault(other, []).append(win_indicator(o["p_yes"], side))
    won: dict[tuple[str, str], dict[str, list[float]]] = {}
    for (pid, name, opp_id), o in zip(owner, outs):
        side = by_id[pid][1].side
        won.setdefault((pid, name), {}).setdefault(opp_id, []).append(win_indicator(o["p_yes"], side))
    per = {}
    for pid in chosen:
        row = {"original": float(np.mean([np.mean(v) for v in orig.get(pid, {}).values()])) if orig.get(pid) else None}
        for name in edits:
            vs = won.get((pid, name), {})
            row[name] = float(np.mean([np.mean(v) for v in vs.values()])) if vs else None
        per[pid] = row
    summary = {}
    for name in edits:
        d = np.asarray([per[p][name] - per[p]["control"] for p in chosen
                        if per[p][name] is not None and per[p]["control"] is not None], dtype=float)
        if d.size == 0:
            summary[name] = {"delta": None, "lo": None, "hi": None, "n": 0}
            continue
        lo, hi = bootstrap_ci(d, n_boot=max(1, n_boot), seed=seed, level=level)
        summary[name] = {"delta": float(d.mean()), "lo": lo, "hi": hi, "n": int(d.size),
                         "mean_win_rate": float(np.mean([per[p][name] for p in chosen if per[p][name] is not None]))}
    return {"edits": summary, "paragraphs": per,
            "texts": {pid: {name: edited[name][i] for name in edits} for i, pid in enumerate(chosen)}}
