"""The stages of a diversification pipeline: small classes, each holding only its own parameters.

A pipeline (:mod:`.pipeline`) takes the retriever's top ``depth`` candidates and passes them through its
stages. Two kinds:

- **source stages** replace the candidates and come first: ``qe`` (one search per perspective, merged
  round-robin) and ``union`` (the dense and the BM25 top ``depth`` together, scored by dense cosine);
- **re-rankers** reorder the candidates they get (``rerank(query, candidates) -> order``) and keep at
  most ``k``: ``mmr``, ``coverage``, ``xquad``, ``pm2``; ``none`` passes them through.

Every stage is registered in ``STAGES`` (a :class:`berds_core.specs.Registry` of kind "diversifier")
under the name the spec language uses; its dataclass fields are its spec keywords. What a stage uses
besides its parameters (the judge, the embedder, the LLM, the perspective pool, the stance model) comes
from the run's :class:`Using`, as objects resolved at the edge. See docs/pipelines.md.
"""
from __future__ import annotations

import math

from dataclasses import dataclass, field, fields
from typing import ClassVar

import numpy as np

from ..datasets.sides import yes_no_sides
from ..judges import judge_passages
from ..records import Hits
from ..specs import Registry, SpecError
from ..stance import get_stance_model, passage_string
from ..stance.side_reader import get_side_reader
from .aspects import ASPECT_PROBS, retrieval_probs
from .candidates import candidate_pool, is_dense
from .coverage import coverage_rerank, similarity_probs, stance_probs
from .index_sides import index_side_probs
from .mmr import mmr, normalize_scores
from .pm2 import DEFAULT_LAMBDA as PM2_LAMBDA, pm2
from .query_expansion import QE_SOURCES, expand_and_merge, perspectives_for
from .rvr import RVR_SOURCES, missing_sides, retrieve_verify, second_round_order, side_of
from .vectors import encode, passage_embeddings
from .xquad import DEFAULT_LAMBDA as XQUAD_LAMBDA, xquad

STAGES = Registry("diversifier")
COVERAGE_PROBS = ("auto", "judge", "model", "index", "stance", "similarity")
RVR_READERS = ("model", "index")
MMR_LAMBDA = 0.75


def _param(default, kind, help: str, lo: float | None = None, hi: float | None = None):
    """A stage parameter: ``kind`` is float, int, str (a word) or a tuple of the allowed words."""
    return field(default=default, metadata={"kind": kind, "help": help, "lo": lo, "hi": hi})


def _convert(stage: str, key: str, f, text: str):
    kind, lo, hi = f.metadata["kind"], f.metadata["lo"], f.metadata["hi"]
    if isinstance(kind, tuple):
        if text not in kind:
            raise SpecError(f"{stage}: {key} must be one of {', '.join(kind)}, got {text!r}")
        return text
    if kind is str:
        return text
    try:
        value = kind(text)
    except ValueError:
        raise SpecError(f"{stage}: {key} must be {'an integer' if kind is int else 'a number'}, got {text!r}") from None
    if kind is float and not math.isfinite(value):  # float() takes 'nan' and 'inf'; no parameter means them
        raise SpecError(f"{stage}: {key} must be a finite number, got {text!r}")
    return value


def _check(stage: str, f, value) -> None:
    lo, hi, kind = f.metadata["lo"], f.metadata["hi"], f.metadata["kind"]
    if value is None:
        return
    if isinstance(value, float) and not math.isfinite(value):
        raise SpecError(f"{stage}: {f.name} must be a finite number, got {value}")
    if isinstance(kind, tuple) and value not in kind:
        raise SpecError(f"{stage}: {f.name} must be one of {', '.join(kind)}, got {value!r}")
    if (lo is not None and value < lo) or (hi is not None and value > hi):
        span = f"in [{lo}, {hi}]" if hi is not None else f"{lo} or more"
        raise SpecError(f"{stage}: {f.name} must be {span}, got {value}")


@dataclass
class Using:
    """What the stages use besides their own parameters, resolved at the edge (the CLI and the pages turn
    names into objects): ``judge`` (a Judge: coverage ``probs=judge`` and ``auto``, xquad/pm2
    ``probs=judge``), ``embedder`` (a TextEncoder or an object with ``encode``; None: the dense retriever's
    own encoder and vectors), ``llm`` (the generator spec of ``source=llm``), ``pool`` (a
    ``discovery.PoolIndex`` for ``source=pool``), ``stance_model`` (None: the shipped one),
    ``perspectives`` (explicit perspectives that override every stage's ``source``) and ``other_retriever``
    (the ``union`` stage's second retriever over the same corpus: BM25 beside a dense run, dense beside a BM25
    one; :func:`.candidates.union_partner`); ``side_reader`` (``probs=index`` / ``reader=index``; None: the
    shipped one, ``stance.side_reader``)."""

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

    def perspectives(self, source: str) -> list[str]:
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

    def __len__(self) -> int:
        return len(self.hits)


@dataclass
class Batch:
    """The questions of a run, for :meth:`Stage.prefetch`: ``depth`` is the pipeline's candidate depth,
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


@dataclass(frozen=True)
class Stage:
    """Base of the stages. ``name``: its spec name; ``makes_candidates``: it makes the candidates (first stage only);
    ``reorders``: it changes the ranking (``none`` does not)."""

    name: ClassVar[str] = ""
    help: ClassVar[str] = ""
    makes_candidates: ClassVar[bool] = False
    reorders: ClassVar[bool] = True

    def reads_stored_vectors_only(self) -> bool:
        """It re-ranks from stored passage vectors and the question alone (no judge, LLM or stance model call
        per candidate), so running it twice, ahead of the loop and in it, costs only vector operations."""
        return False

    def __post_init__(self):
        for f in fields(self):
            _check(self.name, f, getattr(self, f.name))

    @classmethod
    def from_args(cls, args: dict[str, str]) -> "Stage":
        """The stage of the spec's ``key=value`` texts (SpecError naming the key on a bad one)."""
        known = {f.name: f for f in fields(cls)}
        values = {}
        for key, text in args.items():
            if key not in known:
                takes = ", ".join(known) or "no arguments"
                raise SpecError(f"{cls.name} takes {takes}; not '{key}'")
            values[key] = _convert(cls.name, key, known[key], text)
        return cls(**values)

    def args(self) -> tuple[tuple[str, object], ...]:
        """The parameters that differ from their defaults, in declaration order (what the spec prints)."""
        return tuple((f.name, getattr(self, f.name)) for f in fields(self) if getattr(self, f.name) != f.default)

    def rerank(self, q: Query, c: Candidates) -> list[int]:
        raise NotImplementedError

    def apply(self, q: Query, c: Candidates) -> Candidates:
        """The candidates after this stage: the re-ranked ones (a stage that brings new passages overrides it)."""
        return c.take(self.rerank(q, c))

    def candidates(self, q: Query, depth: int) -> Candidates:
        raise NotImplementedError

    def prefetch(self, batch: "Batch") -> None:
        """Batch work for many questions ahead of the per-question loop (same results, faster)."""


def register(cls):
    """Class decorator: the stage in ``STAGES`` under ``cls.name``."""
    STAGES.register(cls.name, help=cls.help, builds=cls)(lambda arg, **args: cls.from_args(args))
    return cls


def _first(q: Query, c: Candidates) -> list[int]:
    return list(range(min(q.k, len(c))))


def judge_probs(judge, corpus, rows, persp) -> np.ndarray:
    """The judge's P(passage supports perspective), (len(rows), len(persp)); passages read as runs read them."""
    probs, _ = judge_passages(judge, [corpus[int(r)] for r in rows], persp)
    return np.asarray(probs, dtype=np.float64)


# --------------------------------------------------------------------------- stages


@register
@dataclass(frozen=True)
class PassThrough(Stage):
    name: ClassVar[str] = "none"
    help: ClassVar[str] = "no diversification: the retriever's order"
    reorders: ClassVar[bool] = False

    def rerank(self, q, c):
        return _first(q, c)


@register
@dataclass(frozen=True)
class Union(Stage):
    name: ClassVar[str] = "union"
    help: ClassVar[str] = "candidates: the dense and the BM25 top depth together, scored by dense cosine"
    makes_candidates: ClassVar[bool] = True

    def candidates(self, q, depth):
        return Candidates(candidate_pool(q.text, q.corpus, q.retriever, depth, "union", q.using.other_retriever))


@register
@dataclass(frozen=True)
class QueryExpansion(Stage):
    name: ClassVar[str] = "qe"
    help: ClassVar[str] = "query expansion: one search per perspective, merged round-robin (top k)"
    makes_candidates: ClassVar[bool] = True
    source: str = _param("dataset", tuple(QE_SOURCES), "where the perspectives come from")

    def candidates(self, q, depth):
        return Candidates(expand_and_merge(q.text, q.perspectives(self.source), q.retriever, q.k), Hits.empty())


@register
@dataclass(frozen=True)
class MMR(Stage):
    name: ClassVar[str] = "mmr"
    help: ClassVar[str] = "maximal marginal relevance (Carbonell & Goldstein) over the candidates"
    lam: float = _param(MMR_LAMBDA, float, "relevance weight (1 = the retriever's order)", 0.0, 1.0)

    def rerank(self, q, c):
        emb = passage_embeddings(q.corpus, c.rows, q.using.embedder, q.retriever)
        return mmr(c.scores, emb, q.k, self.lam)

    def reads_stored_vectors_only(self):
        return True


@register
@dataclass(frozen=True)
class Coverage(Stage):
    name: ClassVar[str] = "coverage"
    help: ClassVar[str] = "perspective-coverage re-ranker: greedy expected coverage of the perspectives"
    probs: str = _param("auto", COVERAGE_PROBS, "where P(candidate supports perspective) comes from")
    alpha: float = _param(0.5, float, "weight of relevance", 0.0, 1.0)
    source: str = _param("dataset", tuple(QE_SOURCES), "where the perspectives come from")
    keep: int = _param(0, int, "the first keep candidates stay on top in the retriever's order", 0)
    mix: float = _param(1.0, float, "probs=model/index: relevance = mix * score + (1 - mix) * P(on the question)",
                        0.0, 1.0)
    temperature: float | None = _param(None, float, "of the stance / similarity softmax", 0.0)
    tokens: int | None = _param(None, int, "probs=model: word pieces the stance model reads per (question, "
                                "candidate) pair (default: its trained length)", 16, 512)
    read: int | None = _param(None, int, "probs=model: the stance model reads only the first read candidates and "
                              "re-ranks them; the rest follow in the order they came (default: all)", 1)

    def __post_init__(self):
        super().__post_init__()
        if self.read is not None and self.probs != "model":
            raise SpecError(f"{self.name}: read is for probs=model (the stance model's reads), got probs={self.probs}")

    def reads_stored_vectors_only(self):
        return self.probs == "index"

    def rerank(self, q, c):
        u, rows, scores, k = q.using, c.rows, c.scores, q.k
        if self.probs == "model":
            n = len(rows) if self.read is None else min(self.read, len(rows))
            P = stance_matrix(q.text, q.corpus, rows[:n], u.stance_model, self.tokens)
            head = coverage_rerank(blend_relevance(scores[:n], P, self.mix), P[:, :2], min(k, n), self.alpha,
                                   keep=self.keep)
            return (head + list(range(n, len(rows))))[:k]
        if self.probs == "index":  # the side reader on the stored passage vectors (no network per candidate)
            P = index_side_probs(q.text, q.corpus, rows, u.embedder, q.retriever, u.side_reader)
            if P is None:
                return _first(q, c)
            return coverage_rerank(blend_relevance(scores, P, self.mix), P[:, :2], k, self.alpha, keep=self.keep)
        offline_sides = u.perspectives is None and self.source == "offline"
        if offline_sides and self.probs in ("auto", "stance"):
            persp = [p for p in yes_no_sides(q.text) if p]  # the stance pair; facets are not needed
        else:
            persp = q.perspectives(self.source)
        mode = self.probs
        if mode == "auto":
            mode = "judge" if u.judge is not None else ("stance" if offline_sides or len(persp) == 2 else "similarity")
        if not persp:
            return _first(q, c)
        if mode == "judge":
            if u.judge is None:
                raise ValueError("coverage probs=judge needs a judge")
            P = judge_probs(u.judge, q.corpus, rows, persp)
        elif mode == "stance" and len(persp) >= 2:  # the first two perspectives as a contrasting pair
            pe = encode(u.embedder, persp[:2])
            P = stance_probs(passage_embeddings(q.corpus, rows, u.embedder, q.retriever), pe[0], pe[1],
                             self.temperature or 0.01)
        else:  # similarity (or stance with a single perspective)
            P = similarity_probs(passage_embeddings(q.corpus, rows, u.embedder, q.retriever),
                                 encode(u.embedder, persp), self.temperature or 0.05)
        return coverage_rerank(scores, P, k, self.alpha, keep=self.keep)

    def prefetch(self, batch):
        u, questions = batch.using, batch.questions
        if (self.probs in ("auto", "stance") and self.source == "offline" and u.judge is None
                and u.embedder is None and u.perspectives is None):
            # the offline yes/no sides of every question in one encoder call (the loop reads them from memory)
            encode(None, [s for q in questions for s in yes_no_sides(q.question) if s])
        if self.probs == "index" and u.embedder is None and u.perspectives is None:
            encode(None, [t for q in questions for t in yes_no_sides(q.question) if t])  # one encoder call
        if self.probs != "model":
            return
        ahead = self.read is not None and batch.k is not None and all(s.reads_stored_vectors_only() for s in batch.prior)
        if self.read is not None and batch.before and not ahead:
            return  # which candidates it reads is known only after the stages before it: read per question
        # every (question, candidate) pair in one batched, cached pass of the stance model
        if batch.pool == "union" and not is_dense(batch.retriever) and is_dense(u.other_retriever):
            u.other_retriever.text_encoder.embed([q.question for q in questions])
        pairs = []
        for q in questions:
            c = Candidates(candidate_pool(q.question, batch.corpus, batch.retriever, batch.depth, batch.pool,
                                          u.other_retriever))
            if self.read is not None and batch.prior:  # vector operations: run them here to know what it reads
                query = Query(q, batch.corpus, batch.retriever, batch.k, max(batch.depth, batch.k), u)
                for stage in batch.prior:
                    c = stage.apply(query, c)
            pairs += [(q.question, passage_string(batch.corpus[int(r)])) for r in c.rows[:self.read]]
        model = get_stance_model() if u.stance_model is None else u.stance_model
        model.encode(pairs, progress=batch.progress, max_length=self.tokens)


@dataclass(frozen=True)
class _Explicit(Stage):
    """xQuAD and PM-2: explicit diversification with the perspectives of ``source`` as aspects (each subclass
    gives ``lam`` its own default and meaning; the fields keep the order lam, source, probs)."""

    kernel: ClassVar = None
    lam: float = _param(0.0, float, "weight of diversity", 0.0, 1.0)
    source: str = _param("dataset", tuple(QE_SOURCES), "where the aspects (perspectives) come from")
    probs: str = _param("retriever", tuple(ASPECT_PROBS), "P(passage | aspect): retriever scores or the judge")

    def rerank(self, q, c):
        aspects = [a for a in q.perspectives(self.source) if a and a.strip()]
        if not aspects:
            return _first(q, c)
        if self.probs == "judge":
            if q.using.judge is None:
                raise ValueError(f"{self.name} probs=judge needs a judge")
            P = judge_probs(q.using.judge, q.corpus, c.rows, aspects)
        else:
            P = retrieval_probs(q.text, aspects, q.retriever, c.rows, q.depth)
        return type(self).kernel(c.scores, P, q.k, self.lam)


@register
@dataclass(frozen=True)
class XQuAD(_Explicit):
    name: ClassVar[str] = "xquad"
    help: ClassVar[str] = "xQuAD (Santos et al.): one expanded query per perspective as the aspects"
    kernel: ClassVar = staticmethod(xquad)
    lam: float = _param(XQUAD_LAMBDA, float, "weight of diversity (0 = the retriever's order)", 0.0, 1.0)


@register
@dataclass(frozen=True)
class PM2(_Explicit):
    name: ClassVar[str] = "pm2"
    help: ClassVar[str] = "PM-2 (Dang & Croft): proportional seats for the perspectives"
    kernel: ClassVar = staticmethod(pm2)
    lam: float = _param(PM2_LAMBDA, float, "weight of the aspect that holds the seat", 0.0, 1.0)


@register
@dataclass(frozen=True)
class RetrieveVerifyRetrieve(Stage):
    name: ClassVar[str] = "rvr"
    help: ClassVar[str] = ("retrieve, verify, retrieve again: the stance model reads which side the top candidates "
                           "argue; a missing side's statement is searched, its passages verified and moved up")
    # defaults: the setting bench/diversity.py's question-grouped CV chose on all 744 development questions
    # (docs/diversity.md, "The rvr stage"); an opt-in stage: out of fold it does not beat the preset
    read: int = _param(5, int, "the first round's top candidates the stance model reads", 1, 100)
    keep: int = _param(0, int, "the first round's best that stay on top", 0)
    add: int = _param(2, int, "verified passages placed after them per missing side", 1, 20)
    depth: int = _param(5, int, "the second round's search depth per missing side", 1, 1000)
    threshold: float = _param(0.55, float, "P(side) a passage needs to count as arguing it", 0.0, 1.0)
    tokens: int | None = _param(64, int, "word pieces the stance model reads per (question, passage) pair", 16, 512)
    queries: str = _param("sides", RVR_SOURCES, "second-round queries: the question's side statements, or the "
                         "dataset's generated perspectives of the missing side (their side read by the stance "
                         "model; a side with none searches its statement)")
    reader: str = _param("model", RVR_READERS, "who reads the sides: the stance model (a network per pair, "
                         "tokens), or the side reader on the index's stored vectors (no network per candidate)")

    def rerank(self, q, c):
        raise NotImplementedError("rvr brings new passages: use apply()")

    def _model(self, using):
        if self.reader == "index":  # no network: the side reader reads what the stages ask (index_side_probs)
            return None
        return get_stance_model() if using.stance_model is None else using.stance_model

    def side_queries(self, q, model) -> dict[int, list[str]]:
        """Side (0 yes, 1 no) -> the second round's queries: its statement; with ``queries=dataset`` the
        question's generated perspectives that the stance model reads as arguing that side, where it has any."""
        out = {s: [t] for s, t in enumerate(yes_no_sides(q.text)) if t}
        persp = [t for t in q.perspectives("dataset") if t and t.strip()] if self.queries == "dataset" else []
        if persp and model is None:  # reader=index: the perspectives' embeddings read like passages' vectors
            reader, sides = q.using.side_reader or get_side_reader(), yes_no_sides(q.text)
            E = encode(q.using.embedder, [*sides, *persp]) if all(sides) else None
            P = reader.probs(E[2:], E[0], E[1]) if E is not None else np.zeros((len(persp), 3))
        elif persp:
            P = model.sides(q.text, persp, max_length=self.tokens) if self.tokens else model.sides(q.text, persp)
        if persp:
            found: dict[int, list[str]] = {}
            for t, pr in zip(persp, np.asarray(P, dtype=np.float64)):
                s = side_of(pr, self.threshold)
                if s is not None:
                    found.setdefault(s, []).append(t)
            out.update(found)
        return out

    def apply(self, q, c):
        if len(c) == 0:
            return c
        model = self._model(q.using)
        queries = self.side_queries(q, model)
        if not queries:
            return c

        def read_probs(rows):
            if not len(rows):
                return np.zeros((0, 3))
            if self.reader == "index":
                P = index_side_probs(q.text, q.corpus, rows, q.using.embedder, q.retriever, q.using.side_reader)
                return np.tile([0.0, 0.0, 1.0], (len(rows), 1)) if P is None else P
            return stance_matrix(q.text, q.corpus, rows, model, self.tokens)

        out = retrieve_verify(c.hits, read_probs,
                              lambda s: [h for t in queries.get(s, []) for h in q.retriever.search([t], self.depth)[0]],
                              lambda r: q.corpus[int(r)].id, read=self.read, keep=self.keep, add=self.add,
                              threshold=self.threshold)
        return Candidates(out, c.tail)

    def prefetch(self, batch):
        """The stance model on every question's first-round reads, then on its second-round passages, each in
        one batched pass (the loop then reads them from memory), and every side statement in one encoder call.
        Behind another re-ranker the first round is that stage's, known only in the loop: only the side
        statements are batched."""
        u, corpus, questions = batch.using, batch.corpus, batch.questions
        sides = {q.question: yes_no_sides(q.question) for q in questions}
        statements = [s for pair in sides.values() if all(pair) for s in pair]
        if hasattr(batch.retriever, "text_encoder") and statements:
            batch.retriever.text_encoder.embed(statements)
        if batch.before or self.reader == "index":  # the side reader reads in the loop: vector operations
            return
        model = self._model(u)
        if not hasattr(model, "encode"):  # a reader without the batched pass (a stub): the loop reads as it goes
            return
        first = {}
        for q in questions:
            if all(sides[q.question]):
                rows = candidate_pool(q.question, corpus, batch.retriever, batch.depth, batch.pool,
                                      u.other_retriever).rows
                first[q.question] = [int(r) for r in rows[:self.read]]
        model.encode([(t, passage_string(corpus[r])) for t, rows in first.items() for r in rows],
                     progress=batch.progress, max_length=self.tokens)
        more = []
        if self.queries != "sides":  # the queries depend on the question's perspectives: the loop reads them
            return
        for t, rows in first.items():
            if not rows:
                continue
            for s in missing_sides(stance_matrix(t, corpus, rows, model, self.tokens), self.threshold):
                hits = second_round_order(batch.retriever.search([sides[t][s]], self.depth)[0], lambda r: corpus[r].id)
                more += [(t, passage_string(corpus[r])) for r, _ in hits if r not in rows]
        model.encode(list(dict.fromkeys(more)), progress=batch.progress, max_length=self.tokens)


# --------------------------------------------------------------------------- the stance model's pieces


def stance_matrix(question_text: str, corpus, rows, stance_model=None, max_length: int | None = None) -> np.ndarray:
    """``(len(rows), 3)`` stance probabilities ``[yes, no, off]`` of corpus rows for a question: the studio's
    stance model (``berds_core.stance``; ``sides``: support / oppose / unrelated with the question as target).
    ``max_length``: word pieces read per pair (None: the model's trained length)."""
    model = stance_model if stance_model is not None else get_stance_model()
    texts = [passage_string(corpus[int(r)]) for r in rows]
    P = model.sides(question_text, texts, max_length=max_length) if max_length else model.sides(question_text, texts)
    return np.asarray(P, dtype=np.float64)


def blend_relevance(scores, P, mix: float) -> np.ndarray:
    """``mix * score / max + (1 - mix) * P(on the question)`` (``P``: stance probabilities [yes, no, off])."""
    if not 0.0 <= mix <= 1.0:
        raise ValueError(f"mix must be in [0, 1], got {mix}")
    rel = normalize_scores(scores)
    if mix >= 1.0:
        return rel
    on = np.clip(np.asarray(P)[:, 0] + np.asarray(P)[:, 1], 0.0, 1.0)
    return mix * rel + (1.0 - mix) * on
