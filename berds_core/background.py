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

``MEMO`` and ``JOBS`` are the process-wide instances the pages use. At exit
the worker is asked to stop at its next ``report`` and joined (a daemon thread
killed inside a native library aborts the interpreter).
"""
from __future__ import annotations

import atexit
import queue
import threading
import time
from collections import OrderedDict
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

    @property
    def finished_ok(self) -> bool:
        return self.status == "done"

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


class Jobs:
    """One background worker running submitted jobs in order (see the module docstring)."""

    def __init__(self, keep: int = 32):
        self._stopping = threading.Event()
        self._q: queue.Queue = queue.Queue()
        self._states: OrderedDict[Hashable, JobState] = OrderedDict()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._keep = keep

    def get(self, key: Hashable) -> JobState | None:
        with self._lock:
            return self._states.get(key)

    def submit(self, key: Hashable, label: str, fn: Callable[[Callable], None]) -> JobState:
        with self._lock:
            st = self._states.get(key)
            if st is not None and st.status != "error":
                return st
            st = self._states[key] = JobState(key, label)
            while len(self._states) > self._keep:
                old = next(iter(self._states))
                if not self._states[old].over:
                    break
                del self._states[old]
            self._q.put((st, fn))
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._work, name="berds-warmup", daemon=True)
                self._thread.start()
        return st

    def shutdown(self, timeout: float = 120.0) -> None:
        """Stop after the current step of the running job (queued jobs are dropped) and join the worker."""
        self._stopping.set()
        self._q.put(None)
        if self._thread is not None and self._thread.is_alive():
            self._thread.join(timeout)

    def _work(self) -> None:
        while not self._stopping.is_set():
            item = self._q.get()
            if item is None or self._stopping.is_set():
                return
            st, fn = item
            st.status, st.started, st.stage = "running", time.perf_counter(), "starting"
            last = [st.stage, st.started]

            def report(stage: str, done: int | None = None, total: int | None = None) -> None:
                if self._stopping.is_set():
                    raise JobCancelled("the process is shutting down")
                now = time.perf_counter()
                if stage != last[0]:
                    st.stages.append((last[0], round(now - last[1], 3)))
                    last[0], last[1] = stage, now
                st.stage, st.done, st.total = stage, done, total

            try:
                fn(report)
            except BaseException as e:  # noqa: BLE001 -- reported to the page, never lost in a thread
                st.error, st.status = e, "error"
            else:
                st.status = "done"
            st.stages.append((last[0], round(time.perf_counter() - last[1], 3)))
            st.finished = time.perf_counter()


MEMO = Memo()
JOBS = Jobs()
atexit.register(JOBS.shutdown)
