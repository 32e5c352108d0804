"""Ray for one job: connect (or start it on this machine), say what the cluster offers, stop what was started.

::

    with ray_session("local", progress=False) as session:
        session.cpus, session.gpus, session.nodes
        for batch in session.map_rows(rows, Actor, kwargs, gpu=False): ...

``local`` starts a Ray instance (every CPU and GPU of this machine) and shuts
it down when the block ends, even on an error or Ctrl-C; any other address
connects to a running cluster and only disconnects. When this process is
already connected (a test, a notebook), the session reuses that connection
and leaves it open.

Worker output stays in Ray's session logs (``log_to_driver=False``): with
``--json`` stdout holds one JSON object and nothing else. Ray Data's progress
bars go to stderr, off with ``--quiet``. ``--quiet`` also raises Ray's own
driver logger to ERROR before ``ray.init``: its warnings at start ("Token
authentication is enabled for this Ray cluster ...", which ``ray.init`` logs
for every local instance) are not printed, its errors are. One ERROR line of
Ray's C++ core worker about Ray Data's actor pools (ray-project/ray#53727)
still reaches stderr: Ray's C++ logging gives no way to silence it without
silencing its real errors too.
"""
from __future__ import annotations

import contextlib
import logging
import os
import socket
import sys
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass, field

import numpy as np

from ..errors import InputError

INIT_DEATHS = 3  # actors of one pool that may die before they run, in a row, before the job fails


@dataclass
class Session:
    """A connected Ray: the address asked for and what the cluster offers."""

    address: str
    started: bool  # this job started the Ray instance (``local``) and stops it after
    cpus: int
    gpus: int
    nodes: int
    progress: bool = True
    client: bool = False  # connected through Ray Client (ray://)
    stats: dict = field(default_factory=dict)
    opened: list = field(default_factory=list, repr=False)  # the row iterations of map_rows, closed by close()

    def describe(self) -> dict:
        return {"address": self.address, "nodes": self.nodes, "cpus": self.cpus, "gpus": self.gpus}

    def pool_size(self, items: int, gpu: bool) -> int:
        """Actors for ``items`` batches: one per GPU (``gpu``) or one per CPU, never more than the batches."""
        slots = self.gpus if gpu else self.cpus
        return max(1, min(int(items), max(1, int(slots))))

    def map_rows(self, rows: list[dict], cls, kwargs: dict, *, gpu: bool):
        """An iteration of :meth:`_rows` that the session closes when it ends (:meth:`close`)."""
        it = self._rows(rows, cls, kwargs, gpu=gpu)
        self.opened.append(it)
        return it

    def close(self) -> None:
        """Close every iteration :meth:`map_rows` opened, while Ray is still connected.

        A caller stopped in the middle of a job (Ctrl-C, an error while it stores a batch) leaves the
        iteration suspended at its ``yield``, and Ray Data's executor running: closed only when the garbage
        collector gets to it, after ``ray.shutdown``, its clean-up calls Ray from Ray Data's thread, and Ray's
        auto-init then starts a new local instance in this process (one that is not this job's and that
        nobody stops; when its GCS goes, Ray ends the process 60 s later). Closing here shuts the executor
        down first, and :func:`settle_data_threads` lets the iteration's threads finish their last call."""
        while self.opened:
            with contextlib.suppress(Exception):
                self.opened.pop().close()
        settle_data_threads()

    def _rows(self, rows: list[dict], cls, kwargs: dict, *, gpu: bool):
        """Each row through a pool of ``cls`` actors (``cls(**kwargs)``, ``__call__(batch)`` on a one-row
        numpy batch); yields the result batches as they come back, in no set order.

        Ray Data (``map_batches`` with an actor pool, one row per call, one call in flight per actor:
        a row is a large unit of work, the next goes to whichever actor is free). Through Ray Client
        (``ray://``), where Ray Data cannot run a pipeline, the same actors in a ``ray.util.ActorPool``.
        Either way an actor whose process dies is restarted and its row run again (Ray Data's pools
        default to ``max_restarts=-1`` and ``max_task_retries=-1``; the client pool declares them):
        a worker killed in the middle of a job changes nothing in the output. An actor that dies before it
        runs is replaced (``INIT_DEATHS`` in a row at most; see :func:`_configure_data`).
        """
        if not rows:
            return
        size = self.pool_size(len(rows), gpu)
        if self.client:
            yield from _client_pool(rows, cls, kwargs, size=size, gpu=gpu)
            return
        import ray.data

        ds = ray.data.from_items(rows, override_num_blocks=len(rows))
        ds = ds.map_batches(cls, fn_constructor_kwargs=kwargs, batch_size=1, batch_format="numpy",
                            compute=ray.data.ActorPoolStrategy(size=size, max_tasks_in_flight_per_actor=1),
                            num_cpus=1, num_gpus=1 if gpu else None)
        yield from ds.iter_batches(batch_size=None, batch_format="numpy")


DATA_THREADS = ("iter_threaded", "map_tp_", "StreamingExecutor-", "ray-data-metadata-prefetch")
SETTLE_S = 60.0  # at most: how long a stopped job waits for Ray Data's threads before Ray disconnects


def settle_data_threads(timeout: float = SETTLE_S) -> None:
    """Wait until the threads Ray Data fetches and formats blocks in have ended (``timeout`` at most).

    An iteration closed in the middle (a job stopped with Ctrl-C, an error while a batch is stored) stops its
    worker threads only after their current call: one may still wait for a block from an actor. When
    ``ray.shutdown`` comes first, that call fails inside Ray's C++ core, which ends the whole process ("Check
    failed: s.ok() IOError: Broken pipe", exit 1; issue 63, seen on a loaded machine, where the call takes
    longer). Threads of a finished iteration are gone already: nothing is waited for then."""
    deadline = time.monotonic() + timeout
    for t in threading.enumerate():
        if t is not threading.current_thread() and t.name.startswith(DATA_THREADS):
            t.join(max(0.0, deadline - time.monotonic()))


def _one_row_batch(row: dict) -> dict:
    """A row as Ray Data hands it to ``map_batches`` with ``batch_size=1``: a numpy array per column."""
    out = {}
    for k, v in row.items():
        a = np.empty(1, dtype=object if isinstance(v, (list, tuple, str)) else None)
        a[0] = v
        out[k] = a
    return out


def _client_pool(rows, cls, kwargs, *, size: int, gpu: bool):
    import ray
    from ray.util import ActorPool

    actor = ray.remote(num_cpus=1, num_gpus=1 if gpu else 0, max_restarts=-1, max_task_retries=-1)(cls)
    actors = [actor.remote(**kwargs) for _ in range(size)]
    try:
        pool = ActorPool(actors)
        yield from pool.map_unordered(lambda a, batch: a.__call__.remote(batch), [_one_row_batch(r) for r in rows])
    finally:
        for a in actors:
            ray.kill(a)


def _cluster_info(ray) -> tuple[int, int, int]:
    res = ray.cluster_resources()
    nodes = sum(1 for n in ray.nodes() if n.get("Alive"))
    return int(res.get("CPU", 0)), int(res.get("GPU", 0)), nodes


def _configure_data(progress: bool) -> None:
    import ray.data

    if not progress:  # --quiet: Ray Data's notes ("execution finished", "progress bars disabled") too
        logging.getLogger("ray.data").setLevel(logging.ERROR)

    ctx = ray.data.DataContext.get_current()
    # An actor of a pool that dies before it runs (its worker process failed to start, or Ray cancelled its
    # creation: "ActorDiedError: the actor never ran", seen on a loaded 2-core machine) is replaced, as a
    # running actor that dies is restarted; Ray Data's default (0) fails the whole job on the first such death.
    # A constructor that fails every time still fails the job, after INIT_DEATHS replacements in a row.
    ctx.max_consecutive_actor_init_deaths = INIT_DEATHS
    ctx.enable_progress_bars = bool(progress)
    ctx.enable_operator_progress_bars = bool(progress)
    ctx.print_on_execution_start = False
    ctx.verbose_stats_logs = False


CLIENT_TRIES = 3  # Ray Client connections tried before --ray gives up on a server that failed to start


def _first_line(e: BaseException) -> str:
    """The error's first line; when that line only introduces what follows ("Initialization failure from
    server:" and the server's traceback), the last line of what follows too: the server's own error."""
    lines = [ln.strip() for ln in str(e).strip().splitlines() if ln.strip()]
    if not lines:
        return type(e).__name__
    if len(lines) > 1 and lines[0].endswith(":"):
        return f"{lines[0]} {lines[-1]}"
    return lines[0]


def _client_server_failed(e: BaseException) -> bool:
    """Ray Client's proxy could not start (or reach, in 30 s) the server process of this one connection: a
    busy head node does this now and then, and a new connection gets a new server."""
    return isinstance(e, ConnectionAbortedError) and "Initialization failure from server" in str(e)


def _init_client(ray, address: str, opts: dict, tries: int = CLIENT_TRIES) -> None:
    """``ray.init`` through Ray Client (``ray://``), tried again up to ``tries`` times when the head's proxy
    failed to start this connection's server; any other error at once."""
    for attempt in range(1, tries + 1):
        try:
            ray.init(address=address, **opts)
            return
        except Exception as e:  # noqa: BLE001 - re-raised unless it is the proxy's transient failure
            if attempt == tries or not _client_server_failed(e):
                raise
            with contextlib.suppress(Exception):
                ray.shutdown()
            sys.stderr.write(f"warning: --ray: Ray Client at {address!r} could not start this connection's server "
                             f"({_first_line(e)}); trying again ({attempt + 1} of {tries})\n")
            time.sleep(2.0 * attempt)


def check_reachable(address: str, timeout: float = 5.0) -> None:
    """One TCP connection to the cluster's address before ``ray.init`` (which waits minutes for an
    address that answers nothing): an InputError naming ``--ray`` and the address at once."""
    if address.startswith("ray://"):
        hostport = address[len("ray://"):]
    else:
        try:
            from ray._private.services import canonicalize_bootstrap_address
        except ImportError:  # a Ray without this helper: let ray.init find out
            return
        try:  # auto: RAY_ADDRESS or the cluster `ray start` left on this node; localhost: this node's address
            hostport = canonicalize_bootstrap_address(address)
        except (ConnectionError, ValueError) as e:
            raise InputError("--ray", None, None, f"no Ray cluster at {address!r}: {_first_line(e).split('. ')[0]} (start one "
                                                  "with 'ray start --head', or use --ray local)") from None
        if hostport is None:
            raise InputError("--ray", None, None, f"no running Ray cluster found for {address!r} (start one with "
                                                  "'ray start --head', or use --ray local)")
    host, _, port = hostport.rpartition(":")
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=timeout).close()
    except (OSError, ValueError) as e:
        why = getattr(e, "strerror", None) or _first_line(e)
        raise InputError("--ray", None, None, f"cannot reach Ray at {address!r} ({hostport}: {why})") from None


WORKER_NICENESS = "RAY_worker_niceness"  # read by the raylet a local cluster starts (Ray's default: 15)


@contextmanager
def ray_session(address: str, *, progress: bool = True):
    """A :class:`Session` on ``address`` (``local``, ``auto``, ``ray://host:port`` or ``host:port``)."""
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")  # no usage report from a job (and no network here)
    import ray

    started = connected = False
    if not ray.is_initialized():
        opts = dict(log_to_driver=False, logging_level=logging.WARNING if progress else logging.ERROR,
                    configure_logging=True)
        try:
            if address == "local":
                # Ray runs its workers at nice 15 by default: beside any other job on the machine (a browser, a
                # second run) the --ray local run then crawls, where one process would not (issue 63: a Ray
                # test starved behind two CPU-bound processes). The workers of a cluster this run starts get
                # the driver's priority, as Ray's own job manager gives them; RAY_worker_niceness still wins.
                os.environ.setdefault(WORKER_NICENESS, "0")
                ray.init(address="local", include_dashboard=False, **opts)  # a new instance, never a stale one
                started = True
            else:
                check_reachable(address)
                if address.startswith("ray://"):
                    _init_client(ray, address, opts)
                else:
                    ray.init(address=address, **opts)
        except InputError:
            raise
        except Exception as e:  # noqa: BLE001 - Ray raises bare Exception (a raylet that did not register in
            # 30 s on a loaded machine), OSError (an unusable RAY_TMPDIR), ConnectionError, RuntimeError, ...
            raise InputError("--ray", None, None, f"cannot {'start' if address == 'local' else 'reach'} Ray at "
                                                  f"{address!r}: {_first_line(e)}") from None
        connected = True
    try:
        cpus, gpus, nodes = _cluster_info(ray)
        _configure_data(progress)
        session = Session(address=address, started=started, cpus=cpus, gpus=gpus, nodes=nodes, progress=progress,
                          client=address.startswith("ray://"))
        try:
            yield session
        finally:
            session.close()
    finally:
        if connected:
            ray.shutdown()  # ``local``: stops the instance this job started; otherwise disconnects
