"""Where an import's time goes: each thread's CPU, sampled every half second while it runs.

Imports an archive (default: the 1,000-job demo, 2 x samples) as `bench/run.py` does, in a fresh
process, database and storage folder, and reads `/proc/<pid>/task/*/stat` every `--every` seconds.
Prints one line per sample (CPUs in use in all, by the main thread, and by the busiest other threads,
named by their thread id's offset from the main thread's) and each thread's user and system CPU over
the whole run. Shows which phase runs on how many CPUs, and whether a thread waits on the others.
A diagnostic, not part of `make bench`; Linux only.

Usage: .venv/bin/python bench/ingest_timeline.py [--archive ZIP] [--every 0.5]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from run import INGEST, PRODUCTION, REPO, data_folder, demo_archive  # noqa: E402

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def thread_times(pid: int) -> dict[int, tuple[float, float]]:
    """(user, system) CPU seconds of each of the process's threads, by thread id."""
    times = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/stat") as stat:
                fields = stat.read().rsplit(")", 1)[1].split()
        except FileNotFoundError:  # the thread ended meanwhile
            continue
        times[int(tid)] = (int(fields[11]) / CLOCK_TICKS, int(fields[12]) / CLOCK_TICKS)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--archive", type=Path, help="archive to import (default: the 1,000-job demo, 2 x samples)")
    parser.add_argument("--every", type=float, default=0.5, help="seconds between samples")
    args = parser.parse_args()
    archive = (args.archive or demo_archive(1000, seed=1, sample_density=2)).resolve()
    with data_folder() as data_dir:
        child = subprocess.Popen(
            [sys.executable, "-c", INGEST.format(archive=str(archive))],
            cwd=REPO,
            env={**os.environ, **PRODUCTION, "DATA_DIR": data_dir},
            stdout=subprocess.PIPE,
            text=True,
        )
        start, last, seen = time.monotonic(), {}, {}
        while child.poll() is None:
            try:
                now = thread_times(child.pid)
            except FileNotFoundError:  # the process ended between poll() and here
                break
            used = {tid: sum(now[tid]) - sum(last.get(tid, (0.0, 0.0))) for tid in now}
            last = now
            seen.update(now)
            others = sorted(((cpu, tid) for tid, cpu in used.items() if tid != child.pid and cpu > 0), reverse=True)
            print(
                f"{time.monotonic() - start:6.1f} s  CPUs {sum(used.values()) / args.every:4.2f}"
                f"  main {used.get(child.pid, 0.0) / args.every:4.2f}  "
                + " ".join(f"+{tid - child.pid}: {cpu / args.every:.2f}" for cpu, tid in others[:4])
            )
            time.sleep(args.every)
        result = json.loads(child.stdout.read().strip().splitlines()[-1])
    print(f"import: {result['seconds']:.1f} s, {result['jobs']} jobs (the lines above include start-up)")
    for tid, (user, system) in sorted(seen.items()):
        if user + system >= 0.1:
            name = "main" if tid == child.pid else f"+{tid - child.pid}"
            print(f"thread {name:>6}: user {user:6.2f} s, system {system:6.2f} s")


if __name__ == "__main__":
    main()
