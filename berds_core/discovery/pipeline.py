"""The discovery pipeline: candidates -> relevance -> stance -> equivalence clusters -> a balanced list.

For a claim and a pool (:class:`~berds_core.discovery.pool.PoolIndex`):

1. **candidates**: the union of BM25's and dense's top ``depth`` pool
   sentences, fused by reciprocal rank;
2. **relevance**: P(the sentence is a perspective on the claim); kept when
   ``>= threshold`` (at least ``min_k`` are kept, the most relevant);
3. **equivalence**: the kept sentences are clustered (agglomerative,
   ``linkage``, P(same) cut at ``dedupe_threshold``); a cluster is one
   perspective, shown by its most relevant sentence (the others are its
   ``members``);
4. **stance** of a cluster: the mean P(support) of its sentences against
   ``stance_threshold``;
5. **balanced list**: clusters by relevance, interleaved support /
   undermine (starting with the side of the most relevant cluster), cut at
   ``max_k``: with enough of both, the list is half and half.

Scorers (``method``): ``offline`` (:class:`OfflineModels`: heads over the
pool's MiniLM embeddings for relevance and equivalence -- relevance stacked
with the studio's stance model when that won on held-out train data, see
``weights/discovery_heads_v2.npz``'s report -- and the stance model,
``berds_core.stance``, for every stance) or ``llm`` (:class:`LLMModels`:
yes/no answers of a generator, ``hf:<model>`` or ``openai:<model>@<url>``,
read from its first-token probabilities).

``Discoverer.label(claim, pids)`` gives the stance and cluster of perspectives
the caller names (PERSPECTRUM's T2 and T3 are defined on the gold
perspectives); it uses ``cluster_threshold``.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from functools import lru_cache
from pathlib import Path

import numpy as np

from ..datasets.sides import yes_no_sides
from ..generators import get_generator
from ..stance import get_stance_model
from .heads import LinearHead, cluster_labels, equivalence_matrix, relevance_features
from .pool import open_pool

ON_TOPIC = 0  # ``min_k`` of the faces: no perspective kept below the relevance threshold


def claim_of(question: str) -> str:
    """The claim a question asks about ("Should X be Y?" -> "X should be Y"); a statement stays as it is."""
    yes, _ = yes_no_sides(question)
    return yes or question.strip()


HEADS_WEIGHTS = Path(__file__).with_name("weights") / "discovery_heads_v2.npz"
METHODS = ("offline", "llm")
RELEVANCE = ("heads", "stance", "stack")


@dataclass(frozen=True)
class Knobs:
    """The pipeline's decisions (defaults: the shipped, tuned values are in the heads file; the
    offline ``stance_threshold`` is the stance model's cross-validated discovery threshold)."""

    depth: int = 50
    threshold: float = 0.5
    min_k: int = 1
    max_k: int | None = 10
    dedupe_threshold: float = 0.5
    cluster_threshold: float = 0.5
    linkage: str = "complete"
    stance_threshold: float = 0.5
    max_kept: int = 40


# --------------------------------------------------------------------------- scorers

class OfflineModels:
    """Relevance, stance and equivalence offline: heads over the pool's MiniLM embeddings, and the
    studio's stance model (``berds_core.stance``) for the stance of each perspective (T2) and, with
    relevance ``stance`` / ``stack``, for P(on topic) of the heads' ``top_m`` candidates.

    ``stance_model``: a ``StanceModel`` (default: the shipped one); its ``discovery`` rule
    (temperature, consistency, threshold; chosen by cross-validation) decides the stance.
    """

    name = "offline"

    def __init__(self, weights=None, *, encoding: str | None = None, choice: dict | None = None,
                 stance_model=None):
        path = Path(weights or HEADS_WEIGHTS)
        if not path.exists():
            raise FileNotFoundError(f"discovery weights missing: {path} (run scripts/train_discovery.py)")
        z = np.load(path, allow_pickle=False)
        self.heads = {k: LinearHead.from_arrays(z, k) for k in ("rel", "equiv", "stack") if f"{k}_coef" in z.files}
        self.choice = {**json.loads(str(z["choice"])), **(choice or {})}
        how = RELEVANCE
        if self.choice["relevance"] not in how or (self.choice["relevance"] == "stack" and "stack" not in self.heads):
            raise ValueError(f"relevance scorer must be one of {', '.join(how)}, got {self.choice['relevance']!r}")
        self.report = json.loads(str(z["report"]))
        self.encoding = encoding
        self._stance = stance_model
        self.knobs = replace(Knobs(**json.loads(str(z["knobs"]))),
                             stance_threshold=self.stance_rule().get("threshold", 0.5))

    @property
    def stance(self):
        if self._stance is None:
            self._stance = get_stance_model(encoding=self.encoding)
        return self._stance

    def stance_rule(self) -> dict:
        """The stance model's discovery rule (read from its weights; the model is not loaded)."""
        return self.stance.rule("discovery")

    def relevance(self, cands, texts: list[str], emb: np.ndarray) -> np.ndarray:
        """P(relevant) per candidate. ``stance`` / ``stack``: the stance model's P(on topic) re-scores
        the heads' ``top_m`` most relevant candidates (the others get 0)."""
        how = self.choice["relevance"]
        if len(texts) == 0:
            return np.zeros(0)
        X = relevance_features(cands, emb)
        heads = self.heads["rel"].proba(X)
        if how == "heads":
            return heads
        top = np.argsort(-heads, kind="stable")[:int(self.choice.get("top_m", 30))]
        on = self.stance.on_topic(cands.claim, [texts[i] for i in top])
        out = np.zeros(len(texts))
        if how == "stance":
            out[top] = on
            return out
        out[top] = self.heads["stack"].proba(stack_features(on, X[top]))
        return out

    def support(self, claim: str, claim_emb: np.ndarray, texts: list[str], E: np.ndarray) -> np.ndarray:
        """P(support) per perspective: the stance model's discovery rule."""
        if len(texts) == 0:
            return np.zeros(0)
        return self.stance.claim_stance(claim, list(texts))

    def same(self, texts: list[str], E: np.ndarray) -> np.ndarray:
        return equivalence_matrix(self.heads["equiv"], E, texts)


def stack_features(on_topic: np.ndarray, X: np.ndarray) -> np.ndarray:
    """The stacked relevance head's input: the logit of the stance model's P(on topic), then ``X``."""
    p = np.clip(np.asarray(on_topic, np.float64), 1e-7, 1 - 1e-7)
    return np.column_stack([np.log(p / (1 - p)), X])


class LLMModels:
    """The same three decisions asked of an LLM (yes/no, first-token probabilities).

    Equivalence is asked only for pairs whose embedding cosine is at least
    ``pair_floor`` (others count as different), which bounds the calls.
    """

    RELEVANCE = ("Claim: {claim}\nStatement: {text}\n"
                 "Is the statement an argument for or against the claim, i.e. a perspective on this claim? "
                 "Answer Yes or No.")
    STANCE = ("Claim: {claim}\nPerspective: {text}\n"
              "Does the perspective support the claim? Answer Yes if it supports the claim, "
              "No if it undermines it.")
    SAME = ("Perspective A: {a}\nPerspective B: {b}\n"
            "Do A and B make the same point (one paraphrases the other)? Answer Yes or No.")

    def __init__(self, spec: str, *, pair_floor: float = 0.5, generator=None):
        self.spec = spec
        self.gen = generator or get_generator(spec)
        self.name = f"llm:{self.gen.name}"
        self.pair_floor = pair_floor

    def _yes(self, prompts: list[str]) -> np.ndarray:
        if not prompts:
            return np.zeros(0)
        return self.gen.choice_probs(prompts, ["Yes", "No"])[:, 0]

    def relevance(self, cands, texts, emb) -> np.ndarray:
        return self._yes([self.RELEVANCE.format(claim=cands.claim, text=t) for t in texts])

    def support(self, claim, claim_emb, texts, E) -> np.ndarray:
        return self._yes([self.STANCE.format(claim=claim, text=t) for t in texts])

    def same(self, texts, E) -> np.ndarray:
        n = len(texts)
        P = np.eye(n)
        if n < 2:
            return P
        E = np.asarray(E, dtype=np.float64)
        i, j = np.triu_indices(n, 1)
        ask = np.sum(E[i] * E[j], axis=1) >= self.pair_floor
        p = self._yes([self.SAME.format(a=texts[a], b=texts[b]) for a, b in zip(i[ask], j[ask])])
        P[i[ask], j[ask]] = p
        P[j[ask], i[ask]] = p
        return P


# --------------------------------------------------------------------------- selection (pure)

@dataclass
class Cluster:
    rep: int  # index (into the kept candidates) of the shown sentence
    members: list[int]
    score: float
    support: float
    stance: str = field(default="support")


def balanced_order(clusters: list[Cluster], max_k: int | None) -> list[Cluster]:
    """Clusters by score, interleaved by stance (the top cluster's side first), cut at ``max_k``."""
    ranked = sorted(clusters, key=lambda c: -c.score)
    if not ranked:
        return []
    sides = {"support": [c for c in ranked if c.stance == "support"],
             "undermine": [c for c in ranked if c.stance == "undermine"]}
    first = ranked[0].stance
    order = [first, "undermine" if first == "support" else "support"]
    out, pos = [], {"support": 0, "undermine": 0}
    while len(out) < len(ranked):
        for s in order:
            if pos[s] < len(sides[s]):
                out.append(sides[s][pos[s]])
                pos[s] += 1
    return out if max_k is None else out[:max_k]


def select(rel: np.ndarray, support: np.ndarray, same: np.ndarray, knobs: Knobs) -> list[Cluster]:
    """The final clusters from the kept candidates' scores (``same``: their P(same) matrix)."""
    n = len(rel)
    if n == 0:
        return []
    labels = cluster_labels(same, knobs.dedupe_threshold, knobs.linkage)
    clusters = []
    for c in range(int(labels.max()) + 1):
        idx = [i for i in range(n) if labels[i] == c]
        rep = max(idx, key=lambda i: rel[i])
        sup = float(np.mean(support[idx]))
        clusters.append(Cluster(rep, sorted(idx, key=lambda i: -rel[i]), float(rel[rep]), sup,
                                "support" if sup >= knobs.stance_threshold else "undermine"))
    return balanced_order(clusters, knobs.max_k)


def with_written(sup: np.ndarray, same: np.ndarray, written: list[str | None]) -> tuple[np.ndarray, np.ndarray]:
    """A stance written in the pool for this very claim wins over the model's (P(support) 1 or 0), and two
    sentences written on opposite sides are never one perspective."""
    if not any(written):
        return sup, same
    sup, same = np.array(sup, dtype=np.float64, copy=True), np.array(same, dtype=np.float64, copy=True)
    for i, w in enumerate(written):
        if w:
            sup[i] = 1.0 if w == "support" else 0.0
    for i, wi in enumerate(written):
        for j, wj in enumerate(written):
            if wi and wj and wi != wj:
                same[i, j] = 0.0
    return sup, same


def kept(rel: np.ndarray, knobs: Knobs) -> np.ndarray:
    """Indices of the candidates kept as relevant, most relevant first."""
    order = np.argsort(-rel, kind="stable")[:knobs.max_kept]
    keep = [i for i in order if rel[i] >= knobs.threshold]
    if len(keep) < knobs.min_k:
        keep = list(order[:knobs.min_k])
    return np.array(keep, dtype=np.int64)


# --------------------------------------------------------------------------- the discoverer

class Discoverer:
    """Perspective discovery over one pool with one method (``offline`` or ``llm`` + spec)."""

    def __init__(self, index, method: str = "offline", *, llm: str | None = None, knobs: Knobs | None = None,
                 weights=None, encoding: str | None = None, generator=None, choice: dict | None = None,
                 stance_model=None):
        if method not in METHODS:
            raise ValueError(f"method must be one of {', '.join(METHODS)}, got {method!r}")
        self.index = index
        self.method = method
        self.offline = (OfflineModels(weights, encoding=encoding, choice=choice, stance_model=stance_model)
                        if (method == "offline" or knobs is None) else None)
        if method == "llm":
            if not llm and generator is None:
                raise ValueError("method 'llm' needs an LLM spec: hf:<model> or openai:<model>@<base_url>")
            self.models = LLMModels(llm, generator=generator)
            base = knobs or self.offline.knobs
            # the LLM's probabilities are its own: decisions at 0.5, the list length as tuned offline
            self.knobs = knobs or replace(base, threshold=0.5, dedupe_threshold=0.5, cluster_threshold=0.5,
                                          stance_threshold=0.5)
        else:
            self.models = self.offline
            self.knobs = knobs or self.offline.knobs

    @property
    def name(self) -> str:
        if self.method == "offline":
            return f"offline(relevance={self.models.choice['relevance']}, stance={self.models.stance.name})"
        return self.models.name

    def _entries(self, cands, rel: np.ndarray, k: Knobs) -> list[dict]:
        pool, emb = self.index.pool, self.index.embeddings
        keep = kept(rel, k)
        rows = cands.rows[keep]
        texts = [pool.texts[r] for r in rows]
        E = np.asarray(emb[rows])
        sup = self.models.support(cands.claim, cands.claim_emb, texts, E)
        same = self.models.same(texts, E) if len(rows) > 1 else np.eye(len(rows))
        written = self.index.written_for(cands.claim, rows) if hasattr(self.index, "written_for") else [None] * len(rows)
        sup, same = with_written(sup, same, written)
        out = []
        for n, cl in enumerate(select(rel[keep], sup, same, k)):
            r = int(rows[cl.rep])
            out.append({"pid": pool.ids[r], "text": pool.texts[r], "stance": written[cl.rep] or cl.stance,
                        "stance_from": "written" if written[cl.rep] else self.method, "cluster": n,
                        "score": round(float(cl.score), 4), "support_prob": round(float(cl.support), 4),
                        "members": [pool.ids[int(rows[m])] for m in cl.members if m != cl.rep]})
        return out

    def discover_many(self, claims: list[str], *, exclude=None, max_k: int | None = -1,
                      min_k: int = -1) -> list[list[dict]]:
        """``discover`` for many claims (one batched candidate search).

        ``max_k``: the most perspectives per claim (-1: the tuned value, None: no limit).
        ``min_k``: the fewest, kept even below the relevance threshold (-1: the tuned value; 0: only what is
        relevant, :data:`ON_TOPIC`).
        ``exclude``: pool rows never returned (an evaluation's leak filter).
        """
        k = self.knobs if max_k == -1 else replace(self.knobs, max_k=max_k)
        k = k if min_k == -1 else replace(k, min_k=int(min_k))
        all_cands = self.index.candidates(list(claims), k.depth, exclude=exclude)
        out = []
        for cands in all_cands:
            texts = [self.index.pool.texts[r] for r in cands.rows]
            rel = self.models.relevance(cands, texts, self.index.embeddings)
            out.append(self._entries(cands, np.asarray(rel, dtype=np.float64), k))
        return out

    def discover(self, claim: str, **kw) -> list[dict]:
        return self.discover_many([claim], **kw)[0]

    def answer(self, question: str, *, max_k: int | None = -1, min_k: int = ON_TOPIC) -> list[dict]:
        """What a face shows for a question or claim (the Playground's *Discover perspectives* and
        ``berds discover``): the perspectives relevant to it (a question is read in its claim form,
        :func:`claim_of`; a statement as written), so an empty list when the pool holds nothing on its topic. The tuned ``min_k`` floor (one
        perspective kept however irrelevant) suits PERSPECTRUM's benchmark, where every claim has
        perspectives in the pool; ``min_k`` restores it."""
        text = question.strip()
        return self.discover(claim_of(text) if text.endswith("?") else text, max_k=max_k, min_k=min_k)

    def label(self, claim: str, pids: list[str]) -> list[dict]:
        """Stance and cluster of named pool perspectives for ``claim``: ``[{pid, stance, cluster}]``.

        Pids not in the pool are skipped. Clusters use ``cluster_threshold``.
        """
        pool = self.index.pool
        rows = [pool.index_of(p) for p in dict.fromkeys(map(str, pids)) if p in pool._row_of]
        if not rows:
            return []
        texts = [pool.texts[r] for r in rows]
        E = np.asarray(self.index.embeddings[rows])
        c = self.index.encode([claim])[0]
        sup = self.models.support(claim, c, texts, E)
        written = self.index.written_for(claim, rows) if hasattr(self.index, "written_for") else [None] * len(rows)
        sup, same = with_written(sup, self.models.same(texts, E), written)
        labels = cluster_labels(same, self.knobs.cluster_threshold, self.knobs.linkage)
        return [{"pid": pool.ids[r], "stance": "support" if s >= self.knobs.stance_threshold else "undermine",
                 "cluster": int(lab), "support_prob": round(float(s), 4)}
                for r, s, lab in zip(rows, sup, labels)]


@lru_cache(maxsize=4)
def _discoverer(pool_key, method: str, llm: str | None) -> Discoverer:
    return Discoverer(open_pool(pool_key), method, llm=llm)


def discover(claim: str, pool, *, method: str = "offline", llm: str | None = None,
             max_k: int | None = -1) -> list[dict]:
    """Perspectives on ``claim`` from ``pool`` (a pool file path or a ``PoolIndex``).

    Returns ``[{pid, text, stance, cluster, score, support_prob, members}]``
    in the balanced order; ``stance`` is ``support`` or ``undermine``;
    ``cluster`` numbers the entries (each is one cluster; ``members`` are the
    equivalent pool sentences folded into it). ``max_k``: the most
    perspectives (-1: the tuned default, None: no limit).
    """
    disc = _discoverer(str(pool), method, llm) if isinstance(pool, (str, Path)) else Discoverer(pool, method, llm=llm)
    return disc.discover(claim, max_k=max_k)
