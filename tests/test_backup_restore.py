"""The backup procedure of docs/operations.md, exercised: dump the database (pg_dump on PostgreSQL,
a copy of the SQLite file in the embedded mode), copy the storage folder, restore both into a
fresh database and folder, and get the same dashboard figures and the same job timeline."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import uuid

import pytest
from django.core.management import call_command
from django.db import connection, connections

from fleet import ingest
from fleet.models import Job
from tests.conftest import REPO
from tests.test_services import _worker_database_url


def run(command: list[str], env: dict | None = None) -> str:
    done = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, f"{command[:3]} failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done.stdout


def service_env(database_url: str, storage) -> dict:
    return {
        **os.environ,
        "DATABASE_URL": database_url,
        "STORAGE_DIR": str(storage),
        "SECRET_KEY": os.environ.get("SECRET_KEY", "backup-test-key"),
        "LOG_LEVEL": "WARNING",
    }


def rounded(value):
    if isinstance(value, float):
        return round(value, 6)
    if isinstance(value, dict):
        return {key: rounded(item) for key, item in value.items()}
    if isinstance(value, list):
        return [rounded(item) for item in value]
    return value


def figures(database_url: str, storage, job_key: str, start: str, end: str) -> dict:
    args = [sys.executable, "-m", "tests.backup_figures", "olivia-operator", job_key, start, end]
    return json.loads(run(args, service_env(database_url, storage)))


@pytest.mark.django_db(transaction=True)
def test_backup_then_restore_into_a_fresh_database_gives_the_same_dashboard(
    demo_archive, storage_dir, tmp_path, operator
):
    run_ = ingest.execute_run(ingest.create_run(demo_archive).pk)
    assert run_.jobs_created > 10
    call_command("triage", "--all", verbosity=0)
    job = Job.objects.exclude(series_file="").order_by("-unused_gpu_hours").first()
    job_key = f"{job.cluster.name}/{job.external_id}"
    first = Job.objects.order_by("start_time").first().start_time.date().isoformat()
    last = Job.objects.order_by("-start_time").first().start_time.date().isoformat()
    source_url = _worker_database_url()

    before = figures(source_url, storage_dir, job_key, first, last)
    assert before["timeline_status"] == 200 and before["timeline"]["data"], "the job must have a drawn timeline"
    assert before["totals"]["gpu_hours"] > 0 and before["by_team"] and before["by_category"]

    backup = tmp_path / "backup"
    backup.mkdir()
    restored_storage = tmp_path / "restored-storage"
    # 1. The database first (docs/operations.md: a file newer than the dump is a harmless orphan).
    if connection.vendor == "postgresql":
        dump = backup / "fleet.dump"
        run(["pg_dump", "--format=custom", f"--file={dump}", source_url])
        restored_name = f"{connection.settings_dict['NAME']}_restored_{uuid.uuid4().hex[:6]}"
        restored_url = source_url.rsplit("/", 1)[0] + f"/{restored_name}"
        with connection.cursor() as cursor:
            cursor.execute(f'CREATE DATABASE "{restored_name}"')
    else:  # embedded SQLite: with the service stopped, copy the database file as a whole
        connections.close_all()
        source = connection.settings_dict["NAME"]
        for suffix in ("", "-wal"):
            if os.path.exists(source + suffix):
                shutil.copy2(source + suffix, backup / f"fleet.sqlite3{suffix}")
        restored_url = f"sqlite:///{tmp_path / 'restored.sqlite3'}"
    # 2. The storage folder (rsync -a in production; content-addressed files never change).
    shutil.copytree(storage_dir, backup / "storage")

    try:
        # Restore into an empty database and an empty storage folder.
        if connection.vendor == "postgresql":
            run(["pg_restore", "--no-owner", "--exit-on-error", f"--dbname={restored_url}", str(dump)])
        else:
            for suffix in ("", "-wal"):
                if (backup / f"fleet.sqlite3{suffix}").exists():
                    shutil.copy2(backup / f"fleet.sqlite3{suffix}", str(tmp_path / "restored.sqlite3") + suffix)
        shutil.copytree(backup / "storage", restored_storage)
        env = service_env(restored_url, restored_storage)
        run([sys.executable, "manage.py", "migrate", "--noinput"], env)
        checked = run([sys.executable, "manage.py", "check_storage"], env)
        assert "0 orphaned" in checked and " 0 referenced but missing" in checked, checked

        # The original storage is gone: the restored copy must stand on its own.
        storage_dir.rename(tmp_path / "original-storage-moved-away")
        after = figures(restored_url, restored_storage, job_key, first, last)
    finally:
        if connection.vendor == "postgresql":
            with connection.cursor() as cursor:
                cursor.execute(f'DROP DATABASE IF EXISTS "{restored_name}" WITH (FORCE)')
        if not storage_dir.exists():
            (tmp_path / "original-storage-moved-away").rename(storage_dir)

    assert after["counts"] == before["counts"]
    assert after["job_rows"] == before["job_rows"]  # every stored figure, bit for bit
    # Sums of floats may differ in the last bit when the restored rows are scanned in another order.
    for figure in ("totals", "by_team", "by_category"):
        assert rounded(after[figure]) == rounded(before[figure]), figure
    assert after["timeline"] == before["timeline"]
    assert after["overview_status"] == before["overview_status"] == 200
