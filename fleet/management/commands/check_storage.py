"""Report (and with --clean delete) stored series/artifact blobs that no row refers to, and rows
whose blob is missing. Exit code 1 when anything is wrong and was not cleaned."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from fleet import audit
from fleet.lifecycle import check_storage


class Command(BaseCommand):
    help = __doc__

    def add_arguments(self, parser):
        parser.add_argument("--clean", action="store_true", help="Delete the orphaned blobs (never a referenced one).")
        parser.add_argument(
            "--min-age",
            type=float,
            default=3600.0,
            metavar="SECONDS",
            help="Leave younger orphans alone: an ingest stores blobs before their rows (default 3600).",
        )
        parser.add_argument("--verbose-list", action="store_true", help="Print every orphan and missing name.")

    def handle(self, *args, clean: bool, min_age: float, verbose_list: bool, **options):
        report = check_storage(clean=clean, min_age_s=min_age)
        self.stdout.write(
            f"{report.stored} blobs stored; {len(report.orphans)} orphaned"
            f" (+{len(report.young_orphans)} younger than {min_age:.0f} s, left alone);"
            f" {len(report.missing)} referenced but missing"
        )
        if verbose_list:
            for name in report.orphans:
                self.stdout.write(f"orphan  {name}")
            for name in report.missing:
                self.stdout.write(f"missing {name}")
        if clean:
            self.stdout.write(f"deleted {len(report.deleted)} orphaned blobs")
            if report.deleted:
                audit.record(None, "storage.clean", f"{len(report.deleted)} blobs", {"deleted": report.deleted[:1000]})
        if report.missing:
            raise CommandError(
                f"{len(report.missing)} jobs/artifacts name a blob that is not in storage (restore it from backup)",
                returncode=1,
            )
        if report.orphans and not clean:
            raise CommandError("orphaned blobs found; run again with --clean to delete them", returncode=1)
