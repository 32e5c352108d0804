"""BERDS Studio engine: datasets, corpora, retrieval, judges, metrics. No Streamlit here."""

__version__ = "0.1.0"
