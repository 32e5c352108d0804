"""A qualification round: N gold pairs to pass before an annotator gets a task set's real queue.

With ``qualification_n > 0`` in a task set's controls
(:class:`~berds_core.lab.controls.RoundControls`), an annotator's queue in that set
stays closed until they pass. An attempt draws ``n`` pairs with a known answer
(:func:`berds_core.lab.checks.known_answers`) that the annotator was never given,
classes balanced (half of each, an odd one at random) in random order; the page
shows each with the guidelines beside it. Nothing is said about an answer until
the attempt's last one: then the score and, per pair, the expected answer
(:func:`feedback`), so no answer can be read off the previous one. An attempt passes
when the share answered correctly reaches ``qualification_pass``. A failed attempt
is reported to the lead (Agreement -> Round health), who may allow another attempt
(:func:`allow_retry`, fresh pairs). Everything is stored (``qualification``,
``qualification_results``), exported (:func:`qualification_rows`) and shown to
reviewers.
"""
from __future__ import annotations

import logging

from .checks import balanced_classes, draw_balanced, rng_for, unseen_answers
from .controls import get_controls

log = logging.getLogger("berds.lab.qualification")

STATES = ("open", "pending", "in_progress", "passed", "failed")


class QualificationError(ValueError):
    """A qualification step that cannot be done (too few pairs with a known answer, nothing to answer...)."""


def status(store, task_set: str, annotator: str) -> dict:
    """Where an annotator stands: ``state`` is ``open`` (no qualification asked), ``pending`` (an attempt
    is to start), ``in_progress``, ``passed`` or ``failed`` (waiting for the lead)."""
    def latest() -> tuple[int, dict | None]:
        attempt = store.qualification.latest_attempt(task_set, annotator)
        if not attempt:
            return 0, None
        items = store.qualification.items(task_set, annotator, attempt)
        answered = [i for i in items if i["label"] is not None]
        return attempt, {"n": len(items), "answered": len(answered), "correct": sum(bool(i["correct"]) for i in answered)}

    return status_of(task_set, annotator, get_controls(store, task_set),
                     store.qualification.results(task_set, annotator), latest)


def status_of(task_set: str, annotator: str, c, results: list[dict], latest) -> dict:
    """:func:`status` from what was read: the set's controls ``c``, the annotator's ``results`` (rows of
    ``qualification_results`` by attempt) and ``latest()``, ``(latest attempt or 0, {n, answered, correct} of
    its items or None)``, called only when needed (a request's round view passes what it read at once)."""
    base = {"task_set": task_set, "annotator": annotator, "required": c.qualification_n > 0,
            "n": c.qualification_n, "pass_mark": c.qualification_pass, "attempts": results}
    if any(r["passed"] for r in results):
        best = next(r for r in results if r["passed"])
        return {**base, "state": "passed", "attempt": best["attempt"], "correct": best["correct"],
                "answered": best["n"]}
    if c.qualification_n == 0:
        return {**base, "state": "open", "attempt": 0, "correct": 0, "answered": 0}
    attempt, items = latest()
    done = {r["attempt"]: r for r in results}
    if attempt and attempt in done:
        last = done[attempt]
        state = "pending" if last["retry_by"] else "failed"
        return {**base, "state": state, "attempt": attempt, "correct": last["correct"], "answered": last["n"]}
    items = items if attempt else None
    return {**base, "state": "in_progress" if items and items["n"] else "pending", "attempt": attempt,
            "correct": items["correct"] if items else 0, "answered": items["answered"] if items else 0}


def passed(store, task_set: str, annotator: str) -> bool:
    """Whether the annotator may have the set's real queue (no qualification asked, or passed)."""
    return status(store, task_set, annotator)["state"] in ("open", "passed")


def start_attempt(store, task_set: str, annotator: str) -> int:
    """Draw the pairs of a new attempt (one transaction); returns its number."""
    c = get_controls(store, task_set)
    if c.qualification_n < 1:
        raise QualificationError(f"task set {task_set!r} asks for no qualification")
    with store.batch():
        st = status(store, task_set, annotator)
        if st["state"] in ("in_progress", "passed", "open"):
            return st["attempt"]
        if st["state"] == "failed":
            raise QualificationError("this qualification was not passed; the lead may allow another attempt")
        attempt = store.qualification.latest_attempt(task_set, annotator) + 1
        pool = unseen_answers(store, annotator)
        if len(pool) < c.qualification_n:
            raise QualificationError(f"only {len(pool)} pairs with a known answer are left for {annotator}; the "
                                     f"qualification needs {c.qualification_n}")
        n = c.qualification_n
        classes = balanced_classes(rng_for(c.seed, "qual-class", task_set, annotator, attempt), n, block=n)
        for pos in range(n):
            pid = draw_balanced(pool, rng_for(c.seed, "qual", task_set, annotator, attempt, pos), classes[pos])
            exp = pool.pop(pid)
            store.qualification.add_item(task_set, annotator, attempt, pos, pid, exp)
    return attempt


def next_item(store, task_set: str, annotator: str) -> dict | None:
    """The next qualification pair to answer (an attempt is started when needed), or None when there is
    none (passed, failed, or none asked). ``{attempt, position, pair_id, index, n}``."""
    st = status(store, task_set, annotator)
    if st["state"] in ("open", "passed", "failed"):
        return None
    attempt = start_attempt(store, task_set, annotator)
    items = store.qualification.items(task_set, annotator, attempt)
    for i, it in enumerate(items):
        if it["label"] is None:
            return {"attempt": attempt, "position": it["position"], "pair_id": it["pair_id"], "index": i,
                    "n": len(items)}
    return None


def answer(store, task_set: str, annotator: str, attempt: int, position: int, label, *,
           time_ms: int | None = None) -> dict:
    """Record an answer (once: a second answer to the same item changes nothing) and say whether the attempt
    is done; after its last item, whether it passed, the score and :func:`feedback` (the expected answer of
    every item). Before that, nothing about any answer (``{"done": False}``)."""
    if label not in (0, 1, "0", "1") or isinstance(label, bool):
        raise QualificationError(f"an answer is 0 or 1, got {label!r}")
    label = int(label)
    c = get_controls(store, task_set)
    with store.batch():
        row = store.qualification.item(task_set, annotator, attempt, position)
        if row is None:
            raise QualificationError("no such qualification item")
        if row["label"] is None:
            store.qualification.answer_item(task_set, annotator, attempt, position, label, label == row["expected"],
                                            None if time_ms is None else max(0, int(time_ms)))
        items = store.qualification.items(task_set, annotator, int(attempt))
        done = all(i["label"] is not None for i in items)
        result = None
        if done:
            got = store.qualification.result(task_set, annotator, attempt)
            if got is None:
                k = sum(bool(i["correct"]) for i in items)
                ok = k / len(items) >= c.qualification_pass
                store.qualification.add_result(task_set, annotator, attempt, ok, k, len(items))
                store.audit.add("qualification", None, "qualified" if ok else "qualification.failed",
                                f"{task_set}/{annotator}", allowed=True, detail=f"{k} of {len(items)} right")
                if not ok:
                    log.warning("%s did not pass the qualification of %s (%d of %d)", annotator, task_set, k, len(items))
                got = {"passed": int(ok), "correct": k, "n": len(items)}
            result = dict(got)
    if not done:
        return {"done": False, "passed": None, "score": None, "items": None}
    return {"done": True, "passed": bool(result["passed"]), "score": {"correct": result["correct"], "n": result["n"]},
            "items": feedback(store, task_set, annotator, int(attempt))}


def feedback(store, task_set: str, annotator: str, attempt: int) -> list[dict] | None:
    """Per item of a finished attempt: ``{pair_id, label, expected, correct}`` (None while it is not finished)."""
    items = store.qualification.items(task_set, annotator, int(attempt))
    if not items or any(i["label"] is None for i in items):
        return None
    return [{"pair_id": i["pair_id"], "label": int(i["label"]), "expected": int(i["expected"]),
             "correct": bool(i["correct"])} for i in items]


def allow_retry(store, task_set: str, annotator: str, by: str) -> bool:
    """The lead lets an annotator who failed try again (fresh pairs); False when there is no failed attempt."""
    st = status(store, task_set, annotator)
    if st["state"] != "failed":
        return False
    with store.batch():
        store.qualification.allow_retry(task_set, annotator, st["attempt"], by)
        store.audit.add(by, None, "qualification.retry", f"{task_set}/{annotator}", allowed=True)
    return True


def overview(store, task_set: str | None = None) -> list[dict]:
    """One row per (task set asking for qualification, annotator with a queue in it): the :func:`status`."""
    out = []
    for ts in ([task_set] if task_set else store.tasks.names()):
        if get_controls(store, ts).qualification_n < 1 and not store.qualification.has_items(ts):
            continue
        out += [{k: v for k, v in status(store, ts, a).items() if k != "attempts"}
                for a in store.qualification.set_annotators(ts)]
    return out


def qualification_rows(store, task_set: str | None = None) -> list[dict]:
    """Every qualification answer with its pair and the attempt's outcome (for exports and reviewers)."""
    rows = store.qualification.answer_rows(task_set)
    return [{"task_set": r["task_set"], "annotator": r["annotator"], "attempt": r["attempt"], "item": r["position"] + 1,
             "id": r["pair_id"], "question": r["question"], "perspective": r["perspective"], "document": r["document"],
             "title": r["title"] or "", "expected": r["expected"], "label": "" if r["label"] is None else r["label"],
             "correct": "" if r["correct"] is None else int(r["correct"]), "at": r["at"] or "",
             "time_ms": "" if r["time_ms"] is None else r["time_ms"],
             "attempt_passed": "" if r["attempt_passed"] is None else int(r["attempt_passed"])} for r in rows]
