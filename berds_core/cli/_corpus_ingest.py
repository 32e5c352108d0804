"""``berds corpus ingest``: stream a large corpus once into the on-disk store and print its manifest.

::

    berds corpus ingest --corpus psgs_w100.tsv
    berds corpus ingest --corpus shards/          # a folder of *.jsonl.gz / *.parquet
    berds corpus ingest --corpus shards/ --ray local   # the shards read in parallel by Ray tasks

``berds index`` and ``berds retrieve`` ingest on first use anyway
(``--corpus-storage auto|disk``); this verb does it alone, with a progress bar,
and reports the manifest (passages, bytes, content hash, the store folder) that
names the corpus in every index and run built from it. With ``--ray ADDRESS``
the shards are read in parallel by Ray tasks (``berds_core.distributed.ingest``):
the same store, manifest and errors as without it.
"""
from __future__ import annotations

import time

from ..errors import InputError


def add_ingest(kinds) -> None:
    from . import add_common_args

    p = kinds.add_parser("ingest", help="stream a corpus into the on-disk store (for corpora larger than memory)",
                         description="Read a corpus (.jsonl, .tsv, .csv, each optionally .gz, .parquet, or a folder "
                                     "of them) batch by batch into an on-disk store in the cache; print its manifest.")
    add_common_args(p)
    p.add_argument("--corpus", required=True, help="corpus file or folder of shards")
    p.add_argument("--passage-words", type=int, default=100,
                   help="split texts into passages of this many words (0: keep texts whole)")
    p.add_argument("--name", default=None, help="the corpus name (default: the file name without suffixes)")
    from ._ray import add_ray_args

    add_ray_args(p)
    p.set_defaults(func=run_ingest)
    from ._parsing import declare

    declare(p, inputs=("corpus",))  # writes only the store in the cache


def run_ingest(args) -> dict:
    from ..corpora.disk import ingest

    if args.passage_words < 0:
        raise InputError("--passage-words", None, None, "must be 0 or more")
    from ._ray import LazySession, address

    addr = address(args)
    t0 = time.perf_counter()
    ray_info = None
    if addr is None:
        corpus = ingest(args.corpus, passage_words=args.passage_words or None, name=args.name,
                        progress=not args.quiet)
    else:
        with LazySession(args, addr) as lazy:  # Ray starts only when the store is built
            corpus = ingest(args.corpus, passage_words=args.passage_words or None, name=args.name,
                            progress=not args.quiet, reader=lazy.reader())
            ray_info = lazy.info()
    m = corpus.manifest
    out = {"corpus": str(args.corpus), "name": m["name"], "passages": m["passages"], "records": m["records"],
           "duplicates_dropped": m["duplicates_dropped"], "bytes": m["bytes"], "hash": m["hash"],
           "shards": len(m["shards"]), "store": str(corpus.folder), "ingest_seconds": m["seconds"],
           "seconds": round(time.perf_counter() - t0, 3)}
    return out if ray_info is None else {**out, "ray": ray_info}
