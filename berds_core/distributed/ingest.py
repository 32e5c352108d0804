"""``--ray`` on a corpus ingest: the shards of a corpus read in parallel by Ray tasks, stored by the driver.

``berds corpus ingest --ray ADDRESS`` (and ``berds index|retrieve --ray`` when the
corpus goes to the on-disk store and is not there yet) read a folder of shards
(``*.jsonl.gz``, ``*.tsv``, ``*.parquet``, ...) with one Ray task per shard:
each task runs :func:`berds_core.files.corpus_readers.read_shard` on its file and
yields its record batches as a streaming generator. The driver keeps
:func:`berds_core.corpora.disk.ingest` as it is and only swaps where its batches
come from (``ingest(..., reader=...)``): it consumes them in shard order, so the
passages, their rows, the de-duplication, the manifest's content ``hash`` and
every error are what the one-process ingest gives, byte for byte.

- **Bounded**: at most ``window`` shard tasks are in flight (default: the
  cluster's CPUs), and each pauses after ``BACKLOG`` batches the driver has not
  taken yet (Ray's generator backpressure), so neither the driver nor the object
  store ever holds more than ``window x BACKLOG`` batches (10,000 records each);
  the tasks of the next shards read while the driver stores the current one.
- **Errors**: a bad record is an ``InputError`` in the task; it comes back as a
  value, not as a Ray traceback, and the driver raises the same one-line error
  (file, line, field) when it reaches that point of the corpus, after storing
  what precedes it, exactly as one process does; the store being built is
  removed (``files.build_dir``) and the tasks still reading are cancelled.
- **Where the files are**: a task opens its shard at the path the driver lists, so on
  a cluster of several machines the corpus folder must be at the same path on every
  node (a shared filesystem, like ``--ray-dir``). On one machine it always is.
- **Ray Client** (``ray://``): batches would come back through the client
  connection anyway, so the shards are read in this process (nothing changes).

What the parallel reading buys is the parsing (JSON, CSV, gzip, Parquet
decoding: most of a one-process ingest's time on 2 cores); the driver still
de-duplicates and writes SQLite alone, in order.
"""
from __future__ import annotations

from typing import Iterator, Sequence

from ..corpora.disk import read_in_order
from ..errors import InputError
from ..files.corpus_readers import BATCH_ROWS, RecordBatch, Shard, read_shard

BACKLOG = 2  # batches a shard task may have ready that the driver has not taken yet


def _read_shard_task(shard: Shard, batch_rows: int):
    """A Ray task (a streaming generator): the shard's record batches; a bad record ends it with the
    error's fields as a value (``InputError`` does not survive pickling with its own fields)."""
    try:
        yield from read_shard(shard, batch_rows)
    except InputError as e:
        yield ("input-error", e.path, e.line, e.field, e.message)


def shard_batches(session, shards: Sequence[Shard], *, window: int | None = None,
                  batch_rows: int = BATCH_ROWS) -> Iterator[tuple[int, RecordBatch]]:
    """``(shard number, batch)`` of every shard, in shard order, read by Ray tasks (at most ``window``
    shards in flight); the reader ``corpora.disk.ingest`` takes."""
    if session.client:
        yield from read_in_order(shards)
        return
    import ray

    task = ray.remote(num_cpus=1, max_retries=3, _generator_backpressure_num_objects=BACKLOG)(_read_shard_task)
    window = max(1, int(window or session.cpus or 1))
    running: dict[int, object] = {}
    submitted = 0
    try:
        for s_no in range(len(shards)):
            while submitted < len(shards) and submitted < s_no + window:
                running[submitted] = task.remote(shards[submitted], batch_rows)
                submitted += 1
            for ref in running.pop(s_no):
                item = ray.get(ref)
                if isinstance(item, tuple):
                    _, path, line, field, message = item
                    raise InputError(path, line, field, message)
                yield s_no, item
    finally:
        for gen in running.values():  # an error or Ctrl-C: the shards still being read are not needed
            try:
                ray.cancel(gen)
            except Exception:  # noqa: BLE001 - finished already, or the session is going down anyway
                pass

