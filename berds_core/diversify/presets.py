"""Named configurations. ``diverse`` is the configuration chosen by question-grouped cross-validation on
development data (procon, PERSPECTRUM train/dev, the demo bundle): ``bench/diversity.py`` picks every knob
inside each fold, reports the out-of-fold figures, and prints the choice made on all development questions,
which is what ships here (see docs/diversity.md for the figures)."""
from __future__ import annotations

PRESETS: dict[str, dict] = {
    # Dense MiniLM, then the coverage re-ranker over the dense top 20, covering the question's yes- and
    # no-side with the trained stance cross-encoder's P(yes), P(no) (diversify/stance.py, weights
    # judges/weights/stance_v2.npz trained on all development questions), relevance weight 0.3: the row
    # "dense + coverage, trained stance model" of bench/diversity.py, knobs chosen on all 744 development
    # questions. Out of fold (fold models never saw their questions; AVX-512/bf16 CPU, 2026-11-25): pooled
    # MRecall@5 0.492 vs dense 0.476, Precision@5 0.611 vs 0.609; above dense on MRecall@5 on every corpus
    # (docs/diversity.md). The cosine-to-sides rule the preset used before gave no gain on that machine.
    "diverse": {
        "retriever": "dense",       # default embedder (packaged MiniLM)
        "method": "coverage",
        "coverage_probs": "model",  # the trained stance cross-encoder
        "candidates_from": "retriever",
        "candidates": 20,           # the grid stops at 20 for the time budget (bench/diversity.py)
        "alpha": 0.3,
        "mix": 1.0,                 # relevance = the dense score alone
    },
}


def get_preset(name: str) -> dict:
    try:
        return dict(PRESETS[name])
    except KeyError:
        raise ValueError(f"unknown preset {name!r}; choose from {', '.join(PRESETS)}") from None
