"""What a reader sees of a page, for tests about content rather than layout.

- `as_read(page)`: the page with each no-break space (the character a filter writes, or a template's
  `&nbsp;`) read as a space. A figure and its unit are joined by one on a page ("29\u00a0%",
  `fleet.numbers.keep_units`) so a phone never breaks them; a test about what a figure says reads it as a
  person does. A test about that wrapping asserts the no-break space itself.
- `table_rows(page, caption)`: the text of each body row's cells of the table with that caption, as
  `as_read` reads it, without the column names a phone's stacked cards add to each cell (`.cell-label`).
"""

from __future__ import annotations

from html.parser import HTMLParser

NBSP = "\u00a0"


def as_read(text: str) -> str:
    return text.replace("&nbsp;", " ").replace("&#160;", " ").replace(NBSP, " ")


class _Rows(HTMLParser):
    def __init__(self, caption: str):
        super().__init__(convert_charrefs=True)
        self.caption, self.rows = caption, []
        self.depth = 0  # tables open since the one wanted (0: not in it)
        self.candidate = False  # in a table whose caption is being read
        self.caption_text = ""
        self.in_caption = self.in_body = False
        self.cell: list[str] | None = None
        self.label_depth = 0  # spans open inside a .cell-label

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "table":
            if self.depth:
                self.depth += 1
            else:
                self.candidate, self.caption_text = True, ""
        elif tag == "caption" and self.candidate and not self.depth:
            self.in_caption = True
        elif self.depth == 1 and tag == "tbody":
            self.in_body = True
        elif self.depth == 1 and self.in_body and tag == "tr":
            self.rows.append([])
        elif self.depth == 1 and self.in_body and tag in ("td", "th"):
            self.cell = []
        elif (tag == "span" and self.cell is not None) and (
            self.label_depth or "cell-label" in (attrs.get("class") or "").split()
        ):
            self.label_depth += 1

    def handle_endtag(self, tag):
        if tag == "caption" and self.in_caption:
            self.in_caption = False
            if " ".join(self.caption_text.split()) == self.caption:
                self.depth, self.candidate = 1, False
        elif tag == "table" and self.depth:
            self.depth -= 1
            if not self.depth:
                self.in_body = False
        elif tag == "tbody" and self.depth == 1:
            self.in_body = False
        elif tag in ("td", "th") and self.cell is not None and self.depth == 1:
            self.rows[-1].append(" ".join(as_read("".join(self.cell)).split()))
            self.cell = None
        elif tag == "span" and self.label_depth:
            self.label_depth -= 1

    def handle_data(self, data):
        if self.in_caption:
            self.caption_text += data
        elif self.cell is not None and not self.label_depth:
            self.cell.append(data)


def table_rows(page: str, caption: str) -> list[list[str]]:
    parser = _Rows(caption)
    parser.feed(page)
    return parser.rows
