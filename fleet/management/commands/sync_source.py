"""Run one pull of a connector by hand: `python manage.py sync_source NAME [--since ISO] [--dry-run]`."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from fleet.connectors.models import Connector
from fleet.connectors.sync import sync_connector


class Command(BaseCommand):
    help = "Pull one connector now, from its watermark (or --since) up to now, as the schedule would."

    def add_arguments(self, parser):
        parser.add_argument("name", help="The connector's name (see the Connectors page).")
        parser.add_argument(
            "--since",
            help="Start here instead of the watermark: an ISO 8601 time (or a cursor for the generic API). "
            "The watermark never moves back.",
        )
        parser.add_argument("--dry-run", action="store_true", help="Fetch and report, store nothing.")

    def handle(self, *args, name: str, since: str | None, dry_run: bool, **options):
        connector = Connector.objects.filter(name=name).first()
        if connector is None:
            known = ", ".join(Connector.objects.values_list("name", flat=True)) or "none configured"
            raise CommandError(f"no connector named {name!r} (known: {known})")
        result = sync_connector(connector.pk, since=since, dry_run=dry_run)
        for error in result.errors[:50]:
            where = f" job {error['job_id']}" if error.get("job_id") else ""
            self.stderr.write(f"  {error['file']}{where}: {error['message']}")
        if dry_run:
            self.stdout.write(f"{name}: dry run, {result.jobs_seen} jobs would be stored; nothing was written")
        else:
            self.stdout.write(
                f"{name}: {result.status}, {result.created} created, {result.updated} updated, "
                f"{result.unchanged} unchanged; watermark {result.watermark or '(none)'}"
            )
        if result.status in ("failed", "locked"):
            raise CommandError(result.message or result.status)
