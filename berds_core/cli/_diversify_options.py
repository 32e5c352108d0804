"""Diversification options of ``berds retrieve`` (kept here so the verb stays small).

    --mmr LAMBDA [--mmr-embedder ID]     MMR over the top --candidates
    --qe SOURCE [--qe-llm SPEC]          query expansion, round-robin merge
    --rerank coverage [--rerank-judge SPEC | --rerank-probs model] [--alpha A] [--perspectives-from SOURCE]
                      [--candidates-from union] [--mix M] [--keep N]
    --rerank xquad|pm2 [--lambda L] [--aspect-probs retriever|judge --rerank-judge SPEC] [--perspectives-from SOURCE]
    --preset diverse                     the configuration chosen by cross-validation on development data
    --pipeline SPEC                      a pipeline spec: bm25%30>>mmr(lam=0.5), dense%10>>coverage(probs=model)

At most one of them. ``--preset`` (and a ``--pipeline`` that names one) also picks its retriever. The flags
become one :class:`Diversification` here, once (:func:`diversify_config`): the
:class:`berds_core.diversify.Pipeline` itself, built from the method's registry entry
(``diversify.methods.METHOD_TABLE``) and its stage's own keywords, the preset's saved pipeline or the
``--pipeline`` spec parsed once; and the names of what its stages use (judge, embedder, LLM, pool), which
``using_of`` turns into objects: nothing of ``args`` travels into the engine.
"""
from __future__ import annotations

import sys

from dataclasses import dataclass

from ..errors import InputError
from ..diversify.aspects import ASPECT_PROBS
from ..diversify.methods import METHOD_FLAGS, RERANKERS, default_lambda, find_method, flag_method, stage_keywords
from ..diversify.pipeline import Pipeline
from ..diversify.stages import COVERAGE_PROBS, STAGES
from ..diversify.presets import PRESETS, as_pipeline
from ..diversify.query_expansion import QE_SOURCES
from ..specs import SpecError

# flags that set a stage's parameter: with --pipeline they are written in the spec instead
_STAGE_FLAGS = (("--alpha", "alpha"), ("--lambda", "lam"), ("--keep", "keep"), ("--mix", "mix"),
                ("--aspect-probs", "aspect_probs"))


def add_diversify_args(p) -> None:
    g = p.add_argument_group("diversification (at most one of --mmr, --qe, --rerank, --preset)")
    g.add_argument("--mmr", type=float, metavar="LAMBDA", help="MMR with this lambda in [0, 1] (1 = no change)")
    g.add_argument("--mmr-embedder", metavar="ID", default=None,
                   help="embedder for MMR's passage similarity: hub id or path (default all-MiniLM-L6-v2; "
                        "WhereIsAI/UAE-Large-V1 as in the paper, where the hub is reachable)")
    g.add_argument("--qe", choices=sorted(QE_SOURCES), metavar="SOURCE",
                   help="query expansion; perspectives from: " + "; ".join(f"{k} = {v}" for k, v in QE_SOURCES.items()))
    g.add_argument("--qe-llm", metavar="SPEC", help="for --qe llm: hf:<model> or openai:<model>@<base_url>")
    g.add_argument("--pool", metavar="FILE", default=None,
                   help="for --qe pool / --perspectives-from pool: a file of perspective sentences "
                        "(PERSPECTRUM pool JSON, JSONL, TSV/CSV, .txt), or demo: the built-in demo pool")
    g.add_argument("--rerank", choices=RERANKERS,
                   help="re-rank the top --candidates: coverage (perspective-coverage re-ranker), xquad (Santos et "
                        "al.) or pm2 (Dang & Croft), the last two with the --perspectives-from perspectives as aspects")
    g.add_argument("--lambda", dest="lam", type=float, default=None, metavar="L",
                   help="xquad / pm2: lambda in [0, 1] (default: the value tuned on development data)")
    g.add_argument("--aspect-probs", choices=sorted(ASPECT_PROBS), default=None,
                   help="xquad / pm2: P(passage | aspect) from the retriever's scores on the expanded queries "
                        "(default) or from --rerank-judge")
    g.add_argument("--rerank-judge", metavar="SPEC", default=None,
                   help="judge giving the re-ranker its probabilities (e.g. embedded); default: embedding similarity")
    g.add_argument("--perspectives-from", choices=sorted(QE_SOURCES), default="offline",
                   help="perspectives the re-ranker covers (default offline)")
    g.add_argument("--rerank-probs", choices=COVERAGE_PROBS, default="auto",
                   help="where the re-ranker's P(candidate covers a perspective) comes from: judge (--rerank-judge), "
                        "model (the studio's stance model: the question's yes- and no-side), index (the side "
                        "reader on the passages' stored vectors: no network per candidate), stance (cosine "
                        "to the offline sides), similarity; auto: judge when given, else stance or similarity")
    g.add_argument("--alpha", type=float, default=None, help="re-ranker weight of relevance in [0, 1]")
    g.add_argument("--candidates-from", choices=("retriever", "union"), default="retriever",
                   help="candidates of MMR / the re-ranker: the retriever's top --candidates, or the union of the "
                        "dense and BM25 top --candidates (scored by dense cosine)")
    g.add_argument("--keep", type=int, default=None, metavar="N",
                   help="--rerank coverage: the retriever's first N candidates stay on top; the re-ranker fills "
                        "the ranks below them (default 0)")
    g.add_argument("--mix", type=float, default=None,
                   help="--rerank-probs model / index: relevance = mix * retriever score + (1 - mix) * "
                        "P(on the question)")
    g.add_argument("--preset", choices=sorted(PRESETS), help="a named configuration: diverse = best offline found")
    g.add_argument("--pipeline", metavar="SPEC", default=None,
                   help="a diversification pipeline: [bm25|dense][%%DEPTH]>>stage(key=value,...)>>...; stages: "
                        f"{', '.join(STAGES.names())} (docs/pipelines.md), e.g. "
                        "'dense%%10>>coverage(probs=model,alpha=0.1,keep=2)'; a retriever named here replaces "
                        "--retriever; --rerank-judge, --mmr-embedder, --qe-llm and --pool give what its stages use")
    g.add_argument("--candidates", type=int, default=100,
                   help="candidates MMR / the re-ranker re-rank (default 100); with a larger --k the retriever's "
                        "own order follows them")


@dataclass(frozen=True)
class Diversification:
    """What ``berds retrieve``'s diversification options ask for, built once from the arguments: the
    ``pipeline`` that runs, the ``method`` that asked for it (a name of ``METHOD_TABLE``; None for
    ``--pipeline``), the ``preset`` it is (``--preset``) and the names of what its stages use, as given:
    ``judge`` (``--rerank-judge``), ``embedder`` (``--mmr-embedder``), ``llm`` (``--qe-llm``), ``pool``
    (``--pool``); ``fails_on``: the option a failure of a method's run is reported against. :func:`using_of`
    turns the names into objects. Plain data: it pickles."""

    pipeline: Pipeline
    method: str | None = None
    preset: str | None = None
    judge: str | None = None
    embedder: str | None = None
    llm: str | None = None
    pool: str | None = None
    fails_on: str = "--qe-llm"

    @property
    def flag(self) -> str:
        """The option a failure of the run is reported against."""
        return "--pipeline" if self.method is None else self.fails_on

    def to_json(self) -> dict:
        """What ``berds retrieve`` prints under ``diversify``: the method, the preset, the pipeline's spec
        (``str(pipeline)``) and the names given; unset ones left out."""
        out = {"method": self.method, "preset": self.preset, "pipeline": str(self.pipeline), "judge": self.judge,
               "embedder": self.embedder, "llm": self.llm, "pool": self.pool}
        return {k: v for k, v in out.items() if v is not None}


def diversify_json(div: Diversification | None) -> dict:
    """The ``diversify`` block of ``berds retrieve``'s output (``{"method": "none"}`` for plain retrieval)."""
    return {"method": "none"} if div is None else div.to_json()


def diversify_config(args) -> Diversification | None:
    """What the arguments ask for, checked (None: plain retrieval), as one :class:`Diversification`.

    Called once, before the retriever is opened: ``--preset`` picks its retriever (and the default model), and
    so does a ``--pipeline`` that names its retriever (``dense%10>>...``); a spec is parsed once."""
    spec = getattr(args, "pipeline", None)
    if spec is not None:
        return _pipeline_config(args, spec)
    chosen = [name for name in METHOD_FLAGS if getattr(args, name, None) is not None]
    if not chosen:
        for opt, val in (("--mmr-embedder", args.mmr_embedder), ("--qe-llm", args.qe_llm),
                         ("--pool", getattr(args, "pool", None)),
                         ("--rerank-judge", args.rerank_judge), ("--alpha", args.alpha), ("--mix", args.mix),
                         ("--keep", getattr(args, "keep", None)),
                         ("--rerank-probs", None if args.rerank_probs == "auto" else args.rerank_probs),
                         ("--candidates-from", None if args.candidates_from == "retriever" else args.candidates_from),
                         ("--lambda", getattr(args, "lam", None)), ("--aspect-probs", getattr(args, "aspect_probs", None))):
            if val is not None:
                raise InputError(opt, None, None, "has no effect without --mmr, --qe, --rerank or --preset")
        return None
    if len(chosen) > 1:
        raise InputError("--" + chosen[1], None, None, f"choose one diversification method (also given: --{chosen[0]})")
    if args.candidates < 1:
        raise InputError("--candidates", None, None, "must be at least 1")
    how = chosen[0]
    method = flag_method(how, getattr(args, how))  # what the method takes, not its name, decides below
    takes = stage_keywords(method)
    keep = getattr(args, "keep", None)
    if keep is not None and "keep" not in takes:
        raise InputError("--keep", None, None, "is for --rerank coverage (the preset sets its own)")
    pool = getattr(args, "pool", None)
    # where its perspectives come from: its flag's value (--qe SOURCE), else --perspectives-from
    source = (getattr(args, how) if method.sets == "source" else args.perspectives_from if method.perspectives
              else None)
    wants_pool = source == "pool"
    if wants_pool and not pool:
        raise InputError("--pool", None, None, "perspectives from 'pool' need --pool FILE (a file of perspective sentences)")
    if pool and not wants_pool:
        raise InputError("--pool", None, None, "has no effect without --qe pool or --perspectives-from pool")
    if method.sets == "lam":  # --mmr LAMBDA: its flag's value is its λ
        lam = getattr(args, how)
        if not 0.0 <= lam <= 1.0:
            raise InputError(f"--{how}", None, None, f"lambda must be in [0, 1], got {lam}")
        return Diversification(method.pipeline(args.candidates, args.candidates_from, lam=lam), method.name,
                               embedder=args.mmr_embedder, fails_on="--mmr-embedder")
    if method.sets == "source":  # --qe SOURCE: its flag's value is where the perspectives come from
        if source == "llm" and not args.qe_llm:
            raise InputError("--qe-llm", None, None, "--qe llm needs an LLM: hf:<model> or openai:<model>@<base_url>")
        # its candidates are the expanded queries' merge: --candidates and --candidates-from do not reach it
        _no_candidate_flags(args, "--qe merges the expanded queries' own results")
        return Diversification(method.pipeline(source=source), method.name, llm=args.qe_llm, pool=pool)
    if method.reranks and "lam" in takes:  # xQuAD, PM-2: explicit aspects, weighed by a λ of their own
        return _explicit_config(args, pool)
    for opt, val in (("--lambda", getattr(args, "lam", None)), ("--aspect-probs", getattr(args, "aspect_probs", None))):
        if val is not None:
            raise InputError(opt, None, None, "is for --rerank xquad or pm2")
    if method.reranks:  # the perspective-coverage re-ranker
        alpha = 0.5 if args.alpha is None else args.alpha
        if not 0.0 <= alpha <= 1.0:
            raise InputError("--alpha", None, None, f"must be in [0, 1], got {alpha}")
        mix = 1.0 if args.mix is None else args.mix
        if not 0.0 <= mix <= 1.0:
            raise InputError("--mix", None, None, f"must be in [0, 1], got {mix}")
        if args.rerank_probs == "judge" and not args.rerank_judge:
            raise InputError("--rerank-probs", None, None, "judge needs --rerank-judge SPEC")
        if keep is not None and keep < 0:
            raise InputError("--keep", None, None, f"must be 0 or more, got {keep}")
        if args.rerank_judge and args.rerank_probs not in ("auto", "judge"):
            raise InputError("--rerank-judge", None, None, f"has no effect with --rerank-probs {args.rerank_probs}")
        pipeline = method.pipeline(args.candidates, args.candidates_from, source=args.perspectives_from,
                                   alpha=alpha, probs=args.rerank_probs, mix=mix, keep=keep or 0)
        return Diversification(pipeline, method.name, judge=args.rerank_judge, llm=args.qe_llm, pool=pool)
    preset = as_pipeline(args.preset)  # the saved pipeline itself (its stance model's tokens=112 included)
    _no_candidate_flags(args, f"the preset sets its own candidates ({preset})")
    args.retriever, args.model, args.index = preset.retriever, None, None  # its retriever, default model, flat
    return Diversification(preset, method.name, args.preset)


def _pipeline_config(args, spec: str) -> Diversification:
    """``--pipeline SPEC``: the spec checked (one line naming the position) and alone among the methods."""
    for name in METHOD_FLAGS:
        if getattr(args, name, None) is not None:
            raise InputError("--pipeline", None, None, f"choose one diversification method (also given: --{name})")
    for flag, attr in _STAGE_FLAGS:
        if getattr(args, attr, None) is not None:
            raise InputError(flag, None, None, "sets a stage parameter: write it in --pipeline (docs/pipelines.md)")
    for flag, value, default in (("--candidates", args.candidates, 100), ("--rerank-probs", args.rerank_probs, "auto"),
                                 ("--candidates-from", args.candidates_from, "retriever"),
                                 ("--perspectives-from", args.perspectives_from, "offline")):
        if value != default:
            raise InputError(flag, None, None, "sets a stage parameter: write it in --pipeline (e.g. "
                                               "bm25%30>>union>>coverage(probs=model,source=offline))")
    try:
        p = as_pipeline(spec)
    except (SpecError, ValueError) as e:
        raise InputError("--pipeline", None, None, str(e)) from None
    if p.retriever:  # the pipeline names its retriever: it replaces --retriever
        args.retriever = p.retriever
    sources = {getattr(s, "source", None) for s in p.stages}
    pool = getattr(args, "pool", None)
    if "pool" in sources and not pool:
        raise InputError("--pool", None, None, "perspectives from 'pool' need --pool FILE (a file of perspective sentences)")
    if pool and "pool" not in sources:
        raise InputError("--pool", None, None, "has no effect without a stage with source=pool")
    if "llm" in sources and not args.qe_llm:
        raise InputError("--qe-llm", None, None, "source=llm needs an LLM: hf:<model> or openai:<model>@<base_url>")
    judged = next((s.name for s in p.stages if getattr(s, "probs", None) == "judge"), None)
    if judged and not args.rerank_judge:
        raise InputError("--rerank-judge", None, None, f"{judged}(probs=judge) needs a judge: give --rerank-judge "
                                                       "(e.g. embedded)")
    kept = next((s for s in p.stages if getattr(s, "keep", 0) > p.depth), None)
    if kept is not None:
        raise InputError("--pipeline", None, None, f"{kept.name}(keep={kept.keep}) keeps more candidates than the "
                                                   f"pipeline has ({p.depth}): give keep <= the depth")
    return Diversification(p, judge=args.rerank_judge, embedder=args.mmr_embedder, llm=args.qe_llm, pool=pool)


def _no_candidate_flags(args, why: str) -> None:
    """``--candidates`` / ``--candidates-from`` given where they do not reach the pipeline: one line, not ignored."""
    for flag, value, default in (("--candidates", args.candidates, 100),
                                 ("--candidates-from", args.candidates_from, "retriever")):
        if value != default:
            raise InputError(flag, None, None, f"has no effect here: {why}")


def _explicit_config(args, pool: str | None) -> Diversification:
    """``--rerank xquad|pm2``: lambda, aspects source and where P(passage | aspect) comes from."""
    if args.alpha is not None:
        raise InputError("--alpha", None, None, f"is for --rerank coverage; --rerank {args.rerank} takes --lambda")
    lam = default_lambda(args.rerank) if args.lam is None else args.lam
    if not 0.0 <= lam <= 1.0:
        raise InputError("--lambda", None, None, f"must be in [0, 1], got {lam}")
    probs = args.aspect_probs or "retriever"
    if probs == "judge" and not args.rerank_judge:
        raise InputError("--rerank-judge", None, None, "--aspect-probs judge needs a judge (e.g. embedded)")
    if probs == "retriever" and args.rerank_judge:
        raise InputError("--rerank-judge", None, None, f"--rerank {args.rerank} uses a judge only with --aspect-probs judge")
    # their candidates: the retriever's top --candidates, or the union of both retrievers' (--candidates-from)
    pipeline = find_method(args.rerank).pipeline(args.candidates, args.candidates_from, lam=lam,
                                                 source=args.perspectives_from, probs=probs)
    return Diversification(pipeline, args.rerank, judge=args.rerank_judge, llm=args.qe_llm, pool=pool)


def using_of(div: Diversification, progress: bool = True):
    """What the stages use, as objects: the judge, the embedder and the pool the flags name (``--rerank-judge``,
    ``--mmr-embedder``, ``--pool``) loaded here, at the edge; the LLM spec of ``--qe-llm``."""
    from ..diversify import Using

    judge = div.judge
    if judge:
        from ..judges import get_judge

        try:
            judge = get_judge(judge)
        except (ValueError, OSError) as e:
            raise InputError("--rerank-judge", None, None, str(e).splitlines()[0]) from None
    embedder = div.embedder
    if embedder:
        from ..embeddings.text_encoders import text_encoder

        try:
            embedder = text_encoder(embedder)
        except OSError as e:
            raise InputError("--mmr-embedder", None, None, str(e).splitlines()[0] or type(e).__name__) from None
    pool = div.pool
    if pool:
        from ..discovery import open_pool

        pool = open_pool(pool, progress=progress)
    return Using(judge=judge or None, embedder=embedder or None, llm=div.llm, pool=pool or None)


def diversified_run(questions, corpus, retriever, div: Diversification | None, k: int, progress: bool = True
                    ) -> list[dict]:
    """Run entries of ``questions`` in ``corpus`` (``berds_core.experiment.run``): ranked by ``div``'s pipeline
    (None: plain retrieval, the ``none`` pipeline), its stages' models loaded here (:func:`using_of`); a server
    or model that fails mid-run is one line naming the flag."""
    from ..experiment import Searched, run
    from ..generators import GenerationError
    from ..judges import JudgeError

    if div is None:
        return run(questions, Pipeline(), k, Searched(corpus, retriever))
    pipeline, using = div.pipeline, using_of(div, progress)
    if pipeline.depth > len(corpus):  # as --k past the corpus does
        sys.stderr.write(f"berds retrieve: warning: the candidate depth {pipeline.depth} is more than the "
                         f"{len(corpus)} passages of the corpus: every passage is a candidate\n")
    try:
        return run(questions, pipeline, k, Searched(corpus, retriever), using=using, progress=progress,
                   desc=div.method or "pipeline")
    except OSError as e:
        raise InputError(div.flag, None, None, str(e).splitlines()[0] if str(e) else type(e).__name__) from None
    except (GenerationError, JudgeError) as e:  # a server that went away mid-run, a model that failed
        flag = "--rerank-judge" if isinstance(e, JudgeError) else "--qe-llm"
        raise InputError(flag, None, None, " ".join(str(e).split()) or type(e).__name__) from None
