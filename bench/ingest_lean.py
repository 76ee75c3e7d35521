"""Could any importer of this shape reach a third of the floor's throughput on this machine?

`bench/run.py` measures the import against the pyarrow floor; `bench/ingest_steps.py` and
`bench/ingest_without.py` say where its time goes. This measures a *lean* import of the same
archive, the least an importer that keeps what the product needs can do, so that the target can be
judged against a design rather than against today's code:

- one pass over `metrics.parquet`, row group by row group (no spill, no second read: the demo's
  rows come job by job), each column checked with the importer's own fast paths
  (`parse_timestamps`, `_parse_gpu`, `_metric_in_range`, the host and job-id checks);
- per job, on two threads: the summary (`fleet.series._summarize_columns`, as stored today), a
  SHA-256 of its columns (what the fingerprint hashes) and its series encoded (`--series`: zstd
  Parquet with `PARQUET_OPTIONS` as stored today, LZ4 Arrow IPC, or not encoded at all), appended to
  one pack file per 500 jobs instead of a file per job;
- every log and script read from the archive, hashed and appended to a pack file, the logs scanned
  for events (`fleet.logevents.extract_log_events`) on a thread beside the metrics;
- `--series checks-only`: reading and checking the metrics alone, nothing else (what no design
  of this kind can go below);
- the job, artifact and log-event rows inserted into a fresh SQLite database with `executemany`,
  500 jobs a transaction.

It leaves out what a real import also does (error reports, upserts against stored jobs, Django
models, progress, the run's own bookkeeping), so it is a lower bound for this shape of import, not a
candidate implementation. The floor and each variant run in fresh processes, side by side in the
same run. Results in bench/results/ingest_lean_<jobs>.json; docs/operations.md quotes them.
A diagnostic, not part of `make bench`.

`--vectorised` works out the summaries (the same figures, checked against the per-job function on
a sample), digests and encodings a row group's jobs at a time, sorting only the jobs whose rows are
out of normalised order and dropping repeated samples as normalising does; `--only` runs one side.

Usage: .venv/bin/python bench/ingest_lean.py [--jobs 10000] [--vectorised] [--only metrics|artifacts]
       [--series parquet-zstd ipc-lz4 none checks-only]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "bench"))

from run import BASELINE, RESULTS, data_folder, demo_archive, run_child  # noqa: E402

LEAN = r"""
import hashlib, io, json, os, queue, resource, shutil, sqlite3, sys, threading, time, zipfile
from concurrent.futures import ThreadPoolExecutor
import numpy as np, pandas as pd, pyarrow as pa, pyarrow.compute as pc, pyarrow.csv as pa_csv, pyarrow.parquet as pq
sys.path.insert(0, {repo!r})
from fleet.archive.parser import parse_timestamps, _parse_gpu, _metric_in_range, _trimmed_text
from fleet.canonical import METRICS, MAX_HOST_CHARS
from fleet.logevents import extract_log_events
from fleet.series import PARQUET_OPTIONS, _SummaryColumns, _summarize_columns

from fleet.canonical import SeriesSummary
from fleet.series import MAX_DEVICES_PER_HOST, gap_threshold_s

ARCHIVE, OUT, SERIES, VECTORISED, ONLY = {archive!r}, {out!r}, {series!r}, {vectorised!r}, {only!r}
PACK_JOBS = 500
start = time.perf_counter()
bundle = zipfile.ZipFile(ARCHIVE)

# Jobs: the few columns the summaries need.
jobs_table = pa_csv.read_csv(io.BytesIO(bundle.read("jobs.csv")), convert_options=pa_csv.ConvertOptions(
    column_types={{"job_id": pa.string(), "start_time": pa.string(), "end_time": pa.string()}}))
job_ids = jobs_table["job_id"].to_pylist()
starts = pd.to_datetime(pd.Series(jobs_table["start_time"].to_pylist()), utc=True, format="ISO8601")
ends = pd.to_datetime(pd.Series(jobs_table["end_time"].to_pylist()), utc=True, format="ISO8601")
gpus = jobs_table["gpu_count"].to_pylist()
jobs = {{j: (s.to_pydatetime(), e.to_pydatetime(), g) for j, s, e, g in zip(job_ids, starts, ends, gpus)}}
known = pa.array(job_ids)

db = sqlite3.connect(os.path.join(OUT, "lean.sqlite3"))
db.execute("PRAGMA journal_mode=WAL")
db.execute("CREATE TABLE job (id INTEGER PRIMARY KEY, external_id TEXT UNIQUE, start TEXT, end_ TEXT, gpu_count INT,"
           " mean REAL, peak REAL, unused REAL, idle REAL, coverage REAL, samples INT, period REAL, digest BLOB,"
           " pack TEXT, offset INT, length INT)")
db.execute("CREATE TABLE artifact (id INTEGER PRIMARY KEY, job TEXT, kind TEXT, path TEXT, sha256 TEXT, pack TEXT,"
           " offset INT, length INT)")
db.execute("CREATE TABLE logevent (job TEXT, artifact INT, kind TEXT, line INT, ts TEXT, text TEXT)")

class Pack:
    # Blobs appended to one file per PACK_JOBS jobs (a name, an offset and a length per blob).
    def __init__(self, kind):
        self.kind, self.count, self.file, self.name = kind, 0, None, ""
    def add(self, data, jobs_done):
        if self.file is None or jobs_done // PACK_JOBS != self.count:
            if self.file is not None:
                self.file.close()
            self.count = jobs_done // PACK_JOBS
            self.name = f"{{self.kind}}-{{self.count}}.pack"
            self.file = open(os.path.join(OUT, self.name), "wb")
        offset = self.file.tell()
        self.file.write(data)
        return self.name, offset, len(data)
    def close(self):
        if self.file is not None:
            self.file.close()

# Logs and scripts, on a thread beside the metrics: read, hash, pack, scan logs, insert.
def artifacts():
    pack, rows, events, done = Pack("artifacts"), [], [], 0
    names = [n for n in bundle.namelist() if n.startswith(("logs/", "scripts/"))]
    with zipfile.ZipFile(ARCHIVE) as own:
        for index, name in enumerate(names):
            folder, job, path = name.split("/", 2)
            data = own.read(name)
            digest = hashlib.sha256(data).hexdigest()
            where = pack.add(data, index // 4)
            rows.append((index, job, folder, path, digest, *where))
            if folder == "logs":
                for e in extract_log_events(data.decode("utf-8", errors="replace")):
                    stamp = e.timestamp.isoformat() if e.timestamp else None
                    events.append((job, index, e.kind, e.line_no, stamp, e.text[:500]))
    pack.close()
    return rows, events
side = ThreadPoolExecutor(1).submit(artifacts if SERIES != "checks-only" and ONLY != "metrics" else lambda: ([], []))

local = os.path.join(OUT, "metrics.parquet")
with bundle.open("metrics.parquet") as source, open(local, "wb") as target:
    shutil.copyfileobj(source, target, 1 << 20)
parquet = pq.ParquetFile(local)

def encode(table):
    if SERIES == "parquet-zstd":
        sink = pa.BufferOutputStream()
        pq.write_table(table, sink, **PARQUET_OPTIONS)
        return sink.getvalue().to_pybytes()
    if SERIES == "ipc-lz4":
        sink = pa.BufferOutputStream()
        with pa.ipc.new_file(sink, table.schema, options=pa.ipc.IpcWriteOptions(compression="lz4")) as w:
            w.write_table(table)
        return sink.getvalue().to_pybytes()
    return b""

def store_job(job_id, table):
    # What each job costs on the threads: its summary, its digest and its encoded series.
    s, e, g = jobs[job_id]
    t_ms = table["timestamp"].combine_chunks().cast(pa.int64()).to_numpy()
    host = pc.dictionary_encode(table["host"]).combine_chunks().indices.to_numpy().astype("int64")
    gpu = pc.fill_null(table["gpu"].combine_chunks(), -1).to_numpy().astype("int64")
    def floats(name):
        return table[name].to_numpy().astype("float64") if name in table.column_names else None
    columns = _SummaryColumns(t_ms=t_ms, host=host, gpu=gpu, util=floats("gpu_util"),
                              mem_used=floats("gpu_mem_used_mib"), mem_total=floats("gpu_mem_total_mib"))
    summary = _summarize_columns(columns, start=s, end=e, gpu_count=g, idle_threshold=5.0)
    # As the fingerprint's content digest: each column's values (a slice's own rows, not the
    # buffers it shares with its row group).
    digest = hashlib.sha256()
    for values in (t_ms, host, gpu):
        digest.update(values)
    for name in table.column_names[3:]:
        digest.update(np.ascontiguousarray(table[name].to_numpy()))
    return job_id, summary, digest.digest(), encode(table)

def summaries_of(chunk_jobs, edges, t_ms, host, gpu, util, used, total):
    # `_summarize_columns` of every job of a chunk at once (rows edges[i] to edges[i + 1] are job
    # i's, each in normalised order): the same arithmetic with segment sums instead of a call a job.
    count_jobs = len(chunk_jobs)
    jid = np.repeat(np.arange(count_jobs), np.diff(edges))
    start_s = np.array([jobs[j][0].timestamp() for j in chunk_jobs])
    end_s = np.array([jobs[j][1].timestamp() for j in chunk_jobs])
    allocated = np.maximum(0.0, end_s - start_s) * np.maximum(0, np.array([jobs[j][2] for j in chunk_jobs]))
    t = t_ms / 1000.0
    in_window = (gpu != -1) & (t >= start_s[jid]) & (t <= end_s[jid])
    peak = [None] * count_jobs
    if used is not None and total is not None:
        ok = in_window & ~np.isnan(used) & (total > 0)
        ratio = np.where(ok, 100.0 * used / np.where(total > 0, total, 1.0), -np.inf)
        peak = [None if value == -np.inf else float(value) for value in np.maximum.reduceat(ratio, edges[:-1])]
    chosen = np.flatnonzero(in_window & ~np.isnan(util))
    t_r, u_r, j_r = t[chosen], np.clip(util[chosen], 0.0, 100.0), jid[chosen]
    d_r = host[chosen] * (MAX_DEVICES_PER_HOST + 1) + gpu[chosen]
    rows = len(chosen)
    same_next = np.zeros(rows, dtype=bool)
    same_next[:-1] = (d_r[1:] == d_r[:-1]) & (j_r[1:] == j_r[:-1])
    step = np.zeros(rows)
    step[:-1] = t_r[1:] - t_r[:-1]
    positive = np.flatnonzero(same_next & (step > 0))
    bounds = np.searchsorted(j_r[positive], np.arange(count_jobs + 1))
    period = np.full(count_jobs, np.nan)
    for k in np.flatnonzero(np.diff(bounds)):
        period[k] = np.median(step[positive[bounds[k] : bounds[k + 1]]])
    p = period[j_r]
    gap = np.maximum(3 * p, 300.0)
    continuous = same_next & (step <= gap)
    holes = same_next & (step > gap)
    dt = np.where(continuous, step, np.minimum(p, np.maximum(0.0, end_s[j_r] - t_r)))
    def sums(weights):
        return np.bincount(j_r, weights=weights, minlength=count_jobs)
    counts = np.bincount(j_r, minlength=count_jobs)
    covered, weighted, plain = sums(dt), sums(u_r * dt), sums(u_r)
    unused, idle, gaps = sums((1.0 - u_r / 100.0) * dt), sums(np.where(u_r < 5.0, dt, 0.0)), sums(holes)
    out = []
    for k in range(count_jobs):
        if not counts[k]:
            out.append(SeriesSummary(sample_count=0, sampling_period_s=None, mean_gpu_util=None,
                                     peak_gpu_mem_util=peak[k], covered_gpu_hours=0.0, unused_gpu_hours=None,
                                     idle_gpu_hours=None, coverage=0.0))
        elif np.isnan(period[k]):
            out.append(SeriesSummary(sample_count=int(counts[k]), sampling_period_s=None,
                                     mean_gpu_util=plain[k] / counts[k], peak_gpu_mem_util=peak[k],
                                     covered_gpu_hours=0.0, unused_gpu_hours=None, idle_gpu_hours=None,
                                     coverage=0.0))
        else:
            c, a = float(covered[k]), float(allocated[k])
            out.append(SeriesSummary(
                sample_count=int(counts[k]), sampling_period_s=float(period[k]),
                mean_gpu_util=float(weighted[k] / c) if c > 0 else float(plain[k] / counts[k]),
                peak_gpu_mem_util=peak[k], covered_gpu_hours=c / 3600.0,
                unused_gpu_hours=min(float(unused[k]), a) / 3600.0, idle_gpu_hours=min(float(idle[k]), a) / 3600.0,
                coverage=min(1.0, c / a) if a > 0 else 0.0, gaps=int(gaps[k])))
    return out

def store_chunk(chunk_jobs, edges, body):
    # Every complete job of a chunk: summaries by segment sums, digests of numpy views, series encoded.
    t_ms = body["timestamp"].combine_chunks().cast(pa.int64()).to_numpy()
    names = pc.dictionary_encode(body["host"].combine_chunks())
    rank = np.empty(len(names.dictionary), dtype="int64")
    rank[np.argsort(names.dictionary.to_numpy(zero_copy_only=False))] = np.arange(len(rank))
    host = rank[names.indices.to_numpy()]  # codes in the order of the names, as normalising sorts them
    gpu = pc.fill_null(body["gpu"].combine_chunks(), -1).to_numpy().astype("int64")
    key_gpu = np.where(gpu == -1, MAX_DEVICES_PER_HOST, gpu)
    device = host * (MAX_DEVICES_PER_HOST + 1) + key_gpu
    jid = np.repeat(np.arange(len(chunk_jobs)), np.diff(edges))
    same_job = jid[1:] == jid[:-1]
    ordered = (device[1:] > device[:-1]) | ((device[1:] == device[:-1]) & (t_ms[1:] > t_ms[:-1]))
    unordered = np.unique(jid[1:][same_job & ~ordered])
    if len(unordered):  # only the jobs out of normalised order (or with repeated samples) are sorted
        order = np.arange(len(jid))
        for k in unordered:
            b, e = edges[k], edges[k + 1]
            order[b:e] = b + np.lexsort((t_ms[b:e], key_gpu[b:e], host[b:e]))  # stable: the first repeat stays first
        t_ms, host, gpu, device, body = t_ms[order], host[order], gpu[order], device[order], body.take(order)
        repeated = np.zeros(len(jid), dtype=bool)
        repeated[1:] = same_job & (device[1:] == device[:-1]) & (t_ms[1:] == t_ms[:-1])
        if repeated.any():
            kept = ~repeated
            t_ms, host, gpu, jid, body = t_ms[kept], host[kept], gpu[kept], jid[kept], body.filter(pa.array(kept))
            edges = np.r_[0, np.flatnonzero(jid[1:] != jid[:-1]) + 1, len(jid)]
    floats = {{name: body[name].combine_chunks().to_numpy(zero_copy_only=False) for name in body.column_names[3:]}}
    util, used, total = (floats[name].astype("float64") if name in floats else None
                         for name in ("gpu_util", "gpu_mem_used_mib", "gpu_mem_total_mib"))
    summaries = summaries_of(chunk_jobs, edges, t_ms, host, gpu, util, used, total)
    for k in range(0, len(chunk_jobs), 97):  # the same figures as the per-job function, on a sample
        b, e = edges[k], edges[k + 1]
        part = lambda values: values[b:e] if values is not None else None
        expected = _summarize_columns(_SummaryColumns(
            t_ms=t_ms[b:e], host=host[b:e], gpu=gpu[b:e], util=part(util), mem_used=part(used), mem_total=part(total)),
            start=jobs[chunk_jobs[k]][0], end=jobs[chunk_jobs[k]][1], gpu_count=jobs[chunk_jobs[k]][2],
            idle_threshold=5.0)
        got = summaries[k]
        for field in ("mean_gpu_util", "unused_gpu_hours", "idle_gpu_hours", "coverage", "peak_gpu_mem_util"):
            a, b_ = getattr(expected, field), getattr(got, field)
            assert (a is None and b_ is None) or abs(a - b_) <= 1e-9 * max(1.0, abs(a)), (field, a, b_)
        counted = (expected.sample_count, expected.sampling_period_s, expected.gaps)
        assert counted == (got.sample_count, got.sampling_period_s, got.gaps)
    arrays = [t_ms, host, gpu, *floats.values()]
    out = []
    for k, job_id in enumerate(chunk_jobs):
        b, e = int(edges[k]), int(edges[k + 1])
        digest = hashlib.sha256()
        for values in arrays:
            digest.update(values[b:e])
        out.append((job_id, summaries[k], digest.digest(), encode(body.slice(b, e - b)) if SERIES != "none" else b""))
    return out

pool = ThreadPoolExecutor(2)
series_pack, done, samples, pending, rows = Pack("series"), 0, 0, [], []
carry = None

def drain(limit):
    while len(pending) > limit:
        result = pending.pop(0).result()
        for job_id, summary, digest, blob in result if isinstance(result, list) else [result]:
            store_row(job_id, summary, digest, blob)

def store_row(job_id, summary, digest, blob):
    global done, samples
    where = series_pack.add(blob, done)
    s, e, g = jobs[job_id]
    rows.append((job_id, s.isoformat(), e.isoformat(), g, summary.mean_gpu_util, summary.peak_gpu_mem_util,
                 summary.unused_gpu_hours, summary.idle_gpu_hours, summary.coverage, summary.sample_count,
                 summary.sampling_period_s, digest, *where))
    samples += summary.sample_count
    done += 1
    if len(rows) >= PACK_JOBS:
        insert_jobs()

def insert_jobs():
    with db:
        db.executemany("INSERT INTO job (external_id, start, end_, gpu_count, mean, peak, unused, idle, coverage,"
                       " samples, period, digest, pack, offset, length) VALUES (" + ",".join("?" * 15) + ")", rows)
    rows.clear()

for group in range(parquet.num_row_groups if ONLY != "artifacts" else 0):
    table = parquet.read_row_group(group)
    # The importer's checks of a clean file, column by column.
    assert pc.all(pc.is_in(table["job_id"], value_set=known)).as_py()
    stamps, bad = parse_timestamps(table["timestamp"]); assert not bad.any()
    host = _trimmed_text(table["host"].combine_chunks())
    assert not pc.any(pc.greater(pc.utf8_length(host), MAX_HOST_CHARS)).as_py()
    gpu, bad = _parse_gpu(table["gpu"]); assert not bad.any()
    metrics = {{m: _metric_in_range(table[m], m) for m in METRICS if m in table.column_names}}
    assert all(v is not None for v in metrics.values())
    body = pa.table({{"timestamp": pa.array(stamps), "host": host, "gpu": pa.array(gpu), **metrics}})
    if SERIES == "checks-only":  # reading and checking alone: no job is stored
        samples += int(pc.sum(pc.and_(pc.is_valid(table["gpu"]), pc.is_valid(table["gpu_util"]))).as_py() or 0)
        continue
    ids = table["job_id"].combine_chunks()
    if carry is not None:
        body, ids = pa.concat_tables([carry[0], body]), pa.concat_arrays([carry[1], ids])
    raw = ids.to_numpy(zero_copy_only=False)
    edges = np.r_[0, np.flatnonzero(raw[1:] != raw[:-1]) + 1, len(raw)]
    if VECTORISED:  # the complete jobs of the group as one chunk (two chunks at a time on the threads)
        complete = edges[:-1]
        if len(complete) > 1:
            chunk = body.slice(0, int(complete[-1]))
            pending.append(pool.submit(store_chunk, list(raw[complete[:-1]]), complete, chunk))
            drain(1)
        carry = (body.slice(edges[-2]), ids.slice(edges[-2]))
        continue
    for begin, end in zip(edges[:-2], edges[1:-1]):  # the last run may go on in the next group
        pending.append(pool.submit(store_job, raw[begin], body.slice(begin, end - begin)))
        drain(8)
    carry = (body.slice(edges[-2]), ids.slice(edges[-2]))
if carry is not None:
    pending.append(pool.submit(store_job, carry[1][0].as_py(), carry[0]))
drain(0)
if rows:
    insert_jobs()
series_pack.close()
artifact_rows, events = side.result()
with db:
    db.executemany("INSERT INTO artifact VALUES (?,?,?,?,?,?,?,?)", artifact_rows)
    db.executemany("INSERT INTO logevent VALUES (?,?,?,?,?,?)", events)
elapsed = time.perf_counter() - start
series_bytes = sum(os.path.getsize(os.path.join(OUT, n)) for n in os.listdir(OUT) if n.startswith("series-"))
usage = resource.getrusage(resource.RUSAGE_SELF)
print(json.dumps({{"seconds": elapsed, "samples": samples, "jobs": done, "artifacts": len(artifact_rows),
                  "log_events": len(events), "cpu_seconds": usage.ru_utime + usage.ru_stime,
                  "peak_rss_mib": usage.ru_maxrss / 1024,
                  "series_mib": series_bytes / 2**20}}))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--jobs", type=int, default=10000)
    parser.add_argument("--sample-density", type=int, default=2)
    parser.add_argument(
        "--vectorised",
        action="store_true",
        help="summaries, digests and encoding a row group's jobs at a time (segment sums), not a call a job",
    )
    parser.add_argument(
        "--only",
        choices=["metrics", "artifacts"],
        help="one side alone: the metrics path without the logs and scripts, or those without the metrics",
    )
    parser.add_argument("--series", nargs="+", default=["parquet-zstd", "ipc-lz4", "none", "checks-only"])
    args = parser.parse_args()
    archive = demo_archive(args.jobs, seed=1, sample_density=args.sample_density)
    result: dict = {"benchmark": f"ingest_lean_{args.jobs}", "archive": archive.name, "variants": {}}
    for series in args.series:
        floor = run_child(BASELINE.format(archive=str(archive)))
        with data_folder() as out:
            lean = run_child(
                LEAN.format(
                    repo=str(REPO),
                    archive=str(archive),
                    out=out,
                    series=series,
                    vectorised=args.vectorised,
                    only=args.only,
                )
            )
        lean_rate, floor_rate = lean["samples"] / lean["seconds"], floor["samples"] / floor["seconds"]
        name = series + (" vectorised" if args.vectorised else "") + (f", {args.only} only" if args.only else "")
        result["variants"][name] = {
            "lean": lean,
            "floor": floor,
            "throughput_lean_over_floor": lean_rate / floor_rate,
            "meets_a_third_of_the_floor": lean_rate >= floor_rate / 3,
        }
        print(series, json.dumps(lean | {"floor_seconds": floor["seconds"]}), flush=True)
    result["measured_at"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    RESULTS.mkdir(parents=True, exist_ok=True)
    suffix = ("_vectorised" if args.vectorised else "") + (f"_{args.only}" if args.only else "")
    out = RESULTS / f"ingest_lean_{args.jobs}{suffix}.json"
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {out.relative_to(REPO)}")


if __name__ == "__main__":
    main()
