"""The app's shared Streamlit helpers: the sidebar and shell (``common``), lab mode's sign-in and stores
(``lab_ui``), the annotate widgets (``annotator_widget``, ``annotate_admin``), live web search
(``web_live``) and the local-server check (``local_server``).

They live outside ``pages/`` so Streamlit never serves them as pages of their own: a file in ``pages/`` gets
a URL (and, before ``app.py`` first runs on a restarted server, a sidebar entry) that skips app.py's gate.
"""
