"""An HTML page as the text a model reads: what Claude's WebFetch tool hands its model (HTML made markdown).

hiivmind's `web_fetch` with a prompt is that tool. Raw HTML would spend the page budget a prompt gets
(`web.PROMPT_PAGE_CHARS`) on markup, scripts and styles, and a documentation page is mostly those. Headings, list
items, links (made absolute against the page's URL, so a crawl can follow them), code and paragraphs are kept as
markdown; scripts, styles and everything else that is not content are dropped. The standard library's HTML parser
reads any HTML, broken or not, without raising.
"""

from __future__ import annotations

import re
from html.parser import HTMLParser
from urllib.parse import urljoin

# Elements whose content is never the page's text.
_HIDDEN = frozenset({"script", "style", "noscript", "template", "svg", "head", "iframe", "object", "canvas"})
# Elements that start a line of their own.
_BLOCKS = frozenset({"p", "div", "section", "article", "main", "header", "footer", "nav", "aside", "br", "tr",
                     "table", "ul", "ol", "dl", "dt", "dd", "blockquote", "figure", "figcaption", "hr", "form",
                     "h1", "h2", "h3", "h4", "h5", "h6", "li", "pre", "title"})
# Items: a line each, with no empty line between them.
_ITEMS = frozenset({"li", "dt", "dd", "tr"})
_HEADINGS = {f"h{level}": "#" * level + " " for level in range(1, 7)}
_BLANKS = re.compile(r"[ \t\n\r\f\v]+")  # a line break in the source is a blank too, as a browser shows it
_BLANK_LINES = re.compile(r"\n[ \t]*(?:\n[ \t]*)+")  # a run of empty lines: one empty line


class _PageText(HTMLParser):
    def __init__(self, url: str):
        super().__init__(convert_charrefs=True)
        self.url = url
        self.done: list[str] = []  # text finished: blanks at line ends removed, <pre> as written
        self.flowing: list[str] = []  # text outside <pre> not yet finished
        self.hidden = 0  # how many hidden elements the parser is inside
        self.preformatted = 0
        self.links: list[str | None] = []  # the href of each open <a> (None: no href)
        # The page's own characters made so far, blanks at their ends not counted: however the lines are trimmed
        # and joined, the text holds at least this many.
        self.length = 0

    def emit(self, text: str) -> None:
        (self.done if self.preformatted else self.flowing).append(text)

    def finish_flowing(self) -> None:
        if self.flowing:
            self.done.append("\n".join(line.strip() for line in "".join(self.flowing).split("\n")))
            self.flowing = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in _HIDDEN:
            self.hidden += 1
            return
        if self.hidden:
            return
        if tag in _BLOCKS:
            self.emit("\n")
        if tag in _HEADINGS:
            self.emit(_HEADINGS[tag])
        elif tag == "li":
            self.emit("- ")
        elif tag == "td" or tag == "th":
            self.emit(" ")  # cells apart
        elif tag == "pre":
            self.finish_flowing()
            self.preformatted += 1
            self.emit("```\n")
        elif tag == "code" and not self.preformatted:
            self.emit("`")
        elif tag == "a":
            href = dict(attrs).get("href") or ""
            usable = bool(href) and not href.lower().startswith(("javascript:", "#"))
            self.links.append(urljoin(self.url, href) if usable else None)
            if usable:
                self.emit("[")

    def handle_endtag(self, tag: str) -> None:
        if tag in _HIDDEN:
            self.hidden = max(0, self.hidden - 1)
            return
        if self.hidden:
            return
        if tag == "pre" and self.preformatted:
            self.emit("```\n" if self.done[-1].endswith("\n") else "\n```\n")
            self.preformatted -= 1
        elif tag == "code" and not self.preformatted:
            self.emit("`")
        elif tag == "a" and self.links:
            href = self.links.pop()
            if href is not None:
                self.emit(f"]({href})")
        if tag in _BLOCKS and tag not in _ITEMS:
            self.emit("\n")

    def handle_data(self, data: str) -> None:
        if self.hidden:
            return
        text = data if self.preformatted else _BLANKS.sub(" ", data)
        self.emit(text)
        self.length += len(text.strip())


# How much HTML the parser reads at a time: a page may be 10 MB, and the pure-Python parser reads about 1 MB a second.
_CHUNK = 64 * 1024


def page_text(html: str, url: str, most: int | None = None) -> str:
    """The readable text of the HTML page `html`, fetched from `url`, as markdown. With `most`, reading stops once
    the text is surely longer than that (the rest of a long page would only be cut off after)."""
    reader = _PageText(url)
    for start in range(0, len(html), _CHUNK):
        reader.feed(html[start:start + _CHUNK])
        if most is not None and reader.length > most:
            break
    else:
        reader.close()
    reader.finish_flowing()
    return _BLANK_LINES.sub("\n\n", "".join(reader.done)).strip()


def is_html(content_type: str | None) -> bool:
    """Whether a response's Content-Type says HTML (or XHTML)."""
    return content_type is not None and "html" in content_type.split(";", 1)[0].lower()
