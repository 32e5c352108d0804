"""Datasets: questions with perspectives, and (dataset, corpus, gold) bundles.

Public names (see docs/engine-contracts.md): ``load_questions``, ``load_hub``,
``load_qe``, ``load_debate_sites``, ``load_perspectrum``, ``load_perspectrum_bundle``, ``load_gold``,
``load_demo``, ``Bundle``.
"""
from .bundle import Bundle, read_passages_jsonl
from .debate_sites import load_debate_sites
from .demo import demo_dir, load_demo
from .formats import FORMATS, guess_format, load_questions
from .generic import load_questions_csv, load_questions_jsonl
from .gold import gold_rows, load_gold, read_gold, validate_gold, write_gold
from .hub import load_hub
from .perspectrum import load_perspectrum, load_perspectrum_bundle
from .phrasing import claim_to_question, negate_claim
from .expanded_queries import load_qe

__all__ = [
    "Bundle", "FORMATS", "claim_to_question", "demo_dir", "gold_rows", "guess_format",
    "load_debate_sites", "load_demo", "load_gold", "load_hub", "load_perspectrum",
    "load_perspectrum_bundle", "load_qe", "load_questions", "load_questions_csv", "load_questions_jsonl",
    "negate_claim", "read_gold", "read_passages_jsonl", "validate_gold", "write_gold",
]
