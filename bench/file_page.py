"""The file page's cost on a large log: one page of lines at its start, middle and end, and a search.

A 400,000-line, 30 MiB log (the size of a long training run's stdout, past the 20 MiB artifact cap
a stored log would be cut at) is read in the page's chunks (`READ_CHUNK`) from memory, as
`triage.dashboard.files` reads a stored file. The baseline, in the same run, is counting the
file's lines with `bytes.count` over the same chunks: the least any page that says "line N of M"
pays. Results in bench/results/file_page.json.
Usage: .venv/bin/python bench/file_page.py
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from triage.dashboard import files  # noqa: E402  (pure: no Django needed)

CHUNK = 2**20  # as the view's READ_CHUNK
LINES = 400_000
ROUNDS = 7


def median_ms(step) -> float:
    times = []
    for _ in range(ROUNDS):
        began = time.perf_counter()
        step()
        times.append((time.perf_counter() - began) * 1000)
    return statistics.median(times)


def main() -> None:
    log = b"".join(
        b"2026-11-20 10:%02d:%02d,123 INFO __main__: step %d loss=0.4321 lr=0.0001 tokens/s=182345\n"
        % (i // 60 % 60, i % 60, i)
        for i in range(LINES)
    )

    def chunks():
        return (log[i : i + CHUNK] for i in range(0, len(log), CHUNK))

    baseline = median_ms(lambda: sum(chunk.count(b"\n") for chunk in chunks()))
    pages = {
        "page at the start": median_ms(lambda: files.read_window(chunks(), 1)),
        "page in the middle": median_ms(lambda: files.read_window(chunks(), files.page_start(LINES // 2))),
        "page at the end": median_ms(lambda: files.read_window(chunks(), files.page_start(LINES))),
        "search (matches on 4,000 lines)": median_ms(lambda: files.find_lines(chunks(), "step 1999")),
    }
    result = {
        "benchmark": "file_page",
        "log_mib": round(len(log) / 2**20, 1),
        "lines": LINES,
        "baseline_count_lines_ms": baseline,
        "ms": pages,
        "ratios_to_baseline": {name: ms / baseline for name, ms in pages.items()},
        "measured_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    out = REPO / "bench" / "results" / "file_page.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"count lines (baseline) {baseline:8.1f} ms")
    for name, ms in pages.items():
        print(f"{name:32} {ms:8.1f} ms  x{ms / baseline:.1f}")
    print(f"wrote {out.relative_to(REPO)}")


if __name__ == "__main__":
    main()
