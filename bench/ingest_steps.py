"""Where an import's time goes: each step's cost per job beside the pyarrow floor's, in the same run.

`bench/run.py` says how far the whole import is from the floor; this says which steps make up the
distance, with the real functions on a 1,000-job demo archive of the same density (2 × samples).
The floor and the whole import each run in a fresh process (`bench/run.py`'s children); the steps
are timed here, one after the other over every job:

- parse: `ArchiveStream` preparing (validating the metrics file and spilling it by job, the jobs
  file, logs and scripts) and then handing out the jobs (reading each bucket back, normalising it);
- encode: each job's series as its own zstd Parquet blob (`SeriesSlice.to_parquet_bytes`, on one
  thread here; the import encodes on two), and, for comparison, the same series 50 jobs to one
  table (what a per-batch layout would pay);
- summary, log events, fingerprint: what `store_jobs` computes per job;
- rest: the whole import minus the steps above (rows, blob files, artifacts, transactions).

Results in bench/results/ingest_steps.json; docs/operations.md ("Import speed") quotes them.
Usage: .venv/bin/python bench/ingest_steps.py [--jobs 1000]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

from run import BASELINE, INGEST, RESULTS, data_folder, demo_archive, run_child  # noqa: E402

BATCH = 50  # jobs per table in the batched-encoding comparison


def time_steps(archive: Path, work_dir: str) -> dict:
    """Seconds per step over all jobs of the archive (see the module's docstring)."""
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    import django

    django.setup()
    import pandas as pd
    from django.conf import settings

    from fleet import ingest
    from fleet import series as series_lib
    from fleet.archive.parser import ArchiveStream
    from fleet.logevents import extract_log_events

    seconds: dict[str, float] = {}
    start = time.perf_counter()
    with ArchiveStream(
        archive,
        artifact_max_bytes=settings.ARTIFACT_MAX_BYTES,
        limits=ingest.reader_limits(),
        progress=lambda _text: None,
        work_dir=work_dir,
    ) as stream:
        seconds["parse: validate and spill"] = time.perf_counter() - start
        start = time.perf_counter()
        jobs = list(stream)
        seconds["parse: read back and normalise per job"] = time.perf_counter() - start
    with_series = [job for job in jobs if job.series is not None and len(job.series)]

    def timed(name: str, step) -> list:
        begin = time.perf_counter()
        results = [step(job) for job in with_series]
        seconds[name] = time.perf_counter() - begin
        return results

    blobs = timed("encode: one Parquet blob per job", lambda job: job.series.to_parquet_bytes())
    timed(
        "summary",
        lambda job: job.series.summarize(
            start=job.record.start_time, end=job.record.end_time, gpu_count=job.record.gpu_count
        ),
    )
    timed(
        "log events",
        lambda job: [
            extract_log_events(a.content.decode("utf-8", errors="replace")) for a in job.artifacts if a.kind == "log"
        ],
    )
    by_job = dict(zip((id(job) for job in with_series), blobs, strict=True))
    timed("fingerprint", lambda job: ingest.fingerprint(job.record, by_job[id(job)], job.artifacts))

    begin = time.perf_counter()
    for first in range(0, len(with_series), BATCH):
        batch = with_series[first : first + BATCH]
        frame = pd.concat([job.series.frame() for job in batch], ignore_index=True)
        series_lib.to_parquet_bytes(frame)
    batched = time.perf_counter() - begin
    return {"jobs": len(jobs), "jobs_with_series": len(with_series), "seconds": seconds, "batched_encode": batched}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--jobs", type=int, default=1000, help="jobs in the demo archive (default 1000)")
    args = parser.parse_args()
    archive = demo_archive(args.jobs, seed=1, sample_density=2)
    floor = run_child(BASELINE.format(archive=str(archive)))
    with data_folder() as data_dir:
        env = {"DEBUG": "1", "DATA_DIR": data_dir, "LOG_LEVEL": "WARNING"}
        whole = run_child(INGEST.format(archive=str(archive)), env)
    with data_folder() as work_dir:
        steps = time_steps(archive, work_dir)

    jobs = steps["jobs"]
    floor_ms = floor["seconds"] / floor["jobs"] * 1000
    per_job = {name: seconds / jobs * 1000 for name, seconds in steps["seconds"].items()}
    per_job["rest (whole import minus the steps above)"] = whole["seconds"] / jobs * 1000 - sum(per_job.values())
    result = {
        "benchmark": f"ingest_steps_{jobs}",
        "archive": archive.name,
        "floor_ms_per_job": floor_ms,
        "import_ms_per_job": whole["seconds"] / jobs * 1000,
        # A third of the floor's throughput leaves this much per job for the whole import.
        "budget_ms_per_job_at_a_third_of_the_floor": 3 * floor_ms,
        "steps_ms_per_job": per_job,
        "steps_over_floor": {name: ms / floor_ms for name, ms in per_job.items()},
        f"encode_{BATCH}_jobs_per_table_ms_per_job": steps["batched_encode"] / steps["jobs_with_series"] * 1000,
        "measured_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    RESULTS.mkdir(parents=True, exist_ok=True)
    out = RESULTS / f"ingest_steps_{jobs}.json"
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))
    print(f"wrote {out.relative_to(REPO)}")


if __name__ == "__main__":
    main()
