"""Small synthetic corpora, questions and runs for the Ray tests (seeded; short passages so MiniLM is quick)."""
from __future__ import annotations

import json
import random
from pathlib import Path

WORDS = """school tax energy climate water food health money law ban speech children government people
country state world life work time science technology art music sport animal city farm river forest
market price job wage trade bank loan debt court police prison vote party union church family home
house road car train plane ship oil gas coal solar wind nuclear power grid data privacy phone internet
news media book film game doctor nurse hospital drug vaccine virus disease diet sugar meat bread milk
""".split()


def passage_texts(n: int, words: int = 12, seed: int = 0) -> list[str]:
    """``n`` distinct texts of ``words`` words (the row number is the last word, so none repeats)."""
    rng = random.Random(seed)
    return [" ".join(rng.choice(WORDS) for _ in range(words - 1)) + f" n{i}" for i in range(n)]


def write_corpus(path: Path, n: int, words: int = 12, seed: int = 0) -> Path:
    with open(path, "w", encoding="utf-8") as fh:
        for i, t in enumerate(passage_texts(n, words, seed)):
            fh.write(json.dumps({"id": f"p{i}", "title": "", "text": t}) + "\n")
    return path


def questions(n: int, perspectives: int = 2, seed: int = 1) -> list[dict]:
    rng = random.Random(seed)
    out = []
    for i in range(n):
        q = " ".join(rng.choice(WORDS) for _ in range(6))
        persp = [" ".join(rng.choice(WORDS) for _ in range(8)) + f" view {j}" for j in range(perspectives)]
        out.append({"id": f"q{i}", "question": f"should {q}?", "perspectives": persp})
    return out


def write_questions(path: Path, n: int, perspectives: int = 2, seed: int = 1) -> Path:
    with open(path, "w", encoding="utf-8") as fh:
        for q in questions(n, perspectives, seed):
            fh.write(json.dumps(q) + "\n")
    return path


def run_entries(n_questions: int, per_question: int, perspectives: int = 2, words: int = 12, seed: int = 2) -> list[dict]:
    """A run whose every passage is new text: ``n_questions x per_question`` distinct passages."""
    texts = passage_texts(n_questions * per_question, words, seed)
    entries = []
    for i, q in enumerate(questions(n_questions, perspectives, seed)):
        ctxs = [{"id": f"r{i}-{j}", "title": "", "text": texts[i * per_question + j], "score": float(-j)}
                for j in range(per_question)]
        entries.append({**q, "ctxs": ctxs})
    return entries
