"""The engine side of the app's pages: warm-up, ranking a column (no Streamlit; a run's figures are the
Report of ``berds_core.experiment.score``)."""
