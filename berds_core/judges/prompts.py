"""The perspective-detection prompt (BERDS, Chen et al.), zero-shot and one-shot.

The LLM judges (``hf`` and ``openai``) ask whether a document supports a
perspective and read the answer "Yes"/"No". ``PROMPT_VERSION`` is part of
the judges' names: change it whenever the wording changes, so cached
predictions made with another prompt are never reused.
"""
from __future__ import annotations

import re

PROMPT_VERSION = "p1"

INSTRUCTION = (
    "You will be given a perspective and a document. Decide whether the document supports the "
    "perspective. A document supports a perspective if it states or argues for the perspective, "
    "or provides evidence for it, even if it also mentions other views. A document that is only "
    "on the same topic, or that argues against the perspective, does not support it.\n"
    "Answer with only \"Yes\" or \"No\".\n\n"
    "Perspective: {perspective}\n"
    "Document: {document}\n"
    "Does the document support the perspective? Answer:"
)

# One worked example for the one-shot prompt (our own writing).
EXAMPLE = {
    "perspective": "Homework should be banned in primary schools.",
    "document": (
        "Several studies of primary pupils found no link between homework and later test scores, "
        "while the time it takes crowds out play, sleep and family life. Teachers in the pilot "
        "schools that dropped homework reported pupils arriving more rested and more willing to learn, "
        "and the head teachers now recommend that other schools abolish it."
    ),
    "answer": "Yes",
}


def user_prompt(document: str, perspective: str) -> str:
    return INSTRUCTION.format(perspective=perspective.strip(), document=document.strip())


def messages(document: str, perspective: str, shot: int = 0) -> list[dict]:
    """Chat messages for one pair; ``shot=1`` prepends the worked example as a prior turn."""
    if shot not in (0, 1):
        raise ValueError("shot must be 0 or 1")
    msgs: list[dict] = []
    if shot:
        msgs.append({"role": "user", "content": user_prompt(EXAMPLE["document"], EXAMPLE["perspective"])})
        msgs.append({"role": "assistant", "content": EXAMPLE["answer"]})
    msgs.append({"role": "user", "content": user_prompt(document, perspective)})
    return msgs


def parse_answer(text: str) -> float | None:
    """1.0 for a Yes answer, 0.0 for No, None when the text is neither."""
    m = re.match(r"[\s\"'*`]*(yes|no)\b", text, re.I)
    if not m:
        return None
    return 1.0 if m.group(1).lower() == "yes" else 0.0
