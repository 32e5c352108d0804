"""Training and evaluation examples for the stance model, from every stance-bearing development source.

One example is a ``(target, text)`` pair -- the target a question, a claim or
a perspective statement, the text a passage -- with the classes it may have
(``allowed``: a subset of ``CLASSES`` indices; one class for a full label,
two for a partial one such as "does not support" = oppose or unrelated), the
question it belongs to (``qid``: folds never split a question) and the source
it came from. Sources (all development data, read by path):

- ``procon``, ``perspectrum``, ``demo`` (``devsets.dev_bundles``: every
  passage labelled with the side(s) it argues): each one-sided passage with
  the question as target (support = the yes side), and with one of the two
  side statements as target (the claim: its side's label; the claim's
  negation: the other label; which of the two alternates by a hash of the
  passage id: the **consistency cue**, a statement and its negation get
  opposite stances). Four-perspective questions (the demo) also pair a
  passage with each perspective of known stance. ``negatives`` candidates per
  question (its dense + BM25 top 30) that no question of its group labels:
  unrelated (**hard negatives**: retrieved for the question, on another
  topic or another claim);
- ``berds-dev`` (``berds-dev/*_query_exp.dev.jsonl``): the GPT-4-written
  perspective texts that open with "Yes," or "No," (a silver side label; the
  opening word is cut so the label is not read off it), with the question as
  target, and for the two-perspective subsets whose perspective 0 is the
  question's affirmative (arguana, opinionqa) with one side statement as
  target (alternating, as above);
- ``human`` (``berds-human/pers_det.dev.tsv``): (perspective, document)
  pairs labelled by people: 1 = support, 0 = oppose or unrelated (partial).

``passage_string`` is the text read for a passage: ``title. text``.
"""
from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path
from ..corpora.memory import corpus_from_passages
from ..datasets.expanded_queries import load_qe
from ..datasets.human_pairs import read_pairs
from ..retrieval import get_retriever

CLASSES = ("support", "oppose", "unrelated")
SUPPORT, OPPOSE, UNRELATED = 0, 1, 2
SOURCES = ("procon", "perspectrum", "demo", "berds-dev", "human")
QE_FILES = {"arguana": "arguana_generated_query_exp.dev.jsonl", "kialo": "kialo_query_exp.dev.jsonl",
            "opinionqa": "opinionqa_query_exp.dev.jsonl"}
AFFIRMATIVE_FIRST = ("arguana", "opinionqa")  # perspective 0 is the question's yes-answer in these subsets
_YESNO = re.compile(r"^\s*(yes|no)\b[\s,.;:!-]*", re.I)


@dataclass(frozen=True)
class Example:
    qid: str
    source: str
    target: str
    text: str
    allowed: tuple[int, ...]
    weight: float = 1.0
    kind: str = ""  # what the target is: question | claim | negation | perspective

    @property
    def label(self) -> int:
        """The single class, or -1 for a partial label."""
        return self.allowed[0] if len(self.allowed) == 1 else -1


def passage_string(passage) -> str:
    """The text the stance model reads for a passage (a ``Passage``, a run ``ctx`` dict or a string):
    ``title. text`` (the title of a debate argument states its point), the text alone when untitled."""
    if isinstance(passage, str):
        return passage
    if isinstance(passage, dict):
        title, text = passage.get("title") or "", passage.get("text") or ""
    else:
        title, text = getattr(passage, "title", "") or "", getattr(passage, "text", "") or ""
    title = " ".join(str(title).split())
    return f"{title}. {text}" if title else str(text)


def _flip(key: str) -> bool:
    return int(hashlib.sha1(key.encode()).hexdigest()[:8], 16) % 2 == 1


def side_of(question, supported: set[int]) -> int | None:
    """SUPPORT / OPPOSE (of the question's yes-answer) for a passage supporting ``supported``
    perspectives, from their stances; None when unclear (no stance, or both sides)."""
    stances = question.stances or []
    sides = {stances[j] for j in supported if j < len(stances)} - {None}
    if sides == {"support"}:
        return SUPPORT
    if sides == {"oppose"}:
        return OPPOSE
    return None


def side_statements(question) -> tuple[str | None, str | None]:
    """The question's first perspective of stance ``support`` (the claim) and of ``oppose`` (its negation)."""
    st = question.stances or []
    claim = next((p for p, s in zip(question.perspectives, st) if s == "support"), None)
    neg = next((p for p, s in zip(question.perspectives, st) if s == "oppose"), None)
    return claim, neg


def _sided_examples(qid, source, question_text, claim, negation, key, text, side, weight=1.0):
    """The question-target example and one side-statement example (claim or negation, by ``key``)."""
    out = [Example(qid, source, question_text, text, (side,), weight, "question")]
    use_neg = _flip(key) if (claim and negation) else bool(negation and not claim)
    if use_neg and negation:
        out.append(Example(qid, source, negation, text, (1 - side,), weight, "negation"))
    elif claim:
        out.append(Example(qid, source, claim, text, (side,), weight, "claim"))
    return out


def bundle_examples(bundle, source: str, pools: dict | None = None, negatives: int = 2,
                    group_of: dict | None = None) -> list[Example]:
    """Examples of one gold-labelled bundle (see the module docstring).

    ``pools``: question id -> candidate rows into ``bundle.passages`` (hard negatives come from
    there); ``group_of``: question id -> group id (a candidate labelled for any question of the
    same group is not a negative).
    """
    row_of = {p.id: i for i, p in enumerate(bundle.passages)}
    labelled_in_group: dict[str, set[str]] = {}
    for q in bundle.questions:
        g = (group_of or {}).get(q.id, q.id)
        labelled_in_group.setdefault(g, set()).update(bundle.gold.get(q.id, {}))
    out = []
    for q in bundle.questions:
        gold = bundle.gold.get(q.id, {})
        claim, negation = side_statements(q)
        stances = q.stances or []
        for pid in sorted(gold):
            if pid not in row_of:
                continue
            text = passage_string(bundle.passages[row_of[pid]])
            side = side_of(q, set(gold[pid]))
            if side is not None:
                out += _sided_examples(q.id, source, q.question, claim, negation, f"{q.id}|{pid}", text, side)
            if len(q.perspectives) > 2:  # each perspective of known stance against a passage of known side
                for j, (persp, st) in enumerate(zip(q.perspectives, stances)):
                    if st is None or side is None:
                        continue
                    if j in gold[pid]:
                        out.append(Example(q.id, source, persp, text, (SUPPORT,), 1.0, "perspective"))
                    elif (st == "support") != (side == SUPPORT):
                        out.append(Example(q.id, source, persp, text, (OPPOSE,), 1.0, "perspective"))
        if pools and negatives:
            taken = labelled_in_group.get((group_of or {}).get(q.id, q.id), set())
            free = [r for r in pools.get(q.id, []) if bundle.passages[r].id not in taken]
            free = sorted(free, key=lambda r: hashlib.sha1(f"{q.id}|{bundle.passages[r].id}".encode()).hexdigest())
            for n, r in enumerate(free[:negatives]):
                target = q.question if n % 2 == 0 or not claim else claim
                out.append(Example(q.id, source, target, passage_string(bundle.passages[r]), (UNRELATED,), 1.0,
                                   "question" if target == q.question else "claim"))
    return out


def strip_yes_no(text: str) -> tuple[int | None, str]:
    """(SUPPORT for a text opening with "Yes", OPPOSE for "No", else None; the text without that word)."""
    m = _YESNO.match(text)
    if not m:
        return None, text
    rest = text[m.end():].strip()
    rest = rest[:1].upper() + rest[1:]
    return (SUPPORT if m.group(1).lower() == "yes" else OPPOSE), rest


def berds_dev_examples(folder: Path) -> tuple[list[Example], list]:
    """Silver examples of the BERDS development questions; also returns the questions (for grouping)."""
    out, questions = [], []
    for subset, name in QE_FILES.items():
        path = Path(folder) / name
        if not path.exists():
            continue
        qs = load_qe(path)
        questions += qs
        for q in qs:
            two = len(q.perspectives) == 2 and subset in AFFIRMATIVE_FIRST
            for n, gen in enumerate(q.generated_perspectives):
                side, text = strip_yes_no(gen)
                if side is None or len(text.split()) < 5:
                    continue
                claim, negation = (q.perspectives[0], q.perspectives[1]) if two else (None, None)
                out += _sided_examples(q.id, "berds-dev", q.question, claim, negation, f"{q.id}|{n}", text, side)
    return out, questions


def human_examples(path: Path, weight: float = 1.0) -> list[Example]:
    """The human pairs: label 1 -> support, 0 -> oppose or unrelated (a partial label)."""
    out = []
    for r in read_pairs(path):
        allowed = (SUPPORT,) if r["label"].strip() == "1" else (OPPOSE, UNRELATED)
        out.append(Example(human_qid(r["question"]), "human", r["perspective"], r["document"], allowed, weight,
                           "perspective"))
    return out


def human_qid(question: str) -> str:
    return "human-" + hashlib.sha1(question.strip().encode()).hexdigest()[:12]


def candidate_pools(bundle, depth: int = 30, progress: bool = False) -> dict[str, list[int]]:
    """Question id -> rows of the union of the dense and BM25 top ``depth`` (dense order first)."""
    corpus = corpus_from_passages(bundle.passages, bundle.name)
    texts = [q.question for q in bundle.questions]
    dense = get_retriever("dense", corpus, progress=progress).search(texts, depth)  # the recipe's two retrievers
    bm25 = get_retriever("bm25", corpus, progress=progress).search(texts, depth)
    return {q.id: list(dict.fromkeys([r for r, _ in dense[i]] + [r for r, _ in bm25[i]]))
            for i, q in enumerate(bundle.questions)}
