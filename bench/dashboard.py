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
    pages = {
        "healthz (baseline)": "/healthz",
        "overview": "/overview/?period=30d",
        "overview 90 days": "/overview/?period=90d",
        "teams": "/teams/?period=30d",
        "team": "/teams/load-team-03/?period=30d",
        "jobs": "/jobs/",
        "jobs filtered": "/jobs/?team=load-team-03&q=load-job-1",
        "job detail": f"/jobs/{job.pk}/",
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
        timings[name] = {"median_ms": statistics.median(samples), "max_ms": max(samples)}
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
