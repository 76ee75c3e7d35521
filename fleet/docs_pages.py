"""Documents of the repository (docs/*.md) rendered as pages of the product, for a person with only a
browser: the upload page's archive format. Markdown by markdown-it-py with raw HTML off (`js-default`:
tags in the text are escaped, javascript: and data: links refused), so a page shows what the document
says and nothing it might carry."""

from __future__ import annotations

import posixpath
from functools import lru_cache
from pathlib import Path

from markdown_it import MarkdownIt
from markdown_it.token import Token

DOCS = Path(__file__).resolve().parent.parent / "docs"
# Links that open in a browser as they are; any other is a path into the repository.
OUTSIDE = ("http://", "https://", "mailto:", "#", "/")


def _repository_links_as_paths(state) -> None:
    """A link into the repository (`../fleet/schemas/job.schema.json`, `connectors.md#slurm`) has
    nothing to open in a browser: keep its words and follow them with the file's path in the
    repository, `docs/` being where the documents live."""
    for block in state.tokens:
        if block.type != "inline" or not block.children:
            continue
        children, open_paths = [], []
        for token in block.children:
            if token.type == "link_open":
                href = str(token.attrGet("href") or "")
                if href.startswith(OUTSIDE):
                    open_paths.append(None)
                    children.append(token)
                else:
                    open_paths.append(posixpath.normpath(posixpath.join("docs", href.split("#", 1)[0])))
                continue
            if token.type == "link_close":
                path = open_paths.pop()
                if path is None:
                    children.append(token)
                    continue
                words = "".join(child.content for child in children[-3:] if child.type in ("text", "code_inline"))
                if not words.rstrip("/").endswith(path.removeprefix("docs/").rstrip("/")):
                    children += [
                        Token("text", "", 0, content=" ("),
                        Token("code_inline", "code", 0, content=path),
                        Token("text", "", 0, content=")"),
                    ]
                continue
            children.append(token)
        block.children = children


def _in_scroll_box(rule):
    """A rule's table or code block in the pages' sideways-scrolling box (`.table-scroll`, which
    static/js/tables.js makes a named Tab stop when it scrolls), styled as the pages' own."""

    def render(self, tokens, idx, options, env):
        token = tokens[idx]
        if token.type == "table_close":
            return self.renderToken(tokens, idx, options, env) + "</div>\n"
        if token.type == "table_open":
            token.attrSet("class", "data")
            return '<div class="table-scroll">' + self.renderToken(tokens, idx, options, env)
        html = rule(tokens, idx, options, env)
        return '<div class="table-scroll">' + html.replace("<pre>", '<pre class="code">', 1) + "</div>\n"

    return render


def _renderer() -> MarkdownIt:
    md = MarkdownIt("js-default")  # html off: raw tags are text; tables on, as GitHub shows them
    md.core.ruler.push("repository_links_as_paths", _repository_links_as_paths)
    for name in ("fence", "code_block", "table_open", "table_close"):
        md.add_render_rule(name, _in_scroll_box(md.renderer.rules.get(name)))
    md.add_render_rule("th_open", _column_header)
    return md


def _column_header(self, tokens, idx, options, env):
    tokens[idx].attrSet("scope", "col")  # as the pages' tables name their columns' headers
    return self.renderToken(tokens, idx, options, env)


_MARKDOWN = _renderer()


def render_markdown(text: str) -> str:
    """`text` (Markdown) as HTML, raw HTML in it escaped."""
    return _MARKDOWN.render(text)


@lru_cache(maxsize=8)
def _rendered(name: str, mtime_ns: int) -> str:
    return render_markdown((DOCS / name).read_text(encoding="utf-8"))


def rendered_document(name: str) -> str:
    """docs/<name> rendered, again only when the file changed."""
    path = DOCS / name
    return _rendered(name, path.stat().st_mtime_ns)
