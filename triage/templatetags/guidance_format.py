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


@register.filter
def code_spans(text) -> str:
    """The text escaped, with each `name` shown as <code>name</code> (an unpaired backtick stays as it is),
    and a no-break space between each figure and its unit ("29\u00a0%", `fleet.numbers.keep_units`)."""
    if text is None:
        return ""
    spans = _CODE_SPAN.sub(r"<code>\1</code>", escape(str(text)))
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
        spans.append(f'<span class="line" style="--indent: {indent}">{escape(line)}{end}</span>')
    return mark_safe("".join(spans))  # noqa: S308 - each line escaped
