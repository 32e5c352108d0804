"""A diversification pipeline: retriever -> candidates -> stages, built from a spec string.

``Pipeline.parse("dense%10>>coverage(probs=model,alpha=0.1,keep=2)")`` reads a spec (:mod:`.spec`) into
the retriever's name (what the edge opens; None: the retriever in use), the candidate depth (default 100)
and the stages (:mod:`.stages`); ``str(pipeline)`` prints it back. ``pipeline.run(query)`` ranks one
question:

1. a pipeline whose stages do not reorder (no stage, or ``none``) returns the retriever's top ``k``;
2. else the candidates are the retriever's top ``depth`` (or what a source stage, ``qe`` / ``union``,
   makes), each re-ranker reorders them and keeps at most ``k``;
3. when fewer than ``k`` remain, the retriever's own order follows them (``--k 100`` over 10 candidates
   re-ranks the top 10 only).
"""
from __future__ import annotations

from dataclasses import dataclass, fields

import numpy as np

from ..specs import SpecError
from .spec import SpecParts, StagePart, format_spec, parse_spec
from .stages import STAGES, Batch, Candidates, Query, Stage, Using

DEFAULT_DEPTH = 100
POOLS = ("retriever", "union")


@dataclass(frozen=True)
class Pipeline:
    """``retriever`` (bm25 | dense | None: the one in use), ``depth`` (candidates), ``stages``."""

    retriever: str | None = None
    depth: int = DEFAULT_DEPTH
    stages: tuple[Stage, ...] = ()

    @classmethod
    def parse(cls, text: str) -> "Pipeline":
        """The pipeline of a spec; :class:`SpecError` (one line, with the position) when it is malformed."""
        parts = parse_spec(text)
        stages = []
        for i, part in enumerate(parts.stages):
            stages.append(_build(text, part))
            if stages[-1].makes_candidates and i > 0:
                raise SpecError(f"pipeline '{text}': at {part.at + 1}: {part.name} makes the candidates: "
                                f"it must be the first stage")
        return cls(parts.retriever, DEFAULT_DEPTH if parts.depth is None else parts.depth, tuple(stages))

    def __str__(self) -> str:
        depth = None if self.depth == DEFAULT_DEPTH else self.depth
        return format_spec(SpecParts(self.retriever, depth, tuple(StagePart(s.name, s.args()) for s in self.stages)))

    @property
    def pool(self) -> str:
        """Where the candidates come from: ``union`` when that stage leads, else ``retriever``."""
        return "union" if self.stages and self.stages[0].name == "union" else "retriever"

    def run(self, q: Query) -> list[tuple[int, float]]:
        """Ranked ``(corpus_row, score)`` pairs for one question (at most ``q.k``)."""
        rerankers = [s for s in self.stages if s.reorders and not s.makes_candidates]
        source = self.stages[0] if self.stages and self.stages[0].makes_candidates else None
        if source is None and not rerankers:
            return [(int(r), float(s)) for r, s in q.retriever.search([q.text], q.k)[0]]
        c = source.candidates(q, self.depth) if source is not None else self._retrieved(q)
        if len(c) == 0:
            return []
        for stage in rerankers:
            c = c.take(stage.rerank(q, c))
        return fill([(int(r), float(s)) for r, s in zip(c.rows, c.scores)], q.text, q.retriever, q.k, c.tail)

    def _retrieved(self, q: Query) -> Candidates:
        # one search serves the candidates and the ranks below them
        rows, scores = candidate_pool(q.text, q.corpus, q.retriever, q.depth, "retriever")
        tail = list(zip(rows[self.depth:].tolist(), scores[self.depth:].tolist()))
        return Candidates(rows[:self.depth], scores[:self.depth], tail)

    def prefetch(self, questions, corpus, retriever, using: Using | None = None, progress: bool = True) -> None:
        """Batch the per-question work of a run (all question embeddings in one encoder call, the stages'
        own batches) before the per-question loop; the results are the same without it."""
        if hasattr(retriever, "text_encoder"):
            retriever.text_encoder.embed([q.question for q in questions])
        batch = Batch(list(questions), corpus, retriever, using or Using(), self.depth, self.pool, progress)
        for stage in self.stages:
            stage.prefetch(batch)


def _build(text: str, part: StagePart) -> Stage:
    try:
        STAGES.parse(part.name)
    except SpecError:
        raise SpecError(f"pipeline '{text}': at {part.at + 1}: unknown stage '{part.name}'; "
                        f"choose from: {STAGES.choices()}") from None
    try:
        return STAGES.create(part.name, **dict(part.args))
    except SpecError as e:
        keys = [k for k, _ in part.args]
        at = next((part.arg_at[i] for i, k in enumerate(keys) if f"'{k}'" in str(e) or f" {k} " in str(e)), part.at)
        raise SpecError(f"pipeline '{text}': at {at + 1}: {e}") from None


def as_pipeline(spec) -> Pipeline:
    """A Pipeline as is; a spec string parsed; a preset name (``diverse``) its saved pipeline."""
    if isinstance(spec, Pipeline):
        return spec
    from .presets import PRESETS, get_preset

    text = str(spec).strip()
    text = {"rerank": "coverage", "preset": "diverse"}.get(text, text)  # the old method names
    if text in PRESETS:
        return get_preset(text)
    return Pipeline.parse(text)


def fill(hits: list[tuple[int, float]], text: str, retriever, k: int, tail=None) -> list[tuple[int, float]]:
    """``hits`` (the re-ranked candidates) cut at ``k`` or, when fewer, followed by the retriever's next
    passages in its order (with its scores). ``tail``: those next passages when already retrieved (else one
    search for them; ``[]``: none follow)."""
    if len(hits) >= k:
        return hits[:k]
    seen = {r for r, _ in hits}
    if tail is None:
        tail = retriever.search([text], k + len(hits))[0]
    more = [(int(r), float(sc)) for r, sc in tail if int(r) not in seen]
    return hits + more[:k - len(hits)]


def candidate_pool(text: str, corpus, retriever, n: int, pool: str = "retriever") -> tuple[np.ndarray, np.ndarray]:
    """Candidate rows and their scores, best first.

    ``retriever``: the retriever's top ``n``. ``union``: the union of the dense and the BM25 top ``n`` (the
    given retriever is one of them; the other is opened on the same corpus, from the index cache), all
    scored by the dense cosine with the question, so one scale ranks them.
    """
    if pool not in POOLS:
        raise ValueError(f"pool must be one of {', '.join(POOLS)}, got {pool!r}")
    if pool == "retriever":
        hits = retriever.search([text], n)[0]
        return np.array([int(r) for r, _ in hits], dtype=int), np.array([float(s) for _, s in hits])
    dense = retriever if hasattr(retriever, "text_encoder") else companion(corpus, "dense")
    sparse = companion(corpus, "bm25") if dense is retriever else retriever
    qv = dense.encode([text])[0]
    hits = dense.search_vectors(qv[None, :], n)[0]
    rows = list(dict.fromkeys([int(r) for r, _ in hits] + [int(r) for r, _ in sparse.search([text], n)[0]]))
    rows = np.array(rows, dtype=int)
    scores = np.asarray(dense.embeddings)[rows] @ qv if len(rows) else np.zeros(0)
    order = np.argsort(-scores, kind="stable")
    return rows[order], scores[order].astype(np.float64)


_COMPANIONS: dict[tuple, object] = {}


def companion(corpus, kind: str):
    """A second retriever of ``kind`` (bm25 | dense, default model) over the same corpus, kept per corpus."""
    key = (kind, getattr(corpus, "hash", id(corpus)))
    if key not in _COMPANIONS:
        from ..retrieval import get_retriever

        if len(_COMPANIONS) >= 4:
            _COMPANIONS.pop(next(iter(_COMPANIONS)))
        _COMPANIONS[key] = get_retriever(kind, corpus, progress=False)
    return _COMPANIONS[key]


# --------------------------------------------------------------------------- the old keyword spelling

# method name -> stage name (the old names and their aliases)
METHOD_STAGES = {"none": "none", "mmr": "mmr", "qe": "qe", "coverage": "coverage", "rerank": "coverage",
                 "xquad": "xquad", "pm2": "pm2"}
# old keyword -> the stage keyword it became
OLD_KEYS = {"lam": "lam", "qe_source": "source", "alpha": "alpha", "coverage_probs": "probs", "keep": "keep",
            "mix": "mix", "temperature": "temperature", "aspect_probs": "probs"}


def pipeline_from_options(method: str, options: dict) -> Pipeline:
    """The pipeline of the old ``diversify(method, lam=..., qe_source=..., candidates=..., ...)`` keywords
    (``options``: those keywords; None values are left out). ``preset`` / ``diverse`` is the saved preset."""
    opts = {key: v for key, v in options.items() if v is not None}
    if method in ("preset", "diverse"):
        return as_pipeline("diverse")
    if method not in METHOD_STAGES:
        raise ValueError(f"unknown method {method!r}; choose from {', '.join(METHOD_STAGES)}, preset")
    cls = type(STAGES.create(METHOD_STAGES[method]))
    own = {f.name for f in fields(cls)}
    kind = METHOD_STAGES[method]
    args = {}
    for key, value in opts.items():
        new = OLD_KEYS.get(key)
        if new in own and not (key == "coverage_probs" and kind != "coverage") and not (
                key == "aspect_probs" and kind == "coverage"):
            args[new] = value
    stage = cls(**args)
    stages: tuple[Stage, ...] = (stage,)
    if opts.get("candidates_from", "retriever") == "union" and kind in ("mmr", "coverage", "xquad", "pm2"):
        stages = (STAGES.create("union"), stage)
    elif opts.get("candidates_from", "retriever") not in POOLS:
        raise ValueError(f"pool must be one of {', '.join(POOLS)}, got {opts['candidates_from']!r}")
    return Pipeline(None, int(opts.get("candidates", DEFAULT_DEPTH)), stages)
