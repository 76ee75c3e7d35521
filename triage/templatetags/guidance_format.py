"""How guidance text (triage.guidance) is shown in HTML: its `backticked` names as code."""

import re

from django import template
from django.utils.html import escape
from django.utils.safestring import mark_safe

from fleet.numbers import keep_units
from triage.guidance import SUB_CAUSE_NAMES

register = template.Library()

# A code span as the guidance writes it: one pair of backticks around text without a backtick.
_CODE_SPAN = re.compile(r"`([^`\n]+)`")
# A command-line option's leading dashes and the word they lead ("--ntasks" of "--ntasks-per-gpu=2", "-c"): a
# browser may break a line after any hyphen, so a phone showed "--" at a line's end and "ntasks-per-gpu=2" on the
# next. Not a hyphen inside a word ("70-80", "per-gpu") nor a number's sign ("-5 %", whose unit `keep_units` joins
# to it); at most 30 characters kept together, so no such head is wider than a phone's line.
_OPTION_HEAD = re.compile(r"(?<![\w-])(-{1,2}[A-Za-z]\w{0,29})")


def option_heads(escaped: str) -> str:
    """Escaped text with each option's leading dashes kept on one line with the word they lead, in a
    <span class="opt"> (app.css: no break inside): "--ntasks-per-gpu=2" still breaks where its own words
    join ("--ntasks-" / "per-gpu=2"), never after "--". The text is unchanged, so copied it is the option."""
    return _OPTION_HEAD.sub(r'<span class="opt">\1</span>', escaped)


@register.filter
def code_words(text) -> str:
    """A quoted log line or line of code for an inline <code>, escaped, its options' dashes kept with
    their words (`option_heads`)."""
    return mark_safe(option_heads(escape("" if text is None else str(text))))  # noqa: S308 - escaped first


@register.filter
def code_spans(text) -> str:
    """The text escaped, with each `name` shown as <code>name</code> (an unpaired backtick stays as it is),
    and a no-break space between each figure and its unit ("29\u00a0%", `fleet.numbers.keep_units`); an
    option's leading dashes stay on the line of its word (`option_heads`), in the code and in the prose."""
    if text is None:
        return ""
    spans = _CODE_SPAN.sub(r"<code>\1</code>", option_heads(escape(str(text))))
    return mark_safe(keep_units(spans))  # noqa: S308 - escaped first; a figure's unit kept on its line


@register.filter
def sub_cause_words(name) -> str:
    """A sub-cause's key in words: "unbucketed_allreduce_over_sockets" -> "Unbucketed allreduce over
    sockets" (the key, one unbreakable word, made a 320 px cause page scroll sideways); a key that names
    an identifier or a product is named as `SUB_CAUSE_NAMES` says: "cuda_visible_devices" ->
    <code>CUDA_VISIBLE_DEVICES</code>, not "Cuda visible devices"."""
    if name in SUB_CAUSE_NAMES:  # an identifier as code ("`CUDA_VISIBLE_DEVICES`"), a product as spelled
        return code_spans(SUB_CAUSE_NAMES[name])
    words = str(name or "").replace("_", " ").strip()
    return words[:1].upper() + words[1:]


@register.filter
def code_lines(code) -> str:
    """A block of code for a <pre class="code lines">, each line its own span whose wrapped remainder app.css
    sets in deeper than the line's own indentation (`--indent`, in characters), so a 390 px phone wraps a
    long line rather than scrolling it sideways, and a wrapped Python line never reads as a line of an outer
    block. The text is the code as written (its indentation kept, each line's newline at the end of its
    span, where a block's last newline draws no empty row), so copied it is the code itself."""
    lines = str(code or "").split("\n")
    spans = []
    for number, line in enumerate(lines, 1):
        indent = len(line.expandtabs(8)) - len(line.expandtabs(8).lstrip(" "))
        end = "\n" if number < len(lines) else ""
        spans.append(f'<span class="line" style="--indent: {indent}">{option_heads(escape(line))}{end}</span>')
    return mark_safe("".join(spans))  # noqa: S308 - each line escaped
