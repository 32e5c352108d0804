"""MACE (Hovy, Berg-Kirkpatrick, Vaswani and Hovy, NAACL 2013, "Learning Whom to Trust with MACE"), with
the class prevalence estimated.

MACE's story: for item ``i`` the true label ``T_i`` is drawn; each annotator ``j`` who labels it either
knows it (``S_ij = 0``, with probability ``θ_j``, their *competence*) and gives ``T_i``, or spams
(``S_ij = 1``) and draws a label from their own strategy ``ξ_j``. So
``P(A_ij = a | T_i = t) = θ_j·[a = t] + (1 − θ_j)·ξ_j(a)``. EM, or variational Bayes with a
Beta(α, β) prior on ``θ`` and a symmetric Dirichlet(10) on ``ξ`` (MACE's own variational update:
``θ_j = exp(ψ(E[not spam] + α) − ψ(E[labels] + α + β))``); several restarts, the one of highest
log-likelihood kept, as MACE does.

One change from the paper: MACE draws ``T_i`` uniformly. On BERDS pairs, where about a fifth are
"supports", a uniform ``T`` makes MACE explain an accurate annotator's many "does not support" answers as
spam: an annotator right 97% of the time got ``θ`` 0.49 (this module with the uniform prior, and
crowd-kit 1.4.2's MACE, which agree to 0.01 on the same labels). Here the prevalence ``π = P(T = t)`` is
estimated with the rest (``prior="learn"``, the default; Paun et al., TACL 2018, fit MACE with a class
prevalence too); ``prior="uniform"`` is the paper's model. On 20 held-out simulated rounds
(``bench/lab_reliability.py``, docs/annotation-lab.md) the estimated θ put five annotators in the order of
their true quality in 20 where crowd-kit's MACE did in 1 and Dawid-Skene in 13.

Inputs are integer codes (items ``0..n_items-1``, annotators ``0..n_annotators-1``, labels ``0..K-1``).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.special import digamma, logsumexp

XI_PRIOR = 10.0  # MACE's symmetric Dirichlet on each annotator's spamming strategy


@dataclass(frozen=True)
class MaceOptions:
    """How to fit: ``method`` "vb" (MACE's variational Bayes, the default) or "em"; ``alpha``/``beta`` the
    Beta prior on θ (vb only); ``prior`` "learn" (the prevalence estimated) or "uniform" (the paper's);
    ``restarts`` (the first from a fixed start, the others random), ``max_iter`` and the relative
    log-likelihood ``tol`` per restart; ``seed`` for the random restarts."""
    method: str = "vb"
    alpha: float = 0.5
    beta: float = 0.5
    prior: str = "learn"
    restarts: int = 10
    max_iter: int = 500
    tol: float = 1e-7
    seed: int = 0


@dataclass
class MaceFit:
    theta: np.ndarray  # (n_annotators,) competence: P(not spamming)
    xi: np.ndarray  # (n_annotators, K) spamming strategy
    prevalence: np.ndarray  # (K,) P(T = t)
    posterior: np.ndarray  # (n_items, K) P(T_i = t | labels)
    log_likelihood: float
    iterations: int


def _e_step(items, annotators, onehot, labels, theta, xi, prevalence, n_items):
    th = theta[annotators][:, None]
    p_label = th * onehot + (1.0 - th) * xi[annotators, labels][:, None]  # (n_labels, K): P(A | T = t)
    logp = np.tile(np.log(prevalence), (n_items, 1))
    np.add.at(logp, items, np.log(p_label))
    norm = logsumexp(logp, axis=1)
    return np.exp(logp - norm[:, None]), p_label, float(norm.sum())


def fit(items, annotators, labels, *, n_items: int, n_annotators: int, n_labels: int = 2,
        options: MaceOptions = MaceOptions()) -> MaceFit:
    """Fit MACE to ``(item, annotator, label)`` codes (:class:`MaceOptions` says how)."""
    o = options
    method, alpha, beta, prior, max_iter, tol = o.method, o.alpha, o.beta, o.prior, o.max_iter, o.tol
    if method not in ("vb", "em"):
        raise ValueError(f"unknown MACE method {method!r} (vb or em)")
    if prior not in ("learn", "uniform"):
        raise ValueError(f"unknown MACE prior {prior!r} (learn or uniform)")
    items = np.asarray(items, dtype=np.int64)
    annotators = np.asarray(annotators, dtype=np.int64)
    labels = np.asarray(labels, dtype=np.int64)
    if not (len(items) == len(annotators) == len(labels)) or len(items) == 0:
        raise ValueError("MACE needs one item, annotator and label per row, and at least one row")
    if labels.min() < 0 or labels.max() >= n_labels:
        raise ValueError(f"labels must be codes 0..{n_labels - 1}")
    onehot = np.eye(n_labels)[labels]
    rng = np.random.default_rng(o.seed)
    best: MaceFit | None = None
    for r in range(max(1, o.restarts)):
        if r == 0:  # one deterministic start: everybody fairly competent, spamming uniformly
            theta = np.full(n_annotators, 0.8)
            xi = np.full((n_annotators, n_labels), 1.0 / n_labels)
        else:
            theta = rng.uniform(0.5, 1.0, n_annotators)
            xi = rng.dirichlet(np.ones(n_labels), n_annotators)
        prevalence = np.full(n_labels, 1.0 / n_labels)
        previous = -np.inf
        it = 0
        for it in range(1, max_iter + 1):
            post, p_label, ll = _e_step(items, annotators, onehot, labels, theta, xi, prevalence, n_items)
            th = theta[annotators][:, None]
            knows = (post[items] * th * onehot / p_label).sum(axis=1)  # P(S_ij = 0 | labels)
            spams = 1.0 - knows
            n_knows = np.bincount(annotators, knows, n_annotators)
            n_all = np.bincount(annotators, minlength=n_annotators).astype(float)
            spam_counts = np.zeros((n_annotators, n_labels))
            np.add.at(spam_counts, (annotators, labels), spams)
            if method == "em":
                theta = np.clip(n_knows / np.maximum(n_all, 1e-12), 1e-6, 1.0 - 1e-6)
                xi = (spam_counts + 1e-6) / (spam_counts + 1e-6).sum(axis=1, keepdims=True)
            else:
                theta = np.exp(digamma(n_knows + alpha) - digamma(n_all + alpha + beta))
                xi = np.exp(digamma(spam_counts + XI_PRIOR) - digamma((spam_counts + XI_PRIOR).sum(axis=1, keepdims=True)))
            if prior == "learn":
                prevalence = np.clip(post.mean(axis=0), 1e-6, None)
                prevalence /= prevalence.sum()
            if abs(ll - previous) <= tol * abs(ll):
                break
            previous = ll
        post, _, ll = _e_step(items, annotators, onehot, labels, theta, xi, prevalence, n_items)
        if best is None or ll > best.log_likelihood:
            best = MaceFit(theta=theta, xi=xi, prevalence=prevalence, posterior=post, log_likelihood=ll,
                           iterations=it)
    return best
