"""From retrieval to answers: RAG answers and the DebateQA answer metrics.

- :mod:`.generate`: ``answer_rows`` writes an answer per question from its
  top-k passages (cited by rank) through any generator (``hf:``/``openai:``),
  greedy and cached by (generator, prompt, question, passages);
- :mod:`.pd`: Perspective Diversity (DebateQA): perplexity of each reference
  perspective after the answer, as defined (``mode="defined"``) or as
  DebateQA's released script computes it, step by step (``mode="released"``, hf: models);
- :mod:`.da`: Dispute Awareness from the next-token log-probabilities of
  "Yes"/"No" after our own few-shot prompt;
- :mod:`.coverage`: the perspective-detection judge applied to the answer as a
  document (answer-level MRecall), next to retrieval MRecall@k, P.D. and D.A.;
- :mod:`.rows`: answers files, joined with their questions (``datasets.debateqa``: DebateQA's questions);
- :mod:`.compare`: two configurations (retriever, diversifier, prompt) answered
  and scored side by side (the Answers page).
"""
from .compare import AnswerConfig, answer_config
from .coverage import AnswerScoring, answer_matrix, evaluate_answers, retrieval_matrix, table_row
from .dispute_awareness import DA_OPTIONS, da_messages, dispute_awareness
from ..datasets.debateqa import load_debateqa, partial_answer_text
from .generate import PROMPTS, AnswersIncomplete, answer_messages, answer_rows
from .rows import load_answers, scoring_rows
from .perspective_diversity import (MODES, RESTATE, pd_context, perplexity, perspective_diversity, released_context,
                                    summarize_pd)

__all__ = ["AnswerConfig", "AnswerScoring", "AnswersIncomplete", "answer_config", "table_row", "DA_OPTIONS", "MODES", "PROMPTS", "RESTATE", "answer_matrix", "answer_messages",
           "answer_rows", "da_messages", "dispute_awareness", "evaluate_answers", "load_answers", "scoring_rows",
           "load_debateqa", "partial_answer_text", "pd_context", "perplexity", "perspective_diversity", "released_context",
           "summarize_pd",
           "retrieval_matrix"]
