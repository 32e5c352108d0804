"""Who may do what with an annotation store: roles checked on the server, refusals logged.

A :class:`Lab` is the store as one :class:`Actor` may use it. Pages call it
instead of the store, so hiding a button is never the protection: every
method checks the actor's role (and, for annotators, that the pair is in
their own queue) before it reads or writes, and a refusal is written to the
store's ``audit`` table and the ``berds.access`` logger, then raised as
:class:`AccessDenied`.

Roles:

- ``annotator``: labels the pairs of their own queue; sees their own labels;
  sees the judge's answer for a pair only after deciding it.
- ``reviewer``: also every label, the judge's answers, agreement, adjudication,
  and leading a round (its quality controls, pausing and resuming queues,
  qualification retries, answers typed for gold checks).
- ``admin``: also imports, task sets, exports, guidelines and users.

An annotator's queue goes through :mod:`berds_core.lab.rounds`: only the task
sets open to them (qualified, not paused) are served, gold checks are placed
as they go and look like any pair, and a label on a check may pause the queue.

In open mode (one person on a laptop, no login) the actor is an ``admin``
named by the page; the same checks run and pass.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass

from . import checks, controls, health, judge_review, qualification, reliability, rounds
from .accounts import Accounts
from .store import SKIP, Store, StoreError
from .records import MAX_NOTE
from .request_reads import RequestReads
from .agreement import agreement_report, disagreements
from .exports import ROUND_WHAT, export_rows, own_rows
from .tasks import TaskSetSpec, build_task_set, import_pairs_tsv
from .judge_fit import fit_lab_judge

log = logging.getLogger("berds.access")

ROLES = ("annotator", "reviewer", "admin")
PERMISSIONS: dict[str, tuple[str, ...]] = {
    "label": ROLES,
    "see_all_labels": ("reviewer", "admin"),
    "see_judge_before_labelling": ("reviewer", "admin"),
    "agreement": ("reviewer", "admin"),
    "adjudicate": ("reviewer", "admin"),
    "export_report": ("reviewer", "admin"),
    "run_round": ("reviewer", "admin"),
    "import": ("admin",),
    "build_task_set": ("admin",),
    "export_labels": ("admin",),
    "edit_guidelines": ("admin",),
    "manage_users": ("admin",),
    "fit_judge": ("admin",),  # a lead refits the judge on the round's labels (berds agreement --fit)
}
DEFAULT_DEFINITIONS = {
    "1": "Supports: the passage argues for the perspective or gives evidence for it.",
    "0": "Does not support: the passage is about something else, is neutral, or argues against it.",
    "skip": "Skip: you cannot decide (unreadable passage, unclear perspective); say why in a note.",
}


class AccessDenied(PermissionError):
    """The actor's role does not allow this request (it was logged)."""


@dataclass(frozen=True)
class Actor:
    name: str
    role: str
    open_mode: bool = False

    def __post_init__(self):
        if self.role not in ROLES:
            raise ValueError(f"role must be one of {', '.join(ROLES)}")


class Lab:
    """The annotation store as ``actor`` may use it."""

    def __init__(self, store: Store, actor: Actor, *, per_request: bool = False):
        """``per_request``: this Lab serves one request (a page run): the actor's round is read once
        (:meth:`round`) and every call of the request reads that view, which the request's own writes update.
        Otherwise each call reads the round afresh (a long-lived Lab: scripts, simulations, tests)."""
        self.store = store
        self.actor = actor
        self.per_request = per_request
        self._view: rounds.RoundView | None = None
        self._reads: RequestReads | None = None

    # ---- checks ----

    def allowed(self, permission: str) -> bool:
        """Whether the role has ``permission`` (no logging: for deciding what to draw)."""
        return self.actor.role in PERMISSIONS[permission]

    def _deny(self, action: str, target: str | None, why: str):
        self.store.audit.add(self.actor.name, self.actor.role, action, target, allowed=False, detail=why)
        log.warning("refused %s of %s (%s) on %s: %s", action, self.actor.name, self.actor.role, target, why)
        raise AccessDenied(f"{self.actor.name} ({self.actor.role}) may not {why}")

    def require(self, permission: str, target: str | None = None, *, what: str | None = None) -> None:
        if not self.allowed(permission):
            self._deny(permission, target, what or permission.replace("_", " "))

    def _own_or_reviewer(self, pair_id: str, action: str, *, checked_later: bool = False, view=None) -> None:
        """Annotators: the pair must be in their own queue (refused and logged otherwise). Reviewers and admins:
        the pair must exist (``checked_later``: the store's next read or write of it refuses a missing pair)."""
        if self.allowed("see_all_labels"):
            if not checked_later and not self.store.has_pair(pair_id):
                raise StoreError(f"no pair with id {pair_id!r}")
            return
        if view is not None or self.per_request:
            assigned = bool((view or self.round()).sets_of(str(pair_id)))
        else:
            assigned = self.store.tasks.is_assigned(self.actor.name, pair_id)
        if not assigned:
            self._deny(action, pair_id, "open a pair outside their own queue")

    def require_self(self, annotator: str | None) -> None:
        """Refuse (and log) a request made for another annotator unless the role sees all labels."""
        if annotator and annotator != self.actor.name and not self.allowed("see_all_labels"):
            self._deny("labels.other", annotator, "see or make another annotator's labels")

    # ---- annotating ----

    def round(self) -> rounds.RoundView:
        """The actor's round (:class:`~berds_core.lab.round_view.RoundView`): read once per request when
        ``per_request``, else afresh."""
        if self._view is None or not self.per_request:
            self._view = rounds.read(self.store, self.actor.name)
        return self._view

    def _changed(self) -> None:
        """A write this view cannot follow (a qualification answer, a pause, a task set): read again."""
        self._view = None
        self._reads = None

    def reads(self):
        """What the reviewing calls read the store through: one request's
        :class:`~berds_core.lab.request_reads.RequestReads` when ``per_request`` (the labels, pairs and gold
        read once for the report, the models and every download), else the store itself."""
        if not self.per_request:
            return self.store
        if self._reads is None:
            self._reads = RequestReads(self.store)
        return self._reads

    def task_sets(self) -> list[str]:
        if self.per_request:
            return list(self.round().sets)
        return self.store.tasks.names(self.actor.name)

    def queue(self, task_set: str | None = None) -> list[str]:
        return self.store.tasks.queue(self.actor.name, task_set)

    def progress(self, task_set: str | None = None) -> dict:
        """Done / total / left of the actor's queue (gold checks still to come counted, not told apart)."""
        return rounds.progress(self.store, self.actor.name, task_set, view=self.round())

    def next_pairs(self, n: int = 1, task_set: str | None = None) -> list[str]:
        """The next undecided pairs of the actor's open task sets (qualified, not paused; checks placed)."""
        return rounds.next_pairs(self.store, self.actor.name, n, task_set, view=self.round())

    def round_states(self, task_set: str | None = None) -> list[dict]:
        """``[{task_set, state, message}]`` of the actor's own task sets (open, qualify, failed, paused)."""
        return rounds.states(self.store, self.actor.name, task_set, view=self.round())

    def qualification_next(self, task_set: str) -> dict | None:
        """The actor's next qualification pair: what they see of it, plus its place in the attempt."""
        if task_set not in self.task_sets():
            self._deny("qualification", task_set, "take the qualification of a task set that is not theirs")
        item = qualification.next_item(self.store, task_set, self.actor.name)
        if item is None:
            return None
        p = self.store.pair(item["pair_id"])
        return {**item, "question": p.question, "title": p.title or "", "document": p.document,
                "perspective": p.perspective}

    def qualification_answer(self, task_set: str, attempt: int, position: int, label, *,
                             time_ms: int | None = None) -> dict:
        """Answer one of the actor's own qualification pairs. Nothing about the answer comes back until the
        attempt's last one; then the score and each pair's expected answer (its perspective and title shown
        to name it, never its id)."""
        if task_set not in self.task_sets():
            self._deny("qualification", task_set, "take the qualification of a task set that is not theirs")
        res = qualification.answer(self.store, task_set, self.actor.name, attempt, position, label, time_ms=time_ms)
        self._changed()
        if res["items"]:
            views = []
            for it in res["items"]:
                p = self.store.pair(it["pair_id"])
                views.append({"perspective": p.perspective, "title": p.title or "", "label": it["label"],
                              "expected": it["expected"], "correct": it["correct"]})
            res = {**res, "items": views}
        return res

    def pair_view(self, pair_id: str) -> dict:
        """What an annotator sees of a pair: question, title, passage, perspective (no ids, no judge)."""
        return self.pair_views([pair_id])[0]

    def pair_views(self, pair_ids: list[str]) -> list[dict]:
        """:meth:`pair_view` of several pairs, read in one statement."""
        pair_ids = [str(p) for p in pair_ids]
        for pid in pair_ids:
            self._own_or_reviewer(pid, "pair.view", checked_later=True)
        got = {p.pair_id: p for p in self.store.pairs(pair_ids)}
        missing = [pid for pid in pair_ids if pid not in got]
        if missing:
            raise StoreError(f"no pair with id {missing[0]!r}")
        return [{"question": p.question, "title": p.title or "", "document": p.document, "perspective": p.perspective}
                for p in (got[pid] for pid in pair_ids)]

    def judge_seen(self, pair_id: str) -> bool:
        """Whether this actor was shown a judge answer for the pair (then a relabel records it)."""
        return str(pair_id) in self.round().judge_seen

    def label(self, pair_id: str, value, *, unsure: bool = False, note: str | None = None,
              time_ms: int | None = None, judge_visible: bool | None = None, client_id: str | None = None) -> int:
        """Label a pair of the actor's own queue (reviewers and admins: any pair)."""
        pair_id = str(pair_id)
        view = self.round()  # this request's view (a long-lived Lab reads it now)
        self._own_or_reviewer(pair_id, "label", checked_later=True, view=view)
        if isinstance(note, str) and len(note) > MAX_NOTE:
            note = note[:MAX_NOTE]  # whatever the page sent: the keyboard path's cap, on the server
        why = view.refusal(pair_id)
        if why and not (client_id is not None and self.store.applied_client_ids([client_id])):
            raise StoreError(f"{why}; this decision was not saved")
        seen = bool(judge_visible) or pair_id in view.judge_seen
        with self.store.batch():  # the decision and the checks it brings within reach: one transaction
            event = self.store.label(self.actor.name, pair_id, value, unsure=unsure, note=note, time_ms=time_ms,
                                     judge_visible=seen, client_id=client_id)
            view.decide(pair_id, value == SKIP)
            checks.place_after_decision(self.store, self.actor.name, pair_id, view, rounds.LOOKAHEAD)
        self._reads = None  # the labels read for this request changed
        rounds.after_label(self.store, self.actor.name, pair_id, view=view)
        return event

    def undo(self, client_id: str | None = None) -> str | None:
        """Undo the actor's latest decision; refused while every task set giving them that pair is closed
        (paused, or waiting for a qualification): nothing is taken back from a closed queue. A gold check's
        score keeps its first answer whatever is undone (:func:`berds_core.lab.checks.check_answers`)."""
        pid = self.store.last_undoable(self.actor.name)
        view = self.round()
        why = view.refusal(pid) if pid is not None else None
        if why:
            if client_id is not None and self.store.applied_client_ids([client_id]):
                return None  # a resent undo, stored before the queue closed
            raise StoreError(f"{why}; nothing was undone")
        pid, restored = self.store.undo_restoring(self.actor.name, client_id=client_id)
        self._reads = None
        if restored is None:
            view.undecide(pid)
        elif pid is not None:
            view.decide(pid, bool(restored.get("skipped")))
        return pid

    def labels(self, annotator: str | None = None, *, include_skips: bool = True):
        """Labels: annotators get only their own (asking for anyone else's is refused and logged)."""
        if annotator is None and not self.allowed("see_all_labels"):
            annotator = self.actor.name
        self.require_self(annotator)
        return self.store.labels(annotator, include_skips=include_skips)

    def judge_answers(self, pair_id: str, *, log: bool = True) -> list[tuple[str, float | None, int]]:
        """``[(judge name, prob, 0/1)]`` for a pair. Annotators: only after they decided it (label or skip).

        An allowed view is written to the audit log (``log``), so a later relabel
        of the pair records that the judge's answer was known.
        """
        self._own_or_reviewer(pair_id, "judge.view")
        if not self.allowed("see_judge_before_labelling") and self.store.get_label(self.actor.name, pair_id) is None:
            self._deny("judge.view", pair_id, "see the judge's answer before labelling the pair")
        out = []
        for name in self.store.judges():
            pred = self.store.judge_preds(name).get(str(pair_id))
            if pred is not None:
                out.append((name, pred[0], int(pred[1])))
        if not out:
            p = self.store.pair(pair_id)
            if p.judge_prob is not None:
                out.append(("judge", p.judge_prob, int(p.judge_prob >= 0.5)))
        if log:
            self.store.audit.add(self.actor.name, self.actor.role, "judge.view", str(pair_id), allowed=True)
            if self._view is not None:
                self._view.judge_seen.add(str(pair_id))
        return out

    # ---- guidelines ----

    def guidelines(self) -> dict:
        """``{"text": markdown, "definitions": {"1": ..., "0": ..., "skip": ...}}`` of the project."""
        if self.per_request:
            return self.round().guidelines(DEFAULT_DEFINITIONS)
        defs = dict(DEFAULT_DEFINITIONS)
        defs.update(self.store.settings.get("label_definitions", {}) or {})
        return {"text": self.store.settings.get("guidelines", "") or "", "definitions": defs}

    def set_guidelines(self, text: str | None = None, definitions: dict | None = None) -> dict:
        self.require("edit_guidelines", "guidelines")
        if text is not None:
            self.store.settings.set("guidelines", str(text), by=self.actor.name)
        if definitions is not None:
            clean = {k: str(v).strip() for k, v in definitions.items() if k in ("1", "0", SKIP) and str(v).strip()}
            self.store.settings.set("label_definitions", clean, by=self.actor.name)
        self._changed()
        self.store.audit.add(self.actor.name, self.actor.role, "edit_guidelines", "guidelines", allowed=True)
        return self.guidelines()

    # ---- reviewing ----

    def agreement_report(self, judge: str | None, **kw) -> dict:
        self.require("agreement", judge)

        return agreement_report(self.reads(), judge, **kw)

    def fit_judge(self, name: str, **opts) -> dict:
        """Refit the judge on this database's labels (:func:`berds_core.lab.judge_fit.fit_lab_judge`): leads only."""
        self.require("fit_judge", name, what="fit a judge on the round's labels")
        out = fit_lab_judge(self.store, name, **opts)
        self.store.audit.add(self.actor.name, self.actor.role, "judge.fit", name, allowed=True,
                             detail=f"written={bool(out['written'])}")
        return out

    def disagreements(self, judge: str | None = None) -> list[dict]:
        self.require("adjudicate", judge, what="see disagreements")

        return disagreements(self.reads(), judge)

    def adjudicate(self, pair_id: str, label: int, note: str | None = None) -> None:
        self.require("adjudicate", pair_id)
        self.store.adjudicate(pair_id, label, self.actor.name, note)
        self._changed()
        self.store.audit.add(self.actor.name, self.actor.role, "adjudicate", str(pair_id), allowed=True)

    def reliability_report(self, **kw) -> dict:
        """:func:`berds_core.lab.reliability.reliability_report` (reviewers and admins)."""
        self.require("agreement", "reliability")
        return reliability.reliability_report(self.reads(), **kw)

    def round_health(self, task_set: str | None = None) -> dict:
        self.require("agreement", "round health")
        return health.round_health(self.reads(), task_set)

    def review_queue(self, judge: str | None = None, **kw) -> list[dict]:
        """Disagreements, most urgent first (:func:`berds_core.lab.judge_review.review_queue`)."""
        self.require("adjudicate", judge, what="see disagreements")
        return judge_review.review_queue(self.reads(), judge, **kw)

    def judge_failures(self, judge: str, **kw) -> dict:
        self.require("agreement", judge)
        return judge_review.judge_failures(self.reads(), judge, **kw)

    # ---- leading a round ----

    def round_controls(self, task_set: str) -> controls.RoundControls:
        self.require("agreement", task_set)
        return controls.get_controls(self.store, task_set)

    def set_round_controls(self, task_set: str, **changes) -> controls.RoundControls:
        self.require("run_round", task_set, what="change a round's quality controls")
        checks.refuse_empty_pool(self.store, task_set, changes)
        new = controls.set_controls(self.store, task_set, by=self.actor.name, **changes)
        self._changed()
        self.store.audit.add(self.actor.name, self.actor.role, "round.controls", task_set, allowed=True,
                             detail=", ".join(f"{k}={v}" for k, v in sorted(changes.items())))
        return new

    def pause(self, task_set: str, annotator: str, note: str | None = None) -> int | None:
        """The lead pauses an annotator's queue in a task set (None when it is paused already)."""
        self.require("run_round", f"{task_set}/{annotator}", what="pause a queue")
        self._changed()
        return checks.pause(self.store, task_set, annotator, reason="lead", by=self.actor.name,
                            lead_message=f"{annotator}: paused by {self.actor.name} in {task_set}"
                                         + (f" ({note})" if note else ""))

    def resume(self, task_set: str, annotator: str, note: str | None = None) -> bool:
        self.require("run_round", f"{task_set}/{annotator}", what="resume a queue")
        self._changed()
        return checks.resume(self.store, task_set, annotator, self.actor.name, note)

    def allow_retry(self, task_set: str, annotator: str) -> bool:
        self.require("run_round", f"{task_set}/{annotator}", what="allow another qualification attempt")
        self._changed()
        return qualification.allow_retry(self.store, task_set, annotator, self.actor.name)

    def add_check_answers(self, answers: dict[str, int]) -> dict:
        """Answers the lead typed for pairs: each joins the gold checks' pool of the task sets that hold it
        (``{"stored": n, "pools": [task sets]}``)."""
        self.require("run_round", "check answers", what="add answers for gold checks")
        self._changed()
        return checks.add_typed_answers(self.store, answers, self.actor.name)

    # ---- admin ----

    def import_pairs_tsv(self, path, *, labels_as: str | None = None, annotator: str | None = None,
                         task_set: str | None = None, shown_as: str | None = None) -> dict:
        self.require("import", shown_as or str(path))

        res = import_pairs_tsv(self.store, path, annotator, task_set, labels_as=labels_as, shown_as=shown_as)
        self._changed()
        self.store.audit.add(self.actor.name, self.actor.role, "import", shown_as or str(path), allowed=True,
                             detail=f"pairs={res['pairs']} labels_as={res['labels_as']}")
        return res

    def build_task_set(self, candidates, spec: TaskSetSpec, **kw) -> dict:
        """:func:`berds_core.lab.tasks.build_task_set` for an admin (``kw``: ``judge``, ``stored_preds``, ``reference``)."""
        self.require("build_task_set", spec.name)

        res = build_task_set(self.store, candidates, spec, **kw)
        self._changed()
        self.store.audit.add(self.actor.name, self.actor.role, "build_task_set", res["task_set"], allowed=True,
                             detail=f"pairs={res['pairs']}")
        return res

    def export_rows(self, what: str = "labels", *, include_skips: bool = False, judge: str | None = None) -> list[dict]:
        """Rows for a download: ``labels`` (admins: everyone's, with ``judge``'s probability; others: their
        own, :func:`~berds_core.lab.exports.own_rows`: no ids, no judge), ``gold``, ``reference``, ``majority``, ``model``; ``qualification`` for reviewers too."""
        if what == "labels" and not self.allowed("export_labels"):
            return own_rows(self.reads(), self.actor.name, include_skips=include_skips)
        if what in ROUND_WHAT:
            self.require("export_report", what, what=f"export {what}")
            return export_rows(self.reads(), what=what)
        self.require("export_labels", what, what=f"export {what}")
        return export_rows(self.reads(), what=what, include_skips=include_skips, judge=judge)

    def accounts(self, **kw):
        self.require("manage_users", "users")
        return Accounts(self.store, **kw)
