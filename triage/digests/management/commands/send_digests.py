"""Send (or show) the weekly digests of one ISO week, the way the weekly beat task does."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError
from django.db.models import Max

from fleet.models import Job, Team
from triage.digests import services, weeks
from triage.digests.models import DigestKind


class Command(BaseCommand):
    help = (
        "Send the weekly digests for an ISO week: each team's to its subscribed members and the operator "
        "digest to the operators. Each recipient gets each digest once per week, however often this runs."
    )

    def add_arguments(self, parser):
        parser.add_argument("--week", help="ISO week to report, e.g. 2026-W48 (default: the last complete week).")
        parser.add_argument("--team", metavar="SLUG", help="Only this team's digest (no operator digest).")
        parser.add_argument("--operators", action="store_true", help="Only the operator digest.")
        parser.add_argument(
            "--dry-run", action="store_true", help="Print who would get what, with the text part; send nothing."
        )
        parser.add_argument(
            "--to", metavar="ADDRESS", help="Send one copy of each digest to this address instead of the subscribers."
        )
        parser.add_argument(
            "--async", dest="run_async", action="store_true", help="Queue one task per digest on the Celery workers."
        )

    def handle(self, *args, week=None, team=None, operators=False, dry_run=False, to=None, run_async=False, **options):
        week = week or services.default_week()
        try:
            weeks.parse_week(week)
        except ValueError as exc:
            raise CommandError(str(exc)) from None
        if team and operators:
            raise CommandError("--team and --operators exclude each other.")
        self._note_newest_week(week)
        if team:
            found = Team.objects.filter(slug=team).first()
            if found is None:
                raise CommandError(f"No team {team!r}.")
            groups = [(DigestKind.TEAM.value, found.pk)]
        elif operators:
            groups = [(DigestKind.OPERATOR.value, None)]
        else:
            groups = services.recipient_groups(week)

        if dry_run:
            for kind, team_id in groups:
                self._show(kind, week, team_id, to)
            return
        if run_async:
            from fleet.tasking import QueueUnreachable, publish
            from triage.digests.tasks import send_digest_task

            for number, (kind, team_id) in enumerate(groups):
                try:
                    publish(
                        send_digest_task,
                        (kind, week, team_id, to),
                        not_done=f"{len(groups) - number} digest(s) for {week} were not queued",
                        then="run the command again (sent ones are skipped)",
                    )
                except QueueUnreachable as exc:
                    raise CommandError(str(exc)) from exc
            self.stdout.write(f"Queued {len(groups)} digest(s) for {week}.")
            return
        failed = 0
        for kind, team_id in groups:
            result = services.send_group(kind, week, team_id, to=to, final_attempt=True)
            if result is None:
                continue
            what = f"{kind} digest{' ' + result.team if result.team else ''} {week}"
            self.stdout.write(
                f"{what}: {len(result.sent)} sent, {len(result.skipped)} already sent, {len(result.failed)} failed"
            )
            for address in result.failed:
                self.stderr.write(f"  failed: {address}")
            failed += len(result.failed)
        if failed:
            raise CommandError(f"{failed} deliver{'y' if failed == 1 else 'ies'} failed; see Digests → Deliveries.")

    def _note_newest_week(self, week: str) -> None:
        """Say so when no job started in the week or after it (imports stopped, or the demo fleet, whose
        newest job is of 2026-W47): every digest would read 'no jobs started', so name the newest week."""
        period = weeks.parse_week(week)
        newest = Job.objects.aggregate(newest=Max("start_time"))["newest"]
        if newest is not None and newest < period.start:
            newest_week = weeks.week_of(newest)
            self.stderr.write(
                f"No job started in {week} ({weeks.label(period)}) or since: its digests say 'no jobs started'. "
                f"The newest job started in {newest_week} ({weeks.label(weeks.parse_week(newest_week))}); "
                f"for that week's digests: --week {newest_week}"
            )

    def _show(self, kind: str, week: str, team_id: int | None, to: str | None) -> None:
        team = Team.objects.get(pk=team_id) if team_id else None
        if to:
            addresses = [to]
        else:
            users = services.team_recipients(team) if team else services.operator_recipients()
            addresses = [user.email for user in users]
        context = services.build_context(kind, week, team)
        subject, text, _ = services.render_triplet(services.TEMPLATE_NAMES[DigestKind(kind)], context)
        self.stdout.write(
            f"=== {kind} digest{' ' + team.slug if team else ''} {week} → {', '.join(addresses) or 'nobody'}"
        )
        self.stdout.write(f"Subject: {subject}\n")
        self.stdout.write(text)
