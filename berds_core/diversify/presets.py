"""Named configurations. ``diverse`` is the configuration chosen by question-grouped cross-validation on
development data (procon, PERSPECTRUM train/dev, the demo bundle): ``bench/diversity.py`` picks every knob
inside each fold, reports the out-of-fold figures, and prints the choice made on all development questions,
which is what ships here (see docs/diversity.md for the figures)."""
from __future__ import annotations

PRESETS: dict[str, dict] = {
    # Dense MiniLM, then the coverage re-ranker over the dense top 15, covering the question's offline
    # yes- and no-side with the cosine-to-sides rule (coverage.stance_probs, temperature 0.01), relevance
    # weight 0.7: the row "dense + coverage, cosine-to-sides rule" of bench/diversity.py, knobs chosen on all
    # 744 development questions (out of fold: MRecall@5 0.492 vs dense 0.469, Precision@5 0.608 vs 0.612).
    # The trained stance cross-encoder (coverage_probs "model") is not used: its out-of-fold side accuracy
    # was below the cosine rule's (docs/diversity.md).
    "diverse": {
        "retriever": "dense",       # default embedder (packaged MiniLM)
        "method": "coverage",
        "qe_source": "offline",
        "coverage_probs": "stance",
        "temperature": 0.01,
        "alpha": 0.7,
        "candidates": 15,
    },
}


def get_preset(name: str) -> dict:
    try:
        return dict(PRESETS[name])
    except KeyError:
        raise ValueError(f"unknown preset {name!r}; choose from {', '.join(PRESETS)}") from None
