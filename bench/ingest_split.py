"""What splitting an export buys: one archive imported whole, against its halves imported side by side.

docs/operations.md advises splitting a very large export (a day per archive) and letting several
workers import the parts at once. This measures that advice on this machine: the demo archive's
jobs are dealt into `--parts` archives (every other job; their metrics, logs and scripts with them),
then, in rounds, the whole archive is imported by one process and the parts by one process each at
the same time, every time into a fresh PostgreSQL database and data folder. Times are measured
from outside, from starting the processes to the last one's end (Django's start-up included on
both sides). PostgreSQL only: the embedded SQLite lets one writer in at a time, which is not how
several workers are deployed.

Results in bench/results/ingest_split_<jobs>.json; docs/operations.md ("Import speed") quotes them.
Usage: DATABASE_URL=postgres://... .venv/bin/python bench/ingest_split.py [--jobs 1000] [--parts 2] [--rounds 2]
"""

from __future__ import annotations

import argparse
import io
import json
import os
import subprocess
import sys
import time
import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "bench"))

from run import DJANGO_CHILD, INGEST, PRODUCTION, RESULTS, data_folder, demo_archive, fresh_database, run_child  # noqa: E402

MIGRATE = DJANGO_CHILD + 'print("{}")\n'


def split_archive(archive: Path, parts: int) -> list[Path]:
    """The archive's jobs dealt into `parts` archives (cached beside it), each with its jobs' files."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    outputs = [archive.with_name(f"{archive.stem}-part{i + 1}of{parts}.zip") for i in range(parts)]
    if all(path.exists() for path in outputs):
        return outputs
    with zipfile.ZipFile(archive) as source:
        header, *rows = source.read("jobs.csv").decode().splitlines()
        metrics = pq.ParquetFile(io.BytesIO(source.read("metrics.parquet"))).read()
        for index, path in enumerate(outputs):
            mine = rows[index::parts]
            ids = {row.split(",", 1)[0] for row in mine}
            buffer = io.BytesIO()
            pq.write_table(metrics.filter(pc.is_in(metrics["job_id"], value_set=pa.array(sorted(ids)))), buffer)
            with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as target:
                target.writestr("manifest.json", source.read("manifest.json"))
                target.writestr("jobs.csv", "\n".join([header, *mine]) + "\n")
                target.writestr("metrics.parquet", buffer.getvalue())
                for name in source.namelist():
                    folder, _, rest = name.partition("/")
                    if folder in ("logs", "scripts", "traces") and rest.partition("/")[0] in ids:
                        target.writestr(name, source.read(name))
    return outputs


def import_side_by_side(archives: list[Path]) -> dict:
    """Import each archive in a process of its own, all at once, into one fresh database."""
    with data_folder() as data, fresh_database() as database:
        env = {**os.environ, **PRODUCTION, "DATA_DIR": data, **database}
        run_child(MIGRATE, env)  # once, before the importers start (each would migrate again: a no-op)
        start = time.perf_counter()
        children = [
            subprocess.Popen(
                [sys.executable, "-c", INGEST.format(archive=str(path))],
                cwd=REPO,
                env=env,
                stdout=subprocess.PIPE,
                text=True,
            )
            for path in archives
        ]
        outputs = [child.communicate()[0] for child in children]
        seconds = time.perf_counter() - start
    if any(child.returncode for child in children):
        raise SystemExit("an import failed")
    results = [json.loads(out.strip().splitlines()[-1]) for out in outputs]
    return {"seconds": seconds, "jobs": sum(r["jobs"] for r in results), "imports": results}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=1000)
    parser.add_argument("--parts", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    if not os.environ.get("DATABASE_URL", "").startswith("postgres"):
        raise SystemExit("set DATABASE_URL to a PostgreSQL server: parts are imported side by side")
    archive = demo_archive(args.jobs, seed=1, sample_density=2)
    parts = split_archive(archive, args.parts)
    rounds = []
    for number in range(1, args.rounds + 1):
        whole = import_side_by_side([archive])
        split = import_side_by_side(parts)
        assert whole["jobs"] == split["jobs"] == args.jobs, (whole["jobs"], split["jobs"])
        rounds.append({"whole": whole, "parts": split, "speed_up": whole["seconds"] / split["seconds"]})
        times = f"whole {whole['seconds']:.1f} s, {args.parts} parts side by side {split['seconds']:.1f} s"
        print(f"round {number}: {times}: {whole['seconds'] / split['seconds']:.2f} times as fast", flush=True)
    RESULTS.mkdir(parents=True, exist_ok=True)
    out = RESULTS / f"ingest_split_{args.jobs}.json"
    measured_at = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    record = {
        "archive": archive.name,
        "parts": args.parts,
        "cpus": os.cpu_count(),
        "rounds": rounds,
        "measured_at": measured_at,
    }
    out.write_text(json.dumps(record, indent=2) + "\n")
    print(f"wrote {out.relative_to(REPO)}")


if __name__ == "__main__":
    main()
