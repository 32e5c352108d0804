"""The stages of a diversification pipeline: small classes, each holding only its own parameters.

A pipeline (:mod:`..pipeline`) takes the retriever's top ``depth`` candidates and passes them through its
stages. Two kinds:

- **source stages** replace the candidates and come first (:mod:`.sources`): ``qe`` (one search per
  perspective, merged round-robin) and ``union`` (the dense and the BM25 top ``depth`` together, scored by
  dense cosine);
- **re-rankers** give the candidates a new ranking (``rerank(query, candidates)``) and keep at most ``k``:
  ``mmr`` (:mod:`.mmr`), ``coverage`` (:mod:`.coverage`), ``xquad`` and ``pm2`` (:mod:`.explicit`), ``rvr``
  (:mod:`.rvr`, which brings passages of its own), ``reread`` (:mod:`.reread`: the encoder re-reads a static
  first stage's candidates); ``none`` (:mod:`.base`) passes them through.

Every stage is registered in ``STAGES`` (a :class:`berds_core.specs.Registry` of kind "diversifier", in
:mod:`.base`) under the name the spec language uses; its dataclass fields are its spec keywords. What a
stage uses besides its parameters (the judge, the embedder, the LLM, the perspective pool, the stance model,
the side reader) comes from the run's :class:`Using` (:mod:`.context`), as objects resolved at the edge.
See docs/pipelines.md.
"""
from __future__ import annotations

# imported in the order of the registry (the CLI's help and the pages' pickers list the stages so)
from .base import STAGES, Stage, register  # none
from .sources import QueryExpansion, Union  # union, qe
from .mmr import MMR_LAMBDA  # mmr
from .coverage import COVERAGE_PROBS  # coverage
from .explicit import PM2, XQuAD  # xquad, pm2
from .rvr import RVR_READERS, RetrieveVerifyRetrieve  # rvr
from .reread import Reread  # reread
from .context import Batch, Candidates, Query, Using
from .probabilities import blend_relevance, judge_probs, stance_matrix

__all__ = ["STAGES", "Stage", "register", "Batch", "Candidates", "Query", "Using", "COVERAGE_PROBS", "MMR_LAMBDA",
           "RVR_READERS", "blend_relevance", "judge_probs", "stance_matrix", "RetrieveVerifyRetrieve", "Reread", "XQuAD",
           "PM2", "QueryExpansion", "Union"]
