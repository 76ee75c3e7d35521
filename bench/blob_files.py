"""What creating one blob file costs on the data folder's file system, beside tmpfs, in the same run.

The import writes about 4.3 files a job (the series blob and each log, script and trace) with
`fleet.ingest._write_blob_file`. This writes `--files` blobs of a demo job's typical size (20 KiB of
random bytes, so nothing is de-duplicated) with that function into a fresh folder beside the cached
archives (where `bench/run.py` puts an import's DATA_DIR) and into one under /dev/shm (tmpfs), and
reports the CPU and wall time per file, and what 4.3 files a job cost against the import's budget
per job at a third of the floor's throughput (from bench/results/ingest_10000.json when there is
one). A diagnostic, not part of `make bench`; results in bench/results/blob_files.json.

Usage: .venv/bin/python bench/blob_files.py [--files 4000]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

from run import RESULTS, data_folder  # noqa: E402

FILES_PER_JOB = 4.3  # the demo fleet: a series blob and 3.3 artifacts a job


def per_file(folder: str, files: int) -> dict:
    from django.core.files.storage import FileSystemStorage

    from fleet.ingest import _write_blob_file

    storage = FileSystemStorage(location=folder)
    blobs = [os.urandom(20 * 1024) for _ in range(files)]
    names = [f"artifacts/{blob[:1].hex()}/{blob[:32].hex()}" for blob in blobs]
    wall, cpu = time.perf_counter(), time.process_time()
    for name, blob in zip(names, blobs, strict=True):
        _write_blob_file(storage, name, blob)
    return {
        "wall_us_per_file": (time.perf_counter() - wall) / files * 1e6,
        "cpu_us_per_file": (time.process_time() - cpu) / files * 1e6,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--files", type=int, default=4000)
    args = parser.parse_args()
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    import django

    django.setup()
    result: dict = {"files": args.files, "files_per_job": FILES_PER_JOB}
    with data_folder() as disk:
        result["data_folder"] = per_file(disk, args.files)
    with tempfile.TemporaryDirectory(dir="/dev/shm") as memory:
        result["tmpfs"] = per_file(memory, args.files)
    result["disk_over_tmpfs"] = result["data_folder"]["cpu_us_per_file"] / result["tmpfs"]["cpu_us_per_file"]
    result["files_ms_per_job"] = result["data_folder"]["cpu_us_per_file"] * FILES_PER_JOB / 1000
    ingest = RESULTS / "ingest_10000.json"
    if ingest.exists():
        measured = json.loads(ingest.read_text())
        floor = measured["baseline_pyarrow_mean"]
        budget_ms = 3 * floor["seconds"] / floor["jobs"] * 1000  # a third of the floor's throughput
        result["import_budget_ms_per_job"] = budget_ms
        result["files_over_budget"] = result["files_ms_per_job"] / budget_ms
    result["measured_at"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "blob_files.json").write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
