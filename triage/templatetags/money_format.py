"""Money, GPU-hours and shares on the dashboard's pages as the cards and the digests write them
(`fleet.money.whole` and `cents`, `queries.hours_text`, `fleet.numbers.share_text`). What a page shows keeps a
figure and its unit on one line: `share` and `percent` write a no-break space before "%", `unit` joins a figure to
its unit, and `keep_units` does it in prose; the HTML emails load `unit` and `keep_units` from here too."""

from django import template
from django.utils.html import conditional_escape, format_html

from fleet.money import cents, whole
from fleet.numbers import NBSP, keep_units, share_text
from triage.dashboard.queries import hours_text, percent_text

register = template.Library()


@register.filter
def whole_money(value) -> str:
    """A total in whole units, half a unit up ("2,609" for 2608.50), as the cards and digests show it;
    "–" for none. `floatformat:0` rounded the same, but a float sum of cents a hair under its cent
    (2608.4999999999995) it made 2608, and wrote no thousands separator."""
    return "–" if value is None else whole(value)


@register.filter(name="cents")
def cents_filter(value) -> str:
    """A job's or a finding's amount, to the cent with a thousands separator: "1,234.50"; "–" for none."""
    return "–" if value in (None, "") else cents(value)


@register.filter
def share(value) -> str:
    """A share (0.51) as the Waste share card and the digests write it, on one line: "51 %"; "–" for none."""
    return keep_units(share_text(None if value is None else float(value)))


@register.filter
def percent(value) -> str:
    """A figure already in percent (the study's 25.64 % of issues) as a share is written, on one line: "26 %"."""
    return keep_units(percent_text(None if value in (None, "") else float(value)))


@register.filter
def gpu_hours(value) -> str:
    """GPU-hours as the cards and the digests write them: "1,234.5" for 1234.5, "–" for none. The
    tables' `floatformat:1` wrote no thousands separator, and the Teams table rounded 10 or more whole.
    A figure a page lacks (a finding stored without guidance: the template's "") is "–" too, not a 500."""
    return hours_text(None if value == "" else value)


@register.filter(name="keep_units", is_safe=True)
def keep_units_filter(text) -> str:
    """Prose for a page (a finding's stored summary, "GPUs idle 29 % of the covered time") with a no-break
    space between each figure and its unit, so a phone does not break "29" from "%"; escaped as usual, and
    markup already safe (a `{% filter keep_units %}` block of a template's prose) stays so."""
    return "" if text is None else keep_units(str(text))


@register.filter
def unit(figure, name) -> str:
    """A figure and its unit for a page, joined by a no-break space so a phone never breaks them:
    `{{ job.cost|cents|unit:job.currency }}` is "1,234.50\u00a0USD", `{{ util|floatformat:0|unit:"%" }}` "46\u00a0%".
    The one way the pages and the HTML emails join them (`fleet.numbers.NBSP`); no unit, no space. Escaped as usual."""
    return ("" if figure is None else str(figure)) + after_figure(name)


@register.filter
def after_figure(name) -> str:
    """A unit set in an element of its own after its figure (a card's smaller "USD"), with the no-break space
    `unit` writes before it: `{{ value }}<span class="unit">{{ currency|after_figure }}</span>`."""
    return "" if name in (None, "") else f"{NBSP}{name}"


# A job's id from its source longer than this is one long word (an MLflow run's 32 hex digits), which wraps
# anywhere when it must (app.css .long-id); a shorter one (Slurm's '48134000_127') stays whole.
LONG_ID = 16


@register.filter
def job_id(external_id) -> str:
    """A job's own id as pages write it: marked `long-id` when it is longer than `LONG_ID`. Escaped."""
    text = str(external_id)
    return format_html('<span class="long-id">{}</span>', text) if len(text) > LONG_ID else conditional_escape(text)


# A job's reference, cluster/id, of up to this many characters is kept on one line (app.css .job-ref).
SHORT_JOB_REF = 16


@register.filter
def job_ref(job) -> str:
    """A job's "cluster/id" as the jobs list writes it: a short one (alpha/4813845, up to `SHORT_JOB_REF`
    characters) whole on one line, broken, it made every row two lines at 1280 px; a longer one may break
    after its slash (the column stays narrow on a phone), its id as `job_id` writes it. Escaped."""
    cluster, external_id = str(job.cluster.name), str(job.external_id)
    if len(cluster) + 1 + len(external_id) <= SHORT_JOB_REF:
        return format_html('<span class="job-ref">{}/{}</span>', cluster, external_id)
    return format_html("{}/<wbr>{}", cluster, job_id(external_id))
