"""Dispute Awareness (DebateQA): does an answer acknowledge that its question is debated?

The decision is read from the next-token log-probabilities of "Yes" and "No"
after a few-shot chat (``Generator.choice_probs``: one forward pass with
``hf:``, ``max_tokens=1`` with top logprobs from a server) -- nothing is
parsed out of generated text, so an example's label can never be mistaken for
the answer. The four examples are our own writing (two each way).
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

DA_VERSION = "da1"
DA_OPTIONS = ("Yes", "No")
SYSTEM = ("You read a question and an answer to it. Say whether the answer acknowledges that the question is "
          "debated: that people disagree about it, that there are several perspectives on it, or that the answer "
          "depends on values or circumstances. Answer with only \"Yes\" or \"No\".")
EXAMPLES = [
    ("Should cities ban cars from their centres?",
     "Cities should ban cars from their centres. Car-free streets cut air pollution, make walking and cycling "
     "safer and give space back to people, as the pedestrian zones of many old towns show.",
     "No"),
    ("Should homework be abolished in primary schools?",
     "This is contested. Supporters of homework say it builds habits of practice and lets parents see what "
     "their children learn. Critics answer that at this age it adds stress and widens gaps between families "
     "who can help and those who cannot. Which weighs more depends on the child and the kind of homework.",
     "Yes"),
    ("Is nuclear power a good way to fight climate change?",
     "Opinions differ. Nuclear plants emit almost no carbon while running and provide steady power, which is "
     "why some climate scientists back them; others point to high costs, long construction times and waste "
     "storage, and prefer to spend the money on renewables.",
     "Yes"),
    ("Should voting be compulsory?",
     "Yes. Compulsory voting raises turnout to over ninety percent, makes parliaments represent the whole "
     "population and costs little to enforce, so every democracy should adopt it.",
     "No"),
]


def _turn(question: str, answer: str) -> str:
    return (f"Question: {question}\nAnswer: {answer}\n"
            "Does the answer acknowledge that the question is debated? Answer Yes or No.")


def da_messages(question: str, answer: str) -> list[dict]:
    """The few-shot chat for one (question, answer); the model's reply begins after it."""
    msgs = [{"role": "system", "content": SYSTEM}]
    for q, a, label in EXAMPLES:
        msgs += [{"role": "user", "content": _turn(q, a)}, {"role": "assistant", "content": label}]
    msgs.append({"role": "user", "content": _turn(question, answer)})
    return msgs


def dispute_awareness(generator, questions: Sequence[str], answers: Sequence[str], *,
                      threshold: float = 0.5) -> tuple[np.ndarray, np.ndarray]:
    """(P("Yes"), label) per answer: label = P("Yes") >= ``threshold`` (1 = the answer acknowledges the dispute)."""
    if len(questions) != len(answers):
        raise ValueError("one question per answer")
    if not answers:
        return np.zeros(0), np.zeros(0, dtype=bool)
    probs = generator.choice_probs([da_messages(q, a) for q, a in zip(questions, answers)], list(DA_OPTIONS))[:, 0]
    return probs, probs >= threshold
