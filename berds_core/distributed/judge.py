"""``berds judge|judge-eval --ray``: pairs not yet judged, judged on the cluster into the prediction cache.

:func:`judge_on_cluster` fills the driver's prediction cache; the verb then runs exactly as in one
process, finds everything cached, and writes its file once, atomically.
Pairs already in the cache are never sent (``Judge.uncached``).

- any judge (``hf:``, ``openai:``, ``berds-evaluator``, ...): the pairs left
  form a Ray dataset, one row per chunk of ``commit_every`` pairs (the chunks
  one process scores); a pool of :class:`JudgeActor`, each holding one copy of
  the driver's judge (a GPU each for ``hf:`` when the cluster has GPUs; an
  ``openai:`` actor asks the server at its URL, e.g. ``localhost`` on each
  node), scores a chunk with the judge's own ``_score``; the driver commits
  each chunk to the cache as it comes back;
- ``embedded`` (the studio's stance model, a cross-encoder: one network pass
  per (perspective, passage) pair, nothing shared between pairs): the same
  actor pool; each actor's judge scores a chunk exactly as one process scores
  it (the same chunk of pairs, so the same encoder batches), so the
  probabilities equal one process's bit for bit; each node's embedding store
  keeps the pair encodings it computed;
- ``vllm``: ``ray.data.llm``'s vLLM processor (engines with the LoRA adapter,
  one per GPU) answers the rows; see :mod:`berds_core.judges.vllm_batch`.
"""
from __future__ import annotations

import json
import os
import time

import numpy as np

from ..judges.base import JudgeError, prediction_cache


class JudgeActor:
    """Holds one judge (a copy of the driver's: ``hf:``, ``openai:``, ``embedded``; a judge drops its loaded
    model when pickled and loads its own here); ``__call__`` scores one chunk of pairs."""

    def __init__(self, judge):
        import ray

        self.judge = judge
        self.judge._before_scoring()  # load the model now: a missing one fails at start
        self.node = ray.get_runtime_context().get_node_id()

    def __call__(self, batch: dict) -> dict:
        out = {"chunk": [], "probs": [], "decided": [], "node": [], "pid": []}
        for chunk, docs, persps in zip(batch["chunk"], batch["docs"], batch["persps"]):
            pairs = [(str(d), str(p)) for d, p in zip(docs, persps)]
            before = dict(getattr(self.judge, "decided_by", None) or {})
            probs = np.asarray(self.judge._score(pairs), dtype=np.float64)
            if probs.shape != (len(pairs),) or not np.all(np.isfinite(probs)):
                raise JudgeError(f"judge {self.judge.name} returned invalid probabilities")
            after = dict(getattr(self.judge, "decided_by", None) or {})
            out["chunk"].append(int(chunk))
            out["probs"].append(probs.tobytes())
            out["decided"].append(json.dumps({k: after.get(k, 0) - before.get(k, 0) for k in after}))
            out["node"].append(self.node)
            out["pid"].append(os.getpid())
        return {k: np.array(v, dtype=object if k in ("probs", "decided", "node") else None)
                for k, v in out.items()}


def _unwrap(e: BaseException) -> BaseException:
    """The JudgeError behind a Ray task error, if there is one."""
    seen = set()
    while e is not None and id(e) not in seen:
        seen.add(id(e))
        if isinstance(e, JudgeError):
            return e
        cause = getattr(e, "cause", None)
        e = cause if isinstance(cause, BaseException) else (e.__cause__ or e.__context__)
    return None


def judge_on_cluster(session, judge, pairs, on_batch=None) -> dict:
    """Judge on the cluster what ``judge.predict(pairs)`` would score; returns what was sent and where."""
    t0 = time.perf_counter()
    pairs = [(str(p), str(s)) for p, s in pairs]
    try:
        todo = judge.uncached(pairs)
        if judge.backend == "vllm":
            stats = {"mode": "vllm", "pairs_left": len(todo), **_vllm(session, judge, todo)}
        else:
            stats = {"mode": "judge", "pairs_left": len(todo), **_actors(session, judge, todo, on_batch)}
    except Exception as e:  # noqa: BLE001 - Ray wraps what an actor raised
        inner = _unwrap(e)
        if inner is not None and inner is not e:
            raise JudgeError(str(inner)) from None
        raise
    stats["seconds"] = round(time.perf_counter() - t0, 3)
    return stats


def _actors(session, judge, todo, on_batch) -> dict:
    ce = int(judge.commit_every)
    chunks = [todo[i:i + ce] for i in range(0, len(todo), ce)]
    stats = {"chunks": len(chunks), "sent": len(todo), "nodes_used": 0, "workers": 0}
    if not chunks:
        return stats
    gpu = judge.backend == "hf" and session.gpus > 0 and not str(getattr(judge, "device", "") or "").startswith("cpu")
    rows = [{"chunk": i, "docs": [p for _, (p, _s) in c], "persps": [s for _, (_p, s) in c]}
            for i, c in enumerate(chunks)]
    cache = prediction_cache()
    nodes, pids, done = set(), set(), 0
    decided = dict(getattr(judge, "decided_by", None) or {})
    for batch in session.map_rows(rows, JudgeActor, {"judge": judge}, gpu=gpu):
        for chunk, blob, dec, node, pid in zip(batch["chunk"], batch["probs"], batch["decided"], batch["node"],
                                               batch["pid"]):
            keys = [k for k, _ in chunks[int(chunk)]]
            probs = np.frombuffer(blob, dtype=np.float64)
            cache.put_many(judge.cache_key, list(zip(keys, probs)))
            if decided:
                for k, v in json.loads(str(dec)).items():
                    decided[k] = decided.get(k, 0) + int(v)
            nodes.add(str(node))
            pids.add((str(node), int(pid)))
            done += 1
            if on_batch is not None:
                on_batch(done, len(rows))
    if decided:
        judge.decided_by.update(decided)
    stats.update(nodes_used=len(nodes), workers=len(pids))
    return stats


def vllm_available() -> None:
    """JudgeError unless ``ray.data.llm`` imports here (Ray's LLM extra: vLLM and its dependencies)."""
    try:
        import ray.data.llm  # noqa: F401
    except ImportError as e:
        raise JudgeError("the vllm judge needs Ray's LLM extra (vLLM) where berds runs and in the cluster's "
                         f"environment: pip install 'ray[llm]==<the cluster's Ray version>' ({e})") from None


def vllm_processor(judge, session):
    """The ``ray.data.llm`` processor of a :class:`~berds_core.judges.vllm_batch.VLLMJudge`: one vLLM engine
    per GPU of the cluster, the LoRA adapter enabled, the judge's requests in and P(Yes) out."""
    vllm_available()
    from ray.data.llm import build_processor, vLLMEngineProcessorConfig

    if session.gpus < 1:
        raise JudgeError("the vllm judge needs GPUs in the Ray cluster (vLLM engines run one per GPU); "
                         "this cluster has none")
    config = vLLMEngineProcessorConfig(model_source=judge.model_id, engine_kwargs=judge.engine_kwargs(),
                                       concurrency=session.gpus, batch_size=judge.batch_size)
    return build_processor(
        config,
        preprocess=lambda row: {**judge.request(row["doc"], row["persp"]), "key": row["key"]},
        postprocess=lambda row: {"key": row["key"], "prob": judge.probability(row)},
    )


def _vllm(session, judge, todo) -> dict:
    stats = {"sent": len(todo)}
    if not todo:
        return stats
    if session.client:
        raise JudgeError("the vllm judge runs a Ray Data pipeline, which Ray Client (ray://) cannot drive: run "
                         "berds on a node of the cluster with --ray auto (or submit it with 'ray job submit')")
    import ray.data

    processor = vllm_processor(judge, session)
    cache = prediction_cache()
    for i in range(0, len(todo), judge.commit_every):  # one dataset per chunk: each is committed when done
        chunk = todo[i:i + judge.commit_every]
        rows = [{"key": j, "doc": p, "persp": s} for j, (_, (p, s)) in enumerate(chunk)]
        out = processor(ray.data.from_items(rows)).take_all()
        probs = {int(r["key"]): float(r["prob"]) for r in out}
        if len(probs) != len(chunk):
            raise JudgeError(f"the vLLM processor answered {len(probs)} of {len(chunk)} pairs")
        cache.put_many(judge.cache_key, [(k, probs[j]) for j, (k, _) in enumerate(chunk)])
    return stats
