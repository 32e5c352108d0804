"""``--ray ADDRESS`` on ``berds index``, ``retrieve``, ``judge`` and ``judge-eval`` (``berds_core.distributed``).

The verbs call in here only when ``--ray`` (or ``BERDS_RAY_ADDRESS``) is
given; nothing here imports Ray before that. Output files and JSON keys are
those of the one-process verbs, plus a ``ray`` object saying what ran where.
"""
from __future__ import annotations

import time

from ..errors import InputError


def add_ray_args(p, *, shards: bool = False) -> None:
    from ..distributed import ADDRESS_HELP

    p.add_argument("--ray", metavar="ADDRESS", default=None, help=ADDRESS_HELP)
    if shards:
        p.add_argument("--ray-dir", dest="ray_dir", metavar="DIR", default=None,
                       help="--ray: folder of the sharded index, one every node reads at the same path "
                            "(default: under $BERDS_CACHE/indexes, enough on one machine)")
        p.add_argument("--shard-rows", dest="shard_rows", type=int, default=None,
                       help="--ray: corpus rows per shard (default 65536)")


def requested(args) -> str | None:
    """The Ray address asked for, its form checked (None: run in this process); shard options without it
    are an error. Nothing is imported or asked: :func:`address` does that."""
    from ..distributed import resolve_address

    addr = resolve_address(getattr(args, "ray", None))
    if addr is None:
        for flag, dest in (("--ray-dir", "ray_dir"), ("--shard-rows", "shard_rows")):
            if getattr(args, dest, None) is not None:
                raise InputError(flag, None, None, "only with --ray ADDRESS")
        return None
    if getattr(args, "shard_rows", None) is not None and args.shard_rows < 1:
        raise InputError("--shard-rows", None, None, "must be at least 1")
    return addr


def address(args) -> str | None:
    """:func:`requested`, and the address checked the first time a verb asks (:func:`preflight`): Ray
    installed, the cluster answering, even when the job turns out to need no cluster."""
    addr = requested(args)
    if addr is None:
        return None
    if getattr(args, "ray_checked", None) != addr:
        preflight(args, addr)
        args.ray_checked = addr
    return addr


RAY_INSTALL = "pip install -e .[ray]"


def preflight(args, addr: str) -> None:
    """Ray installed and the cluster at ``addr`` answering, before any work (all pairs cached, the store
    already built or a BM25 index need no cluster, but a wrong address is said at once, not on the day
    the cache is cold)."""
    import importlib.util

    flag = "--ray" if getattr(args, "ray", None) is not None else "BERDS_RAY_ADDRESS"
    try:
        found = importlib.util.find_spec("ray") is not None
    except (ImportError, ValueError):
        found = False
    if not found:
        raise InputError(flag, None, None, f"needs Ray, which is not installed in this environment: {RAY_INSTALL}")
    if addr != "local":
        from ..distributed.runtime import check_reachable

        try:
            check_reachable(addr)
        except InputError as e:
            raise InputError(flag, None, None, e.message) from None


def _session(args, addr):
    from ..distributed.runtime import ray_session

    return ray_session(addr, progress=not getattr(args, "quiet", False))


class ClusterSearch:
    """A cluster's search as a retriever (``search(queries, k) -> hits``, what ``experiment.run`` reads):
    ``fn(queries, k) -> (hits, where)``; ``where`` (which nodes searched what) kept for the run's report."""

    def __init__(self, fn):
        self.fn, self.where = fn, {}

    def search(self, queries: list[str], k: int):
        hits, self.where = self.fn(queries, k)
        return hits


class LazySession:
    """The job's Ray session, started on first use (:meth:`get`) and stopped when the ``with`` block ends.

    A corpus ingest reads its shards on Ray only when the store is really built (:meth:`reader`); a BM25
    index then needs no session at all, and a dense one shares the ingest's (Ray starts once a job).
    """

    def __init__(self, args, addr: str):
        from contextlib import ExitStack

        self.args, self.addr = args, addr
        self.session = None
        self.ingested = False  # the corpus was ingested by Ray tasks in this job
        self._stack = ExitStack()

    def get(self):
        if self.session is None:
            self.session = self._stack.enter_context(_session(self.args, self.addr))
        return self.session

    def reader(self):
        """The ``reader`` of ``corpora.disk.ingest``: the shards read in parallel by Ray tasks."""
        from ..distributed.ingest import shard_batches

        def read(shards):
            self.ingested = True
            return shard_batches(self.get(), shards)

        return read

    def info(self, **extra) -> dict:
        base = self.session.describe() if self.session is not None else {"address": self.addr}
        return {**base, "ingested": self.ingested, **extra}

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return self._stack.__exit__(*exc)


def _shard_rows(args) -> int:
    from ..files.shard_files import SHARD_ROWS

    return int(args.shard_rows or SHARD_ROWS)


# ---------------------------------------------------------------- index / retrieve


def _encoder(args):
    """The driver's encoder (its store key names the vectors); loaded now so a bad model fails at once."""
    from ..embeddings.text_encoders import text_encoder
    from ..retrieval import encoder_model
    from ._retrieval import load_error

    try:
        te = text_encoder(encoder_model(args.retriever, args.model), args.device,
                          None if args.encoding == "auto" else args.encoding)
        te.encoder
    except OSError as e:
        raise InputError("--model", None, None, load_error(args.model, e)) from None
    except ValueError as e:
        raise InputError("--encoding", None, None, str(e)) from None
    return te


def _dense_info(te, index, kind: str, fresh: bool) -> dict:
    from ..embeddings.models import model_key
    from ..retrieval.base import dense_name

    name = dense_name(model_key(te.model_id)) + ("" if kind == "flat" else f"+{kind}") + \
        ("" if te.encoding == "fp32" else f"+{te.encoding}")
    return {"retriever": name, "model": model_key(te.model_id), "index": kind, "encoding": te.encoding,
            "cache_path": str(index.folder), "cache_hit": not fresh, "build_seconds": index.stats["seconds"]}


def _dense_index(args, session, corpus):
    from ..distributed.index import index_dense

    te = _encoder(args)
    index = index_dense(session, corpus, te, kind=args.index, root=args.ray_dir, shard_rows=_shard_rows(args))
    fresh = bool(index.stats["encode"]["encoded"] or index.stats["shards_written"] or index.stats["graphs_built"])
    return te, index, _dense_info(te, index, args.index, fresh)


def _bm25_index(args, corpus):
    from pathlib import Path

    from ..distributed.index import default_root
    from ..distributed.search import bm25_shards
    from ..retrieval.bm25 import INDEX_VERSION
    from ._retrieval import retriever_info as _retriever_info, open_retriever

    retriever = open_retriever(args, corpus)  # BM25 builds on the driver (tokenising: ~45k passages/s)
    if getattr(retriever, "engine", None) == "tantivy":  # an on-disk corpus: tantivy's index, on the driver
        return retriever, None, _retriever_info(retriever)
    folder = Path(args.ray_dir or default_root()) / f"{corpus.hash[:20]}-bm25-{INDEX_VERSION}"
    shards = bm25_shards(retriever, folder, _shard_rows(args))
    return retriever, shards, {**_retriever_info(retriever), "shards_path": str(folder)}


BM25_NOTE = "BM25 indexes on the driver; retrieve --ray searches its shards on the cluster"
TANTIVY_NOTE = ("BM25 over an on-disk corpus is tantivy's index on the driver (it searches in bounded memory, in "
                "this process, as without --ray); only the ingest ran on the cluster")


def run_index(args) -> dict:
    from ..retrieval import retriever_traits
    from ._retrieval import check_retriever_args as _check, corpus_from_args

    addr = address(args)
    _check(args)
    t0 = time.perf_counter()
    with LazySession(args, addr) as lazy:
        corpus = corpus_from_args(args, reader=lazy.reader())  # a store to build: its shards read by Ray tasks
        out = {"corpus": str(args.corpus), "passages": len(corpus), "duplicates_dropped": corpus.duplicates_dropped,
               "hash": corpus.hash}
        if "engine" in retriever_traits(args.retriever):  # BM25: indexed on the driver
            _, shards, info = _bm25_index(args, corpus)
            ray_info = lazy.info(used=lazy.ingested, shards=shards.n_shards if shards is not None else 0,
                                 note=BM25_NOTE if shards is not None else TANTIVY_NOTE)
        else:
            _, index, info = _dense_index(args, lazy.get(), corpus)
            ray_info = lazy.info(**{k: v for k, v in index.stats.items() if k != "seconds"})
    return {**out, **info, "seconds": round(time.perf_counter() - t0, 3), "ray": ray_info}


def run_retrieve(args, div) -> dict:
    from ..datasets import load_questions
    from ..distributed.search import search_bm25, search_dense
    from ..diversify.pipeline import Pipeline
    from ..experiment import Searched, run
    from ..runs import write_run
    from ..runs import run_depth
    from ..retrieval import retriever_traits
    from ._diversify_options import diversify_json
    from ._retrieval import corpus_from_args, warn_k

    if div is not None:
        raise InputError("--ray", None, None, "does not combine with diversification (--mmr, --qe, --rerank, "
                                              "--preset) yet: retrieve without it, then diversify in one process")
    if args.corpus_per_question is not None:
        raise InputError("--ray", None, None, "does not combine with --corpus-per-question (one small corpus "
                                              "per question needs no cluster)")
    if args.corpus is None:
        raise InputError("--corpus", None, None, "give --corpus")
    addr = address(args)
    t0 = time.perf_counter()
    questions = load_questions(args.questions, args.format)
    if not questions:
        raise InputError(args.questions, None, None, "no questions found")
    with LazySession(args, addr) as lazy:
        corpus = corpus_from_args(args, reader=lazy.reader())
        k = min(int(args.k), len(corpus))
        bm25 = "engine" in retriever_traits(args.retriever)  # BM25: indexed on the driver, searched in shards
        if bm25:
            retriever, shards, info = _bm25_index(args, corpus)
            t1 = time.perf_counter()
            if shards is None:  # tantivy (an on-disk corpus): searched where its index is, as without --ray
                search = None
            else:
                search = ClusterSearch(lambda qs, n: search_bm25(lazy.get(), retriever, shards, qs, n))
        else:
            te, index, info = _dense_index(args, lazy.get(), corpus)
            t1 = time.perf_counter()
            # the driver's encoder, through the store: as DenseRetriever.search
            search = ClusterSearch(lambda qs, n: search_dense(lazy.get(), index, te.embed(qs), n))
        # plain retrieval: the none pipeline
        entries = run(questions, Pipeline(), k, Searched(corpus, retriever if search is None else search))
        search_s = time.perf_counter() - t1
        if search is None:
            ray_info = lazy.info(used=lazy.ingested, note=TANTIVY_NOTE)
        elif bm25:
            ray_info = lazy.info(shards=shards.n_shards, shard_rows=shards.shard_rows, **search.where)
        else:
            ray_info = lazy.info(**{k_: v for k_, v in index.stats.items() if k_ != "seconds"}, **search.where)
    write_run(args.out, entries)  # once, atomically
    warn_k(args.k, len(corpus))
    return {"out": str(args.out), "questions": len(entries), "k": args.k, "passages": len(corpus),
            "corpus_size": len(corpus), "run_depth": run_depth(entries), "hash": corpus.hash, **info, "diversify": diversify_json(div), "search_seconds": round(search_s, 3),
            "seconds": round(time.perf_counter() - t0, 3), "ray": ray_info}


# ---------------------------------------------------------------- judge / judge-eval


def run_pairs(entries, judge) -> list[tuple[str, str]]:
    """The pairs ``judge_run`` sends to ``predict``, in its order."""
    from ..judges import passage_text

    return [(passage_text(c, judge), p) for e in entries for c in e["ctxs"] for p in e["perspectives"]]


def check_judge_ray(args, judge) -> None:
    """``judge`` / ``judge-eval`` with ``--ray``: vLLM present for a vllm judge, then the address
    (:func:`address`), before any pair is judged or looked up."""
    if requested(args) is None:
        return
    from ..judges import JudgeError

    if judge.backend == "vllm":
        from ..distributed.judge import vllm_available

        try:
            vllm_available()  # Ray's LLM extra missing: one line, before any cluster is asked
        except JudgeError as e:
            raise InputError("--judge", None, None, str(e)) from None
    address(args)


def judge_on_ray(args, judge, pairs) -> dict | None:
    """With ``--ray``: judge on the cluster what ``judge.predict(pairs)`` has left (the verb then finds it
    all cached). None without ``--ray``. Nothing left to judge: Ray is not started."""
    addr = address(args)
    if addr is None:
        return None
    from ..distributed.judge import judge_on_cluster
    from ..judges import JudgeError

    try:
        if judge.backend == "vllm":
            from ..distributed.judge import vllm_available

            vllm_available()  # Ray's LLM extra missing: one line, before any cluster is started
        left = len(judge.uncached(pairs))
        if left == 0:
            return {"address": addr, "started": False, "pairs_left": left, "sent": 0}
        with _session(args, addr) as session:
            stats = judge_on_cluster(session, judge, pairs)
            return {**session.describe(), **stats}
    except JudgeError as e:
        done = "" if "vLLM" in str(e) else " (judgments made so far are cached; rerun to resume)"
        raise InputError("--judge", None, None, f"{e}{done}") from None
