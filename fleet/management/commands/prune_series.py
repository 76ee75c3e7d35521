"""Delete the raw series of jobs that ended more than SERIES_RETENTION_DAYS days ago (or --days).
Jobs, their summary figures, artifacts and findings stay; the job page says the series was pruned."""

from __future__ import annotations

from django.conf import settings
from django.core.management.base import BaseCommand

from fleet import audit
from fleet.lifecycle import prune_series


class Command(BaseCommand):
    help = __doc__

    def add_arguments(self, parser):
        parser.add_argument("--days", type=int, default=None, help="Override SERIES_RETENTION_DAYS (0 = keep all).")
        parser.add_argument("--dry-run", action="store_true", help="Report what would be deleted; change nothing.")

    def handle(self, *args, days: int | None, dry_run: bool, **options):
        days = settings.SERIES_RETENTION_DAYS if days is None else days
        if days <= 0:
            self.stdout.write("series retention is off (SERIES_RETENTION_DAYS=0): nothing pruned")
            return
        report = prune_series(days, dry_run=dry_run)
        verb = "would prune" if dry_run else "pruned"
        self.stdout.write(
            f"{verb} the series of {report.jobs} jobs that ended before {report.cutoff:%Y-%m-%d %H:%M} UTC: "
            f"{len(report.blobs)} blobs, {report.bytes} bytes"
        )
        if not dry_run and report.jobs:
            audit.record(
                None,
                "series.prune",
                f"{report.jobs} jobs",
                {"days": days, "blobs": len(report.blobs), "bytes": report.bytes},
            )
