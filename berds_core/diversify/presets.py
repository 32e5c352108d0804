"""Presets: named, saved pipelines (spec strings, docs/pipelines.md). ``diverse`` is the configuration chosen by question-grouped cross-validation on
development data (procon, PERSPECTRUM train/dev, the demo bundle): ``bench/diversity.py`` picks every knob
inside each fold, reports the out-of-fold figures, and prints the choice made on all development questions,
which is what ships here (see docs/diversity.md for the figures)."""
from __future__ import annotations

from .pipeline import Pipeline

PRESETS: dict[str, str] = {
    # Dense MiniLM, then the coverage re-ranker over the dense top 6 (ranks 7-k: dense's own order), covering
    # the question's yes- and no-side with the studio's stance model's P(yes), P(no) (berds_core.stance,
    # weights stance/weights/stance_v3.npz trained on every development source by scripts/train_stance.py),
    # each (question, candidate) pair read at 112 word pieces, relevance weight 0.1, relevance = half the dense
    # score and half P(on the question) (mix 0.5), nothing kept in place: the row "dense + coverage, stance
    # model, within the CPU budget" of bench/diversity.py (candidates x tokens bounded so the preset costs
    # <= 1.5x plain dense, cold), knobs chosen on all 744 development questions by the bench's rule (best
    # macro MRecall@5 among settings that lose Precision@5 on no corpus). Out of fold (five question-grouped
    # folds; each fold's stance model and knobs chosen without its questions; fp32, Zen 4, 2026-11-28; every
    # fold chose this setting): pooled MRecall@5 0.489 vs dense 0.477, Precision@5 0.613 vs 0.612
    # (docs/diversity.md). Until 2026-11-28 mix was 1 (the bf16 run's choice), which the fp32 run no longer
    # chose: on the development questions mix 1 gives 0.484 / 0.612.
    "diverse": "dense%6>>coverage(probs=model,alpha=0.1,mix=0.5,tokens=112)",
}


def get_preset(name: str) -> Pipeline:
    """The saved pipeline of a preset (ValueError naming the choices for an unknown name)."""
    try:
        spec = PRESETS[name]
    except KeyError:
        raise ValueError(f"unknown preset {name!r}; choose from {', '.join(PRESETS)}") from None
    return Pipeline.parse(spec)


def as_pipeline(spec) -> Pipeline:
    """A Pipeline as is; a spec string parsed; a preset name (``diverse``) its saved pipeline."""
    if isinstance(spec, Pipeline):
        return spec
    text = str(spec).strip()
    text = {"rerank": "coverage", "preset": "diverse"}.get(text, text)  # the old method names
    if text in PRESETS:
        return get_preset(text)
    return Pipeline.parse(text)
