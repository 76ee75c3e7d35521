"""Print, as JSON, the dashboard figures and one job's timeline for the database in DATABASE_URL and
the storage in STORAGE_DIR. Run as a separate process by tests/test_backup_restore.py, once against
the original and once against the restored copy, so both are read by the same code path.

    python -m tests.backup_figures <username> <cluster>/<external_id> <from YYYY-MM-DD> <to YYYY-MM-DD>
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import asdict, is_dataclass
from datetime import UTC, datetime, timedelta


def main(username: str, job_key: str, start: str, end: str) -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    import django

    django.setup()
    from django.conf import settings
    from django.contrib.auth.models import User
    from django.test import Client

    from fleet.models import AuditEvent, Job, Team
    from triage.dashboard import queries
    from triage.dashboard.periods import Period
    from triage.models import Finding

    settings.ALLOWED_HOSTS = ["testserver"]
    period = Period(
        datetime.fromisoformat(start).replace(tzinfo=UTC),
        datetime.fromisoformat(end).replace(tzinfo=UTC) + timedelta(days=1),
        "custom",
    )
    jobs = queries.in_period(Job.objects.all(), period)
    threshold = settings.LOW_UTIL_THRESHOLD
    totals = queries.totals(jobs, threshold)
    cluster, external_id = job_key.split("/", 1)
    job = Job.objects.get(cluster__name=cluster, external_id=external_id)
    client = Client()
    client.force_login(User.objects.get(username=username))
    timeline = client.get(f"/jobs/{job.pk}/timeline.json")
    overview = client.get(f"/overview/?from={start}&to={end}")
    figures = {
        "totals": asdict(totals) if is_dataclass(totals) else totals,
        "by_team": queries.by_team(jobs, threshold),
        "by_category": queries.by_category(jobs),
        "timeline_status": timeline.status_code,
        "timeline": timeline.json(),
        "overview_status": overview.status_code,
        "job_rows": sorted(
            map(
                list,
                Job.objects.values_list(
                    "cluster__name",
                    "external_id",
                    "team__slug",
                    "gpu_hours",
                    "mean_gpu_util",
                    "unused_gpu_hours",
                    "idle_gpu_hours",
                    "cost",
                    "series_file",
                    "fingerprint",
                ),
            )
        ),  # fmt: skip
        "counts": {
            "jobs": Job.objects.count(),
            "teams": Team.objects.count(),
            "findings": Finding.objects.count(),
            "audit": AuditEvent.objects.count(),
        },
    }
    json.dump(figures, sys.stdout, default=str, sort_keys=True)


if __name__ == "__main__":
    main(*sys.argv[1:5])
