"""Which side wins? ConflictingQA's convincingness experiments on any set of paragraphs with stances.

- :mod:`.data`: paragraphs with a side ("yes"/"no") from ConflictingQA files,
  or from a run with gold labels, a judge (+ the leaning sides) or given stances;
- :mod:`.pairs`: both orders of every (or a seeded sample of) yes/no pairing,
  the model's answer from Yes/No log-probabilities, win-rates with bootstrap
  intervals, position bias;
- :mod:`.features`: paragraph features and their rank correlation with win-rate;
- :mod:`.edits`: counterfactual edits (deterministic and LLM-written) and the
  change in win-rate against the control edit.

:func:`run_experiment` runs them in order over a list of question sets.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from .data import Paragraph, QuestionSet, from_run, load_conflictingqa, parse_side
from .edits import CONTROL_SUFFIX, DETERMINISTIC, EDITS, LLM_EDITS, apply_edits, counterfactuals, deterministic_edit
from .features import FEATURES, correlations, paragraph_features
from .pairs import comparisons, decide, pair_prompt, pairings, position_bias, win_indicator, win_rates

__all__ = ["CONTROL_SUFFIX", "DETERMINISTIC", "EDITS", "FEATURES", "LLM_EDITS", "Paragraph", "QuestionSet",
           "Experiment", "apply_edits", "comparisons", "correlations", "counterfactuals", "decide", "deterministic_edit",
           "from_run", "load_conflictingqa", "pair_prompt", "pairings", "paragraph_features", "parse_side",
           "position_bias", "run_experiment", "win_indicator", "win_rates"]


@dataclass(frozen=True)
class Experiment:
    """The settings of one convincingness experiment (the models are given beside it).

    ``pairing`` / ``max_pairs`` / ``seed``: which yes/no pairings are compared (:func:`pairings`);
    ``min_opponents``: a paragraph with fewer comparisons is dropped; ``features``: correlate
    paragraph features with win-rate; ``edits``: the counterfactual edits (:data:`EDITS`), applied to
    ``edit_sample`` kept paragraphs (a seeded sample; None: all); ``n_boot``: bootstrap resamples.
    """

    pairing: str = "all"
    max_pairs: int | None = None
    seed: int = 0
    min_opponents: int = 5
    features: bool = True
    edits: tuple[str, ...] = ()
    edit_sample: int | None = 20
    n_boot: int = 1000


def run_experiment(sets: Sequence[QuestionSet], decider, settings: Experiment = Experiment(), *, embedder=None,
                   ppl_generator=None, editor=None, progress: bool = False) -> dict:
    """Win-rates, position bias, feature correlations and counterfactual effects for ``sets``.

    ``decider``: the generator whose Yes/No answer decides each comparison; ``editor`` writes the
    LLM edits (default: the decider); ``embedder`` / ``ppl_generator``: for the paragraph features.
    """
    pairing, max_pairs, seed, min_opponents = settings.pairing, settings.max_pairs, settings.seed, settings.min_opponents
    features, edits, edit_sample, n_boot = settings.features, settings.edits, settings.edit_sample, settings.n_boot
    sets = [qs for qs in sets if qs.by_side("yes") and qs.by_side("no")]
    comps = comparisons(sets, pairing, max_pairs, seed)
    outcomes = decide(decider, comps, progress=progress)
    wr = win_rates(outcomes, min_opponents=min_opponents, n_boot=n_boot, seed=seed)
    by_id = {p.id: (qs, p) for qs in sets for p in qs.paragraphs}
    kept = list(wr["paragraphs"])
    rows = []
    for pid in kept:
        qs, p = by_id[pid]
        rows.append({"id": pid, "question_id": qs.id, "question": qs.question, "side": p.side, "title": p.title,
                     "text": p.text, "rank": p.rank, "score": p.score, **{k: v for k, v in wr["paragraphs"][pid].items()
                                                                          if k not in ("question_id", "side")}})
    out = {"questions": len(sets), "paragraphs": len(kept), "comparisons": len(outcomes),
           "dropped_paragraphs": wr["dropped"], "min_opponents": min_opponents, "decider": decider.name,
           "position_bias": position_bias(outcomes, n_boot=n_boot, seed=seed), "by_side": by_side(rows),
           "rows": rows, "outcomes": outcomes, "correlations": None, "counterfactuals": None}
    if features and rows:
        feats = paragraph_features([(by_id[r["id"]][0].question, by_id[r["id"]][1]) for r in rows],
                                   embedder=embedder, ppl_generator=ppl_generator)
        for r, f in zip(rows, feats):
            r["features"] = f
        out["correlations"] = correlations(feats, [r["win_rate"] for r in rows], n_boot=n_boot, seed=seed)
    if edits and rows:
        chosen = kept
        if edit_sample is not None and edit_sample < len(kept):
            rng = np.random.default_rng(seed)
            chosen = [kept[i] for i in sorted(rng.choice(len(kept), size=int(edit_sample), replace=False))]
        out["counterfactuals"] = counterfactuals(sets, outcomes, chosen, decider, edits=edits, editor=editor or decider,
                                                 n_boot=n_boot, seed=seed)
    return out


def by_side(rows: Sequence[dict]) -> dict:
    """Mean win-rate of the kept paragraphs of each side."""
    out = {}
    for side in ("yes", "no"):
        w = [r["win_rate"] for r in rows if r["side"] == side]
        out[side] = {"n": len(w), "mean_win_rate": float(np.mean(w)) if w else None}
    return out
