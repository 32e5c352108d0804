"""Named configurations. ``diverse`` is the configuration chosen by question-grouped cross-validation on
development data (procon, PERSPECTRUM train/dev, the demo bundle): ``bench/diversity.py`` picks every knob
inside each fold, reports the out-of-fold figures, and prints the choice made on all development questions,
which is what ships here (see docs/diversity.md for the figures)."""
from __future__ import annotations

PRESETS: dict[str, dict] = {
    # Dense MiniLM, then the coverage re-ranker over the dense top 10, the first two kept in place, covering
    # the question's yes- and no-side with the trained stance cross-encoder's P(yes), P(no)
    # (diversify/stance.py, weights judges/weights/stance_v2.npz trained on all development questions),
    # relevance weight 0.1: the row "dense + coverage, trained stance model" of bench/diversity.py, knobs
    # chosen on all 744 development questions by the bench's rule (best macro MRecall@5 among settings that
    # lose Precision@5 on no corpus). Out of fold (fold models never saw their questions; AVX-512/bf16 CPU,
    # 2026-11-25): MRecall@5 above dense on every corpus, Precision@5 no lower on any (docs/diversity.md).
    "diverse": {
        "retriever": "dense",       # default embedder (packaged MiniLM)
        "method": "coverage",
        "coverage_probs": "model",  # the trained stance cross-encoder
        "candidates_from": "retriever",
        "candidates": 10,
        "keep": 2,                  # the dense top 2 stay on top; the re-ranker fills ranks 3-10
        "alpha": 0.1,
        "mix": 1.0,                 # relevance = the dense score alone
    },
}


def get_preset(name: str) -> dict:
    try:
        return dict(PRESETS[name])
    except KeyError:
        raise ValueError(f"unknown preset {name!r}; choose from {', '.join(PRESETS)}") from None
