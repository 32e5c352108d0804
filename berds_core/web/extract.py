"""Main text and title of a fetched page, by a named extractor.

``trafilatura`` (default): the main text without navigation, ads, cookie banners
and footers (the same call as HTML files in a corpus folder,
:func:`berds_core.corpora.memory.html_to_text`). ``readability``: the BERDS paper's
pipeline, readability-lxml's main block converted to text with html2text
(links and images dropped; Markdown emphasis and headings kept as html2text
writes them). Plain-text pages are taken as they are. Text inside ``<script>``
and ``<style>`` never reaches a passage; text that merely *reads* like markup
(``<script>`` written in a paragraph, ``**stars**``) is kept verbatim.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..errors import InputError
from ..specs import Registry
from ..corpora.memory import html_to_text


@dataclass(frozen=True)
class Extracted:
    title: str
    text: str


class TrafilaturaExtractor:
    name = "trafilatura"

    def extract(self, html: str, url: str) -> Extracted:
        try:
            text, title = html_to_text(html, url)
        except InputError:  # no text at all
            return Extracted("", "")
        return Extracted(title, text)


class ReadabilityExtractor:
    name = "readability"

    def extract(self, html: str, url: str) -> Extracted:
        import html2text
        from readability import Document

        try:
            doc = Document(html, url=url)
            title = (doc.short_title() or doc.title() or "").strip()
            main = doc.summary(html_partial=True)
        except Exception:  # readability raises on empty or unparsable documents
            return Extracted("", "")
        conv = html2text.HTML2Text(baseurl=url or "")
        conv.ignore_links = True
        conv.ignore_images = True
        conv.ignore_tables = False
        conv.body_width = 0  # no hard wrapping
        conv.unicode_snob = True
        return Extracted("" if title == "[no-title]" else title, conv.handle(main).strip())


EXTRACTORS = Registry("extractor")


@EXTRACTORS.register("trafilatura", help="main text by trafilatura (default): boilerplate removed")
def _trafilatura(arg, **opts):
    return TrafilaturaExtractor()


@EXTRACTORS.register("readability", help="paper-faithful: readability-lxml main block, converted by html2text")
def _readability(arg, **opts):
    return ReadabilityExtractor()


def extract_page(body: str, content_type: str, url: str, extractor="trafilatura") -> Extracted:
    """Title and main text of a decoded page; ``extractor`` is a spec or an extractor object."""
    if content_type in ("text/plain",):
        return Extracted("", body.strip())
    ex = EXTRACTORS.create(extractor) if isinstance(extractor, str) else extractor
    return ex.extract(body, url)
