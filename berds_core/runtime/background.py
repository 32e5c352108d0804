"""Heavy objects made once per process, and jobs that make them in the background with progress.

The app must render before any model is loaded, and show how far a warm-up
has come instead of a spinner. Two small pieces, no Streamlit:

- :class:`Memo`: objects keyed by what identifies them (a judge spec, a corpus
  hash with a retriever kind and model, ...), made once. Concurrent callers of
  the same key wait for the first maker (one lock per key) instead of making a
  second copy; a failure is not remembered, so a corrected input is tried again.
- :class:`Jobs`: one daemon worker thread that runs submitted jobs in order
  (two cores: loading two models at once only slows both). A job is a function
  ``fn(report)`` where ``report(stage, done=None, total=None)`` updates its
  :class:`JobState`, which any thread may read (``fraction``, ``text``).
  Submitting a key that is queued, running or finished returns the same state.
  ``report.ready()`` marks the part pages need as done (``JobState.ready``:
  the models are loaded); what follows (encoding passages ahead of time) only
  makes later work faster. While a page computes in the foreground
  (``with JOBS.foreground():``), the running job pauses at its next ``report``,
  so a visitor's question never shares the two cores with the warm-up.

``MEMO`` and ``JOBS`` are the process-wide instances the pages use. At exit
the worker is asked to stop at its next ``report`` and joined (a daemon thread
killed inside a native library aborts the interpreter).
"""
from __future__ import annotations

import atexit
import threading
import time
from collections import OrderedDict
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Callable, Hashable


class Memo:
    """Thread-safe, bounded ``key -> object`` store; ``get(key, make)`` makes each object once."""

    def __init__(self, max_per_kind: int = 8):
        self._objs: OrderedDict[Hashable, Any] = OrderedDict()
        self._locks: dict[Hashable, threading.Lock] = {}
        self._lock = threading.Lock()
        self._max = max_per_kind

    def has(self, key: Hashable) -> bool:
        with self._lock:
            return key in self._objs

    def peek(self, key: Hashable, default=None):
        with self._lock:
            return self._objs.get(key, default)

    def get(self, key: Hashable, make: Callable[[], Any]):
        with self._lock:
            if key in self._objs:
                self._objs.move_to_end(key)
                return self._objs[key]
            lock = self._locks.setdefault(key, threading.Lock())
        with lock:  # the first caller makes it; the others wait here and then find it
            with self._lock:
                if key in self._objs:
                    return self._objs[key]
            obj = make()
            with self._lock:
                self._objs[key] = obj
                self._evict(key)
            return obj

    def _evict(self, key) -> None:
        kind = key[0] if isinstance(key, tuple) and key else None
        same = [k for k in self._objs if (k[0] if isinstance(k, tuple) and k else None) == kind]
        for old in same[: max(0, len(same) - self._max)]:
            del self._objs[old]

    def clear(self) -> None:
        with self._lock:
            self._objs.clear()


@dataclass
class JobState:
    """What a job is doing; read by any thread (plain attribute reads)."""

    key: Hashable
    label: str
    status: str = "queued"  # queued | running | done | error
    stage: str = "waiting for an earlier job"
    done: int | None = None
    total: int | None = None
    error: BaseException | None = None
    submitted: float = field(default_factory=time.perf_counter)
    started: float | None = None
    finished: float | None = None
    stages: list = field(default_factory=list)  # (stage, seconds) of finished stages
    ready: bool = False  # the part pages need is done (the rest only makes later work faster)
    ready_at: float | None = None

    @property
    def over(self) -> bool:
        return self.status in ("done", "error")

    @property
    def fraction(self) -> float:
        if self.status == "done":
            return 1.0
        if self.done is not None and self.total:
            return max(0.0, min(1.0, self.done / self.total))
        return 0.0

    @property
    def text(self) -> str:
        if self.status == "done":
            return f"{self.label}: ready"
        if self.status == "error":
            return f"{self.label}: failed"
        count = f" ({self.done:,} / {self.total:,})" if self.total else ""
        return f"{self.label}: {self.stage}{count}"

    def wait(self, timeout: float | None = None) -> bool:
        end = None if timeout is None else time.perf_counter() + timeout
        while not self.over:
            if end is not None and time.perf_counter() >= end:
                return False
            time.sleep(0.05)
        return True


class JobCancelled(Exception):
    """Raised inside a job by ``report`` when the process is shutting down."""


class JobYielded(Exception):
    """Raised inside a job by ``report`` when a job a page waits for should run first."""


class Jobs:
    """One background worker running submitted jobs (see the module docstring).

    Jobs run in submission order, except that :meth:`promote` (a page waiting
    for a job) moves a queued job to the front and asks the running one to
    yield at its next ``report``: it goes back to the queue right behind and
    resumes later. Jobs are written to be resumable (what they make is kept in
    ``MEMO`` and the on-disk caches), so yielding loses at most one step.
    """

    def __init__(self, keep: int = 32):
        self._stopping = threading.Event()
        self._cancelling = threading.Event()
        self._cv = threading.Condition()
        self._pending: list[tuple[JobState, Callable]] = []
        self._states: OrderedDict[Hashable, JobState] = OrderedDict()
        self._running: JobState | None = None
        self._yield_to: Hashable | None = None
        self._thread: threading.Thread | None = None
        self._keep = keep
        self._foreground = 0  # pages computing now: the running job waits at its next report
        self.max_pause = 120.0  # seconds a job waits for the foreground at one report, at most

    @contextmanager
    def foreground(self):
        """Page work that should not share the CPU with a background job: the running job pauses at its
        next ``report`` until every foreground block is over (or ``max_pause`` seconds have passed)."""
        with self._cv:
            self._foreground += 1
        try:
            yield
        finally:
            with self._cv:
                self._foreground -= 1
                self._cv.notify_all()

    def _pause_for_foreground(self) -> None:
        end = time.perf_counter() + self.max_pause
        with self._cv:
            while (self._foreground > 0 and not self._stopping.is_set() and not self._cancelling.is_set()
                   and time.perf_counter() < end):
                self._cv.wait(0.05)

    def get(self, key: Hashable) -> JobState | None:
        with self._cv:
            return self._states.get(key)

    def submit(self, key: Hashable, label: str, fn: Callable[[Callable], None]) -> JobState:
        with self._cv:
            st = self._states.get(key)
            if st is not None and st.status != "error":
                return st
            st = self._states[key] = JobState(key, label)
            self._states.move_to_end(key)
            while len(self._states) > self._keep:
                old = next(iter(self._states))
                if not self._states[old].over:
                    break
                del self._states[old]
            self._pending.append((st, fn))
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._work, name="berds-warmup", daemon=True)
                self._thread.start()
            self._cv.notify_all()
        return st

    def promote(self, key: Hashable) -> None:
        """Run the queued job ``key`` next; the running job (if another) yields at its next step."""
        with self._cv:
            idx = next((i for i, (st, _) in enumerate(self._pending) if st.key == key), None)
            if idx is None:
                return
            self._pending.insert(0, self._pending.pop(idx))
            if self._running is not None and self._running.key != key:
                self._yield_to = key

    def cancel(self, timeout: float = 120.0) -> bool:
        """Drop the queued jobs and stop the running one at its next step; the worker stays up for
        later jobs. Cancelled jobs end in ``error`` (a later submit of the same key runs again).
        True once nothing runs (False: the running step outlasted ``timeout`` seconds)."""
        with self._cv:
            for st, _ in self._pending:
                st.status, st.error = "error", JobCancelled("cancelled")
            self._pending.clear()
            self._cancelling.set()
        end = time.perf_counter() + timeout
        try:
            while True:
                with self._cv:
                    if self._running is None:
                        return True
                if time.perf_counter() >= end:
                    return False
                time.sleep(0.02)
        finally:
            self._cancelling.clear()

    def shutdown(self, timeout: float = 120.0) -> None:
        """Stop after the current step of the running job (queued jobs are dropped) and join the worker."""
        self._stopping.set()
        with self._cv:
            self._cv.notify_all()
        if self._thread is not None and self._thread.is_alive():
            self._thread.join(timeout)

    def _next(self):
        with self._cv:
            while not self._pending and not self._stopping.is_set():
                self._cv.wait(0.5)
            if self._stopping.is_set():
                return None
            item = self._pending.pop(0)
            self._running, self._yield_to = item[0], None
            return item

    def _work(self) -> None:
        while True:
            item = self._next()
            if item is None:
                return
            st, fn = item
            st.status, st.stage = "running", "starting"
            if st.started is None:
                st.started = time.perf_counter()
            last = [st.stage, time.perf_counter()]

            def report(stage: str, done: int | None = None, total: int | None = None) -> None:
                if self._stopping.is_set():
                    raise JobCancelled("the process is shutting down")
                if self._cancelling.is_set():
                    raise JobCancelled("cancelled")
                if self._yield_to is not None:
                    raise JobYielded(self._yield_to)
                if self._foreground:
                    self._pause_for_foreground()
                    if self._stopping.is_set() or self._cancelling.is_set():
                        raise JobCancelled("cancelled")
                now = time.perf_counter()
                if stage != last[0]:
                    st.stages.append((last[0], round(now - last[1], 3)))
                    last[0], last[1] = stage, now
                st.stage, st.done, st.total = stage, done, total

            def ready() -> None:
                if not st.ready:
                    st.ready, st.ready_at = True, time.perf_counter()

            report.ready = ready
            try:
                fn(report)
            except JobYielded:
                with self._cv:  # back in the queue, right behind the job it yields to
                    st.status, st.stage, st.done, st.total = "queued", "paused for another configuration", None, None
                    self._pending.insert(min(1, len(self._pending)), (st, fn))
                    self._running = None
                continue
            except BaseException as e:  # noqa: BLE001 -- reported to the page, never lost in a thread
                st.error, st.status = e, "error"
            else:
                st.status = "done"
            st.stages.append((last[0], round(time.perf_counter() - last[1], 3)))
            st.finished = time.perf_counter()
            with self._cv:
                self._running = None


MEMO = Memo()
JOBS = Jobs()
atexit.register(JOBS.shutdown)
