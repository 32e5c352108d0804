"""Named configurations. ``diverse`` is the best offline configuration found on
development data (see bench/diversity.py and the commit that last changed it)."""
from __future__ import annotations

PRESETS: dict[str, dict] = {
    "diverse": {
        "retriever": "dense",       # default embedder (packaged MiniLM)
        "method": "coverage",
        "qe_source": "offline",
        "alpha": 0.5,
        "lam": 0.9,
        "candidates": 100,
    },
}


def get_preset(name: str) -> dict:
    try:
        return dict(PRESETS[name])
    except KeyError:
        raise ValueError(f"unknown preset {name!r}; choose from {', '.join(PRESETS)}") from None
