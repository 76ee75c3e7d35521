"""`manage.py ingest_archive --dry-run`: check an export before importing it. It says what an import
would create, update, leave unchanged and reject, with every error, exits as the import would, and
stores nothing at all: no run, no job, no blob."""

from __future__ import annotations

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from fleet import ingest
from fleet.models import Artifact, IngestRun, Job, LogEvent, Team
from tests.conftest import EXAMPLE_ARCHIVE, write_zip
from tests.test_ingest import JOBS, good_members, run_command

pytestmark = pytest.mark.django_db


def dry_run(path) -> tuple[int, str, str]:
    return run_command(path, "--dry-run")


def files_under(folder) -> list:
    return sorted(p for p in folder.rglob("*") if p.is_file()) if folder.exists() else []


def nothing_stored() -> bool:
    models = (IngestRun, Job, Artifact, LogEvent, Team)
    return not any(model.objects.exists() for model in models)


def test_a_dry_run_reports_what_the_import_then_does_and_stores_nothing(storage_dir, settings, tmp_path):
    settings.ARCHIVE_WORK_DIR = str(tmp_path / "work")
    code, out, err = dry_run(EXAMPLE_ARCHIVE)
    assert code == 0, err
    assert nothing_stored() and files_under(storage_dir) == [] and files_under(tmp_path / "work") == []
    assert f"Dry run of {EXAMPLE_ARCHIVE.name}: nothing was stored" in out

    code, _, err = run_command(EXAMPLE_ARCHIVE)  # the real import does what the dry run said
    assert code == 0, err
    run = IngestRun.objects.get()
    assert run.jobs_created > 0
    assert f"jobs: {run.jobs_created} to create, 0 to update, 0 unchanged, 0 rejected" in out
    assert f"samples: {run.samples}\n" in out


def test_after_the_import_a_dry_run_sees_the_jobs_unchanged_and_the_changed_ones_updated(tmp_path):
    assert run_command(write_zip(tmp_path / "a.zip", good_members()))[0] == 0
    blobs = Job.objects.order_by("pk").values_list("series_file", flat=True)
    before = (list(blobs), IngestRun.objects.count(), Artifact.objects.count())

    code, out, _ = dry_run(tmp_path / "a.zip")
    assert code == 0 and "jobs: 0 to create, 0 to update, 3 unchanged, 0 rejected" in out

    members = good_members()
    members["jobs.csv"] = JOBS.replace("bert", "bert-large").replace("j3,cat,nlp,", "j3,cat,speech,")
    code, out, _ = dry_run(write_zip(tmp_path / "b.zip", members))
    assert code == 0 and "jobs: 0 to create, 2 to update, 1 unchanged, 0 rejected" in out  # a new name, a new team
    assert (list(blobs), IngestRun.objects.count(), Artifact.objects.count()) == before
    assert not Team.objects.filter(slug="speech").exists()


def test_a_dry_run_lists_every_error_by_file_row_and_field_and_exits_as_the_import_would(storage_dir, tmp_path):
    members = good_members()
    members["jobs.csv"] = JOBS.replace("j3,cat,nlp,1,", "j3,cat,nlp,one,")
    archive = write_zip(tmp_path / "bad.zip", members)
    code, out, err = dry_run(archive)
    assert code == 1
    assert "jobs: 2 to create, 0 to update, 0 unchanged, 1 rejected" in out
    assert "jobs.csv" in err and "row 3" in err and "gpu_count" in err
    assert "1 of 3 jobs would be rejected" in err
    assert nothing_stored() and files_under(storage_dir) == []
    assert run_command(archive)[0] == 1  # the import's exit code for the same archive


def test_a_hostile_archive_is_refused_by_the_dry_run_too(tmp_path):
    import zipfile

    archive = tmp_path / "evil.zip"
    with zipfile.ZipFile(archive, "w") as z:
        for name, text in good_members().items():
            z.writestr(name, text)
        z.writestr("../escape.txt", "x")
    code, _, err = dry_run(archive)
    assert code == 2
    assert "escape.txt" in err and "no job would be stored" in err
    assert nothing_stored()
    assert not (tmp_path.parent / "escape.txt").exists()


def test_a_missing_archive_and_an_async_dry_run_are_clear_errors(tmp_path):
    code, _, err = dry_run(tmp_path / "nowhere.zip")
    assert code == 2 and "does not exist" in err
    with pytest.raises(CommandError, match="--dry-run and --async"):
        call_command("ingest_archive", str(EXAMPLE_ARCHIVE), "--dry-run", "--async")
    assert nothing_stored()


def test_the_dry_run_decides_each_job_as_storing_does():
    """One rule for both: `ingest.outcome`, which `store_jobs` also uses."""
    stored = Job(fingerprint="abc", team_id=7)
    assert ingest.outcome(None, "abc", 7) == "created"
    assert ingest.outcome(stored, "abc", 7) == "unchanged"
    assert ingest.outcome(stored, "abd", 7) == "updated"
    assert ingest.outcome(stored, "abc", 8) == "updated"
    assert ingest.outcome(stored, "abc", None) == "updated"  # its team does not exist yet


def test_a_dry_run_with_many_errors_ends_with_how_they_fall_by_file_and_field(tmp_path):
    from tests.test_ingest import HEADER, MANIFEST, metrics_rows

    rows = "".join(f"b{i},ann,vision,x{i},2026-11-02T10:00:00Z,2026-11-02T11:00:00Z,bad\n" for i in range(12))
    members = {
        "manifest.json": MANIFEST,
        "jobs.csv": JOBS + rows,
        "metrics.csv": HEADER + metrics_rows("j1", "2026-11-02T10:00:00Z", 10, 140.0),  # over 100 %
    }
    code, _, err = dry_run(write_zip(tmp_path / "broken.zip", members))
    assert code == 1
    summary = err.split("errors by file and field:")[1].strip().splitlines()
    assert summary[0].strip() == "jobs.csv · gpu_count: 12"  # most first
    assert any(line.strip().startswith("metrics.csv · gpu_util: ") for line in summary[1:])
