"""RAG answers: one answer per question, written from its top-k passages, cited by rank.

The prompt is one user turn: an instruction (``basic`` or ``comprehensive``),
the passages numbered ``[1]`` .. ``[k]`` in rank order, then the question.
Generation is greedy by default and goes through ``Generator.generate``, whose
cache keys hold the generator's name, the messages (hence the prompt, the
question and the passages) and the decoding parameters: the same
configuration is never generated twice, and an interrupted batch keeps every
answer already written (:class:`AnswersIncomplete` carries them).
"""
from __future__ import annotations

from typing import Sequence

from ..generators.base import GenerationError

PROMPT_VERSION = "a1"
PROMPTS = {
    "basic": ("Answer the question using the passages below. Cite the passages you use by their number "
              "in brackets, for example [1]."),
    "comprehensive": ("The question below may be debated. Using the passages below, write an answer that "
                      "presents the different perspectives on it and the reasons given for each, without "
                      "taking a side the passages do not settle. Cite the passages you use by their number "
                      "in brackets, for example [1]."),
}


class AnswersIncomplete(GenerationError):
    """Generation stopped part-way; ``done`` holds the answer rows written before the failure."""

    def __init__(self, message: str, done: list[dict]):
        super().__init__(message)
        self.done = done


def passage_block(ctxs: Sequence[dict]) -> str:
    """``[rank] title\\ntext`` for each passage, in rank order (the title line only when there is one)."""
    parts = []
    for i, c in enumerate(ctxs, 1):
        title = " ".join(str(c.get("title") or "").split())
        text = " ".join(str(c.get("text") or "").split())
        parts.append(f"[{i}] {title}\n{text}" if title else f"[{i}] {text}")
    return "\n\n".join(parts)


def answer_messages(question: str, ctxs: Sequence[dict], prompt: str = "basic") -> list[dict]:
    """The chat (one user turn) asking for an answer to ``question`` from ``ctxs``."""
    if prompt not in PROMPTS:
        raise ValueError(f"unknown prompt {prompt!r}; choose from {', '.join(PROMPTS)}")
    body = f"{PROMPTS[prompt]}\n\nPassages:\n{passage_block(ctxs)}\n\nQuestion: {question}\nAnswer:"
    return [{"role": "user", "content": body}]


def answer_rows(entries: Sequence[dict], generator, *, k: int = 5, prompt: str = "basic",
                max_new_tokens: int = 512, progress: bool = False) -> list[dict]:
    """One answers-file row per run entry: ``{id, question, perspectives, subset?, stances?, generation,
    generator, prompt, k, ctxs}`` (``ctxs``: the top-k passages the answer was written from).

    Raises :class:`AnswersIncomplete` when the generator fails part-way; its ``done`` holds the rows
    whose answers exist (made in this call before the failure, or cached by an earlier one).
    """
    if k < 1:
        raise ValueError("k must be at least 1")
    entries = list(entries)
    chats = [answer_messages(e["question"], e["ctxs"][:k], prompt) for e in entries]
    try:
        texts = generator.generate(chats, max_new_tokens=max_new_tokens, progress=progress,
                                   desc=f"answers {generator.name}")
    except GenerationError as e:
        got = generator.cached(chats, max_new_tokens=max_new_tokens)
        done = [answer_row(en, t.strip(), generator.name, prompt, k) for en, t in zip(entries, got) if t is not None]
        raise AnswersIncomplete(str(e), done) from None
    return [answer_row(e, t.strip(), generator.name, prompt, k) for e, t in zip(entries, texts)]


def answer_row(entry: dict, text: str, generator: str, prompt: str, k: int) -> dict:
    row = {"id": str(entry["id"]), "question": entry["question"], "perspectives": list(entry["perspectives"])}
    for key in ("subset", "stances"):
        if entry.get(key) is not None:
            row[key] = entry[key]
    row.update(generation=text, generator=generator, prompt=f"{prompt}-{PROMPT_VERSION}", k=int(k),
               ctxs=[{key: c.get(key) for key in ("id", "title", "text", "score")} for c in entry["ctxs"][:k]])
    return row
