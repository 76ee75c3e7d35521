"""Dashboard speed on a large fleet: median server time per page over repeated requests.

Seeds N synthetic jobs (`seed_large_fleet`) into a fresh embedded database (or DATABASE_URL), then
requests each page in-process with Django's test client. The baseline is /healthz in the same run
(the framework's own floor: routing, middleware, one query); pages are reported as ratios to it and
in milliseconds against the 300 ms bar.
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
RESULTS = REPO / "bench" / "results"


def _long_job():
    """An 8-GPU job of 30 days sampled every 15 s (1.5 M rows), the job page's worst case."""
    from datetime import UTC, datetime, timedelta

    import numpy as np
    import pandas as pd
    from django.core.files.base import ContentFile

    from fleet.models import Cluster, Job, Team
    from fleet.series import to_parquet_bytes

    start = datetime(2026, 10, 20, tzinfo=UTC)
    job, created = Job.objects.get_or_create(
        cluster=Cluster.objects.get_or_create(name="load-a")[0], external_id="load-long-8gpu-30d",
        defaults={"team": Team.objects.first(), "user": "bench", "start_time": start,
                  "end_time": start + timedelta(days=30), "gpu_count": 8, "gpu_hours": 8 * 720},
    )  # fmt: skip
    if created or not job.series_file:
        n = 30 * 86400 // 15
        stamps = pd.date_range(start, periods=n, freq="15s", tz="UTC", unit="ms")
        rng = np.random.default_rng(1)
        frames = [
            pd.DataFrame({"timestamp": stamps, "host": "n1", "gpu": pd.array([g] * n, dtype="Int16"),
                          "gpu_util": rng.uniform(0, 100, n).astype("float32"),
                          "gpu_mem_used_mib": np.float32(40000), "gpu_mem_total_mib": np.float32(81920)})
            for g in range(8)
        ]  # fmt: skip
        job.series_file.save("long.parquet", ContentFile(to_parquet_bytes(pd.concat(frames, ignore_index=True))))
    return job


def main(jobs: int = 100_000, repeats: int = 15) -> dict:
    os.environ.setdefault("DEBUG", "1")
    os.environ.setdefault("DATA_DIR", tempfile.mkdtemp(prefix="fleet-bench-"))
    os.environ["DJANGO_SETTINGS_MODULE"] = "config.settings"
    os.environ["LOG_LEVEL"] = "WARNING"
    import django

    django.setup()
    from django.conf import settings
    from django.contrib.auth.models import Group, User
    from django.core.management import call_command
    from django.test import Client
    from django.test.utils import setup_test_environment

    setup_test_environment()
    settings.ALLOWED_HOSTS = ["testserver"]
    call_command("migrate", verbosity=0)
    from fleet.models import Job

    if Job.objects.filter(cluster__name__startswith="load-").count() < jobs:  # reuse a seeded DATA_DIR
        call_command("seed_large_fleet", jobs=jobs, verbosity=0, stdout=open(os.devnull, "w"))  # noqa: SIM115
    user, _ = User.objects.get_or_create(username="bench-operator")
    user.groups.add(Group.objects.get_or_create(name="operators")[0])
    client = Client()
    client.force_login(user)

    job = Job.objects.order_by("-unused_gpu_hours").first()
    long_job = _long_job()
    pages = {
        "healthz (baseline)": "/healthz",
        "overview (default 7 days)": "/overview/",
        "overview 30 days": "/overview/?period=30d",
        "overview 90 days": "/overview/?period=90d",
        "teams": "/teams/?period=30d",
        "team": "/teams/load-team-03/?period=30d",
        "jobs": "/jobs/",
        "jobs filtered": "/jobs/?team=load-team-03&q=load-job-1",
        "jobs by cause": "/jobs/?category=model_checkpointing&util_max=50",
        "causes": "/categories/?period=30d",
        "job detail": f"/jobs/{job.pk}/",
        "timeline 8 GPUs x 30 days @15 s": f"/jobs/{long_job.pk}/timeline.json",
        "metrics (a Prometheus scrape)": "/metrics",
    }
    timings = {}
    for name, url in pages.items():
        client.get(url)  # warm caches and connections
        samples = []
        for _ in range(repeats):
            started = time.perf_counter()
            response = client.get(url)
            samples.append((time.perf_counter() - started) * 1000)
            assert response.status_code == 200, (url, response.status_code)
        timings[name] = {
            "median_ms": statistics.median(samples),
            "max_ms": max(samples),
            "bytes": len(response.content) if not response.streaming else None,
        }
    baseline = timings["healthz (baseline)"]["median_ms"]
    result = {
        "benchmark": f"dashboard_{jobs}",
        "database": settings.DATABASES["default"]["ENGINE"].rsplit(".", 1)[-1],
        "jobs": Job.objects.count(),
        "repeats": repeats,
        "pages": {
            name: t | {"ratio_to_baseline": t["median_ms"] / baseline, "under_300ms": t["median_ms"] < 300}
            for name, t in timings.items()
        },
        "measured_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    RESULTS.mkdir(parents=True, exist_ok=True)
    out = RESULTS / f"dashboard_{jobs}.json"
    out.write_text(json.dumps(result, indent=2) + "\n")
    for name, t in result["pages"].items():
        print(f"{name:<22} {t['median_ms']:8.1f} ms  x{t['ratio_to_baseline']:.1f}")
    print(f"wrote {out.relative_to(REPO)}")
    return result


if __name__ == "__main__":
    main(jobs=int(sys.argv[1]) if len(sys.argv) > 1 else 100_000)
