"""What travels through a pipeline beside the stages' own parameters: :class:`Using` (the objects the stages
use, resolved at the edge), :class:`Query` (one question's run), :class:`Candidates` (the ranking between
stages, and the pipeline's step) and :class:`Batch` (a run's questions, for the stages' batches)."""
from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

from ...datasets.sides import yes_no_sides
from ...records import Hits
from ...stance import get_stance_model
from ...stance.side_reader import get_side_reader
from ..query_expansion import perspectives_for


@dataclass
class Using:
    """What the stages use besides their own parameters, resolved at the edge (the CLI and the pages turn
    names into objects): ``judge`` (a Judge: coverage ``probs=judge`` and ``auto``, xquad/pm2
    ``probs=judge``), ``embedder`` (a TextEncoder or an object with ``encode``; None: the dense retriever's
    own encoder and vectors), ``llm`` (the generator spec of ``source=llm``), ``pool`` (a
    ``discovery.PoolIndex`` for ``source=pool``), ``stance_model`` (coverage ``probs=model``, rvr
    ``reader=model``), ``perspectives`` (explicit perspectives that override every stage's ``source``),
    ``other_retriever`` (the ``union`` stage's second retriever over the same corpus: BM25 beside a dense run,
    dense beside a BM25 one; :func:`..candidates.union_partner`) and ``side_reader`` (``probs=index`` /
    ``reader=index``). A model a stage needs and none was given for: the shipped one (:meth:`with_models`)."""

    judge: object = None
    embedder: object = None
    llm: str | None = None
    pool: object = None
    stance_model: object = None
    perspectives: list | None = None
    other_retriever: object = None
    side_reader: object = None

    def __post_init__(self):
        if isinstance(self.judge, str):
            raise TypeError("judge: pass a Judge object (the edge resolves a spec with berds_core.judges.get_judge)")
        if isinstance(self.embedder, str):
            raise TypeError("embedder: pass an encoder object (the edge resolves a model id with "
                            "berds_core.embeddings.text_encoders.text_encoder)")

    def with_models(self, needed) -> "Using":
        """This ``Using`` with the shipped stance model and side reader (each loaded once per process) where
        ``needed`` (the stages' :meth:`~.base.Stage.models`) names one that was not given: the one place
        the engine loads a model by default; the stages read theirs from here."""
        load = {}
        if "stance_model" in needed and self.stance_model is None:
            load["stance_model"] = get_stance_model()
        if "side_reader" in needed and self.side_reader is None:
            load["side_reader"] = get_side_reader()
        return replace(self, **load) if load else self


@dataclass
class Query:
    """One question's run through a pipeline: the question, the corpus, the retriever, ``k``, the search
    ``depth`` (``max(candidates, k)``) and what the stages use; perspectives are looked up once per source."""

    question: object
    corpus: object
    retriever: object
    k: int
    depth: int
    using: Using
    _persp: dict = field(default_factory=dict)

    @property
    def text(self) -> str:
        return self.question.question

    @property
    def sides(self) -> tuple[str, str]:
        """The question's two side statements (``datasets.sides.yes_no_sides``: the affirmative one and its
        negation; an empty string where the question has none)."""
        return yes_no_sides(self.text)

    def perspectives(self, source: str) -> list[str]:
        """The question's perspectives from ``source`` (a ``QE_SOURCES`` name), or the run's explicit ones."""
        if self.using.perspectives is not None:
            return list(self.using.perspectives)
        if source not in self._persp:
            self._persp[source] = perspectives_for(self.question, source, corpus=self.corpus,
                                                   retriever=self.retriever, llm=self.using.llm, pool=self.using.pool)
        return list(self._persp[source])


@dataclass
class Candidates:
    """The candidates (:class:`~berds_core.records.Hits`: corpus rows and their retriever scores, best first)
    and ``tail``: the retriever's ranks below them (a ``Hits``; None: not fetched; empty: nothing may follow
    them). ``rows`` and ``scores`` are the hits' arrays, what the re-rankers read."""

    hits: Hits
    tail: Hits | None = None

    @property
    def rows(self) -> np.ndarray:
        return self.hits.rows

    @property
    def scores(self) -> np.ndarray:
        return self.hits.scores

    def take(self, order) -> "Candidates":
        return Candidates(self.hits.take(list(order)), self.tail)

    def after(self, ranking) -> "Candidates":
        """The pipeline's step: the candidates a re-ranker's ``ranking`` leaves (its ``rerank``): the
        candidates' indices in their new order, or a ``Hits`` of the stage's own (passages it brings); the
        tail stays."""
        return Candidates(ranking, self.tail) if isinstance(ranking, Hits) else self.take(ranking)

    def __len__(self) -> int:
        return len(self.hits)


@dataclass
class Batch:
    """The questions of a run, for :meth:`~.base.Stage.prefetch`: ``depth`` is the pipeline's candidate depth,
    ``pool`` where its candidates come from (``retriever`` or ``union``)."""

    questions: list
    corpus: object
    retriever: object
    using: Using
    depth: int
    pool: str = "retriever"
    progress: bool = True
    prior: tuple = ()  # the re-rankers (Stage objects) ahead of the stage being prefetched: its candidates are theirs
    k: int | None = None  # the run's k (None: not known ahead of the loop)

    @property
    def before(self) -> tuple[str, ...]:
        """The names of the re-rankers ahead of the stage."""
        return tuple(s.name for s in self.prior)
