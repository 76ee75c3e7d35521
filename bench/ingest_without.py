"""How far the import would be from the target without the per-job files, log scan and collector.

`bench/run.py` measures the import against the pyarrow floor; `bench/ingest_steps.py` splits its
time into steps. This answers the question those leave: would dropping what design.md prescribes
per job — a blob file per series and per artifact, log events found in every log — bring the
import to a third of the floor's throughput on this machine? Each variant imports the same archive
in a fresh process, database and data folder, with the floor measured in the same run:

- whole: the import as it is (what `bench/run.py` measures);
- no files: series and artifact blobs are hashed and named but not written;
- no files, no log scan, no GC: as above, logs are not scanned for events, and Python's cyclic
  garbage collector is off for the import (what is left is reading, checking and normalising the
  metrics, encoding each series, the summaries and the rows).

The variants are measurements only (the child replaces functions of `fleet.ingest`); nothing in
the product switches these steps off. Results in bench/results/ingest_without_<jobs>.json;
docs/operations.md ("Import speed") quotes them.
Usage: .venv/bin/python bench/ingest_without.py [--jobs 10000]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "bench"))

from run import BASELINE, DJANGO_CHILD, PRODUCTION, RESULTS, data_folder, demo_archive, run_child  # noqa: E402

VARIANT = (
    DJANGO_CHILD
    + r"""
import gc, hashlib, json, resource, time
from fleet import ingest
from fleet.signals import jobs_ingested
jobs_ingested.receivers.clear()
without = set({without!r})
if "files" in without:
    def named_only(folder, content, suffix=""):
        return f"{{folder}}/{{hashlib.sha256(content).hexdigest()}}{{suffix}}"
    ingest._store_blob = named_only
if "logs" in without:
    ingest._log_events = lambda artifact: None
if "gc" in without:
    gc.disable()
before = resource.getrusage(resource.RUSAGE_SELF)
start = time.perf_counter()
run = ingest.execute_run(ingest.create_run({archive!r}).pk)
elapsed = time.perf_counter() - start
after = resource.getrusage(resource.RUSAGE_SELF)
print(json.dumps({{"seconds": elapsed, "jobs": run.jobs_created, "status": run.status,
                  "cpu_seconds": after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime,
                  "peak_rss_mib": after.ru_maxrss / 1024}}))
"""
)

VARIANTS = {"whole": (), "no files": ("files",), "no files, no log scan, no GC": ("files", "logs", "gc")}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=10_000)
    args = parser.parse_args()
    archive = demo_archive(args.jobs, seed=1, sample_density=2)
    results: dict[str, dict] = {}
    for name, without in VARIANTS.items():
        floor = run_child(BASELINE.format(archive=str(archive)))
        with data_folder() as data:
            env = {**PRODUCTION, "DATA_DIR": data}
            variant = run_child(VARIANT.format(archive=str(archive), without=sorted(without)), env=env)
        variant["floor_seconds"] = floor["seconds"]
        variant["throughput_over_floor"] = floor["seconds"] / variant["seconds"]
        results[name] = variant
        print(
            f"{name:32} {variant['seconds']:7.1f} s  floor {floor['seconds']:5.1f} s  "
            f"ratio {variant['throughput_over_floor']:.3f}  CPU {variant['cpu_seconds']:6.1f} s",
            flush=True,
        )
    RESULTS.mkdir(parents=True, exist_ok=True)
    out = RESULTS / f"ingest_without_{args.jobs}.json"
    record = {
        "archive": archive.name,
        "variants": results,
        "target_ratio": 1 / 3,
        "measured_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    out.write_text(json.dumps(record, indent=2) + "\n")
    print(f"wrote {out.relative_to(REPO)}")


if __name__ == "__main__":
    main()
