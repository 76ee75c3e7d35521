"""The same import by two or more checkouts side by side, in one run, against the same floor.

This machine's speed drifts by a third between an afternoon and an evening, so a change's effect
is measured against the code before it in the same run: each checkout imports the same archive in
a fresh process, database and storage folder, in turn, `--reps` times, with the pyarrow floor
(`run.BASELINE`) measured before each round. Reports each checkout's median seconds and its
throughput over the floor's. Check the older code out with `git worktree add <dir> <rev>` (it
uses this checkout's virtualenv). Folders are kept until the end of the run (see `run.data_folder`).

Usage: .venv/bin/python bench/compare_ingest.py [--archive ZIP] [--reps 3] DIR [DIR ...]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from run import BASELINE, INGEST, PRODUCTION, data_folder, demo_archive, run_child  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("checkouts", nargs="+", type=Path, help="checkout folders to compare (this one is '.')")
    parser.add_argument("--archive", type=Path, help="archive to import (default: the 1,000-job demo, 2 x samples)")
    parser.add_argument("--reps", type=int, default=3, help="rounds; each checkout imports once per round")
    args = parser.parse_args()
    archive = (args.archive or demo_archive(1000, seed=1, sample_density=2)).resolve()
    checkouts = [folder.resolve() for folder in args.checkouts]
    for folder in checkouts:
        if not (folder / "manage.py").exists():
            raise SystemExit(f"{folder}: not a checkout of this project (no manage.py)")
    floors: list[float] = []
    seconds: dict[Path, list[float]] = {folder: [] for folder in checkouts}
    with data_folder() as data_dir:
        for round_ in range(args.reps):
            floors.append(run_child(BASELINE.format(archive=str(archive)))["seconds"])
            for index, folder in enumerate(checkouts):
                env = {**PRODUCTION, "DATA_DIR": os.path.join(data_dir, f"{round_}-{index}")}
                result = run_child(INGEST.format(archive=str(archive)), env, cwd=folder)
                seconds[folder].append(result["seconds"])
                print(f"round {round_ + 1}: {folder.name}: {result['seconds']:.2f} s", flush=True)
    floor = statistics.median(floors)
    print(f"floor (pyarrow), median of {len(floors)}: {floor:.2f} s")
    for folder, times in seconds.items():
        median = statistics.median(times)
        print(f"{folder}: median {median:.2f} s, throughput / floor {floor / median:.4f}")


if __name__ == "__main__":
    main()
