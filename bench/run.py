"""Benchmarks. `make bench` runs them and writes bench/results/<name>.json.

Figures are reported as ratios against a baseline measured in the same run, because this kind of
machine is noisy: absolute seconds move from run to run, the ratio much less.

ingest_5k: import a 5,000-job demo archive with `ingest_archive` (parse, validate, summarise,
store series blobs and rows) versus the floor any importer has to pay: pyarrow reading the same
metrics file and computing the same per-job mean GPU utilization.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
RESULTS = REPO / "bench" / "results"
CACHE = REPO / "bench" / ".cache"


def run_child(code: str, env: dict | None = None) -> dict:
    """Run a measurement in a fresh process so its peak memory is its own."""
    result = subprocess.run(
        [sys.executable, "-c", code],
        cwd=REPO,
        env={**os.environ, **(env or {})},
        capture_output=True,
        text=True,
        check=False,
    )
    if result.returncode not in (0, 1):
        sys.stderr.write(result.stdout[-3000:] + result.stderr[-3000:])
        raise SystemExit(f"benchmark child failed with exit code {result.returncode}")
    return json.loads(result.stdout.strip().splitlines()[-1])


BASELINE = r"""
import json, resource, sys, time, zipfile, io
import pyarrow.parquet as pq, pyarrow.compute as pc
start = time.perf_counter()
with zipfile.ZipFile(sys.argv[1] if len(sys.argv) > 1 else {archive!r}) as z:
    table = pq.read_table(io.BytesIO(z.read("metrics.parquet")), columns=["job_id", "gpu", "gpu_util"])
table = table.filter(pc.is_valid(table["gpu"]))
means = table.group_by("job_id").aggregate([("gpu_util", "mean")])
elapsed = time.perf_counter() - start
print(json.dumps({{"seconds": elapsed, "samples": table.num_rows, "jobs": means.num_rows,
                  "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}}))
"""

INGEST = r"""
import json, os, resource, time
import django
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
django.setup()
from django.core.management import call_command
call_command("migrate", verbosity=0)
from fleet import ingest
rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
start = time.perf_counter()
run = ingest.create_run({archive!r})
run = ingest.execute_run(run.pk)
elapsed = time.perf_counter() - start
print(json.dumps({{"seconds": elapsed, "samples": run.samples, "jobs": run.jobs_created,
                  "rejected": run.jobs_rejected, "status": run.status, "rss_before_mib": rss_before,
                  "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}}))
"""


def demo_archive(jobs: int, seed: int) -> Path:
    CACHE.mkdir(parents=True, exist_ok=True)
    archive = CACHE / f"demo-{jobs}-{seed}.zip"
    if not archive.exists():
        subprocess.run(
            [
                sys.executable,
                "manage.py",
                "make_demo_fleet",
                "--out",
                str(archive),
                "--jobs",
                str(jobs),
                "--seed",
                str(seed),
            ],
            cwd=REPO,
            env={**os.environ, "DEBUG": "1"},
            check=True,
        )
    return archive


def bench_ingest(jobs: int) -> dict:
    archive = demo_archive(jobs, seed=1)
    baseline = run_child(BASELINE.format(archive=str(archive)))
    with tempfile.TemporaryDirectory() as data_dir:
        # A fresh embedded database and storage folder, unless DATABASE_URL points elsewhere.
        env = {"DEBUG": "1", "DATA_DIR": data_dir, "LOG_LEVEL": "WARNING"}
        ingest = run_child(INGEST.format(archive=str(archive)), env)
    return {
        "benchmark": f"ingest_{jobs}",
        "archive": archive.name,
        "archive_mib": round(archive.stat().st_size / 2**20, 1),
        "database": "postgresql" if os.environ.get("DATABASE_URL", "").startswith("postgres") else "sqlite",
        "ingest": ingest | {"samples_per_s": ingest["samples"] / ingest["seconds"]},
        "baseline_pyarrow_mean": baseline | {"samples_per_s": baseline["samples"] / baseline["seconds"]},
        "ratios": {
            "time_ingest_over_baseline": ingest["seconds"] / baseline["seconds"],
            "throughput_ingest_over_baseline": (ingest["samples"] / ingest["seconds"])
            / (baseline["samples"] / baseline["seconds"]),
            "peak_memory_ingest_over_baseline": ingest["peak_rss_mib"] / baseline["peak_rss_mib"],
        },
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--jobs", type=int, default=5000, help="jobs in the demo archive (default 5000)")
    args = parser.parse_args()
    RESULTS.mkdir(parents=True, exist_ok=True)
    result = bench_ingest(args.jobs)
    result["machine"] = {"python": platform.python_version(), "cpus": os.cpu_count(), "platform": platform.platform()}
    result["measured_at"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    out = RESULTS / f"ingest_{args.jobs}.json"
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result["ratios"], indent=2))
    print(f"wrote {out.relative_to(REPO)}")


if __name__ == "__main__":
    main()
