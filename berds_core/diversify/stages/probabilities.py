"""Where the re-rankers' probabilities come from, besides the embeddings: the judge's P(passage supports
perspective) and the stance model's [yes, no, off] of (question, passage) pairs, and the relevance that
blends the retriever's score with P(on the question)."""
from __future__ import annotations

import numpy as np

from ...judges import judge_passages
from ...stance import passage_string
from ..mmr import normalize_scores


def judge_probs(judge, corpus, rows, persp) -> np.ndarray:
    """The judge's P(passage supports perspective), (len(rows), len(persp)); passages read as runs read them."""
    probs, _ = judge_passages(judge, [corpus[int(r)] for r in rows], persp)
    return np.asarray(probs, dtype=np.float64)


def stance_matrix(question_text: str, corpus, rows, stance_model, max_length: int | None = None) -> np.ndarray:
    """``(len(rows), 3)`` stance probabilities ``[yes, no, off]`` of corpus rows for a question: the stance
    model's (``berds_core.stance``; ``sides``: support / oppose / unrelated with the question as target).
    ``max_length``: word pieces read per pair (None: the model's trained length)."""
    texts = [passage_string(corpus[int(r)]) for r in rows]
    P = (stance_model.sides(question_text, texts, max_length=max_length) if max_length
         else stance_model.sides(question_text, texts))
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
