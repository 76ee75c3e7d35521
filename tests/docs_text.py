"""What README.md and docs/*.md tell a user to type, read out of the Markdown for the docs tests
(tests/test_docs_commands.py, test_docs_settings.py, test_docs_api_paths.py)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from tests.conftest import REPO

DOCS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]

FENCE = re.compile(r"^```[^\n]*\n(.*?)^```", re.MULTILINE | re.DOTALL)
# An inline code span may run over a line break (`manage.py\nshell`).
SPAN = re.compile(r"(?<!`)`([^`\n]+(?:\n[^`\n]+)?)`(?!`)")


@dataclass(frozen=True)
class Snippet:
    """A piece of code a user could type: a line of a fenced block (its `\\` continuations joined)
    or an inline code span, with the paragraph it stands in (for prose such as "`--clean` deletes")."""

    where: str  # file:line
    text: str
    fenced: bool
    paragraph: int  # index of its paragraph in the file (fenced blocks are paragraphs of their own)


def _line_of(text: str, offset: int) -> int:
    return text.count("\n", 0, offset) + 1


def snippets() -> list[Snippet]:
    found: list[Snippet] = []
    for path in DOCS:
        text = path.read_text(encoding="utf-8")
        name = path.relative_to(REPO).as_posix()
        fences = [(m.start(), m.end()) for m in FENCE.finditer(text)]
        for m in FENCE.finditer(text):
            start_line = _line_of(text, m.start(1))
            joined, first = "", None
            for i, line in enumerate(m.group(1).splitlines()):
                first = start_line + i if first is None else first
                if line.rstrip().endswith("\\"):
                    joined += line.rstrip()[:-1] + " "
                    continue
                joined += line
                found.append(Snippet(f"{name}:{first}", joined, True, -m.start()))
                joined, first = "", None
        # Prose: blank-line separated paragraphs outside the fences.
        prose = text
        for start, end in fences:
            prose = prose[:start] + re.sub(r"[^\n]", " ", prose[start:end]) + prose[end:]
        offset = 0
        for number, paragraph in enumerate(re.split(r"\n[ \t]*\n", prose)):
            here = prose.index(paragraph, offset) if paragraph else offset
            for m in SPAN.finditer(paragraph):
                line = _line_of(text, here + m.start())
                found.append(Snippet(f"{name}:{line}", " ".join(m.group(1).split()), False, number))
            offset = here + len(paragraph)
    return found
