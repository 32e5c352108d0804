"""Main-text extraction of fetched pages: trafilatura (default) and the paper's readability + html2text."""
from __future__ import annotations

import pytest

from berds_core.specs import SpecError
from berds_core.web import EXTRACTORS, extract_page
from web_servers import ARTICLES, TRICKY_TEXT, article_html, boilerplate_html, tricky_html

BOILERPLATE = ["Celebrity gossip story", "Section 12 news headlines", "ADVERTISEMENT", "Subscribe to our newsletter",
               "All rights reserved"]


@pytest.mark.parametrize("extractor", ["trafilatura", "readability"])
def test_article_text_and_title(extractor):
    title, body = ARTICLES["cars-against"]
    page = extract_page(article_html(title, body, 1), "text/html", "http://x.test/a", extractor)
    assert page.title == title
    assert "Delivery firms complain of longer routes" in page.text
    assert "<p>" not in page.text


def test_trafilatura_drops_boilerplate_and_readability_keeps_the_main_block():
    html = boilerplate_html()
    main = "Nitrogen dioxide levels near schools fell sharply"
    traf = extract_page(html, "text/html", "http://x.test/b", "trafilatura")
    read = extract_page(html, "text/html", "http://x.test/b", "readability")
    for page in (traf, read):
        assert main in page.text and "TRACKER-JS-CODE" not in page.text and ".nav{" not in page.text
    assert not any(b in traf.text for b in BOILERPLATE)
    assert len(traf.text.split()) < 200 < len(html.split())


@pytest.mark.parametrize("extractor", ["trafilatura", "readability"])
def test_script_and_markdown_in_text_stay_literal_and_script_code_never_appears(extractor):
    page = extract_page(tricky_html(), "text/html", "http://x.test/t", extractor)
    text = " ".join(page.text.split())
    assert '<script>alert("pwned")</script>' in text
    assert "**not bold**" in text and "javascript:alert(1)" in text
    assert "SCRIPT-BODY-NEVER-A-PASSAGE" not in text and "INJECTED-BY-SCRIPT" not in text
    assert TRICKY_TEXT.split()[-1] in text


def test_plain_text_and_empty_pages():
    assert extract_page("  just words here  ", "text/plain", "http://x.test/p").text == "just words here"
    for extractor in ("trafilatura", "readability"):
        assert extract_page("", "text/html", "http://x.test/e", extractor).text == ""
        assert extract_page("<html><body></body></html>", "text/html", "http://x.test/e", extractor).text == ""


def test_extractor_specs():
    assert EXTRACTORS.names() == ["trafilatura", "readability"]
    with pytest.raises(SpecError, match="trafilatura"):
        EXTRACTORS.parse("boilerpipe")


ONE_PARAGRAPH = ('<html><head><title>T</title></head><body><header><a href="/">Home</a> | <a href="/news">News</a> | '
                 '<a href="/sport">Sport</a></header><nav><ul><li>Politics</li><li>Business</li></ul></nav>'
                 '<div role="navigation">Skip to content</div><aside>Most read: five recipes</aside>'
                 '<form role="search"><label>Search the site <input name="q"></label></form>'
                 '<article><p>Cities that closed their centres to cars '
                 'saw shop takings rise within a year, the council said.</p></article>'
                 '<footer>Copyright 2026 City Desk. Privacy. Cookies.</footer></body></html>')


def test_a_one_paragraph_article_loses_its_boilerplate_in_the_fallback():
    """issue 24: trafilatura finds no main text in a one-paragraph page; its fallback used to keep the
    navigation line (header, nav). Boilerplate elements go first."""
    from berds_core.web.extract import extract_page

    text = extract_page(ONE_PARAGRAPH, "text/html", "https://x.example/a").text
    assert "shop takings rise" in text
    for junk in ("Home", "Politics", "Skip to content", "Most read", "Copyright", "Search"):
        assert junk not in text, (junk, text)


def test_a_page_of_boilerplate_only_still_gives_its_text():
    from berds_core.corpora.memory import html_to_text

    assert "Only nav" in html_to_text("<html><body><nav>Only nav</nav></body></html>", "x")[0]


def test_an_articles_own_header_and_a_page_wide_form_are_kept():
    """Only the site's header / footer go (not an article's), and a form that wraps the whole page
    (ASP.NET Web Forms) is not boilerplate."""
    from berds_core.corpora.memory import html_to_text

    page = ('<html><body><header>Site menu</header><article><header><h1>Car-free centres</h1></header>'
            '<p>Cities that closed their centres to cars saw shop takings rise within a year.</p></article></body></html>')
    text = html_to_text(page, "x")[0]
    assert "Car-free centres" in text and "Site menu" not in text
    body = "Main content of a web forms page. " * 30
    assert "Main content" in html_to_text(f"<html><body><form id=f1><div><p>{body}</p></div></form></body></html>", "x")[0]
