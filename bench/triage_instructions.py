"""Instructions per triaged job, counted by valgrind's callgrind: a figure the machine's load does not move.

Seconds on this kind of machine drift by a third within an hour (see run.py), far more than a
change of a few percent; callgrind counts the same instructions on every run. For each checkout
given, a child process triages the triage benchmark's jobs (`run.triage_bench_jobs`, made once
here and handed over in a file) under callgrind, once with `--jobs` jobs and once with none: the
difference over the jobs is what one job costs, start-up and imports cancelling out. The same for
merely loading each series (`fleet.series.from_parquet_bytes`), the triage benchmark's baseline.
Instructions are not time (memory, caches and Arrow's threads are not in them): a change that the
count shows should still be seen in `run.py --only triage` before it is called faster.

Usage: .venv/bin/python bench/triage_instructions.py [--jobs 40] [DIR ...]   (default: this checkout)
Old code: `git worktree add <dir> <rev>`. Writes bench/results/triage_instructions.json; needs
valgrind (Debian's package).
"""

from __future__ import annotations

import argparse
import json
import pickle
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

from run import RESULTS, triage_bench_jobs  # noqa: E402

# The checkout's code triages; this benchmark's `run.triage_step` says what (its imports are lazy,
# so they find the checkout, first on the path).
CHILD = r"""
import pickle, sys
sys.path.insert(0, {checkout!r})
sys.path.append({bench!r})
from fleet.series import from_parquet_bytes
from run import triage_step
blobs, *shared = pickle.load(open({jobs_file!r}, "rb"))
step = triage_step(*shared) if {step!r} == "triage" else from_parquet_bytes
step(blobs[0])  # what the first call loads lazily is start-up, in both runs
for blob in blobs[:{count}]:
    step(blob)
"""


def instructions(checkout: Path, jobs_file: str, step: str, count: int) -> int:
    code = CHILD.format(checkout=str(checkout), bench=str(REPO / "bench"), jobs_file=jobs_file, step=step, count=count)
    done = subprocess.run(
        ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
    )
    return int(re.search(r"Collected : (\d+)", done.stderr).group(1))


def per_job(checkout: Path, jobs_file: str, step: str, jobs: int) -> float:
    return (instructions(checkout, jobs_file, step, jobs) - instructions(checkout, jobs_file, step, 0)) / jobs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("checkouts", nargs="*", type=Path, default=[REPO], help="checkouts to count (default: this)")
    parser.add_argument("--jobs", type=int, default=40, help="8-GPU jobs triaged under callgrind (default 40)")
    args = parser.parse_args()
    results = {}
    with tempfile.NamedTemporaryFile(suffix=".pickle") as jobs_file:
        pickle.dump(triage_bench_jobs(args.jobs), jobs_file)
        jobs_file.flush()
        for checkout in (folder.resolve() for folder in args.checkouts):
            triage_cost = per_job(checkout, jobs_file.name, "triage", args.jobs)
            load_cost = per_job(checkout, jobs_file.name, "load", args.jobs)
            results[str(checkout)] = {
                "triage_instructions_per_job": round(triage_cost),
                "load_instructions_per_job": round(load_cost),
                "triage_over_load": triage_cost / load_cost,
            }
            print(f"{checkout}: triage {triage_cost / 1e6:.2f} M, load {load_cost / 1e6:.2f} M instructions per job")
    RESULTS.mkdir(parents=True, exist_ok=True)
    out = {"benchmark": "triage_instructions", "jobs": args.jobs, "checkouts": results}
    out["measured_at"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    (RESULTS / "triage_instructions.json").write_text(json.dumps(out, indent=2) + "\n")
    print("wrote bench/results/triage_instructions.json")


if __name__ == "__main__":
    main()
