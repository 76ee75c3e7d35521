"""Weekly digests: who gets which, what they say, and sending each exactly once.

Views, tasks and the `send_digests` command all call these functions. The figures come from the
dashboard's own aggregates (`triage.dashboard.queries`) over the same ISO week, so a digest and the
dashboard can never disagree; causes and fixes come from `findings`, the one reader of triage models.
"""

from __future__ import annotations

import logging
import smtplib
import socket
import ssl
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from decimal import ROUND_FLOOR, Decimal
from functools import cached_property
from urllib.parse import urlencode, urlsplit

from celery import current_app
from django.conf import settings
from django.contrib.auth import get_user_model
from django.core import signing
from django.core.mail import EmailMultiAlternatives, get_connection
from django.db.models import Count, Max, Q
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils import timezone

import fleet.models as fleet_models
from config.url_prefix import public_url
from fleet.access import OPERATORS_GROUP, RESEARCHERS_GROUP, is_operator, sees_whole_fleet
from fleet.forms import MAX_ROW_ID
from fleet.models import IngestRun, Job, Team
from fleet.money import whole
from fleet.numbers import share_text
from fleet.quoting import joined, library_error
from triage import feedback
from triage.dashboard import queries
from triage.dashboard.periods import Period
from triage.guidance import headline_change
from triage.labeling.services import blinded_job_ids
from triage.models import low_util_threshold
from triage.taxonomy import Category

from . import findings, schedules, weeks
from .models import Delivery, DigestKind, Subscription

logger = logging.getLogger(__name__)

UNSUBSCRIBE_SALT = "triage.digests.unsubscribe"
TEMPLATE_NAMES = {DigestKind.TEAM: "team-digest", DigestKind.OPERATOR: "operator-digest"}


# --- Links -------------------------------------------------------------------------------------


def absolute(path: str) -> str:
    """Links in emails point at the configured public address, never at the request's host, and carry
    URL_PREFIX whichever thread builds them (`public_url`)."""
    return public_url(path)


def preview_path(kind: str, week: str, team: Team | None = None) -> str:
    if kind == DigestKind.TEAM:
        return reverse("digests:preview-team", args=[team.slug, week])
    return reverse("digests:preview-operator", args=[week])


def unsubscribe_token(user_id: int, kind: str, team_id: int | None) -> str:
    return signing.dumps([user_id, kind, team_id], salt=UNSUBSCRIBE_SALT, compress=True)


def read_unsubscribe_token(token: str) -> tuple[int, str, int | None]:
    """Raises signing.BadSignature for a forged or mangled token."""
    try:
        user_id, kind, team_id = signing.loads(token, salt=UNSUBSCRIBE_SALT)
    except (TypeError, ValueError):
        raise signing.BadSignature("malformed unsubscribe token") from None
    if kind not in DigestKind.values or not _is_id(user_id) or not (team_id is None or _is_id(team_id)):
        raise signing.BadSignature("malformed unsubscribe token")
    return user_id, kind, team_id


def masked_address(address: str) -> str:
    """An address as the unsubscribe page names it to whoever holds the link (a digest forwarded to a
    list, a colleague): enough for its owner to know it, not the address itself. a…@example.org."""
    local, at, domain = address.partition("@")
    return f"{local[:1]}…{at}{domain}" if local else ""


def _is_id(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 0 < value <= MAX_ROW_ID


# --- Subscriptions -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Choice:
    """One digest a user may receive, and whether they currently do."""

    kind: str
    team: Team | None
    active: bool
    alerts: bool = True  # a team digest's: its idle alerts too (`Subscription.alerts`)

    @property
    def key(self) -> str:
        return f"{self.kind}:{self.team.pk if self.team else ''}"

    @property
    def alerts_key(self) -> str:
        return f"alerts:{self.team.pk}" if self.team else ""

    @property
    def label(self) -> str:
        return f"Team digest: {self.team}" if self.team else "Operator digest: the whole fleet"


def choices_for(user) -> list[Choice]:
    """The digests this user may subscribe to, with the default (members and operators: on) applied."""
    member_of = set(Team.objects.filter(owners__user=user).values_list("pk", flat=True))
    teams = Team.objects.all() if sees_whole_fleet(user) else Team.objects.filter(pk__in=member_of)
    subscriptions = {(s.kind, s.team_id): s for s in Subscription.objects.filter(user=user)}
    rows = {key: s.active for key, s in subscriptions.items()}
    choices = []
    if is_operator(user):
        choices.append(Choice(DigestKind.OPERATOR, None, rows.get((DigestKind.OPERATOR, None), True)))
    for team in teams:
        row = subscriptions.get((DigestKind.TEAM, team.pk))
        choices.append(
            Choice(
                DigestKind.TEAM,
                team,
                rows.get((DigestKind.TEAM, team.pk), team.pk in member_of),
                row.alerts if row is not None else True,
            )
        )
    return choices


def set_subscription(user, kind: str, team: Team | None, active: bool) -> Subscription:
    subscription, _ = Subscription.objects.update_or_create(
        user=user, kind=kind, team=team if kind == DigestKind.TEAM else None, defaults={"active": active}
    )
    return subscription


def set_alerts(user, team: Team, alerts: bool) -> Subscription:
    """Turn a team's idle alerts on or off for `user`, keeping their digest choice as it is (a row made
    now starts from the default: on for a member, off for anyone else)."""
    member = team.owners.filter(user=user).exists()
    subscription, _ = Subscription.objects.update_or_create(
        user=user,
        kind=DigestKind.TEAM,
        team=team,
        defaults={"alerts": alerts},
        create_defaults={"alerts": alerts, "active": member},
    )
    return subscription


def team_recipients(team: Team) -> list:
    """Active users with an address who get this team's digest: its members unless they unsubscribed,
    and others allowed to see the team (operators, researchers) who subscribed to it."""
    User = get_user_model()
    choices = Subscription.objects.filter(kind=DigestKind.TEAM, team=team)
    sees_fleet = Q(is_superuser=True) | Q(groups__name__in=[OPERATORS_GROUP, RESEARCHERS_GROUP])
    member = Q(team_memberships__team=team)
    users = (
        User.objects.filter(is_active=True)
        .exclude(email="")
        .filter(member | (sees_fleet & Q(pk__in=choices.filter(active=True).values("user_id"))))
        .exclude(pk__in=choices.filter(active=False).values("user_id"))
        .distinct()
        .order_by("pk")
    )
    return list(users)


def operator_recipients() -> list:
    User = get_user_model()
    unsubscribed = Subscription.objects.filter(kind=DigestKind.OPERATOR, active=False).values("user_id")
    users = (
        User.objects.filter(is_active=True)
        .exclude(email="")
        .filter(Q(is_superuser=True) | Q(groups__name=OPERATORS_GROUP))
        .exclude(pk__in=unsubscribed)
        .distinct()
        .order_by("pk")
    )
    return list(users)


def send_schedule() -> str:
    """When the weekly digests go out, in words, read from the beat schedule Celery runs
    ("Mondays at 07:00 UTC"); '' when no beat entry sends them."""
    for entry in current_app.conf.beat_schedule.values():
        if entry.get("task") == "digests.send_weekly":
            return schedules.describe(entry.get("schedule"))
    return ""


def delivery_status(user, choices: list[Choice] | None = None) -> dict:
    """What the digest pages tell a user of their own digests: when they go out, to which address,
    and which of them they are sent (none without an address). `choices`: as for `received_by`."""
    choices = choices if choices is not None else choices_for(user)
    received = received_by(user, choices)
    names = [f"the {choice.team} digest" if choice.team else "the operator digest" for choice in received]
    return {
        "schedule": send_schedule(),
        "email": user.email,
        "received": received,
        "received_text": joined(names),
        "choices": len(choices),
    }


def received_by(user, choices: list[Choice] | None = None) -> list[Choice]:
    """The digests this user is sent: an active user with an address gets each of their choices that
    is on. `choices_for` applies the senders' rules (`team_recipients`, `operator_recipients`): a
    member unless they unsubscribed, others who see the team only once subscribed, operators the
    operator digest unless they unsubscribed; a test holds the two to the same answer. Worked out
    from the choices (one query for the subscriptions), not a recipients query a digest, whose
    group joins the page would make once for every team an operator may choose. `choices`: the
    user's `choices_for`, when the caller has them already."""
    if not (user.is_active and user.email):
        return []
    return [choice for choice in (choices if choices is not None else choices_for(user)) if choice.active]


def recipient_groups(week: str) -> list[tuple[str, int | None]]:
    """One (kind, team id) per digest to send for the week: each team that ran jobs this week or the
    week before, and the operators. A group without recipients is still listed; it sends nothing."""
    period = weeks.parse_week(week)
    team_ids = (
        queries.in_period(Job.objects.all(), period.with_previous)
        .values_list("team_id", flat=True)
        .distinct()
        .order_by()
    )
    groups: list[tuple[str, int | None]] = [(DigestKind.TEAM.value, pk) for pk in sorted(set(team_ids))]
    groups.append((DigestKind.OPERATOR.value, None))
    return groups


# --- What a digest says --------------------------------------------------------------------------


def fmt_hours(value: float) -> str:
    return queries.hours_text(value)  # as the dashboard's cards and tables


def fmt_share(value: float | None) -> str:
    return share_text(value)  # as the dashboard's cards and tables


def fmt_money(value: float) -> str:
    return whole(value)  # as the dashboard's cards and tables: to the cent, then half a unit up


FORMATS = {"hours": fmt_hours, "share": fmt_share, "money": fmt_money, "count": lambda v: f"{v:,}"}


@dataclass(frozen=True)
class Kpi:
    """One headline figure against the week before."""

    label: str
    value: float | None
    previous: float | None
    kind: str  # hours | share | money | count
    worse_when_up: bool | None  # None: neither direction is good or bad (GPU-hours used, spend)
    # The week before has no job because the data starts after it (`week_before_not_in_data`): no change to show.
    nothing_before: bool = False

    @property
    def value_text(self) -> str:
        return "–" if self.value is None else FORMATS[self.kind](self.value)

    @property
    def previous_text(self) -> str:
        return "–" if self.previous is None else FORMATS[self.kind](self.previous)

    @cached_property
    def _compared(self) -> tuple[str, int | None]:
        if self.nothing_before:
            return "", None
        return queries.compare(self.value, self.previous, share=self.kind == "share")

    @property
    def change_text(self) -> str:
        return self._compared[0]

    @property
    def trend(self) -> str:
        """better / worse / same / neutral, or '' when there is no comparison."""
        return queries.trend(self._compared[1], self.worse_when_up)


def kpis(
    current: queries.Totals, previous: queries.Totals, *, nothing_before: bool = False, partly_before: bool = False
) -> list[Kpi]:
    """The headline figures, judged as the dashboard judges them (`queries.waste_judged`); an amount
    of waste that moved against the waste share is shown but not judged: fewer jobs, not less waste.
    A week with no job priced has no cost figure (`Totals.cost_unknown`): "–", as the dashboard's
    cards show it, not a 0 that reads as free. `nothing_before` (`week_before_not_in_data`): the week
    before is no figure either ("–", not "0.0" and "0 USD" of a week the data does not reach), and no
    figure has a change. `partly_before` (`week_before_partly_in_data`): each change is shown, but judged
    neither better nor worse, as the dashboard's cards judge a period the data only partly covers."""

    def money(totals: queries.Totals, value: float) -> float | None:
        return None if totals.cost_unknown else value

    def before(value: float | None) -> float | None:
        return None if nothing_before else value

    def amount(label: str, value: float | None, was: float | None, kind: str) -> Kpi:
        direction = queries.compare(value, was)[1]
        judged = None if partly_before else queries.waste_amount_judged(current, previous, direction)
        return Kpi(label, value, before(was), kind, judged, nothing_before)

    return [
        Kpi("GPU-hours", current.gpu_hours, before(previous.gpu_hours), "hours", None, nothing_before),
        amount("Unused GPU-hours", current.unused_gpu_hours, previous.unused_gpu_hours, "hours"),
        Kpi(
            "Waste share",
            current.waste_share,
            before(previous.waste_share),
            "share",
            None if partly_before else queries.waste_judged(current),
            nothing_before,
        ),
        Kpi(
            "Cost", money(current, current.cost), before(money(previous, previous.cost)), "money", None, nothing_before
        ),
        amount("Wasted cost", money(current, current.wasted_cost), money(previous, previous.wasted_cost), "money"),
    ]


def week_before_not_in_data(jobs, period: Period, current: queries.Totals, previous: queries.Totals) -> date | None:
    """The day the data starts when the week before is empty only because the data starts after it
    began (a fleet's, or a team's, first week), else None: its 0s are no figures, and every change read
    "up from 0". As the dashboard's cards (d13aad6, `_jobs_from`), the digest then says there are no jobs
    before that day to compare with. A team that ran nothing the week before but did earlier did run
    nothing: that change stands."""
    if previous.jobs or not current.jobs:
        return None
    return queries.data_starts_after(jobs, period.previous.start)


def week_before_partly_in_data(jobs, period: Period, current: queries.Totals, previous: queries.Totals) -> date | None:
    """The day the data starts when that is inside the week before, which has jobs (a fleet's, or a
    team's, second week), else None: that week's figures are a few days', no full week's, so its changes
    are not judged (`kpis`), as the dashboard's cards do not judge a period the data only partly covers."""
    if not (previous.jobs and current.jobs):
        return None
    return queries.data_starts_after(jobs, period.previous.start)


def unjudged_note(current: queries.Totals, previous: queries.Totals) -> str:
    """Why unused GPU-hours that moved are not coloured (`kpis`): they moved against the waste share."""
    unused = queries.compare(current.unused_gpu_hours, previous.unused_gpu_hours)[1]
    if not current.jobs or queries.waste_amount_judged(current, previous, unused) is not None:
        return ""
    if unused < 0:
        return "Fewer unused GPU-hours while the waste share rose: fewer jobs ran, the waste did not shrink."
    return "More unused GPU-hours while the waste share fell: more work ran, not more waste."


def _trends(current: queries.Totals, previous: queries.Totals, partly_before: bool = False) -> dict[str, str]:
    """Each headline figure's trend by its label: what the lists of changes say agrees with the colours."""
    return {kpi.label: kpi.trend for kpi in kpis(current, previous, partly_before=partly_before)}


def _bars(rows: list, value) -> list[dict]:
    """Rows with a `bar` width in percent of the largest, for CSS bars that need no JavaScript."""
    top = max((value(row) for row in rows), default=0) or 1
    return [{"row": row, "bar": max(1, round(100 * value(row) / top)) if value(row) > 0 else 0} for row in rows]


# A cause's recoverable GPU-hours changed when the change shows at the digest's precision (0.1 h).
HOURS_SHOWN = 1  # decimals
# "What got worse" names at most this many causes (the fastest-growing); the rest are counted.
REGRESSIONS_SHOWN = 3


@dataclass(frozen=True)
class CauseChange:
    """A cause's recoverable GPU-hours this week against the week before, and their share of each
    week's GPU-hours."""

    category: Category
    before: float
    now: float
    jobs: int  # this week's jobs with the cause
    share_before: float
    share_now: float

    @property
    def label(self) -> str:
        return self.category.label

    @property
    def shares_text(self) -> str:
        return f"{fmt_cause_share(self.share_before)} → {fmt_cause_share(self.share_now)} of GPU-hours"


def fmt_cause_share(value: float) -> str:
    """A cause's share of the GPU-hours: a small one reads "<1 %", not "0 %" (which would be none)."""
    return "<1 %" if 0 < value < 0.005 else fmt_share(value)


def cause_changes(
    now_by_category: list[findings.CategoryWaste],
    before_by_category: list[findings.CategoryWaste],
    gpu_hours_now: float,
    gpu_hours_before: float,
) -> tuple[list[CauseChange], list[CauseChange]]:
    """(grown, shrunk): the causes that grew and shrank, the biggest change in hours first.

    A cause grew when its recoverable GPU-hours rose (by what the digest shows, 0.1 h) *and* so did
    its share of the week's GPU-hours; it shrank when both fell. Hours alone follow the amount of
    work: a team that ran half its jobs "improves" every cause, one that ran twice as many
    "worsens" them. "What got worse" and "What improved" both read this, so one rule decides both.
    Without GPU-hours in either week there are no shares to compare, and nothing changed.
    """
    if not gpu_hours_now or not gpu_hours_before:
        return [], []
    before = {row.category: row.gpu_hours for row in before_by_category}
    now = {row.category: row for row in now_by_category}
    grown, shrunk = [], []
    for category in before.keys() | now.keys():
        row = now.get(category)
        hours_before, hours_now = before.get(category, 0.0), row.gpu_hours if row else 0.0
        change = CauseChange(
            category,
            hours_before,
            hours_now,
            row.jobs if row else 0,
            hours_before / gpu_hours_before,
            hours_now / gpu_hours_now,
        )
        moved = round(change.now, HOURS_SHOWN) - round(change.before, HOURS_SHOWN)
        if moved > 0 and change.share_now > change.share_before:
            grown.append(change)
        elif moved < 0 and change.share_now < change.share_before:
            shrunk.append(change)
    grown.sort(key=lambda c: (-(c.now - c.before), c.label))
    shrunk.sort(key=lambda c: (-(c.before - c.now), c.label))
    return grown, shrunk


def _improvements(
    current: queries.Totals,
    previous: queries.Totals,
    now_by_category: list[findings.CategoryWaste],
    before_by_category: list[findings.CategoryWaste],
    partly_before: bool = False,
) -> list[str]:
    """Plain sentences about what got better since the week before, biggest first.

    Less waste only counts as better where the week had work: a week without jobs improved nothing,
    and fewer unused GPU-hours while the waste share rose means fewer jobs, not less waste (the
    headline figures' colours, `kpis`, say the same); a cause improved when its share of the
    GPU-hours fell with its hours (`cause_changes`). Against a week the data only partly covers
    (`partly_before`) the headline figures are not judged, so neither is named here.
    """
    if not current.jobs:
        return []
    trends = _trends(current, previous, partly_before)
    lines: list[tuple[float, str]] = []
    if trends["Waste share"] == "better":
        lines.append(
            (
                float("inf"),
                f"Waste share fell from {fmt_share(previous.waste_share)} to {fmt_share(current.waste_share)}.",
            )
        )
    if trends["Unused GPU-hours"] == "better":
        saved = previous.unused_gpu_hours - current.unused_gpu_hours
        lines.append(
            (
                saved * 1e6,
                f"{fmt_hours(saved)} fewer unused GPU-hours than the week before "
                f"({fmt_hours(previous.unused_gpu_hours)} → {fmt_hours(current.unused_gpu_hours)}).",
            )
        )
    for change in cause_changes(now_by_category, before_by_category, current.gpu_hours, previous.gpu_hours)[1]:
        if change.now == 0:
            text = f"{change.label}: gone this week ({fmt_hours(change.before)} recoverable GPU-hours the week before)."
        else:
            text = (
                f"{change.label}: {fmt_hours(change.before)} → {fmt_hours(change.now)} recoverable GPU-hours "
                f"({change.shares_text})."
            )
        lines.append((change.before - change.now, text))
    lines.sort(key=lambda item: -item[0])
    return [text for _, text in lines[:6]]


@dataclass(frozen=True)
class Regression:
    """One line of "What got worse": what grew, and for a cause the change to make and its jobs."""

    text: str
    change: str = ""
    url: str = ""
    set_aside: bool = False  # its people answered it wrong or intended on every job: no change urged


def _regressions(
    current: queries.Totals,
    previous: queries.Totals,
    now_by_category: list[findings.CategoryWaste],
    before_by_category: list[findings.CategoryWaste],
    jobs_url: Callable[[Category], str],
    set_aside: dict[Category, int],
    partly_before: bool = False,
) -> tuple[list[Regression], list[str]]:
    """What got worse since the week before, the mirror of `_improvements` (the same rules): the
    waste share and unused GPU-hours, then the causes that are new or grew, fastest first, each with
    the change to make and a link to its jobs. Returns the lines and the names of the growing causes
    left out of them (`REGRESSIONS_SHOWN` are told in full, to keep the digest short).

    A week with nothing before it has nothing to compare with: everything would read as new; against
    one the data only partly covers (`partly_before`) the headline figures are not judged.
    """
    if not current.jobs or not previous.jobs:
        return [], []
    trends = _trends(current, previous, partly_before)
    lines: list[Regression] = []
    if trends["Waste share"] == "worse":
        lines.append(
            Regression(f"Waste share rose from {fmt_share(previous.waste_share)} to {fmt_share(current.waste_share)}.")
        )
    if trends["Unused GPU-hours"] == "worse":
        more = current.unused_gpu_hours - previous.unused_gpu_hours
        lines.append(
            Regression(
                f"{fmt_hours(more)} more unused GPU-hours than the week before "
                f"({fmt_hours(previous.unused_gpu_hours)} → {fmt_hours(current.unused_gpu_hours)})."
            )
        )
    grown = cause_changes(now_by_category, before_by_category, current.gpu_hours, previous.gpu_hours)[0]
    for change in grown[:REGRESSIONS_SHOWN]:
        jobs = f"{change.jobs} job{'s' if change.jobs != 1 else ''}"
        if change.before == 0:
            text = (
                f"{change.label}: new this week, {fmt_hours(change.now)} recoverable GPU-hours in {jobs} "
                f"({fmt_cause_share(change.share_now)} of GPU-hours)."
            )
        else:
            text = (
                f"{change.label}: {fmt_hours(change.before)} → {fmt_hours(change.now)} recoverable GPU-hours "
                f"in {jobs} ({change.shares_text})."
            )
        # A change the team turned down on every job with the cause is not urged again (as the fixes).
        turned_down = set_aside.get(change.category, 0) >= change.jobs
        change_text = "" if turned_down else headline_change(change.category)
        lines.append(Regression(text, change_text, jobs_url(change.category), turned_down))
    return lines, [change.label for change in grown[REGRESSIONS_SHOWN:]]


def _shown_adding_up_to(parts: list[float], total: Decimal) -> list[Decimal]:
    """Each part to a tenth such that, as shown, they add up to `total` (the figure they split, shown to a
    tenth): each is its hours rounded down, and the tenths still missing go to those rounded down most
    (largest remainder), so each is within a tenth of its hours. Rounded each on its own, 3.46 and 3.42
    of a 6.8 read 3.5 and 3.4."""
    tenth = Decimal("0.1")
    down = [Decimal(repr(float(hours))).quantize(tenth, rounding=ROUND_FLOOR) for hours in parts]
    missing = int((total - sum(down, Decimal(0))) / tenth)
    by_remainder = sorted(range(len(parts)), key=lambda i: Decimal(repr(float(parts[i]))) - down[i], reverse=True)
    if missing >= 0:  # a tenth more for the parts rounded down most
        for i in by_remainder[:missing]:
            down[i] += tenth
    else:  # a tenth less for those rounded down least (the total shown may be under the parts' hours)
        for i in [i for i in reversed(by_remainder) if down[i] > 0][:-missing]:
            down[i] -= tenth
    return down


def unattributed_note(
    unused_gpu_hours: float,
    by_category: list[findings.CategoryWaste],
    unused_by_status: dict[str, float],
    threshold: float,
) -> str:
    """Why the hours by cause add up to less than the unused GPU-hours: a line naming the rest, or ''
    when the causes account for all of it (at the digest's precision).

    Causes hold the recoverable GPU-hours the rules could tie to them; the rest is idle time of
    low-utilization jobs no rule explains (unclassified), the unused hours of jobs above the
    low-utilization line `threshold` (healthy: never searched for causes), the unused hours of jobs with
    too little data to judge (a Slurm step-accounting average: no time series), and idle time of
    classified jobs beyond what their causes recover (or of jobs without a triage yet).

    "The other" hours are what the two figures before them leave, as shown: the unused GPU-hours less the
    causes', each rounded to a tenth (the exact rest, rounded on its own, read 6.9 beside 23.6 and 16.8: the
    demo's rl team in 2026-W45), and the parts it is split into add up to it as shown (`_shown_adding_up_to`)."""
    attributed = sum(row.gpu_hours for row in by_category)
    rest = unused_gpu_hours - attributed
    rest_shown = queries.hours_in_tenths(unused_gpu_hours) - queries.hours_in_tenths(attributed)
    if rest_shown <= 0:
        return ""
    unclassified = max(min(unused_by_status.get(findings.UNCLASSIFIED, 0.0), rest), 0.0)
    healthy = max(min(unused_by_status.get(findings.HEALTHY, 0.0), rest - unclassified), 0.0)
    # A Slurm step-accounting average has unused hours (from the average) and no time series to judge.
    unjudged = max(min(unused_by_status.get(findings.INSUFFICIENT_DATA, 0.0), rest - unclassified - healthy), 0.0)
    other = max(rest - unclassified - healthy - unjudged, 0.0)
    parts = [
        (unclassified, "in low-utilization jobs no rule could explain (unclassified)"),
        (healthy, f"in jobs above {threshold:.0f} % GPU utilization, which are not searched for causes"),
        (unjudged, "in jobs with too little data for the rules to judge (Slurm step-accounting averages among them)"),
        (other, "other idle time (more than a job's causes account for, or in jobs not checked yet)"),
    ]
    shown = _shown_adding_up_to([hours for hours, _ in parts], rest_shown)
    named = [f"{fmt_hours(hours)} {what}" for hours, (_, what) in zip(shown, parts, strict=True) if hours > 0]
    # The team page's words under its causes, so that the two give one total (the exact hours', rounded once).
    account_for = queries.causes_account_for([row.gpu_hours for row in by_category], unused_gpu_hours)
    return f"{account_for} The other {fmt_hours(rest_shown)} have no cause named" + (
        f": {'; '.join(named)}." if named else "."
    )


def _jobs_url(period: Period, team: Team | None) -> Callable[[Category], str]:
    """The jobs list of the week (and team) with a cause, as a link for the email."""

    def url(category: Category) -> str:
        query = {"team": team.slug} if team else {}
        query |= {"category": category.value, "start_from": period.start.date(), "start_to": period.last_day}
        # By what this cause cost them (its recoverable GPU-hours, the figure beside the link), as the team
        # page's and the cause page's links list them: not the newest first, nor by unused GPU-hours, which
        # put first a job that lost most to other causes.
        query["sort"] = "recoverable"
        return absolute(f"{reverse('dashboard:job-list')}?{urlencode(query)}")

    return url


def _base_context(kind: str, period: Period, jobs, team: Team | None, hidden: frozenset[int]) -> dict:
    """What every digest says. Its causes (the categories, what improved, the unclassified jobs and
    the top jobs) leave out the jobs in `hidden`: those its reader rates in a blind labeling study."""
    threshold = low_util_threshold()
    week = weeks.week_name(period)
    week_jobs = queries.in_period(jobs, period)
    previous_jobs = queries.in_period(jobs, period.previous)
    pricing = queries.pricing(week_jobs | previous_jobs, shown=week_jobs)
    conversion = pricing.conversion
    current = queries.totals(week_jobs, threshold, conversion)
    previous = queries.totals(previous_jobs, threshold, conversion)
    judged_week = week_jobs.exclude(pk__in=hidden) if hidden else week_jobs
    by_category = findings.waste_by_category(judged_week, conversion)
    before_by_category = findings.waste_by_category(
        previous_jobs.exclude(pk__in=hidden) if hidden else previous_jobs, conversion
    )
    jobs_url = _jobs_url(period, team)
    first_week = week_before_not_in_data(jobs, period, current, previous)
    partly_from = week_before_partly_in_data(jobs, period, current, previous)
    improved_runs = _improved_runs(jobs, period, hidden, threshold)
    regressions, more_regressions = _regressions(
        current,
        previous,
        by_category,
        before_by_category,
        jobs_url,
        feedback.set_aside_jobs_by_cause(judged_week),
        partly_before=partly_from is not None,
    )
    # Each cause leads to the week's jobs with it, as the team page's causes do: only the three that
    # grew most had a link, so a reader of the rest had to rebuild the jobs list's filters by hand.
    categories = [
        item | {"url": jobs_url(item["row"].category)} for item in _bars(by_category, lambda row: row.gpu_hours)
    ]
    return {
        "kind": kind,
        "team": team,
        "week": week,
        "previous_week": weeks.shift(week, -1),
        "period": period,
        "week_label": weeks.label(period),
        "totals": current,
        "previous_totals": previous,
        "kpis": kpis(current, previous, nothing_before=first_week is not None, partly_before=partly_from is not None),
        "unjudged_note": "" if first_week or partly_from else unjudged_note(current, previous),
        "compare_note": _compare_note(first_week, partly_from),
        "categories": categories,
        "unattributed": unattributed_note(
            current.unused_gpu_hours, by_category, findings.unused_by_status(judged_week), threshold
        ),
        "regressions": regressions,
        "more_regressions": more_regressions,
        "improvements": _improvements(
            current, previous, by_category, before_by_category, partly_before=partly_from is not None
        ),
        "improved_runs": improved_runs,
        "improved_runs_slurm_avg": any(item["previous_from_steps"] or item["from_steps"] for item in improved_runs),
        "unclassified": findings.unclassified(judged_week),
        "currency": pricing.currency,
        "cost_note": pricing.note,
        "cost_warning": pricing.warning,
        "conversion": conversion,  # for the operator digest's teams; not for the templates
        "low_threshold": threshold,
        "preview_url": absolute(preview_path(kind, week, team)),
        "settings_url": absolute(reverse("digests:settings")),
        "judged_week_jobs": judged_week,  # for the top jobs (a team digest's)
    }


def _compare_note(first_week: date | None, partly_from: date | None) -> str:
    """Under the figures: why the week before has none (`week_before_not_in_data`), or why its changes are
    not judged (`week_before_partly_in_data`), in the words of the dashboard's cards."""
    if first_week:
        return f"No jobs before {first_week:%Y-%m-%d} to compare with."
    if partly_from:
        return (
            f"The week before is only partly in the data (jobs from {partly_from:%Y-%m-%d}), "
            "so no change is judged better or worse."
        )
    return ""


def _improved_runs(jobs, period: Period, hidden: frozenset[int], threshold: float) -> list[dict]:
    """Runs of the week that went above the low-utilization line their run before was under, with
    the causes found in that run and no longer in this one. A run or run before its reader rates
    blind is left out (its causes are findings)."""
    runs = [
        run
        for run in queries.improved_runs(jobs, period, threshold, settings.DIGEST_TOP_JOBS)
        if run.pk not in hidden and run.previous_id not in hidden
    ]
    causes = findings.causes_of([run.pk for run in runs] + [run.previous_id for run in runs])
    return [
        {
            "job": run,
            "previous_util": run.previous_util,
            # Either figure may be Slurm's step-accounting average (a run without GPU samples): marked Slurm avg.
            "previous_from_steps": run.previous_util_source == Job.UtilSource.SLURM_STEPS,
            "from_steps": run.util_from_steps,
            "previous_start": run.previous_start,
            "gone": [c for c in causes.get(run.previous_id, []) if c not in causes.get(run.pk, [])],
            "url": absolute(reverse("dashboard:job-detail", args=[run.pk]) + "#runs"),
        }
        for run in runs
    ]


SET_ASIDE_NAMED = 5  # jobs left out of the fixes that the team digest names; the rest it counts


def job_findings_url(job_id: int) -> str:
    """A job's page for the email, opened at its findings (`#findings`, the causes and their fixes the
    digest names), not at the top, above its facts and summary."""
    return absolute(reverse("dashboard:job-detail", args=[job_id]) + "#findings")


def team_context(team: Team, period: Period, hidden: frozenset[int] = frozenset()) -> dict:
    context = _base_context(DigestKind.TEAM, period, Job.objects.filter(team=team), team, hidden)
    del context["conversion"]
    ranked, context["set_aside"] = findings.top_jobs(context.pop("judged_week_jobs"), settings.DIGEST_TOP_JOBS)
    jobs = Job.objects.select_related("cluster").in_bulk([entry.job_id for entry in ranked])
    answers = findings.answers_on(list(jobs))
    context["top_jobs"] = [
        {
            "job": jobs[entry.job_id],
            "recoverable": entry.recoverable_gpu_hours,
            "categories": entry.categories,
            "answers": answers.get(entry.job_id, []),
            "fix": entry.fix,
            "summary": entry.summary,
            "fixes": entry.fixes,
            "url": job_findings_url(entry.job_id),
        }
        for entry in ranked
        if entry.job_id in jobs
    ]
    # Name the jobs left out, not only count them: a reader who wants to check what was set aside (or
    # take an answer back) needs to find them, and no jobs-list filter picks exactly these.
    named = Job.objects.select_related("cluster").in_bulk(context["set_aside"].job_ids[:SET_ASIDE_NAMED])
    context["set_aside_jobs"] = [
        {"job": named[job_id], "url": job_findings_url(job_id)}
        for job_id in context["set_aside"].job_ids[:SET_ASIDE_NAMED]
        if job_id in named
    ]
    context["set_aside_unnamed"] = context["set_aside"].jobs - len(context["set_aside_jobs"])
    context["dashboard_url"] = absolute(
        f"{reverse('dashboard:team-detail', args=[team.slug])}?{weeks.dashboard_query(period)}"
    )
    return context


def operator_context(period: Period, hidden: frozenset[int] = frozenset()) -> dict:
    context = _base_context(DigestKind.OPERATOR, period, Job.objects.all(), None, hidden)
    judged_week = context.pop("judged_week_jobs")  # not for the teams: they are ranked by all their jobs
    # "Every low-utilization job has a named cause" only of those the rules judged: a Slurm step average
    # (no time series) or a job not triaged yet has no cause, and is not unclassified either.
    threshold = context["low_threshold"]
    context["low_jobs"] = judged_week.low_utilization(threshold).count()
    context["low_judged"] = queries.unclassified_share(judged_week, threshold)[1]
    context["low_not_judged"] = context["low_jobs"] - context["low_judged"]
    week_jobs = queries.in_period(Job.objects.all(), period)
    teams = queries.by_team(
        week_jobs, context["low_threshold"], limit=settings.DIGEST_TOP_TEAMS, conversion=context.pop("conversion")
    )
    for row in teams:
        row |= queries.cost_figure(row)
        row["url"] = absolute(
            f"{reverse('dashboard:team-detail', args=[row['team__slug']])}?{weeks.dashboard_query(period)}"
        )
    unclassified = context["unclassified"]
    totals = context["totals"]
    unclassified["share"] = (
        unclassified["unused_gpu_hours"] / totals.unused_gpu_hours if totals.unused_gpu_hours else None
    )
    context |= {
        "feed_stopped": _feed_stopped(period, totals),
        "top_teams": _bars(teams, lambda row: row["unused"]),
        "ingestion": _ingestion_health(period),
        "connectors": _connector_health(),
        "answers": [
            {
                "category": category,
                "tally": tally,
                "url": absolute(reverse("dashboard:category-detail", args=[category])),
            }
            for category, tally in findings.answers_given(period, hidden)
        ],
        "failed_deliveries": Delivery.objects.filter(status=Delivery.Status.FAILED).count(),
        "deliveries_url": absolute(reverse("digests:deliveries") + "?status=failed"),
        "dashboard_url": absolute(f"{reverse('dashboard:overview')}?{weeks.dashboard_query(period)}"),
    }
    return context


def _feed_stopped(period: Period, totals: queries.Totals) -> dict | None:
    """A week without jobs in a fleet that had them: {"since": the day the newest job before it started,
    "days": how long before the week's end}, which the subject and first line put as "No new jobs since
    2026-11-22 (14 days) — check ingestion" (a quiet week's "no jobs started" hid a feed that had stopped).
    By start time, as the digest counts every job, not by import time: an archive imported late still
    fills its weeks, and an import of old jobs alone is no sign the feed runs. Operators only: a team
    without jobs may simply not have run any."""
    if totals.jobs:
        return None
    newest = Job.objects.filter(start_time__lt=period.start).aggregate(newest=Max("start_time"))["newest"]
    if newest is None:  # nothing ever imported: no feed to have stopped
        return None
    return {"since": newest.astimezone(UTC).date(), "days": (period.end - newest).days}


def _ingestion_health(period: Period) -> dict:
    runs = IngestRun.objects.filter(created_at__gte=period.start, created_at__lt=period.end)
    counts = dict.fromkeys(IngestRun.Status.values, 0)
    for row in runs.values("status").annotate(n=Count("pk")).order_by():
        counts[row["status"]] = row["n"]
    failures = list(
        runs.filter(status__in=[IngestRun.Status.FAILED, IngestRun.Status.PARTIAL])
        .only("pk", "archive_name", "status", "created_at", "jobs_rejected", "errors")
        .order_by("-created_at")[:10]
    )
    return {
        "runs": sum(counts.values()),
        "counts": counts,
        "failures": [
            {
                "run": run,
                "url": absolute(reverse("fleet:ingest-run-detail", args=[run.pk])),
                "error": _first_error(run.errors),
            }
            for run in failures
        ],
        "list_url": absolute(reverse("fleet:ingest-run-list")),
    }


def _first_error(errors) -> str:
    if isinstance(errors, list) and errors and isinstance(errors[0], dict):
        return str(errors[0].get("message", ""))[:200]
    return ""


def _connector_health() -> list[dict] | None:
    """Last success and error of each configured connector; None while the model does not exist."""
    connector_model = getattr(fleet_models, "Connector", None)
    if connector_model is None:
        return None
    rows = []
    for connector in connector_model.objects.order_by("name"):
        rows.append(
            {
                "name": connector.name,
                "kind": connector.get_kind_display() if hasattr(connector, "get_kind_display") else "",
                "health": getattr(connector, "health", ""),
                "last_success_at": getattr(connector, "last_success_at", None),
                "last_error_at": getattr(connector, "last_error_at", None),
                "last_error": (getattr(connector, "last_error", "") or "")[:200],
            }
        )
    return rows


def build_context(kind: str, week: str, team: Team | None = None, hidden: frozenset[int] = frozenset()) -> dict:
    """A digest's context; `hidden`: jobs its reader rates blind, left out of its causes (`for_viewer`)."""
    period = weeks.parse_week(week)
    if kind == DigestKind.TEAM:
        return team_context(team, period, hidden)
    return operator_context(period, hidden)


# --- Messages ------------------------------------------------------------------------------------


def render_triplet(name: str, context: dict) -> tuple[str, str, str]:
    """Subject, text and HTML of `templates/emails/<name>-subject.txt`, `-body.txt`, `-body.html`.

    In UTC, as the mails say: one goes to many people, and one sent or previewed from a page (a
    send by hand, with no worker; the preview) must not take that page's reader's time zone."""
    with timezone.override(UTC):
        subject = " ".join(render_to_string(f"emails/{name}-subject.txt", context).split())
        # A subject is plain text (not escaped: a team "R&D" must not read "R&amp;D"), yet never carries
        # markup, for whatever shows it carelessly: angle brackets become their single-quote look-alikes.
        subject = subject.replace("<", "‹").replace(">", "›")
        text = render_to_string(f"emails/{name}-body.txt", context)
        html = render_to_string(f"emails/{name}-body.html", context)
    return subject, text, html


def _mail_domain() -> str:
    return urlsplit(settings.PUBLIC_BASE_URL).hostname or "localhost"


def for_viewer(context: dict, user) -> dict:
    """The digest's context as `user` may see it: the jobs they rate in a blind labeling study (and
    have not submitted) are left out of its causes — its categories, improvements, unclassified
    jobs and top jobs — which for a team's week are often one job's. Built again only for a reader
    with such jobs in the digest's two weeks; everyone else gets the context as it is."""
    hidden = blinded_job_ids(user) if user is not None else set()
    if not hidden:
        return context
    period, team = context["period"], context["team"]
    scope = Job.objects.filter(team=team) if team is not None else Job.objects.all()
    if not queries.in_period(scope, period.with_previous).filter(pk__in=hidden).exists():
        return context
    return build_context(context["kind"], context["week"], team, frozenset(hidden))


def make_message(context: dict, delivery: Delivery, connection=None) -> EmailMultiAlternatives:
    """The email for one delivery: text and HTML parts, unsubscribe headers, a stable Message-ID."""
    context = for_viewer(dict(context), delivery.user if delivery.user_id else None)
    # The same id on every attempt, so a receiving system can drop a duplicate if one ever slips through.
    message_id = f"digest.{delivery.kind}.{delivery.iso_week}.{delivery.pk}"
    return compose_message(delivery, TEMPLATE_NAMES[DigestKind(delivery.kind)], context, message_id, connection)


def compose_message(
    delivery: Delivery, template: str, context: dict, message_id: str, connection=None, unsubscribe_label: str = ""
) -> EmailMultiAlternatives:
    """A delivery's email from its templates (`render_triplet`) and context: its Message-ID
    (`<message_id@the mail domain>`), and for a delivery to a person, the link and RFC 8058 one-click
    headers that unsubscribe them from what `delivery.kind` is (`unsubscribe_label` names it on the link)."""
    headers = {"Message-ID": f"<{message_id}@{_mail_domain()}>", "Auto-Submitted": "auto-generated"}
    if delivery.user_id:
        token = unsubscribe_token(delivery.user_id, delivery.kind, delivery.team_id)
        unsubscribe_url = absolute(reverse("digests:unsubscribe", args=[token]))
        context["unsubscribe_url"] = unsubscribe_url
        if unsubscribe_label:
            context["unsubscribe_label"] = unsubscribe_label
        # RFC 8058 one-click: the mail client POSTs "List-Unsubscribe=One-Click" to this URL.
        headers["List-Unsubscribe"] = f"<{unsubscribe_url}>"
        headers["List-Unsubscribe-Post"] = "List-Unsubscribe=One-Click"
    subject, text, html = render_triplet(template, context)
    message = EmailMultiAlternatives(
        subject=subject,
        body=text,
        from_email=settings.DIGEST_FROM_EMAIL,
        to=[delivery.recipient],
        headers=headers,
        connection=connection,
    )
    message.attach_alternative(html, "text/html")
    return message


# --- Sending -------------------------------------------------------------------------------------


class TransientSendError(Exception):
    """The mail server could not take the message now (4xx, connection trouble); worth retrying."""


def is_transient(exc: BaseException) -> bool:
    if isinstance(exc, smtplib.SMTPRecipientsRefused):
        codes = [code for code, _ in exc.recipients.values()]
        return bool(codes) and all(400 <= code < 500 for code in codes)
    if isinstance(exc, smtplib.SMTPResponseException):
        return 400 <= exc.smtp_code < 500
    # Disconnects, refused connections, timeouts.
    return isinstance(exc, smtplib.SMTPServerDisconnected | OSError)


def describe(exc: BaseException) -> str:
    """A failed send as the deliveries page and the command show it: the server's answer, or — when
    no answer came — which mail server it was and which settings to check, then the error itself
    (a bare `ConnectionRefusedError: [Errno 111] Connection refused` named neither)."""
    if isinstance(exc, smtplib.SMTPResponseException):
        message = exc.smtp_error.decode(errors="replace") if isinstance(exc.smtp_error, bytes) else exc.smtp_error
        return f"{type(exc).__name__}: {exc.smtp_code} {message}"
    said = f"{type(exc).__name__}: {library_error(exc)}"
    if not (settings.EMAIL_HOST and isinstance(exc, smtplib.SMTPServerDisconnected | OSError)):
        return said
    where = f"the mail server {settings.EMAIL_HOST}:{settings.EMAIL_PORT}"
    if isinstance(exc, socket.gaierror):
        return f"The host name of {where} could not be found: check EMAIL_HOST ({said})"
    if isinstance(exc, ConnectionRefusedError):
        return f"{where[0].upper()}{where[1:]} refused the connection: check EMAIL_HOST and EMAIL_PORT ({said})"
    if isinstance(exc, TimeoutError):
        return (
            f"{where[0].upper()}{where[1:]} did not answer within {settings.EMAIL_TIMEOUT:g} s: check EMAIL_HOST, "
            f"EMAIL_PORT and that no firewall drops the traffic ({said})"
        )
    if isinstance(exc, ssl.SSLError):
        return f"TLS with {where} failed: check EMAIL_USE_TLS / EMAIL_USE_SSL against EMAIL_PORT ({said})"
    return f"The connection to {where} failed ({said})"


@dataclass
class GroupResult:
    kind: str
    team: str
    week: str
    sent: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)  # already sent (or being sent) for this week
    failed: list[str] = field(default_factory=list)
    retry: str = ""  # the transient error that ended this attempt early; the caller retries

    def as_dict(self) -> dict:
        return {
            "kind": self.kind,
            "team": self.team,
            "week": self.week,
            "sent": len(self.sent),
            "skipped": len(self.skipped),
            "failed": len(self.failed),
            "retry": self.retry,
        }


def ensure_deliveries(kind: str, team: Team | None, week: str, recipients: list[tuple]) -> list[tuple]:
    """One delivery row per address (created queued if missing), paired with the recipient user."""
    by_address: dict[str, object] = {}
    for user, address in recipients:
        by_address.setdefault(address.strip().lower(), user)
    Delivery.objects.bulk_create(
        [
            Delivery(recipient=address, user=user, kind=kind, team=team, iso_week=week)
            for address, user in by_address.items()
        ],
        ignore_conflicts=True,  # rows from an earlier attempt or a concurrent worker stay as they are
    )
    rows = {
        row.recipient: row
        for row in Delivery.objects.filter(kind=kind, team=team, iso_week=week, recipient__in=list(by_address))
    }
    return [(rows[address], user) for address, user in by_address.items() if address in rows]


def send_group(
    kind: str, week: str, team_id: int | None = None, *, to: str | None = None, final_attempt: bool = True
) -> GroupResult | None:
    """Send one digest (a team's, or the operators') for an ISO week to everyone who should get it.

    Each delivery is claimed before its message goes out and stamped after, so calling this again
    for the same week sends only what has not been sent. A transient SMTP error stops the attempt:
    the delivery goes back to the queue and `retry` is set, unless this is the final attempt, when
    it is marked failed. With `to`, one copy goes to that address instead of the subscribers.
    Returns None when the team no longer exists.
    """
    team = None
    if kind == DigestKind.TEAM:
        team = Team.objects.filter(pk=team_id).first()
        if team is None:
            return None
    result = GroupResult(kind, team.slug if team else "", week)
    if to:
        recipients = [(None, to)]
    else:
        users = team_recipients(team) if team else operator_recipients()
        recipients = [(user, user.email) for user in users]
    if not recipients:
        return result
    context = build_context(kind, week, team)
    deliveries = ensure_deliveries(kind, team, week, recipients)
    connection = get_connection()
    try:
        for delivery, _user in deliveries:
            if delivery.status == Delivery.Status.SENT:
                result.skipped.append(delivery.recipient)
                continue
            message = make_message(context, delivery, connection=connection)
            if not delivery.claim():  # sent or being sent by someone else meanwhile
                result.skipped.append(delivery.recipient)
                continue
            try:
                message.send()
            except Exception as exc:
                transient = is_transient(exc)
                error = describe(exc)
                delivery.mark_unsent(error, final=final_attempt or not transient)
                logger.warning(
                    "Digest %s to %s failed (attempt %s): %s", delivery.pk, delivery.recipient, delivery.attempts, error
                )
                if transient and not final_attempt:
                    result.retry = error
                    break  # the server is in trouble: retry the rest later, with backoff
                result.failed.append(delivery.recipient)
                if not transient:
                    continue
                # Final attempt and the server is still failing: mark the rest failed too, so
                # operators see every digest that did not go out.
                _fail_unsent(deliveries, error)
                break
            delivery.mark_sent(message.extra_headers["Message-ID"])
            result.sent.append(delivery.recipient)
    finally:
        connection.close()
    return result


def _fail_unsent(deliveries: list[tuple], error: str) -> None:
    pks = [delivery.pk for delivery, _ in deliveries]
    Delivery.objects.filter(pk__in=pks, status=Delivery.Status.QUEUED).update(
        status=Delivery.Status.FAILED, last_error=f"not sent: {error}"[:2000]
    )


def fail_group(kind: str, week: str, team_id: int | None, reason: str) -> None:
    """Mark a group's unsent deliveries failed (the task gave up); never touches sent ones."""
    Delivery.objects.filter(
        kind=kind, team_id=team_id, iso_week=week, status__in=[Delivery.Status.QUEUED, Delivery.Status.SENDING]
    ).update(status=Delivery.Status.FAILED, last_error=reason[:2000])


def retry_delivery_group(delivery: Delivery) -> None:
    """Re-send the group of a failed delivery (the operator's Retry button); sent ones stay sent.
    Raises fleet.tasking.QueueUnreachable, saying so, when Redis cannot be reached."""
    from fleet.tasking import publish

    from .tasks import send_digest_task

    publish(
        send_digest_task,
        (delivery.kind, delivery.iso_week, delivery.team_id),
        not_done=f"the {delivery.get_kind_display().lower()} for {delivery.iso_week} was not sent again",
    )


def default_week(now: datetime | None = None) -> str:
    return weeks.last_complete_week(now or datetime.now(tz=UTC))


def preview_week(user, now: datetime | None = None) -> str:
    """The week the digest page opens on: the last complete week, or the week of the newest job this
    user may see when that is earlier (an archive imported late opens on its own week, as the
    dashboard's periods do, instead of on an empty one)."""
    last_week = default_week(now)
    newest = Job.objects.visible_to(user).aggregate(newest=Max("start_time"))["newest"]
    if newest is None or newest >= weeks.parse_week(last_week).start:
        return last_week
    return weeks.week_of(newest)


def retry_countdown(retries: int) -> float:
    """Exponential backoff with a cap: base, 2 × base, 4 × base …"""
    return min(settings.DIGEST_RETRY_BACKOFF * 2**retries, settings.DIGEST_RETRY_BACKOFF_MAX)
