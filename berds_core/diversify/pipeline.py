"""A diversification pipeline: retriever -> candidates -> stages, built from a spec string.

``Pipeline.parse("dense%10>>coverage(probs=model,alpha=0.1,keep=2)")`` reads a spec (:mod:`.spec`) into
the retriever's name (what the edge opens; None: the retriever in use), the candidate depth (default 100)
and the stages (:mod:`.stages`); ``str(pipeline)`` prints it back. ``pipeline.run(query)`` ranks one
question:

1. a pipeline whose stages do not reorder (no stage, or ``none``) returns the retriever's top ``k``;
2. else the candidates are the retriever's top ``depth`` (or what a source stage, ``qe`` / ``union``,
   makes), and each re-ranker's ranking (its ``rerank``: the candidates reordered, at most ``k``, or passages
   of its own, ``rvr``) becomes the next candidates, one step for every stage (``Candidates.after``);
3. when fewer than ``k`` remain, the retriever's own order follows them (``--k 100`` over 10 candidates
   re-ranks the top 10 only).

The models the stages read (the stance model, the side reader) come from the run's ``Using``: ``run`` and
``prefetch`` load the shipped ones there when a stage needs one and none was given (``Using.with_models``).

The ranking is a :class:`~berds_core.records.Hits` all the way: the retriever's, the candidates', the
stages' and the one returned (what :func:`berds_core.runs.question_entry` writes).
"""
from __future__ import annotations

from dataclasses import dataclass, replace

from ..records import Hits
from ..specs import SpecError
from .candidates import candidate_pool
from .spec import SpecParts, StagePart, format_spec, parse_spec
from .stages import STAGES, Batch, Candidates, Query, Stage, Using

DEFAULT_DEPTH = 100


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
        for i, part in enumerate(parts.stages):  # each stage from the registry, its errors placed in the text
            if part.name not in STAGES.names():
                raise SpecError(f"pipeline '{text}': at {part.at + 1}: unknown stage '{part.name}'; "
                                f"choose from: {STAGES.choices()}")
            try:
                stages.append(STAGES.create(part.name, **dict(part.args)))
            except SpecError as e:
                keys = [k for k, _ in part.args]
                at = next((part.arg_at[j] for j, k in enumerate(keys) if f"'{k}'" in str(e) or f" {k} " in str(e)),
                          part.at)
                raise SpecError(f"pipeline '{text}': at {at + 1}: {e}") from None
            if stages[-1].makes_candidates and i > 0:
                raise SpecError(f"pipeline '{text}': at {part.at + 1}: {part.name} makes the candidates: "
                                f"it must be the first stage")
        return cls(parts.retriever, DEFAULT_DEPTH if parts.depth is None else parts.depth, tuple(stages))

    def __str__(self) -> str:
        depth = None if self.depth == DEFAULT_DEPTH else self.depth
        return format_spec(SpecParts(self.retriever, depth, tuple(StagePart(s.name, s.args()) for s in self.stages)))

    def describe(self, retriever: str | None = None) -> str:
        """What the pipeline does, in words printed from its parts (a caption never typed beside a spec);
        ``retriever``: the name of the one in use when the pipeline names none."""
        who = self.retriever or retriever or "the retriever"
        moving = [st for st in self.stages if st.reorders]
        if not moving:
            return f"{who}'s own ranking"
        steps = []
        for st in moving:
            what, _, how = st.help.partition(": ")
            args = ", ".join(f"{k}={v}" for k, v in st.args())
            steps.append(what + (f" ({how}{'; ' if how and args else ''}{args})" if how or args else ""))
        head = who if self.stages[0].makes_candidates else f"{who} top {self.depth}"
        return f"{head}, then " + ", then ".join(steps) + f"; below them, {who}'s own order"

    @property
    def pool(self) -> str:
        """Where the candidates come from: ``union`` when that stage leads, else ``retriever``."""
        return "union" if self.stages and self.stages[0].name == "union" else "retriever"

    def models(self) -> frozenset[str]:
        """The models its stages read from the run's ``Using`` (``stance_model``, ``side_reader``)."""
        return frozenset().union(*(s.models() for s in self.stages))

    def run(self, q: Query) -> Hits:
        """The ranked hits (corpus rows and scores) for one question (at most ``q.k``)."""
        using = q.using.with_models(self.models())
        if using is not q.using:
            q = replace(q, using=using)
        rerankers = [s for s in self.stages if s.reorders and not s.makes_candidates]
        source = self.stages[0] if self.stages and self.stages[0].makes_candidates else None
        if source is None and not rerankers:
            return Hits.of(q.retriever.search([q.text], q.k)[0])  # the retriever's own Hits
        c = source.candidates(q, self.depth) if source is not None else self._retrieved(q)
        if len(c) == 0:
            return Hits.empty()
        for stage in rerankers:
            c = c.after(stage.rerank(q, c))
        return fill(c.hits, q.text, q.retriever, q.k, c.tail)

    def _retrieved(self, q: Query) -> Candidates:
        # one search serves the candidates and the ranks below them
        hits = candidate_pool(q.text, q.corpus, q.retriever, q.depth, "retriever")
        return Candidates(hits[:self.depth], hits[self.depth:])

    def prefetch(self, questions, corpus, retriever, using: Using | None = None, progress: bool = True,
                 k: int | None = None) -> None:
        """Batch the per-question work of a run (all question embeddings in one encoder call, the stages'
        own batches) before the per-question loop; the results are the same without it. ``k``: the run's
        (a stage after vector-only stages batches what it will read only when it is known)."""
        if hasattr(retriever, "text_encoder"):
            retriever.text_encoder.embed([q.question for q in questions])
        using = (using or Using()).with_models(self.models())
        batch = Batch(list(questions), corpus, retriever, using, self.depth, self.pool, progress,
                      k=None if k is None else int(k))
        for i, stage in enumerate(self.stages):
            prior = tuple(s for s in self.stages[:i] if s.reorders and not s.makes_candidates)
            stage.prefetch(replace(batch, prior=prior))


def fill(hits: Hits, text: str, retriever, k: int, tail: Hits | None = None) -> Hits:
    """``hits`` (the re-ranked candidates) cut at ``k`` or, when fewer, followed by the retriever's next
    passages in its order (with its scores). ``tail``: those next passages when already retrieved (else one
    search for them; an empty ``Hits``: none follow)."""
    hits = Hits.of(hits)
    if len(hits) >= k:
        return hits.top(k)
    if tail is None:
        tail = retriever.search([text], k + len(hits))[0]
    return hits.then(tail, k)
