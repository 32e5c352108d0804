"""Measures by name, and the per-question kernels of the label-matrix measures.

**The vocabulary** (modelled on ``ir_measures``): a measure is an object parsed
from a string, ``Measure.parse("MRecall@5")``. One family name and a cutoff,
``alpha_nDCG`` with an optional ``(alpha=…)``. Every spelling the studio has
printed is read back, case and ``-``/``_`` ignored:

=============  ===============  ===============  ==========================  =========================
family         ir_measures      output key       page / export label         also read
=============  ===============  ===============  ==========================  =========================
MRecall        (none)           ``mrecall@5``    ``MRecall@5``
Precision      ``P@5``          ``precision@5``  ``Precision@5``             ``precision_at_1`` (P@1)
α-nDCG         ``alpha_nDCG@5`` ``alpha_ndcg@5`` ``α-nDCG@5``                ``alpha-nDCG@5``
ERR-IA         ``ERR_IA@5``     ``err_ia@5``     ``ERR-IA@5``
P-IA           ``P_IA@5``       ``p_ia@5``       ``P-IA@5``
StRecall       ``StRecall@5``   ``strecall@5``   ``StRecall@5``
=============  ===============  ===============  ==========================  =========================

MRecall is the studio's own measure (BERDS' MRecall@k, Min et al. 2021): ir_measures has none.

``m.key`` is the one printed form in every file the studio writes (JSON of
``berds evaluate``, per-question scores, significance tables): the keys of the
files written before measures had names, unchanged. ``str(m)`` is the
``ir_measures`` name (``ir_measures.parse_measure`` reads it for the ndeval
families; for MRecall, the studio's spelling ``MRecall@5``), ``m.label`` what pages and CSV exports show. An
unknown name is one line (:class:`~berds_core.errors.InputError`) listing the families.

MRecall and Precision are computed here from boolean label matrices (passages x
perspectives); α-nDCG, ERR-IA, P-IA and StRecall by ndeval through
``ir_measures`` (``berds_core.eval.diversity``), never re-implemented.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Iterable, NamedTuple

import numpy as np

from ..errors import InputError

MAX_NDEVAL_CUTOFF = 20  # ndeval evaluates at most the top 20
NDEVAL_ALPHA = 0.5  # ndeval's default alpha


# --------------------------------------------------------------------------- kernels


def mrecall_at_k(labels: np.ndarray, k: int) -> float:
    """MRecall@k (Min et al. 2021, as BERDS uses it).

    With m perspectives and the top-k passages: if m > k the question scores 1
    when at least k distinct perspectives are covered, otherwise 1 when all m
    are covered. ``labels[i, j]`` is True when passage i supports perspective j.
    """
    labels = np.asarray(labels, dtype=bool)
    m = labels.shape[1]
    covered = int(labels[:k].any(axis=0).sum())
    return float(covered >= (k if m > k else m))


def precision_at_k(labels: np.ndarray, k: int) -> float:
    """Precision@k: share of the top-k slots holding a passage that supports any perspective.

    The denominator is k: a run with fewer than k passages is not rewarded.
    """
    labels = np.asarray(labels, dtype=bool)
    return float(labels[:k].any(axis=1).sum()) / k


def passages_to_cover(labels: np.ndarray) -> int | None:
    """Smallest n such that the top n passages cover every perspective (None if never)."""
    labels = np.asarray(labels, dtype=bool)
    m = labels.shape[1]
    if labels.shape[0] == 0:
        return None
    covered = np.logical_or.accumulate(labels, axis=0).sum(axis=1)
    hit = np.nonzero(covered >= m)[0]
    return int(hit[0]) + 1 if hit.size else None


# --------------------------------------------------------------------------- names


class Family(NamedTuple):
    """One measure family: its output-key stem, ``ir_measures`` name, display label and other spellings."""

    key: str
    name: str
    label: str
    ndeval: bool
    also: tuple[str, ...] = ()


FAMILIES: tuple[Family, ...] = (
    Family("mrecall", "MRecall", "MRecall", False),
    Family("precision", "P", "Precision", False),
    Family("alpha_ndcg", "alpha_nDCG", "α-nDCG", True),
    Family("err_ia", "ERR_IA", "ERR-IA", True),
    Family("p_ia", "P_IA", "P-IA", True),
    Family("strecall", "StRecall", "StRecall", True, ("st_recall", "subtopic_recall")),
)
KERNELS = {"mrecall": mrecall_at_k, "precision": precision_at_k}


def _norm(text: str) -> str:
    return text.strip().replace("α", "alpha").replace("-", "_").lower()


_BY_SPELLING = {_norm(s): f for f in FAMILIES for s in (f.key, f.name, f.label, *f.also)}
_SYNTAX = re.compile(r"^(?P<name>[^@()]+?)\s*(?:\((?P<params>[^()]*)\))?\s*@\s*(?P<k>[^@()]+)$")
CHOICES = ", ".join(f"{f.name}@k" for f in FAMILIES)


@dataclass(frozen=True)
class Measure:
    """A measure at a cutoff: ``Measure.parse("alpha_nDCG@10")``; ``alpha`` only for α-nDCG (None: ndeval's 0.5)."""

    family: Family
    cutoff: int
    alpha: float | None = None

    def __post_init__(self):
        if self.alpha is not None and float(self.alpha) == NDEVAL_ALPHA:  # one measure, one value
            object.__setattr__(self, "alpha", None)

    @classmethod
    def parse(cls, text: str, *, source: str = "measure") -> "Measure":
        """The measure a string names (any spelling in the module's table); InputError naming ``source`` if none."""
        raw = str(text).strip()
        if _norm(raw) == "precision_at_1":  # the column name of evaluate's summaries
            return cls(_BY_SPELLING["precision"], 1)
        match = _SYNTAX.match(raw)
        family = _BY_SPELLING.get(_norm(match["name"])) if match else None
        if family is None:
            raise InputError(source, None, None, f"unknown measure {raw!r}: choose from {CHOICES} "
                                                 "(k a whole number, e.g. MRecall@5, alpha_nDCG@10)")
        try:
            cutoff = int(match["k"])
        except ValueError:
            raise InputError(source, None, None, f"measure {raw!r}: the cutoff after '@' must be a whole "
                                                 "number") from None
        if cutoff < 1 or (family.ndeval and cutoff > MAX_NDEVAL_CUTOFF):
            top = f" and at most {MAX_NDEVAL_CUTOFF} (ndeval's limit)" if family.ndeval else ""
            raise InputError(source, None, None, f"measure {raw!r}: the cutoff must be at least 1{top}")
        return cls(family, cutoff, _alpha(raw, family, match["params"], source))

    @property
    def key(self) -> str:
        """The printed form in the studio's files: ``mrecall@5``, ``precision@1``, ``alpha_ndcg@10``."""
        return f"{self.family.key}@{self.cutoff}"

    @property
    def label(self) -> str:
        """What pages and CSV exports show: ``MRecall@5``, ``Precision@5``, ``α-nDCG@10``."""
        return f"{self.family.label}@{self.cutoff}"

    def __str__(self) -> str:
        """The ``ir_measures`` name: ``P@5``, ``alpha_nDCG@10``, ``alpha_nDCG(alpha=0.3)@10``."""
        params = f"(alpha={self.alpha})" if self.alpha is not None else ""
        return f"{self.family.name}{params}@{self.cutoff}"

    def score(self, labels: np.ndarray) -> float:
        """One question's value from its label matrix (MRecall and Precision; the ndeval families need qrels)."""
        if self.family.ndeval:
            raise ValueError(f"{self} is computed by ndeval from qrels (berds_core.eval.diversity)")
        return KERNELS[self.family.key](labels, self.cutoff)

    def ir_measure(self):
        """The ``ir_measures`` object (ndeval families; α-nDCG always with its alpha, as ndeval is invoked)."""
        import ir_measures

        if self.family.key == "alpha_ndcg":
            return ir_measures.alpha_nDCG(alpha=NDEVAL_ALPHA if self.alpha is None else self.alpha) @ self.cutoff
        return getattr(ir_measures, self.family.name) @ self.cutoff


def _alpha(raw: str, family: Family, params: str | None, source: str) -> float | None:
    if not params or not params.strip():
        return None
    name, eq, value = params.partition("=")
    if family.key != "alpha_ndcg" or not eq or name.strip() != "alpha":
        raise InputError(source, None, None, f"measure {raw!r}: only alpha_nDCG takes a parameter, "
                                             "written alpha_nDCG(alpha=0.5)@10")
    try:
        alpha = float(value)
    except ValueError:
        alpha = -1.0
    if not 0.0 <= alpha <= 1.0:
        raise InputError(source, None, None, f"measure {raw!r}: alpha must be a number in [0, 1]")
    return alpha


def parse_measures(text: str | Iterable[str], *, source: str = "measures") -> list[Measure]:
    """Measures from ``"MRecall@5,P@5 alpha_nDCG@10"`` (commas or spaces) or a list of names; first-seen order, once."""
    items = re.split(r"[,\s]+", text) if isinstance(text, str) else list(text)
    out = [Measure.parse(item, source=source) for item in items if str(item).strip()]
    return list(dict.fromkeys(out))


def family_of(name: str) -> Family:
    """The family a column name or stem names (``mrecall``, ``precision_at_1`` -> Precision, ``alpha_ndcg``)."""
    if _norm(name) == "precision_at_1":
        return _BY_SPELLING["precision"]
    family = _BY_SPELLING.get(_norm(name))
    if family is None:
        raise InputError("measure", None, None, f"unknown measure {name!r}: choose from {CHOICES}")
    return family


def label_measures(ks: Iterable[int]) -> list[Measure]:
    """The BERDS measures at every k: ``MRecall@k``, ``P@k`` per k, then ``P@1`` (the order of ``evaluation.scores``)."""
    mr, p = _BY_SPELLING["mrecall"], _BY_SPELLING["precision"]
    out = [m for k in ks for m in (Measure(mr, int(k)), Measure(p, int(k)))]
    return list(dict.fromkeys(out + [Measure(p, 1)]))


def ndeval_measures(ks: Iterable[int], alpha: float | None = None) -> list[Measure]:
    """α-nDCG, ERR-IA, P-IA and StRecall at every k (k-major, the order ``berds evaluate`` prints them)."""
    fams = [f for f in FAMILIES if f.ndeval]
    out = []
    for k in ks:
        k = int(k)
        if not 1 <= k <= MAX_NDEVAL_CUTOFF:
            raise ValueError(f"ndeval measures need 1 <= k <= {MAX_NDEVAL_CUTOFF}, got {k}")
        out.extend(Measure(f, k, alpha if f.key == "alpha_ndcg" else None) for f in fams)
    return out
