"""Web corpora built on the fly, one per question (BERDS's third corpus setting).

The paper searched the web for each question, converted the top 100 pages to
text and split them into 100-word passages. The parts, each swappable:

- :mod:`.search`: search backends named by spec strings (``searxng:<url>``,
  ``serper``, ``brave``, ``bing``, ``google-cse``); results cached per
  (backend, query, date); keys read from the environment (or passed in) and
  never logged, written or put into cache keys or messages.
- :mod:`.fetch`: concurrent, polite fetching (httpx; per-host and total limits,
  timeouts, size cap, bounded redirects, robots.txt, retries on 5xx/429,
  charset from headers, ``<meta>`` or detection). A page that fails is one
  record with its reason, never an exception.
- :mod:`.extract`: main text (``trafilatura``, default) or the paper's
  ``readability`` + html2text.
- :mod:`.snapshot`: the folder format, ``DIR/<question>/passages.jsonl`` and
  ``manifest.json`` (plus the raw pages and the fetch log), readable later
  without the web.
- :mod:`.build`: the pipeline (search, fetch, extract, split, save), resumable.
"""
from .build import BuildResult, WebOptions, build_question_corpus
from .extract import EXTRACTORS, extract_page
from .fetch import FetchConfig, PageResult, fetch_pages
from .results import SearchError, SearchResult
from .search import SEARCH, cached_search, get_search
from .snapshot import load_snapshot_corpus, question_dir, read_manifest

__all__ = [
    "BuildResult", "EXTRACTORS", "FetchConfig", "PageResult", "SEARCH", "SearchError", "SearchResult",
    "WebOptions", "build_question_corpus", "cached_search", "extract_page", "fetch_pages", "get_search",
    "load_snapshot_corpus", "question_dir", "read_manifest",
]
