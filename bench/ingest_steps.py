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
- store: writing the series and artifact blob files, then `store_jobs` with everything above
  already at hand (the rows and transactions), in a database and storage folder of its own;
- import again: the same archive into the database the whole import filled, after a dry run of
  it; every job is unchanged, so it is fingerprinted and compared, and nothing is encoded or written;
- rest: the whole import minus the steps above (progress, lookups, what the steps leave out); below
  zero where the import runs steps side by side on threads (encoding and blob files, the next bucket).

Results in bench/results/ingest_steps_1000.json (with the rows and files written);
docs/operations.md ("Import speed") quotes them. File creation is slow for a few minutes after
many files were deleted nearby (see `run.data_folder`): compare runs taken after a quiet spell.
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

from run import BASELINE, INGEST, PRODUCTION, RESULTS, data_folder, demo_archive, run_child  # noqa: E402

BATCH = 50  # jobs per table in the batched-encoding comparison

# The same archive again, into the database the whole import filled: first a dry run, then the
# import (every job unchanged: fingerprinted, compared, nothing encoded or written).
AGAIN = r"""
import json, os, time
import django
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
django.setup()
from fleet import ingest
from fleet.signals import jobs_ingested
jobs_ingested.receivers.clear()
start = time.perf_counter()
report = ingest.dry_run({archive!r})
dry_run = time.perf_counter() - start
start = time.perf_counter()
run = ingest.execute_run(ingest.create_run({archive!r}).pk)
print(json.dumps({{"seconds": time.perf_counter() - start, "unchanged": run.jobs_unchanged,
                  "dry_run_seconds": dry_run, "dry_run_unchanged": report.jobs_unchanged}}))
"""


def time_steps(archive: Path, work_dir: str) -> dict:
    """Seconds per step over all jobs of the archive (see the module's docstring)."""
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
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
    timed("fingerprint (the series' content digest, the record, the artifacts)", ingest.fingerprinted)

    # Storing, with what was timed above already at hand: first the files, then the rows.
    begin = time.perf_counter()
    by_job = dict(zip((id(job) for job in with_series), blobs, strict=True))
    names = {
        id(job): (
            ingest._store_blob("series", by_job[id(job)], ".parquet") if id(job) in by_job else "",
            tuple(ingest._store_blob("artifacts", a.content) for a in job.artifacts),
        )
        for job in jobs
    }
    seconds["store: blob files (series and artifacts)"] = time.perf_counter() - begin
    seconds["store: rows and transactions"], counts = _store_rows(jobs, names)
    counts["files"] = len({name for series, artifacts in names.values() for name in (series, *artifacts) if name})

    begin = time.perf_counter()
    for first in range(0, len(with_series), BATCH):
        batch = with_series[first : first + BATCH]
        frame = pd.concat([job.series.frame() for job in batch], ignore_index=True)
        series_lib.to_parquet_bytes(frame)
    batched = time.perf_counter() - begin
    return {
        "jobs": len(jobs),
        "jobs_with_series": len(with_series),
        "seconds": seconds,
        "batched_encode": batched,
        "stored": counts,
    }


def _store_rows(jobs, names: dict) -> tuple[float, dict]:
    """Seconds `ingest.store_jobs` takes over all jobs, INGEST_STORE_BATCH to a transaction, when encoding,
    summaries, fingerprints, log events and blob files are already done (the steps timed before):
    the rows, the ORM and the transactions. Also how many rows of each kind it wrote. `names`:
    each job's (by `id`) series blob name and artifact blob names."""
    from unittest import mock

    from django.conf import settings

    from fleet import ingest
    from fleet.logevents import extract_log_events
    from fleet.models import Artifact, Cluster, IngestRun, Job, LogEvent

    prepared = {id(job.record): ingest.fingerprinted(job) for job in jobs}
    blob_names = {id(job.record): names[id(job)] for job in jobs}
    summaries = {
        id(job.series): ingest.summary_of(job.series, job.record.start_time, job.record.end_time, job.record.gpu_count)
        for job in jobs
        if job.series is not None
    }
    events = {}
    for job in jobs:
        for artifact in job.artifacts:
            if artifact.kind == Artifact.Kind.LOG:
                text = artifact.content.decode("utf-8", errors="replace")
                events[text] = extract_log_events(text)
    run = IngestRun.objects.create(archive_path="bench", archive_name="bench")
    cluster = Cluster.objects.get_or_create(name=jobs[0].record.cluster)[0]
    teams = {name: ingest._team_for(name) for name in {job.record.team for job in jobs}}
    items = [ingest.JobToStore(cluster, teams[j.record.team], j.record, j.series, j.artifacts) for j in jobs]
    with (
        mock.patch.object(ingest, "fingerprinted", lambda job: prepared[id(job.record)]),
        mock.patch.object(
            ingest,
            "_store_blobs",
            lambda job, series, fp: ingest.Prepared(series, fp, *blob_names[id(job.record)], summaries.get(id(series))),
        ),
        mock.patch.object(ingest, "extract_log_events", lambda text, started=None: events[text]),
    ):
        begin = time.perf_counter()
        for first in range(0, len(items), settings.INGEST_STORE_BATCH):
            ingest.store_jobs(run, items[first : first + settings.INGEST_STORE_BATCH])
        elapsed = time.perf_counter() - begin
    counts = {model.__name__: model.objects.count() for model in (Job, Artifact, LogEvent)}
    return elapsed, counts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--jobs", type=int, default=1000, help="jobs in the demo archive (default 1000)")
    args = parser.parse_args()
    archive = demo_archive(args.jobs, seed=1, sample_density=2)
    floor = run_child(BASELINE.format(archive=str(archive)))
    # One folder for both, removed only at the end: files deleted just before others are created
    # make ext4 slow to create them (see `data_folder`), which would charge one side for the other.
    with data_folder() as data_dir:
        whole_dir, steps_dir = os.path.join(data_dir, "whole"), os.path.join(data_dir, "steps")
        env = {**PRODUCTION, "DATA_DIR": whole_dir}
        whole = run_child(INGEST.format(archive=str(archive)), env)
        again = run_child(AGAIN.format(archive=str(archive)), env)
        # The steps' own database and storage (the rows step writes jobs), never the project's.
        os.environ.update({**PRODUCTION, "DATA_DIR": steps_dir})
        steps = time_steps(archive, os.path.join(steps_dir, "work"))

    jobs = steps["jobs"]
    floor_ms = floor["seconds"] / floor["jobs"] * 1000
    per_job = {name: seconds / jobs * 1000 for name, seconds in steps["seconds"].items()}
    per_job["rest (whole import minus the steps above; below 0 where threads overlap them)"] = whole[
        "seconds"
    ] / jobs * 1000 - sum(per_job.values())
    result = {
        "benchmark": f"ingest_steps_{jobs}",
        "archive": archive.name,
        "floor_ms_per_job": floor_ms,
        "import_ms_per_job": whole["seconds"] / jobs * 1000,
        # A third of the floor's throughput leaves this much per job for the whole import.
        "budget_ms_per_job_at_a_third_of_the_floor": 3 * floor_ms,
        "steps_ms_per_job": per_job,
        # The same archive again: every job unchanged, so neither encoded nor written.
        "import_again_ms_per_job": again["seconds"] / jobs * 1000,
        "import_again_over_import": again["seconds"] / whole["seconds"],
        "dry_run_ms_per_job": again["dry_run_seconds"] / jobs * 1000,
        "dry_run_over_import": again["dry_run_seconds"] / whole["seconds"],
        "unchanged_again": {"import": again["unchanged"], "dry_run": again["dry_run_unchanged"]},
        "steps_over_floor": {name: ms / floor_ms for name, ms in per_job.items()},
        f"encode_{BATCH}_jobs_per_table_ms_per_job": steps["batched_encode"] / steps["jobs_with_series"] * 1000,
        "stored": steps["stored"],  # rows of each kind and blob files the steps wrote
        "measured_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    RESULTS.mkdir(parents=True, exist_ok=True)
    out = RESULTS / f"ingest_steps_{jobs}.json"
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))
    print(f"wrote {out.relative_to(REPO)}")


if __name__ == "__main__":
    main()
