"""Named configurations. ``diverse`` is the configuration chosen by question-grouped cross-validation on
development data (procon, PERSPECTRUM train/dev, the demo bundle): ``bench/diversity.py`` picks every knob
below inside each fold, reports the out-of-fold figures, and prints the choice made on all development
questions, which is what ships here (see docs/diversity.md for the figures)."""
from __future__ import annotations

PRESETS: dict[str, dict] = {
    # Dense MiniLM, then the coverage re-ranker over the union of the dense and BM25 top `candidates`,
    # covering the question's yes- and no-side with the trained stance cross-encoder's probabilities
    # (coverage_probs "model", diversify/stance.py); relevance = mix * dense score + (1 - mix) * P(on topic).
    "diverse": {
        "retriever": "dense",       # default embedder (packaged MiniLM)
        "method": "coverage",
        "coverage_probs": "model",
        "pool": "union",
        "candidates": 20,
        "alpha": 0.3,
        "mix": 0.5,
    },
}


def get_preset(name: str) -> dict:
    try:
        return dict(PRESETS[name])
    except KeyError:
        raise ValueError(f"unknown preset {name!r}; choose from {', '.join(PRESETS)}") from None
