"""The docs quote figures as the pages, digests and findings write them: a share in whole percent with a
space before its sign, "36 %" (a no-break space on the pages), never "36%". The README's examples of a
digest read "(36% of GPU-hours)" and "(6% → 21% of GPU-hours)" beside the digest's own "(36 % of
GPU-hours)", so a reader comparing them saw two products. Code (fenced blocks, inline spans: a log's
progress bar, `45%|`) is left as it is written."""

from __future__ import annotations

import re

from tests.docs_text import DOCS, FENCE, SPAN

GLUED_PERCENT = re.compile(r"\d%")


def prose(text: str) -> str:
    """The Markdown without its code: fenced blocks and inline code spans blanked, lines kept."""
    blank = lambda m: re.sub(r"[^\n]", " ", m.group(0))  # noqa: E731
    return SPAN.sub(blank, FENCE.sub(blank, text))


def test_prose_writes_a_share_with_a_space_before_its_percent_sign():
    glued = []
    for path in DOCS:
        text = prose(path.read_text(encoding="utf-8"))
        for match in GLUED_PERCENT.finditer(text):
            line = text.count("\n", 0, match.start()) + 1
            glued.append(f"{path.name}:{line}: {text.splitlines()[line - 1].strip()[:120]}")
    assert not glued, "write '36 %', as the pages do:\n" + "\n".join(glued)


def test_code_keeps_its_own_percent_signs():
    assert "45%|" not in prose("Lightning's `Epoch 3:  45%|` and\n```\nfoo 12%\n```\nthe 36 % of it")
    assert "36 %" in prose("the 36 % of it")
