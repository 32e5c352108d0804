"""The weights of a task set built with the ``active`` strategy (:func:`berds_core.lab.tasks.sample_pairs`): each
pair's inverse inclusion probability, recorded as the store setting ``sample_weights:<task set>`` and read by
the lab's refit of the judge and the agreement report, so a round that put the judge's unsure pairs first
still estimates the round's agreement without bias. Light: reading them loads no judge."""
from __future__ import annotations

WEIGHTS_PREFIX = "sample_weights:"  # a setting per task set built with the active strategy


def sample_weights(store, task_set: str | None = None) -> dict[str, float]:
    """The weights the ``active`` strategy recorded (``{pair_id: weight}``; one task set's, or every set's)."""
    names = [task_set] if task_set else store.tasks.names()
    out: dict[str, float] = {}
    for name in names:
        out.update({k: float(v) for k, v in (store.settings.get(WEIGHTS_PREFIX + name, {}) or {}).items()})
    return out


__all__ = ["WEIGHTS_PREFIX", "sample_weights"]
