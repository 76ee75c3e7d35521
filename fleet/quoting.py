"""A value a person or script sent, quoted in an error message without repeating all of it; and a few
names or words said as a list in a sentence ("a, b and c")."""

from __future__ import annotations

# How much of a refused value an error shows: enough to recognise a typo, not a 5,000-character echo.
EXCERPT_CHARS = 100
# How much of a library's error an error of ours repeats: its opening says what went wrong.
LIBRARY_ERROR_CHARS = 200


def quoted(value, limit: int = EXCERPT_CHARS) -> str:
    """`value` in single quotes, whole up to `limit` characters; a longer one as its first `limit`, an
    ellipsis and its length: 'aaaa…' (5,000 characters)."""
    text = str(value)
    if len(text) <= limit:
        return f"'{text}'"
    return f"'{shortened(text, limit)}' ({len(text):,} characters)"


def shortened(text: str, limit: int = EXCERPT_CHARS) -> str:
    """`text` whole up to `limit` characters, else its first `limit` and an ellipsis: for a name sent
    that an answer uses as a key (a query parameter's), where a quote and a length would not do."""
    return text if len(text) <= limit else f"{text[:limit]}…"


def named(value, limit: int = EXCERPT_CHARS) -> str:
    """`value` as it is up to `limit` characters, else `quoted`: for a name that stands on its own (a file
    column, a list of field names), which a short one reads best bare and a 5,000-character one must not repeat."""
    text = str(value)
    return text if len(text) <= limit else quoted(text, limit)


def library_error(exc: BaseException, limit: int = LIBRARY_ERROR_CHARS) -> str:
    """A library's exception as our message quotes it: whole up to `limit` characters, else its first
    `limit` and an ellipsis. Many repeat what they could not read whole: pandas' and float()'s
    "could not convert string to float: '…'" quote a 5,000-character value, a parser the whole line."""
    return shortened(str(exc), limit)


def joined(items: list[str]) -> str:
    """'a', 'a and b', 'a, b and c' ('' for none): names or words listed in a sentence, by fleet's
    messages and triage's (the digests' schedules, the dashboard's notes on costs)."""
    if len(items) < 2:
        return "".join(items)
    return f"{', '.join(items[:-1])} and {items[-1]}"
