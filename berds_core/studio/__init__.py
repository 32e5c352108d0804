"""The engine side of the app's pages: warm-up, ranking a column, summaries (no Streamlit)."""
