"""Import labels made elsewhere (the labels export format, CSV or JSON) into a study."""

from __future__ import annotations

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from triage.labeling import exchange
from triage.labeling.models import Study


class Command(BaseCommand):
    help = "Import labels into a study; all or nothing (docs/labeling.md)."

    def add_arguments(self, parser):
        parser.add_argument("study", type=int, help="Study id")
        parser.add_argument("path", help="CSV or JSON labels file")
        parser.add_argument("--dry-run", action="store_true", help="Check the file and report; store nothing")

    def handle(self, *args, study: int, path: str, dry_run: bool, **options):
        study_obj = Study.objects.filter(pk=study).first()
        if study_obj is None:
            raise CommandError(f"No study {study}")
        try:
            content = Path(path).read_bytes()
        except OSError as exc:
            raise CommandError(f"Cannot read {path}: {exc.strerror}") from None
        result = exchange.import_labels(study_obj, content, dry_run=dry_run)
        if result.errors:
            raise CommandError("Nothing imported:\n" + "\n".join(result.errors))
        verb = "would store" if dry_run else "stored"
        self.stdout.write(f"Import {verb} {result.answers} answers ({result.jobs_added} jobs added to the sample).")
