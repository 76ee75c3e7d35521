"""What each connector kind's options may be: a name and a type per option, declared on the kind
(`BaseConnector.options_schema`), checked by the connector form before anything is saved.

The types are a small registry of checks, each with the words an error uses. Whether a value is
also in range (a `window_hours` of 10^9) is the kind's own business: it reads its options through
`number_option` and friends when it is built, and the form builds it once to ask.
"""

from __future__ import annotations

from collections.abc import Callable


def _is_number(value) -> bool:
    # Text is fine too ("24"): the kind's number_option reads it, and says so if it is not a number.
    return not isinstance(value, bool) and isinstance(value, int | float | str)


# type name -> (check, what an error says the value must be)
OPTION_TYPES: dict[str, tuple[Callable[[object], bool], str]] = {
    "text": (lambda v: isinstance(v, str), 'text in quotes, e.g. "team"'),
    "number": (_is_number, "a number, e.g. 24"),
    "whole number": (_is_number, "a whole number, e.g. 200"),
    "duration": (_is_number, 'a duration such as "30s" or "1m", or a number of seconds'),
    "true or false": (lambda v: isinstance(v, bool), "true or false, without quotes"),
    "names to names": (
        lambda v: isinstance(v, dict) and all(isinstance(x, str) for x in v.values()),
        'a JSON object of names to names, e.g. {"ml": "vision"}',
    ),
    "list of text": (
        lambda v: isinstance(v, list) and all(isinstance(x, str) for x in v),
        'a JSON list of text, e.g. ["resnet", "llm"]',
    ),
    "list of ids": (
        lambda v: isinstance(v, list) and all(isinstance(x, str | int) and not isinstance(x, bool) for x in v),
        'a JSON list of ids, e.g. ["7", "12"]',
    ),
}


def option_problems(kind_label: str, schema: dict[str, str], options: dict) -> list[str]:
    """One sentence per option the kind does not know or whose value is of the wrong type."""
    problems = []
    for name, value in options.items():
        type_name = schema.get(name)
        if type_name is None:
            known = ", ".join(sorted(schema)) or "none"
            problems.append(f"Unknown option {name[:100]!r} for {kind_label}; its options are: {known}.")
            continue
        check, wanted = OPTION_TYPES[type_name]
        if not check(value):
            problems.append(f"Option {name!r} must be {wanted} (got {_shown(value)}).")
    return problems


def _shown(value) -> str:
    import json

    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= 60 else text[:57] + "..."
