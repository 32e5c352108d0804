"""The app's shared Streamlit helpers, one module per concern: the app shell (``shell``), text and escaping
(``text``), the sidebar's configuration (``config``) and the sidebar itself (``sidebar``), the cached engine
objects (``engines``), the background warm-up and what a page waits for (``warmup``), lab mode's sign-in and
stores (``lab_ui``), the annotate widgets (``annotator_widget``, ``annotate_admin``), live web search
(``web_live``), the local-server check (``local_server``) and the guards on Streamlit's own messages
(``guards``).

They live outside ``pages/`` so Streamlit never serves them as pages of their own: a file in ``pages/`` gets
a URL (and, before ``app.py`` first runs on a restarted server, a sidebar entry) that skips app.py's gate.
"""

from studio_ui.guards import import_engine, serialize_ast_conversion

# before any page is parsed while a warm-up thread imports: CPython's AST conversion is not thread-safe (< 3.13)
serialize_ast_conversion()
# the engine imported here, in one thread under this package's import lock, before any page or job runs: two
# threads importing a package and its module for the first time at once fail (studio_ui.guards)
import_engine()
