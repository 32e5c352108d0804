"""Named configurations. ``diverse`` is the best offline configuration found on
development data (see bench/diversity.py and the commit that last changed it)."""
from __future__ import annotations

PRESETS: dict[str, dict] = {
    # Tuned on procon.json (50 questions, gold labels) - the development set the
    # issue names; checked on the demo bundle. Dense MiniLM, then the coverage
    # re-ranker over the top 15 with the offline yes/no sides as the stance pair
    # (coverage.stance_probs, temperature 0.01) and relevance weight 0.3.
    "diverse": {
        "retriever": "dense",       # default embedder (packaged MiniLM)
        "method": "coverage",
        "qe_source": "offline",
        "coverage_probs": "stance",
        "temperature": 0.01,
        "alpha": 0.3,
        "candidates": 15,
    },
}


def get_preset(name: str) -> dict:
    try:
        return dict(PRESETS[name])
    except KeyError:
        raise ValueError(f"unknown preset {name!r}; choose from {', '.join(PRESETS)}") from None
