from __future__ import annotations

import shutil
from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError
from django.urls import reverse

from fleet import ingest
from fleet.canonical import RecordError
from fleet.models import IngestRun

# Shown in full; beyond this the rest is summarised (the run keeps every error).
MAX_ERRORS_SHOWN = 50
# A dry run with more errors than this ends with how they fall by file and field.
ERROR_KINDS_AFTER = 10


class Command(BaseCommand):
    help = (
        "Import a fleet archive (format v1: .zip, .tar.gz or a folder; see docs/archive-format.md). "
        "Prints the ingest run id, counts and any errors. Exit code 0 when every job was stored, "
        "1 when some were rejected, 2 when none were."
    )

    def add_arguments(self, parser):
        parser.add_argument("path", help="the archive file or folder")
        parser.add_argument(
            "--async",
            dest="run_async",
            action="store_true",
            help="queue the import on the Celery workers and print the run id instead of waiting",
        )
        parser.add_argument(
            "--dry-run",
            action="store_true",
            help="check the archive and say what an import would create, update, leave unchanged and reject "
            "(with every error), storing nothing; the exit code is the import's",
        )

    def _progress_bar(self) -> _ProgressBar | None:
        """Only on a terminal: a log file or a pipe gets the plain summary lines alone."""
        stream = getattr(self.stdout, "_out", self.stdout)
        isatty = getattr(stream, "isatty", None)
        if not (isatty and isatty()):
            return None
        return _ProgressBar(stream)

    def handle(self, path, run_async=False, dry_run=False, **options):
        if dry_run and run_async:
            raise CommandError("--dry-run and --async do not go together: a dry run reports at once")
        if dry_run:
            return self._dry_run(path)
        longest = IngestRun._meta.get_field("archive_path").max_length
        if len(str(path)) > longest:  # the run's row keeps its path (PostgreSQL refuses a longer one)
            raise CommandError(
                f"The archive's path is {len(str(path)):,} characters, more than the {longest:,} an ingest run "
                "keeps: move the archive, or link it, to a shorter path."
            )
        run = ingest.create_run(path, source=IngestRun.Source.CLI)
        self.stdout.write(f"Ingest run {run.pk}: {run.archive_name}")
        if run_async:
            ingest.enqueue_run(run)  # outside a transaction: queued (or failed) at once
            run.refresh_from_db()
            if run.status == IngestRun.Status.FAILED:
                raise CommandError(run.errors[0]["message"])
            # The page's address as a browser reaches the service (PUBLIC_BASE_URL), ready to open.
            page = settings.PUBLIC_BASE_URL + reverse("fleet:ingest-run-detail", args=[run.pk])
            self.stdout.write(f"queued; follow it at {page}")
            return
        bar = self._progress_bar()
        try:
            run = ingest.execute_run(run.pk, on_progress=bar.update if bar else None)
        finally:
            if bar:
                bar.close()
        self.stdout.write(
            f"status: {run.get_status_display()}\n"
            f"jobs: {run.jobs_created} created, {run.jobs_updated} updated, "
            f"{run.jobs_unchanged} unchanged, {run.jobs_rejected} rejected\n"
            f"samples: {run.samples}"
        )
        for error in run.errors[:MAX_ERRORS_SHOWN]:
            self.stderr.write(str(RecordError(**error)))
        if len(run.errors) > MAX_ERRORS_SHOWN:
            self.stderr.write(f"... and {len(run.errors) - MAX_ERRORS_SHOWN} more errors (see ingest run {run.pk})")
        stored = run.jobs_created + run.jobs_updated + run.jobs_unchanged
        if run.status == IngestRun.Status.FAILED or (stored == 0 and run.jobs_total):
            raise CommandError(f"no jobs were stored (ingest run {run.pk})", returncode=2)
        if run.jobs_rejected:
            raise CommandError(
                f"{run.jobs_rejected} of {run.jobs_total} jobs were rejected (ingest run {run.pk})", returncode=1
            )

    def _dry_run(self, path) -> None:
        bar = self._progress_bar()
        try:
            report = ingest.dry_run(path, on_progress=bar.update if bar else None)
        finally:
            if bar:
                bar.close()
        self.stdout.write(f"Dry run of {Path(path).name}: nothing was stored")
        self.stdout.write(
            f"jobs: {report.jobs_created} to create, {report.jobs_updated} to update, "
            f"{report.jobs_unchanged} unchanged, {report.jobs_rejected} rejected\n"
            f"samples: {report.samples}"
        )
        for error in report.errors:  # all of them: there is no run to look the rest up in
            self.stderr.write(str(error))
        if len(report.errors) > ERROR_KINDS_AFTER:
            self.stderr.write(f"{len(report.errors)} errors by file and field:")
            for (file, field), count in ingest.error_kinds([error.as_dict() for error in report.errors]):
                self.stderr.write(f"  {file}{' · ' + field if field else ''}: {count}")
        if report.failed or (report.jobs_total and report.jobs_rejected == report.jobs_total):
            raise CommandError("no job would be stored", returncode=2)
        if report.jobs_rejected:
            raise CommandError(f"{report.jobs_rejected} of {report.jobs_total} jobs would be rejected", returncode=1)


class _ProgressBar:
    """A tqdm bar over the run's stored jobs (or a dry run's checked ones), its description the current
    phase (terminals only)."""

    def __init__(self, stream):
        from tqdm import tqdm

        # A terminal may report no size (0 × 0), and tqdm then draws nothing unless it is told a
        # width and a height: both are given, shutil's fallback standing in for a 0.
        columns, rows = shutil.get_terminal_size((100, 20))
        self._bar = tqdm(total=None, unit="job", file=stream, ncols=columns, nrows=rows, leave=True)

    def update(self, run) -> None:
        if run.jobs_total and self._bar.total != run.jobs_total:
            self._bar.total = run.jobs_total
        self._bar.set_description_str(run.phase or "storing jobs", refresh=False)
        self._bar.n = run.jobs_done
        self._bar.set_postfix_str(f"{run.samples:,} samples", refresh=False)
        self._bar.refresh()

    def close(self) -> None:
        self._bar.close()
