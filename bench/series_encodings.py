"""What one job's series costs to encode, and how large it is, in the stored format and a few others.

The import's largest single step is encoding each job's series blob (docs/operations.md, "Import
speed"). This measures that step alone, per job, for the format stored today (zstd Parquet with
`fleet.series.PARQUET_OPTIONS`) beside LZ4 and uncompressed Parquet and Arrow IPC files with zstd,
LZ4 or no compression, on the first jobs of a demo archive's `metrics.parquet` (each job's rows in
the normalised column order, metrics without a value left out, as the importer stores them). CPU
time, so the other core's load moves it less; results in bench/results/series_encodings.json.
Usage: .venv/bin/python bench/series_encodings.py [--archive bench/.cache/demo-1000-1-x2.zip] [--jobs 300]
"""

from __future__ import annotations

import argparse
import io
import json
import sys
import time
import zipfile
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from fleet.series import PARQUET_OPTIONS  # noqa: E402

KEYS = ("timestamp", "host", "gpu")


def job_tables(archive: Path, jobs: int) -> list[pa.Table]:
    """The first `jobs` jobs' rows of the archive's metrics.parquet, one table each."""
    with zipfile.ZipFile(archive) as bundle, bundle.open("metrics.parquet") as member:
        table = pq.ParquetFile(io.BytesIO(member.read())).read()
    ids = table.column("job_id").to_numpy(zero_copy_only=False)
    starts = np.r_[0, np.flatnonzero(ids[1:] != ids[:-1]) + 1]
    ends = np.r_[starts[1:], len(ids)]
    table = table.drop_columns(["job_id"])
    tables = []
    for begin, end in list(zip(starts, ends, strict=True))[:jobs]:
        part = table.slice(begin, end - begin)
        kept = [n for n in part.column_names if n in (*KEYS, "gpu_util") or part.column(n).null_count < len(part)]
        tables.append(part.select(kept))
    return tables


def parquet(**options):
    def encode(table: pa.Table) -> int:
        out = pa.BufferOutputStream()
        pq.write_table(table, out, **options)
        return out.getvalue().size

    return encode


def arrow_ipc(codec: str | None):
    options = pa.ipc.IpcWriteOptions(compression=codec)

    def encode(table: pa.Table) -> int:
        out = pa.BufferOutputStream()
        with pa.ipc.new_file(out, table.schema, options=options) as writer:
            writer.write_table(table)
        return out.getvalue().size

    return encode


FORMATS = {
    "parquet zstd (stored today)": parquet(**PARQUET_OPTIONS),
    "parquet lz4": parquet(**{**PARQUET_OPTIONS, "compression": "lz4"}),
    "parquet uncompressed": parquet(**{**PARQUET_OPTIONS, "compression": "none"}),
    "arrow ipc zstd": arrow_ipc("zstd"),
    "arrow ipc lz4": arrow_ipc("lz4"),
    "arrow ipc uncompressed": arrow_ipc(None),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--archive", type=Path, default=REPO / "bench" / ".cache" / "demo-1000-1-x2.zip")
    parser.add_argument("--jobs", type=int, default=300)
    args = parser.parse_args()
    if not args.archive.exists():
        sys.exit(
            f"{args.archive} is missing: make it with `DEBUG=1 .venv/bin/python manage.py make_demo_fleet "
            f"--out {args.archive} --jobs 1000 --seed 1 --sample-density 2`"
        )
    tables = job_tables(args.archive, args.jobs)
    raw = sum(table.nbytes for table in tables) / len(tables)
    results = []
    for name, encode in FORMATS.items():
        encode(tables[0])  # warm up
        started = time.process_time()
        size = sum(encode(table) for table in tables)
        cpu_ms = (time.process_time() - started) * 1000 / len(tables)
        results.append(
            {"format": name, "cpu_ms_per_job": round(cpu_ms, 3), "kib_per_job": round(size / len(tables) / 1024, 1)}
        )
        print(f"{name:28s} {cpu_ms:6.2f} ms a job  {size / len(tables) / 1024:7.1f} KiB a job")
    stored = results[0]
    for row in results:
        row["cpu_over_stored"] = round(row["cpu_ms_per_job"] / stored["cpu_ms_per_job"], 3)
        row["size_over_stored"] = round(row["kib_per_job"] / stored["kib_per_job"], 3)
    out = REPO / "bench" / "results" / "series_encodings.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    record = {
        "archive": args.archive.name,
        "jobs": len(tables),
        "rows_per_job": round(sum(t.num_rows for t in tables) / len(tables)),
        "raw_kib_per_job": round(raw / 1024, 1),
        "measured_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "formats": results,
    }
    out.write_text(json.dumps(record, indent=2) + "\n")
    print(f"wrote {out.relative_to(REPO)}")


if __name__ == "__main__":
    main()
