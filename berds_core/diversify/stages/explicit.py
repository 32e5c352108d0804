"""The explicit diversifiers, ``xquad`` (xQuAD, Santos et al.) and ``pm2`` (PM-2, Dang & Croft): the
perspectives of ``source`` as aspects, P(passage | aspect) from the retriever or the judge
(:mod:`berds_core.diversify.aspects`). The two stages differ only in their kernel
(:mod:`berds_core.diversify.xquad`, :mod:`berds_core.diversify.pm2`) and the default and meaning of λ."""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from ..aspects import ASPECT_PROBS, retrieval_probs
from ..pm2 import DEFAULT_LAMBDA as PM2_LAMBDA, pm2
from ..query_expansion import QE_SOURCES
from ..xquad import DEFAULT_LAMBDA as XQUAD_LAMBDA, xquad
from .base import Stage, keep_order, param, register
from .probabilities import judge_probs


@dataclass(frozen=True)
class Explicit(Stage):
    """xQuAD and PM-2: explicit diversification with the perspectives of ``source`` as aspects (each stage
    gives ``lam`` its own default and meaning; the fields keep the order lam, source, probs)."""

    kernel: ClassVar = None
    lam: float = param(0.0, float, "weight of diversity", 0.0, 1.0)
    source: str = param("dataset", tuple(QE_SOURCES), "where the aspects (perspectives) come from")
    probs: str = param("retriever", tuple(ASPECT_PROBS), "P(passage | aspect): retriever scores or the judge")

    def rerank(self, q, c):
        aspects = [a for a in q.perspectives(self.source) if a and a.strip()]
        if not aspects:
            return keep_order(q, c)
        if self.probs == "judge":
            if q.using.judge is None:
                raise ValueError(f"{self.name} probs=judge needs a judge")
            P = judge_probs(q.using.judge, q.corpus, c.rows, aspects)
        else:
            P = retrieval_probs(q.text, aspects, q.retriever, c.rows, q.depth)
        return type(self).kernel(c.scores, P, q.k, self.lam)


def explicit_stage(class_name: str, name: str, help: str, kernel, lam: float, lam_help: str) -> type[Explicit]:
    """The registered :class:`Explicit` stage ``name`` running ``kernel`` with λ ``lam`` by default."""
    body = {"__annotations__": {"lam": float}, "__module__": __name__, "name": name, "help": help,
            "kernel": staticmethod(kernel), "lam": param(lam, float, lam_help, 0.0, 1.0)}
    return register(dataclass(frozen=True)(type(class_name, (Explicit,), body)))


XQuAD = explicit_stage("XQuAD", "xquad", "xQuAD (Santos et al.): one expanded query per perspective as the aspects",
                       xquad, XQUAD_LAMBDA, "weight of diversity (0 = the retriever's order)")
PM2 = explicit_stage("PM2", "pm2", "PM-2 (Dang & Croft): proportional seats for the perspectives", pm2, PM2_LAMBDA,
                     "weight of the aspect that holds the seat")
