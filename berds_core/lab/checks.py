"""Gold checks that act: pairs with a known answer mixed into queues as the round runs, scored, pausing.

**Known answers** (:func:`known_answers`): a dataset's gold and other reference
labels (imported, or typed by a lead: :func:`add_typed_answers`), overridden by
adjudicated labels.

**The pool** of a task set's checks (the store's ``check_pool``): candidates of the set
with a known answer, set aside when it is built (stratified like its task pairs, both
classes: :func:`berds_core.lab.tasks.build_task_set`), so checks come from the same
candidates as the task pairs; adjudicated labels and typed answers join the pool of
every set that holds the pair as the round runs.

**Placement** (:func:`ensure_checks`, called in the transaction of each decision and
whenever an annotator's next pairs are served): with a check rate ``r``
(:class:`~berds_core.lab.controls.RoundControls`), check ``k`` of an annotator in a task
set comes after the ``T_k``-th of their other items, ``T_k`` the sum of ``k`` gaps drawn
uniformly from about ``[g/2, 3g/2]`` (:func:`gap_bounds`) with ``g = (1 - r) / r`` the mean
gap (so one item in ``1/r`` is a check, at places nobody can count on). A slot is filled
only when the annotator is about to reach it (past the next items the page holds, at a
distance drawn per slot: :func:`slot_reach`), so adjudications made meanwhile are in the pool. The check **takes the place** of the task
that was there (:func:`pick_check`: a pool pair of that task's stratum and with the same
judge reveal, a stored judge answer or none), and that task moves to the end of the
annotator's queue: the strata an annotator meets, in the order they meet them, are those
of their queue without checks, in every queue shape (one annotator, every pair to two,
part of each block to many), and the reveal after deciding reads the same. Its classes
are balanced in random order (:func:`balanced_classes`: three of each in every six slots,
so an annotator who always presses the same key scores one half). Never a pair the
annotator was given, labelled or qualified on. No such pair left: the slot is ``dry``
(the round's report says so; in a stratified set a check of another stratum would stand
out in its block, so none is placed). The work is one read of the set's pool
(:meth:`~berds_core.lab.round_tables.CheckTables.candidates`), whatever the number of
reference labels in the store, and three small writes, inside the decision's own
transaction; every decision makes the same reads whether it places a check or not
(:func:`place_after_decision`), so a run that places one costs what any run costs
(``bench/check_placement.py``).
The check is an ordinary assignment of kind ``check``: the annotator's page shows it like
any pair, and the progress counts every planned slot from the start, so its total does
not grow when a check arrives.

**Scores** (:func:`check_scores`): per annotator, decided checks (kinds
``check`` and ``calibration``), each scored on its first decision (undo and a
new label never change a score); a skipped check counts as a wrong answer (and
is counted apart, ``skipped``), so skipping what looks like a check never
escapes the floor; running accuracy and its 95% Wilson interval.

**Pausing** (:func:`after_label`): once an annotator has decided ``check_min``
checks since their last resume, and those checks make it likely
(``check_confidence``, 0.9) that their accuracy is below the lead's
``check_floor`` (:func:`prob_below`: ``P(accuracy < floor)`` after ``k`` of ``n``
right, uniform prior), their queue in that task set pauses (:func:`pause`): a message to
them (their page) and one to the lead (Agreement -> Round health, ``berds
annotations health``). Nothing is deleted; :func:`resume` reopens the queue and
the floor then counts only checks answered after it.
"""
from __future__ import annotations

import hashlib
import logging
import math
from collections import defaultdict
from functools import lru_cache

import numpy as np

from .controls import RoundControls, changed_controls, get_controls

log = logging.getLogger("berds.lab.checks")

CHECK_KINDS = ("check", "calibration")
ANNOTATOR_MESSAGE = ("Your queue in this round is paused by the round's quality control. Nothing you labelled is "
                     "lost. Your lead has been told and can resume it; meanwhile, please reread the guidelines.")


def rng_for(seed: int, *parts) -> np.random.Generator:
    """A generator seeded by ``seed`` and names (task set, annotator, slot): reproducible, independent streams."""
    digest = hashlib.sha256("\x1f".join(map(str, (seed, *parts))).encode("utf-8")).digest()
    return np.random.default_rng(int.from_bytes(digest[:8], "little"))


def wilson_interval(correct: int, n: int, z: float = 1.959964) -> list:
    """95% Wilson score interval of a proportion ``correct / n`` (``[None, None]`` when ``n`` is 0)."""
    if n <= 0:
        return [None, None]
    p = correct / n
    den = 1 + z * z / n
    mid = (p + z * z / (2 * n)) / den
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / den
    return [0.0 if correct == 0 else max(0.0, mid - half), 1.0 if correct == n else min(1.0, mid + half)]


def prob_below(floor: float, correct: int, n: int) -> float:
    """``P(accuracy < floor)`` after ``correct`` of ``n`` checks right, uniform prior: the Beta(k + 1, n − k + 1)
    CDF at ``floor``, computed exactly as ``P(Binomial(n + 1, floor) >= k + 1)``."""
    m = n + 1
    return float(sum(math.comb(m, j) * floor ** j * (1 - floor) ** (m - j) for j in range(correct + 1, m + 1)))


# --------------------------------------------------------------------------- known answers


def known_answers(store) -> dict[str, tuple[int, str]]:
    """``{pair_id: (0/1, source)}``: reference labels, overridden by adjudicated gold (source ``adjudicated``)."""
    out = {r["pair_id"]: (int(r["label"]), r["source"] or "reference") for r in store.checks.reference_label_rows()}
    out.update({pid: (int(lab), "adjudicated") for pid, lab in store.gold().items()})
    return out


def add_typed_answers(store, answers: dict[str, int], by: str) -> dict:
    """Answers a lead typed for pairs, stored as reference labels; each pair joins the check pool of every task
    set that holds it. Returns ``{"stored": n, "pools": [task sets]}``."""
    with store.batch():
        n = store.set_reference_labels(answers, source=f"typed by {by}")
        sets = store.checks.join_pools(list(answers), "typed")
    return {"stored": n, "pools": sets}


def unseen_answers(store, annotator: str) -> dict[str, int]:
    """``{pair_id: answer}`` of the known answers this annotator was never given (qualification draws here)."""
    seen = seen_pairs(store, annotator)
    return {pid: lab for pid, (lab, _) in known_answers(store).items() if pid not in seen}


def seen_pairs(store, annotator: str) -> set[str]:
    """Every pair this annotator was given or labelled, and their qualification pairs: never a check for them."""
    return store.checks.pairs_seen_by(annotator)


def refuse_empty_pool(store, task_set: str, changes: dict) -> None:
    """Refuse (ValueError, one line) to turn gold checks on for a task set whose pool is empty: every slot would
    run dry and nobody would notice (the pool is set aside when the set is built with a check rate)."""
    new = changed_controls(store, task_set, **changes)  # a bad value is refused first, as itself
    if new.checks_on and not get_controls(store, task_set).checks_on \
            and not store.checks.pool_counts(task_set).get(task_set):
        raise ValueError(f"task set {task_set!r} has no pool of gold checks (it was built without checks): build the "
                         "round with a check rate, or type answers for some of its pairs first (berds annotations "
                         "answer)")


def pick_check(candidates, traits, want: int, rng: np.random.Generator) -> str | None:
    """The pair of ``candidates`` (rows ``pair_id, answer, stratum, judged`` of the annotator's unseen pool) a
    check takes in place of a task with ``traits`` (``stratum, judged, strategy``; None: no task there, the check
    goes at the end): one with the task's judge reveal (a stored answer, or none) and of its stratum, of class
    ``want`` where there is one (:func:`draw_balanced`). Outside a stratified set, where order tells no stratum
    apart, another stratum with the same reveal will do. None: nothing fits (the slot runs dry)."""
    cands = list(candidates)
    if traits is None:
        tiers = [cands]
    else:
        reveal = [x for x in cands if bool(x["judged"]) == bool(traits["judged"])]
        same = [x for x in reveal if x["stratum"] == traits["stratum"]]
        tiers = [same] if traits["strategy"] == "stratified" else [same, reveal]
    for tier in tiers:
        pid = draw_balanced({x["pair_id"]: int(x["answer"]) for x in tier}, rng, want)
        if pid is not None:
            return pid
    return None


CLASS_BLOCK = 6  # checks' classes: each run of 6 consecutive slots holds 3 of each class, in random order


def balanced_classes(rng: np.random.Generator, n: int, block: int = CLASS_BLOCK) -> list[int]:
    """``n`` classes, balanced within each block of ``block`` (half of each; an odd block's extra one at
    random), in random order: neither an alternation to read nor a run to bet on."""
    out: list[int] = []
    while len(out) < n:
        ones = block // 2 + (int(rng.integers(2)) if block % 2 else 0)
        out += [int(x) for x in rng.permutation([1] * ones + [0] * (block - ones))]
    return out[:n]


def slot_class(seed: int, task_set: str, annotator: str, k: int) -> int:
    """The class wanted for check slot ``k`` (1-based) of an annotator: :func:`balanced_classes` per block."""
    b, i = divmod(k - 1, CLASS_BLOCK)
    return _class_block(int(seed), task_set, annotator, b)[i]


@lru_cache(maxsize=16384)
def _class_block(seed: int, task_set: str, annotator: str, b: int) -> tuple[int, ...]:
    return tuple(balanced_classes(rng_for(seed, "class", task_set, annotator, b), CLASS_BLOCK))


def draw_balanced(pool: dict[str, int], rng: np.random.Generator, want: int) -> str | None:
    """A random pair of ``pool`` (``{pair_id: answer}``) whose answer is ``want``, else of the other class."""
    for cls in (want, 1 - want):
        ids = sorted(pid for pid, lab in pool.items() if lab == cls)
        if ids:
            return ids[int(rng.integers(len(ids)))]
    return None


# --------------------------------------------------------------------------- placement


def gap_bounds(rate: float) -> tuple[int, int]:
    """The range of other items between two checks, centred on ``g = (1 - r)/r``: ``round(g/2)`` to
    ``round(2g) − round(g/2)`` (about ``3g/2``), so the gaps average ``g`` and one item in ``1/r`` is a check."""
    mean = (1 - rate) / rate
    lo = max(1, int(math.floor(0.5 * mean + 0.5 + 1e-9)))
    return lo, max(lo, int(math.floor(2 * mean + 0.5 + 1e-9)) - lo)


def slot_points(c: RoundControls, task_set: str, annotator: str, upto: int) -> list[int]:
    """``[T_1, T_2, ...]`` up to ``upto`` other items: check ``k`` goes after the ``T_k``-th other item."""
    if not c.checks_on or upto < 1:
        return []
    return list(_points(int(c.seed), float(c.check_rate), task_set, annotator, int(upto)))


@lru_cache(maxsize=4096)
def _points(seed: int, rate: float, task_set: str, annotator: str, upto: int) -> tuple[int, ...]:
    lo, hi = gap_bounds(rate)
    rng = rng_for(seed, "gaps", task_set, annotator)
    out, t = [], 0
    while True:
        t += int(rng.integers(lo, hi + 1))
        if t > upto:
            return tuple(out)
        out.append(t)


def reach_span(rate: float) -> int:
    """How much farther than the look-ahead a slot may be filled: about one mean gap, 4 to 40 items."""
    return int(min(40, max(4, round((1 - rate) / rate))))


@lru_cache(maxsize=65536)
def _reach(seed: int, rate: float, task_set: str, annotator: str, k: int) -> int:
    return int(rng_for(seed, "reach", task_set, annotator, k).integers(0, reach_span(rate) + 1))


def slot_reach(c: RoundControls, task_set: str, annotator: str, k: int) -> int:
    """The extra reach of slot ``k`` (0 to :func:`reach_span`, drawn per slot): the slot is filled once the annotator
    is within ``lookahead + slot_reach`` undecided items of it, so the run that fills it (whatever it costs)
    points at no item: the check is somewhere past the look-ahead, at a distance nobody can count on."""
    return _reach(int(c.seed), float(c.check_rate), task_set, annotator, int(k))


def due_slots(kinds: list[tuple[str, str]], decided, points: list[int], done_slots, lookahead: int,
              reach=None) -> tuple[list[tuple[int, int]], int | None]:
    """The check slots to fill or mark now, ``[(k, T_k)]``, and how many other items the annotator has passed
    (None: none undecided). ``kinds``: ``[(pair, kind)]`` of the queue in order; ``decided``: the pairs they
    decided; ``done_slots``: the slots filled, dry or missed already. Slot ``k`` is due once ``T_k`` is within
    the other items up to the ``lookahead + reach(k)``-th undecided one (``reach``: None, no extra reach)."""
    n_other = sum(kind != "check" for _, kind in kinds)
    extras = {k: (reach(k) if reach is not None else 0) for k in range(1, len(points) + 1) if k not in done_slots}
    far = lookahead + max(extras.values(), default=0)
    nc, passed, marks = 0, None, []  # marks[j - 1]: other items up to the j-th undecided one
    for pid, kind in kinds:
        undecided = pid not in decided
        if undecided and passed is None:
            passed = nc
        if kind != "check":
            nc += 1
        if undecided:
            marks.append(nc)
            if len(marks) >= far:
                break
    due = []
    for k, t in enumerate(points, start=1):
        if k in done_slots:
            continue
        reach_k = lookahead + extras[k]
        horizon = marks[reach_k - 1] if len(marks) >= reach_k else n_other
        if t > horizon:
            continue
        due.append((k, t))
    return due, passed


def ensure_checks(store, annotator: str, task_set: str, lookahead: int = 6, *, view=None, steady: bool = False) -> int:
    """Fill the check slots the annotator reaches within their next ``lookahead`` undecided items (each slot a
    little farther, :func:`slot_reach`): each check takes the place of the task there, which moves to the end of
    the queue (:func:`pick_check`).

    One transaction (two tabs of one annotator never fill a slot twice; inside a decision's transaction, that
    one). Returns how many checks were placed now. With a request's ``view``
    (:class:`~berds_core.lab.round_view.RoundView`), nothing is read when the view shows no slot to fill, and the
    view gets the queue the transaction left. ``steady`` (after every decision): the same reads whether a slot is
    due or not (the queue, the slots, the pool, the next slot's task and draw), so a run that places a check
    reads what any run reads; only the two writes differ.
    """
    c = view.controls(task_set) if view is not None else get_controls(store, task_set)
    if not c.checks_on:
        return 0

    def reach(k):
        return slot_reach(c, task_set, annotator, k)

    if view is not None and not steady:
        kinds = view.rows.get(task_set, [])
        points = slot_points(c, task_set, annotator, sum(kind != "check" for _, kind in kinds))
        if not due_slots(kinds, view.decided, points, view.slots.get(task_set, set()), lookahead, reach)[0]:
            return 0
    placed = 0
    with store.batch():
        queue = store.checks.queue_rows(task_set, annotator)
        rows = [(r["pair_id"], r["kind"]) for r in queue]
        pos = [int(r["position"]) for r in queue]
        points = slot_points(c, task_set, annotator, sum(kind != "check" for _, kind in rows))
        done_slots = store.checks.slots_done(task_set, annotator)
        if len(done_slots) >= len(points):
            return 0
        due, passed = due_slots(rows, store.checks.decided_by(annotator), points, done_slots, lookahead, reach)
        candidates = None
        k = next((k for k in range(1, len(points) + 1) if k not in done_slots), None)
        if steady and not due and k is not None:  # what placing the next slot reads and draws, done and dropped
            others = [i for i, (_, kind) in enumerate(rows) if kind != "check"]
            at = others[points[k - 1]] if points[k - 1] < len(others) else None
            traits = store.checks.pair_traits(task_set, rows[at][0]) if at is not None else None
            pick_check([dict(r) for r in store.checks.candidates(task_set, annotator)], traits,
                       slot_class(c.seed, task_set, annotator, k), rng_for(c.seed, "pair", task_set, annotator, k))
        for k, t in due:
            now = store.now()
            if passed is None or t < passed:  # the annotator is past this point already
                store.checks.mark_slot(task_set, annotator, k, "missed", now)
                continue
            others = [i for i, (_, kind) in enumerate(rows) if kind != "check"]
            at = others[t] if t < len(others) else None  # the task after the T_k-th other item
            instead = rows[at][0] if at is not None else None
            if candidates is None:
                candidates = [dict(r) for r in store.checks.candidates(task_set, annotator)]
            traits = store.checks.pair_traits(task_set, instead) if instead is not None else None
            pid = pick_check(candidates, traits, slot_class(c.seed, task_set, annotator, k),
                             rng_for(c.seed, "pair", task_set, annotator, k))
            if pid is None:
                store.checks.mark_slot(task_set, annotator, k, "dry", now)
                continue
            candidates = [x for x in candidates if x["pair_id"] != pid]
            end = max(pos, default=-1) + 1
            store.checks.place(task_set, annotator, k, pid, pos[at] if at is not None else end, instead, end, now)
            if at is None:
                rows.append((pid, "check"))
                pos.append(end)
            else:  # the check where the task was, the task at the end
                rows.append(rows[at])
                pos.append(end)
                rows[at] = (pid, "check")
            placed += 1
        if view is not None:  # what this transaction left
            view.replace_rows(task_set, rows)
            view.slots[task_set] = done_slots | {k for k, _ in due}
    return placed


def place_after_decision(store, annotator: str, pair_id: str, view, lookahead: int) -> int:
    """Inside a decision's transaction: fill the slots the decision brought within reach, in each open set that
    gives the pair (so the run that places a check writes what any decision writes, in one transaction). A check
    that cannot be placed is undone alone (:meth:`~berds_core.lab.db.Database.attempt`) and logged; the decision
    stays."""
    placed = 0
    for ts in view.sets_of(str(pair_id)):
        if view.state(ts)["state"] != "open":
            continue
        try:
            with store.attempt():
                placed += ensure_checks(store, annotator, ts, lookahead, view=view, steady=True)
        except Exception:  # noqa: BLE001 - never lose the label to a check; the next run places it
            log.exception("placing a gold check for %s in %s failed; the label is kept", annotator, ts)
    return placed


def pending_slots(store, annotator: str, task_set: str) -> int:
    """Check slots planned in the annotator's queue that are not filled (nor dry, nor missed) yet."""
    c = get_controls(store, task_set)
    if not c.checks_on:
        return 0
    rows = store.checks.queue_rows(task_set, annotator)
    points = slot_points(c, task_set, annotator, sum(r["kind"] != "check" for r in rows))
    return max(0, len(points) - store.checks.slot_count(task_set, annotator))


def slot_summary(store, task_set: str | None = None) -> dict[str, dict[str, int]]:
    """``{annotator: {placed, dry, missed}}`` of the check slots (one task set, or all)."""
    out: dict[str, dict[str, int]] = defaultdict(lambda: {"placed": 0, "dry": 0, "missed": 0})
    for a, state, n in store.checks.slot_state_counts(task_set):
        out[a][state] = n
    return dict(out)


# --------------------------------------------------------------------------- scores


def check_answers(store, annotator: str | None = None, task_set: str | None = None) -> list[dict]:
    """Decided checks in the order they were decided: ``task_set, annotator, pair_id, kind, label, skipped,
    expected, correct, at, time_ms, server_ms``.

    A check is scored on the annotator's **first** decision of it (the history is append-only): undoing it
    and labelling again changes their label, never their score. A skip is a decision and scores as wrong
    (``label`` None, ``skipped`` True): an annotator who skips what looks like a check does not escape the
    floor. Pairs without a known answer are left out. Reads only this annotator's check rows (an index finds
    each first decision), so the work after a label does not grow with the number of reference labels.
    """
    out, seen = [], set()
    for r in store.checks.answer_rows(annotator, task_set):
        key = (r["task_set"], r["annotator"], r["pair_id"])
        if key in seen:
            continue
        seen.add(key)
        exp = int(r["expected"])
        skipped = bool(r["skipped"])
        label = None if skipped or r["label"] is None else int(r["label"])
        out.append({"task_set": r["task_set"], "annotator": r["annotator"], "pair_id": r["pair_id"], "kind": r["kind"],
                    "label": label, "skipped": skipped, "expected": exp, "correct": label == exp,
                    "at": r["at"], "time_ms": r["time_ms"], "server_ms": r["server_ms"]})
    return out


def summarise(answers: list[dict]) -> dict:
    """``n`` (decided checks, skips included), ``correct``, ``failed`` (wrong or skipped), ``skipped``,
    ``accuracy``, ``ci95`` (Wilson) and ``running`` (accuracy after each)."""
    n = len(answers)
    k = sum(a["correct"] for a in answers)
    running, hits = [], 0
    for i, a in enumerate(answers, start=1):
        hits += a["correct"]
        running.append(hits / i)
    return {"n": n, "correct": k, "failed": n - k, "skipped": sum(bool(a.get("skipped")) for a in answers),
            "accuracy": (k / n) if n else None, "ci95": wilson_interval(k, n), "running": running}


def check_scores(store, task_set: str | None = None) -> dict[str, dict]:
    """Per annotator: :func:`summarise` of their answered checks (one task set, or all)."""
    by: dict[str, list] = defaultdict(list)
    for a in check_answers(store, task_set=task_set):
        by[a["annotator"]].append(a)
    return {a: summarise(rows) for a, rows in sorted(by.items())}


# --------------------------------------------------------------------------- pausing


def open_pause(store, task_set: str, annotator: str) -> dict | None:
    return store.checks.open_pause(task_set, annotator)


def pauses(store, *, open_only: bool = False, annotator: str | None = None) -> list[dict]:
    return store.checks.pause_rows(open_only=open_only, annotator=annotator)


def pause(store, task_set: str, annotator: str, *, reason: str, lead_message: str, by: str | None = None,
          accuracy: float | None = None, checks: int | None = None) -> int | None:
    """Pause an annotator's queue in a task set (None when it is paused already). Nothing is deleted; the
    annotator is shown :data:`ANNOTATOR_MESSAGE`, the lead ``lead_message``."""
    with store.batch():
        if open_pause(store, task_set, annotator):
            return None
        pause_id = store.checks.add_pause(task_set, annotator, reason=reason, message=ANNOTATOR_MESSAGE,
                                          lead_message=lead_message, accuracy=accuracy, checks=checks)
        store.audit.add(by or reason, None, "pause", f"{task_set}/{annotator}", allowed=True, detail=lead_message)
    log.warning("paused %s in %s: %s", annotator, task_set, lead_message)
    return pause_id


def resume(store, task_set: str, annotator: str, by: str, note: str | None = None) -> bool:
    """Reopen a paused queue (the floor then counts checks answered from now on); False when not paused."""
    with store.batch():
        p = open_pause(store, task_set, annotator)
        if p is None:
            return False
        store.checks.end_pause(p["id"], by, note)
        store.audit.add(by, None, "resume", f"{task_set}/{annotator}", allowed=True, detail=note)
    return True


def last_resume(store, task_set: str, annotator: str) -> str | None:
    return store.checks.last_resume(task_set, annotator)


def _pct(x) -> str:
    return "–" if x is None else f"{x:.0%}"


def evaluate_floor(store, task_set: str, annotator: str, *, view=None) -> int | None:
    """Pause the annotator's queue in ``task_set`` when their checks since the last resume fall below the
    floor (after ``check_min`` of them). Returns the pause id, or None. A request's ``view`` gives the controls,
    the open pause and the last resume it read (the pause itself checks again in its transaction)."""
    if view is not None:
        c, paused, since = view.controls(task_set), task_set in view.pauses, view.resumed.get(task_set)
    else:
        c = get_controls(store, task_set)
        paused = c.check_floor is not None and open_pause(store, task_set, annotator) is not None
        since = None if c.check_floor is None or paused else last_resume(store, task_set, annotator)
    if c.check_floor is None or paused:
        return None
    got = [a for a in check_answers(store, annotator, task_set) if since is None or a["at"] > since]
    s = summarise(got)
    if s["n"] < c.check_min:
        return None
    below = prob_below(c.check_floor, s["correct"], s["n"])
    if below < c.check_confidence:
        return None
    lo, hi = s["ci95"]
    skipped = f", {s['skipped']} of them skipped" if s["skipped"] else ""
    lead = (f"{annotator}: {s['correct']} of {s['n']} gold checks right{skipped} ({_pct(s['accuracy'])}, 95% CI "
            f"{_pct(lo)} to {_pct(hi)}) {'since the last resume' if since else 'in this round'}; the chance that "
            f"their accuracy is below the floor of {_pct(c.check_floor)} is {_pct(below)}; their queue in {task_set} "
            f"is paused. Resume it on the Agreement page (Round health) or with `berds annotations resume`.")
    return pause(store, task_set, annotator, reason="checks", lead_message=lead, accuracy=s["accuracy"],
                 checks=s["n"])


def after_label(store, annotator: str, pair_id: str, *, view=None) -> list[tuple[str, int]]:
    """After any label: apply the floor of the pair's task set(s) for this annotator; returns ``[(task set,
    pause id)]`` of the pauses it made. The same work after a task pair as after a check (a label's server time
    never tells a check apart); a pause can only come from check answers, so after a task pair the floor finds
    what it found before. A request's ``view`` says which sets give the pair (and updates with the pauses)."""
    if view is not None:
        sets = view.sets_of(str(pair_id))
    else:
        sets = store.checks.sets_giving(annotator, pair_id)
    made = []
    for ts in sets:
        pid = evaluate_floor(store, ts, annotator, view=view)
        if pid is not None:
            made.append((ts, pid))
            if view is not None:
                view.paused(ts, pid)
    return made
