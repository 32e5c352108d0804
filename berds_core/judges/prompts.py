"""Named perspective-detection prompts for the LLM judges (``hf``, ``openai``), and the authors' answer parser.

- ``berds`` (the default): the BERDS paper's prompt (Chen & Choi, Table 14),
  the one the fine-tuned evaluator ``timchen0618/Mistral_BERDS_evaluator`` was
  trained on, zero-shot and one-shot, as *templates* in the authors' ChatML-like
  form, turned into chat messages exactly as their ``formulate_dialogs`` does
  (see ``../shared/specs/berds-evaluator.md`` sections 1-4): substitute
  ``[Doc 1]`` / ``[Doc 2]``, split on ``<|im_end|>``, read each turn's role
  and content. The strings are model-interface data: byte for byte, trailing
  spaces included.
- ``studio``: this project's earlier wording (no system turn; one-shot with
  our own worked example). Kept for base models that were not trained on the
  paper's prompt; it is a different metric from the paper's.

The prompt name is part of a judge's name, so predictions cached under one
prompt are never read for another. :func:`parse_answer` is the authors'
Yes/No parser (spec section 4), used by ``--decode generate`` and whenever a
server gives no log-probabilities.
"""
from __future__ import annotations

import ast
import json
import re
from dataclasses import dataclass

from ..specs import Registry

# --------------------------------------------------------------------------- the paper's templates

SYSTEM_ZERO = ('You are a helpful assistant that can only answer with "Yes" or "No". Your goal is to determine if '
               'the provided document support the provided statement. Do NOT provide any explanation for your '
               'choice. ')
SYSTEM_ONE = SYSTEM_ZERO + "You should output the answer that best follows an instruction and an input pair."

# the six instruction lines (the first two end with a space), after "Instruction: "
INSTRUCTION_LINES = (
    'Does the document support the statement? Answer with only "Yes" or "No". \n'
    "Only consider the information provided in the document, and do not infer any additional information. \n"
    "The document is a snippet taken from the Internet, and might exhibit support for or opposition against "
    "the statement.\n"
    'If the document opposes the statement, the answer is "No". If the document does not contain relevant '
    'information about the statement, the answer is also "No".\n'
    'The answer is "Yes" only if the document supports the statement, either explicitly or implicitly.\n'
    "Think carefully if the document actually supports the statement, or if there is just some superficial "
    "textual overlap between the two."
)

USER_TURN = ("<|im_start|>user\n"
             "Document: [Doc 1]\n"
             "Statement: [Doc 2]\n"
             "Instruction: " + INSTRUCTION_LINES + "\n"
             "Answer:\n"
             "<|im_end|>\n")

EXAMPLE_DOCUMENT = (
    "Why Prop. 19 is so important | rescue truth. The United States took a stab at alcohol prohibition from "
    "1920-1933 via the United States Constitution. Almost immediately following the ratification of the Eighteenth "
    "Amendment, which outlawed alcohol, speakeasy clubs sprung up all over, effectively creating a black market and "
    "handing alcohol sales over to organized crime. During this time, our government poisoned industrial alcohol "
    "in an attempt to curb usage by scaring the American public, causing an estimated 10,000 deaths.[17] Because "
    "of the illicit drug market created by prohibition, the government could not regulate the production of "
    "alcohol, and sometimes people became ill after drinking bootlegged whiskies. The current"
)
EXAMPLE_STATEMENT = "Prohibition is an effective method to curb drug usage."
EXAMPLE_ANSWER = "No"

ZERO_SHOT_TEMPLATE = "<|im_start|>system\n" + SYSTEM_ZERO + "\n<|im_end|>\n" + USER_TURN

ONE_SHOT_TEMPLATE = ("<|im_start|>system\n" + SYSTEM_ONE + "\n<|im_end|>\n"
                     "<|im_start|>user\n"
                     "Document for Example 1: " + EXAMPLE_DOCUMENT + "\n"
                     "Statement for Example 1: " + EXAMPLE_STATEMENT + "\n"
                     "Instruction for Example 1: " + INSTRUCTION_LINES + "\n"
                     "Answer for Example 1:\n"
                     "<|im_end|>\n"
                     "<|im_start|>assistant\n" + EXAMPLE_ANSWER + "\n<|im_end|>\n"
                     + USER_TURN)

TEMPLATES = {0: ZERO_SHOT_TEMPLATE, 1: ONE_SHOT_TEMPLATE}

_ROLE_PREFIX = len("<|im_start|>")  # 12


def formulate_dialogs(template: str, document: str, statement: str) -> list[dict]:
    """The authors' construction (spec section 3): substitute, split on ``<|im_end|>``, parse each turn.

    The system turn is included; :func:`messages` drops it when asked (the Mistral evaluator).
    """
    text = template.replace("[Doc 1]", document).replace("[Doc 2]", statement)
    out = []
    for piece in text.split("<|im_end|>")[:-1]:
        lines = piece.strip("\n").split("\n")
        out.append({"role": lines[0][_ROLE_PREFIX:], "content": "\n".join(lines[1:]).strip()})
    return out


# --------------------------------------------------------------------------- our own wording ("studio")

STUDIO_INSTRUCTION = (
    "You will be given a perspective and a document. Decide whether the document supports the "
    "perspective. A document supports a perspective if it states or argues for the perspective, "
    "or provides evidence for it, even if it also mentions other views. A document that is only "
    "on the same topic, or that argues against the perspective, does not support it.\n"
    "Answer with only \"Yes\" or \"No\".\n\n"
    "Perspective: {perspective}\n"
    "Document: {document}\n"
    "Does the document support the perspective? Answer:"
)

# One worked example for the studio one-shot prompt (our own writing).
STUDIO_EXAMPLE = {
    "perspective": "Homework should be banned in primary schools.",
    "document": (
        "Several studies of primary pupils found no link between homework and later test scores, "
        "while the time it takes crowds out play, sleep and family life. Teachers in the pilot "
        "schools that dropped homework reported pupils arriving more rested and more willing to learn, "
        "and the head teachers now recommend that other schools abolish it."
    ),
    "answer": "Yes",
}

# names kept for code written against the first version of this module


def _studio_user(document: str, perspective: str) -> str:
    return STUDIO_INSTRUCTION.format(perspective=perspective.strip(), document=document.strip())


def _studio_messages(document: str, perspective: str, shot: int) -> list[dict]:
    msgs: list[dict] = []
    if shot:
        msgs.append({"role": "user", "content": _studio_user(STUDIO_EXAMPLE["document"], STUDIO_EXAMPLE["perspective"])})
        msgs.append({"role": "assistant", "content": STUDIO_EXAMPLE["answer"]})
    msgs.append({"role": "user", "content": _studio_user(document, perspective)})
    return msgs


# --------------------------------------------------------------------------- the registry


@dataclass(frozen=True)
class Prompt:
    """A named prompt: ``build(document, perspective, shot) -> messages`` (system turn first when it has one)."""

    name: str
    build: object
    has_system: bool
    help: str

    def messages(self, document: str, perspective: str, shot: int = 0, *, system: bool = True) -> list[dict]:
        if shot not in (0, 1):
            raise ValueError("shot must be 0 or 1")
        msgs = self.build(document, perspective, shot)
        return msgs if system else [m for m in msgs if m["role"] != "system"]


PROMPTS = Registry("judge prompt")
DEFAULT_PROMPT = "berds"


def _berds_messages(document: str, perspective: str, shot: int) -> list[dict]:
    return formulate_dialogs(TEMPLATES[shot], document, perspective)


@PROMPTS.register("berds", help="the BERDS paper's prompt (Table 14), which the BERDS evaluator was trained on")
def _berds(arg, **_):
    return Prompt("berds", _berds_messages, True, "the BERDS paper's prompt")


@PROMPTS.register("studio", help="this project's own wording (no system turn); not the paper's metric")
def _studio(arg, **_):
    return Prompt("studio", _studio_messages, False, "BERDS Studio's own wording")


def get_prompt(name: str | None = None) -> Prompt:
    """The named prompt (``berds`` by default); :class:`berds_core.specs.SpecError` lists the choices."""
    return PROMPTS.create(name or DEFAULT_PROMPT)


def messages(document: str, perspective: str, shot: int = 0, *, prompt: str | None = None,
             system: bool = True) -> list[dict]:
    """Chat messages for one (document, perspective) pair under a named prompt."""
    return get_prompt(prompt).messages(document, perspective, shot, system=system)


# --------------------------------------------------------------------------- the authors' answer parser

ANSWER_MARKERS = ("Answer:", "The answer is", "The answer is:",
                  "Based on the information provided in the document, the answer is")


def _after_last_marker(text: str) -> str:
    best, end = -1, 0
    for m in ANSWER_MARKERS:
        i = text.rfind(m)
        if i > best or (i == best and i >= 0 and i + len(m) > end):
            best, end = i, i + len(m)
    return text[end:] if best >= 0 else text


def _json_answer(text: str) -> str | None:
    for load in (json.loads, ast.literal_eval):
        try:
            obj = load(text)
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            continue
        if isinstance(obj, dict):
            for k, v in obj.items():
                if str(k).strip().lower() == "answer":
                    return str(v)
            return None
    m = re.search(r"""["']?answer["']?\s*:\s*["']?([A-Za-z]+)""", text, re.I)  # cut off after 16 tokens
    return m.group(1) if m else None


def parse_answer(text: str) -> bool:
    """The authors' decision on a generated reply (spec section 4): True for Yes, False otherwise.

    A reply starting with ``{`` is a JSON-ish object whose ``Answer`` field is
    compared case-insensitively with ``yes``. Otherwise the text after the last
    ``Answer:`` / ``The answer is`` / ``The answer is:`` / ``Based on the
    information provided in the document, the answer is`` is stripped and
    lower-cased; Yes when it starts with ``yes`` or ``(yes``, is ``y`` or
    ``ye``, ends with ``yes``, ``yes.`` or ``yes".``, or starts with
    ``entail`` or ``true``.
    """
    reply = str(text or "").strip()
    if reply.startswith("{"):
        ans = _json_answer(reply)
        return ans is not None and ans.strip().lower() == "yes"
    a = _after_last_marker(reply).strip().lower()
    return (a.startswith(("yes", "(yes")) or a in ("y", "ye") or a.endswith(("yes", "yes.", 'yes".'))
            or a.startswith(("entail", "true")))
