"""Property-based fuzzing of the archive reader and the CSV/JSONL/Parquet parsers.

Whatever the bytes, parsing ends in records or a clean ArchiveError (with a RecordError naming
the file), never another exception. Example counts are bounded so the default suite stays fast;
FUZZ_EXAMPLES=5000 (say) runs each of these properties that many times, for a deeper hunt, drawing new
examples each time; with CI set the suite draws the same ones every run (tests/conftest.py).
"""

from __future__ import annotations

import io
import json
import os
import tarfile
import zipfile
from pathlib import Path

from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from fleet.archive import ArchiveError, ReaderLimits, parse_archive
from fleet.canonical import RecordError

LIMITS = ReaderLimits(max_members=200, max_member_bytes=1 << 20, max_total_bytes=4 << 20, max_ratio=200)
FUZZ = settings(
    max_examples=int(os.environ.get("FUZZ_EXAMPLES", "40")),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)

MANIFEST = json.dumps({"format": "fleet-archive", "version": 1, "cluster": "c1"}).encode()
JOBS_CSV = (
    b"job_id,user,team,gpu_count,start_time,end_time\n"
    b"j1,ann,vision,1,2026-11-02T10:00:00Z,2026-11-02T11:00:00Z\n"
    b"j2,bob,nlp,2,1793613600,1793617200\n"
)
JOBS_JSONL = b'{"job_id": "j1", "user": "a", "team": "t", "gpu_count": 1, "start_time": 1, "end_time": 2}\n'
METRICS = (
    b"job_id,timestamp,host,gpu,gpu_util,gpu_mem_used_mib,gpu_mem_total_mib\n"
    b"j1,2026-11-02T10:00:00Z,n1,0,50,1000,80000\n"
    b"j1,2026-11-02T10:00:30Z,n1,0,60,1000,80000\n"
    b"j2,1793613600,n2,1,5,10,100\n"
)
LONG = b"job_id,timestamp,host,gpu,metric,value\nj2,1793613600,n2,0,gpu_util,12\nj2,1793613600,n2,,cpu_util,90\n"


def valid_members() -> dict[str, bytes]:
    return {
        "manifest.json": MANIFEST,
        "jobs.csv": JOBS_CSV,
        "metrics.csv": METRICS,
        "metrics/j2.csv": LONG,
        "logs/j1/stdout.log": b"2026-11-02 10:00:05,000 Epoch 1/3\n",
    }


def zip_bytes(members: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return buffer.getvalue()


def tar_bytes(members: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def parses_cleanly(path) -> None:
    try:
        parsed = parse_archive(path, limits=LIMITS, artifact_max_bytes=64 * 1024)
    except ArchiveError as exc:
        assert isinstance(exc.error, RecordError) and exc.error.message  # noqa: PT017 - either outcome is fine
        return
    for job_id, record in parsed.jobs.items():
        assert record.external_id == job_id and record.end_time >= record.start_time
    for errors in parsed.rejected.values():
        assert all(isinstance(error, RecordError) and error.message for error in errors)


def mutate(data: bytes, edits: list[tuple[int, int]], cut: int | None) -> bytes:
    out = bytearray(data)
    for position, value in edits:
        if out:
            out[position % len(out)] = value
    if cut is not None and out:
        del out[cut % len(out) :]
    return bytes(out)


EDITS = st.lists(st.tuples(st.integers(min_value=0), st.integers(0, 255)), max_size=8)


@FUZZ
@given(data=st.binary(max_size=4096))
def test_arbitrary_bytes_never_crash_the_reader(tmp_path, data):
    path = tmp_path / "fuzz.zip"
    path.write_bytes(data)
    parses_cleanly(path)


@FUZZ
@given(edits=EDITS, cut=st.one_of(st.none(), st.integers(min_value=0)), tarball=st.booleans())
def test_mutated_valid_archives_never_crash_the_parser(tmp_path, edits, cut, tarball):
    original = tar_bytes(valid_members()) if tarball else zip_bytes(valid_members())
    path = tmp_path / ("fuzz.tar.gz" if tarball else "fuzz.zip")
    path.write_bytes(mutate(original, edits, cut))
    parses_cleanly(path)


MEMBER = st.sampled_from(["jobs.csv", "metrics.csv", "metrics/j2.csv", "manifest.json"])


@FUZZ
@given(member=MEMBER, edits=EDITS, cut=st.one_of(st.none(), st.integers(min_value=0)), junk=st.binary(max_size=64))
def test_mutated_members_give_records_or_clean_errors(tmp_path, member, edits, cut, junk):
    members = valid_members()
    members[member] = mutate(members[member], edits, cut) + junk
    path = tmp_path / "fuzz.zip"
    path.write_bytes(zip_bytes(members))
    parses_cleanly(path)


@FUZZ
@given(text=st.text(max_size=400), jsonl=st.booleans())
def test_arbitrary_jobs_text_gives_records_or_clean_errors(tmp_path, text, jsonl):
    members = valid_members()
    del members["jobs.csv"]
    header = "" if jsonl else "job_id,user,team,gpu_count,start_time,end_time\n"
    members["jobs.jsonl" if jsonl else "jobs.csv"] = (header + text).encode("utf-8", "surrogatepass")
    path = tmp_path / "fuzz.zip"
    try:
        path.write_bytes(zip_bytes(members))
    except UnicodeEncodeError:
        return
    parses_cleanly(path)


@FUZZ
@given(
    cells=st.lists(
        st.tuples(
            st.sampled_from(["j1", "j2", "", "ghost", "j1 "]),
            st.one_of(
                st.sampled_from(["2026-11-02T10:00:00Z", "1793613600", "0", "1e20", "nan", ""]), st.text(max_size=12)
            ),
            st.one_of(st.sampled_from(["0", "1", "", "-1", "40000", "1.5"]), st.text(max_size=4)),
            st.one_of(
                st.floats(allow_nan=True, allow_infinity=True).map(repr),
                st.sampled_from(["", "NaN", "inf", "-0", "1e400", "50%"]),
                st.text(max_size=6),
            ),
        ),
        max_size=30,
    )
)
def test_arbitrary_metric_cells_give_records_or_clean_errors(tmp_path, cells):
    def clean(cell: str) -> str:
        return cell.replace(",", ";").replace("\n", " ").replace("\r", " ").replace('"', "'")

    lines = ["job_id,timestamp,gpu,gpu_util"] + [",".join(clean(c) for c in row) for row in cells]
    members = valid_members()
    members["metrics.csv"] = ("\n".join(lines) + "\n").encode("utf-8", "surrogatepass")
    path = tmp_path / "fuzz.zip"
    try:
        path.write_bytes(zip_bytes(members))
    except UnicodeEncodeError:
        return
    parses_cleanly(path)


JOB_FIELDS = ["job_id", "user", "team", "gpu_count", "start_time", "end_time", "submit_time", "node_count", "cluster"]
CELLS = st.one_of(
    st.none(),
    st.integers(min_value=-3, max_value=10**6),
    st.floats(allow_nan=False),
    st.sampled_from(["", "0", "12", "-1", "x y", "2026-11-02T10:00:00Z", "2026-11-02 10:00", "1730541600.5", "c-1"]),
    st.text(max_size=12),
)


@FUZZ
@given(row=st.dictionaries(st.sampled_from(JOB_FIELDS), CELLS))
def test_the_job_schema_with_its_references_inlined_judges_every_row_as_the_schema_does(row):
    """The importer validates job rows against the schema with its $defs inlined (for speed): it
    must find exactly the errors the schema as written finds, on any row."""
    import json
    from importlib import resources

    import jsonschema

    from fleet.archive.parser import _validator

    written = json.loads(resources.files("fleet").joinpath("schemas", "job.schema.json").read_text())

    def errors(validator) -> list[tuple]:
        return sorted((e.validator, tuple(e.absolute_path), e.message) for e in validator.iter_errors(row))

    assert errors(_validator("job.schema.json")) == errors(jsonschema.Draft202012Validator(written))


# Job rows as jobs.csv (text cells) and jobs.jsonl (any JSON values) bring them, near the schema's edges.
_cell = st.one_of(
    st.text(max_size=12),
    st.sampled_from(
        ["", "0", "1", "-1", "2.0", "1e3", "j1", "a b", "c1", "batch", "interactive", "BATCH", "Interactive", "x" * 201]
    ),
    st.sampled_from(["2026-11-02T10:00:00Z", "2026-11-02 10:00", "1793613600", "1793613600.5", "2026-13-45"]),
)
_json_value = st.one_of(
    _cell,
    st.none(),
    st.booleans(),
    st.integers(-3, 10**12),
    st.floats(allow_nan=True),
    st.lists(st.integers(), max_size=2),
)
_job_fields = [
    "job_id", "user", "team", "gpu_count", "start_time", "end_time", "submit_time", "name", "cluster",
    "gpu_model", "node_count", "cpu_count", "state", "job_type", "queue", "command", "labels", "extra",
]  # fmt: skip


_VALID_ROW = {
    "job_id": "j1", "user": "ann", "team": "vision", "gpu_count": "1",
    "start_time": "2026-11-02T10:00:00Z", "end_time": "2026-11-02T11:00:00Z",
}  # fmt: skip


@settings(max_examples=500, deadline=None)
@given(
    st.booleans(),
    st.one_of(st.just({}), st.dictionaries(st.sampled_from(_job_fields), _json_value, max_size=4)),
    st.sets(st.sampled_from(_job_fields[:6]), max_size=1),
)
def test_the_compiled_job_schema_accepts_exactly_the_rows_the_documented_one_accepts(from_valid, changes, dropped):
    """The import checks job rows with the schema compiled (fastjsonschema) and words errors with
    `jsonschema`: both must give every row the same verdict (rows near a valid one, and any rows)."""
    import fastjsonschema

    from fleet.archive.parser import _compiled, _validator

    row = {**(_VALID_ROW if from_valid else {}), **changes}
    for name in dropped:
        row.pop(name, None)

    try:
        _compiled("job.schema.json")(row)
        compiled_valid = True
    except fastjsonschema.JsonSchemaException:
        compiled_valid = False
    event("valid row" if compiled_valid else "invalid row")
    assert compiled_valid == _validator("job.schema.json").is_valid(row), row


# -- Parquet members ----------------------------------------------------------------------------
def parquet_bytes(table) -> bytes:
    import pyarrow.parquet as pq

    sink = io.BytesIO()
    pq.write_table(table, sink)
    return sink.getvalue()


def valid_parquet_metrics() -> bytes:
    import pyarrow as pa

    return parquet_bytes(
        pa.table(
            {
                "job_id": ["j1", "j1", "j2"],
                "timestamp": pa.array([1793613600000, 1793613630000, 1793613600000], pa.timestamp("ms", "UTC")),
                "host": ["n1", "n1", "n2"],
                "gpu": pa.array([0, 0, 1], pa.int16()),
                "gpu_util": pa.array([50, 60, 5], pa.float32()),
                "gpu_mem_used_mib": pa.array([1000, 1000, 10], pa.float32()),
            }
        )
    )


def parquet_members(metrics: bytes) -> dict[str, bytes]:
    members = valid_members()
    del members["metrics.csv"]
    members["metrics.parquet"] = metrics
    return members


@FUZZ
@given(
    edits=EDITS, cut=st.one_of(st.none(), st.integers(min_value=0)), junk=st.binary(max_size=64), per_job=st.booleans()
)
def test_mutated_parquet_metrics_give_records_or_clean_errors(tmp_path, edits, cut, junk, per_job):
    metrics = mutate(valid_parquet_metrics(), edits, cut) + junk
    if per_job:  # as metrics/j2.parquet, where it can only cost j2 its metrics
        members = valid_members()
        del members["metrics/j2.csv"]
        members["metrics/j2.parquet"] = metrics
    else:
        members = parquet_members(metrics)
    path = tmp_path / "fuzz.zip"
    path.write_bytes(zip_bytes(members))
    parses_cleanly(path)


def _typed_column(length: int):
    """A strategy for one Parquet column of `length` values, of any of the types an export might hold."""
    import decimal

    import pyarrow as pa

    def of(kind, values, convert=None):
        def build(cells):
            array = pa.array(cells, type=kind) if convert is None else convert(cells)
            event(f"parquet column {array.type}")
            return array

        return st.lists(st.one_of(st.none(), values), min_size=length, max_size=length).map(build)

    ids = st.one_of(st.sampled_from(["j1", "j2", "ghost", "", " j1", "2026-11-02T10:00:00Z", "1793613600"]), st.text())
    epoch = st.integers(-(2**40), 2**40)
    return st.one_of(
        of(pa.string(), ids),
        of(pa.large_string(), ids),
        of(pa.binary(), st.binary(max_size=8)),
        of(pa.bool_(), st.booleans()),
        of(pa.int8(), st.integers(-128, 127)),
        of(pa.int16(), st.integers(-(2**15), 2**15 - 1)),
        of(pa.int64(), st.integers(-(2**63), 2**63 - 1)),
        of(pa.uint64(), st.integers(0, 2**64 - 1)),
        of(pa.float32(), st.floats(width=32)),
        of(pa.float64(), st.floats()),
        of(pa.timestamp("s"), epoch),
        of(pa.timestamp("ns", "UTC"), st.integers(-(2**63) + 1, 2**63 - 1)),
        of(pa.timestamp("ms", "Europe/Berlin"), epoch),
        of(pa.date32(), st.integers(-(2**20), 2**20)),
        of(pa.date64(), epoch),
        of(pa.time32("s"), st.integers(0, 86_399)),
        of(pa.duration("ms"), epoch),
        of(pa.float16(), st.floats(width=16).map(lambda x: __import__("numpy").float16(x))),
        of(pa.decimal128(12, 2), st.decimals(min_value=-(10**9), max_value=10**9, places=2).map(decimal.Decimal)),
        of(pa.list_(pa.int64()), st.lists(st.integers(-5, 5), max_size=2)),
        of(None, ids, lambda cells: pa.array(cells, pa.string()).dictionary_encode()),
        st.just(pa.nulls(length)),
    )


METRIC_COLUMNS = ["job_id", "timestamp", "host", "gpu", "gpu_util", "gpu_mem_used_mib", "cpu_util", "metric", "value"]


@FUZZ
@given(
    data=st.data(), length=st.integers(0, 6), names=st.lists(st.sampled_from(METRIC_COLUMNS), max_size=7, unique=True)
)
def test_parquet_metrics_of_any_column_types_give_records_or_clean_errors(tmp_path, data, length, names):
    import pyarrow as pa

    table = pa.table({name: data.draw(_typed_column(length), label=name) for name in names})
    path = tmp_path / "fuzz.zip"
    path.write_bytes(zip_bytes(parquet_members(parquet_bytes(table))))
    parses_cleanly(path)


# -- native files (sacct --json, kubectl get pods -o json, Prometheus query_range) -----------------
FIXTURES = Path(__file__).parent / "fixtures" / "connectors"
_DELETE = object()  # in place of a value: drop the key or the list item
JSON_VALUES = st.deferred(
    lambda: st.one_of(
        st.none(),
        st.booleans(),
        st.integers(),
        st.floats(),
        st.text(max_size=8),
        st.lists(JSON_VALUES, max_size=3),
        st.dictionaries(st.text(max_size=6), JSON_VALUES, max_size=3),
    )
)


def _changed(node, data):
    """`node` with one value somewhere in it replaced by any JSON value, or removed."""
    if isinstance(node, dict | list) and node and data.draw(st.integers(0, 9)) > 0:
        if isinstance(node, dict):
            key = data.draw(st.sampled_from(sorted(node)))
            new = _changed(node[key], data)
            return {k: v for k, v in node.items() if k != key} if new is _DELETE else {**node, key: new}
        index = data.draw(st.integers(0, len(node) - 1))
        new = _changed(node[index], data)
        return node[:index] + ([] if new is _DELETE else [new]) + node[index + 1 :]
    return data.draw(st.one_of(st.just(_DELETE), JSON_VALUES))


def native_documents() -> dict[str, object]:
    times = [1715000000 + 60 * i for i in range(4)]
    series = {"metric": {"__name__": "DCGM_FI_DEV_GPU_UTIL", "gpu": "0", "hostname": "gpu01", "hpc_job": "4242"}}
    pod = {
        "metadata": {"name": "nb", "namespace": "vision", "uid": "pod-uid", "labels": {"team": "t"}},
        "spec": {"nodeName": "n1", "containers": [{"name": "main", "resources": {"limits": {"nvidia.com/gpu": "1"}}}]},
        "status": {
            "phase": "Succeeded",
            "startTime": "2024-05-06T12:53:20Z",
            "containerStatuses": [
                {"name": "main", "state": {"terminated": {"startedAt": "2024-05-06T12:53:20Z",
                                                          "finishedAt": "2024-05-06T13:23:20Z", "exitCode": 0}}}
            ],
        },
    }  # fmt: skip
    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1", "labels": {
        "nvidia.com/gpu.product": "NVIDIA-L4-SHARED", "nvidia.com/gpu.replicas": "2"}}}  # fmt: skip
    return {
        "native/slurm/sacct.json": json.loads((FIXTURES / "sacct_v0.0.40.json").read_text()),
        "native/slurm/old.json": json.loads((FIXTURES / "sacct_dbv0.0.37.json").read_text()),
        "native/kubernetes/pods.json": {"apiVersion": "v1", "kind": "List", "items": [pod]},
        "native/kubernetes/nodes.json": {"apiVersion": "v1", "kind": "List", "items": [node]},  # the pod's replicas
        "native/prometheus/4242/gpu.json": {
            "status": "success",
            "data": {"resultType": "matrix", "result": [{**series, "values": [[t, "25"] for t in times]}]},
        },
    }


@FUZZ
@given(data=st.data(), changes=st.integers(1, 3))
def test_mutated_native_files_give_records_or_clean_errors(tmp_path, data, changes):
    documents = native_documents()
    for _ in range(changes):
        name = data.draw(st.sampled_from(sorted(documents)))
        documents[name] = _changed(documents[name], data)
    members = {"manifest.json": MANIFEST}
    members.update((name, json.dumps(doc).encode()) for name, doc in documents.items() if doc is not _DELETE)
    path = tmp_path / "fuzz.zip"
    path.write_bytes(zip_bytes(members))
    parses_cleanly(path)


# -- the whole import ----------------------------------------------------------------------------
@FUZZ
@given(
    member=st.sampled_from(
        ["jobs.csv", "jobs.jsonl", "metrics.csv", "metrics/j2.csv", "logs/j1/stdout.log", "metrics.parquet"]
    ),
    edits=EDITS,
    cut=st.one_of(st.none(), st.integers(min_value=0)),
    junk=st.binary(max_size=64),
)
def test_an_import_of_a_mutated_archive_finishes_with_every_error_named(
    tmp_path, storage_dir, db, member, edits, cut, junk
):
    """What an operator sees for whatever they upload: a finished run whose every error names a file,
    and only jobs that are whole (a summary from their series, a blob for it), never a crash."""
    from fleet import ingest
    from fleet.models import IngestRun, Job

    members = parquet_members(valid_parquet_metrics()) if member == "metrics.parquet" else valid_members()
    if member == "jobs.jsonl":
        del members["jobs.csv"]
        labelled = JOBS_JSONL.replace(b'"j1"', b'"j2"').replace(b'"t"', b'"t", "labels": {"k": "v"}')
        members["jobs.jsonl"] = JOBS_JSONL + labelled
    members[member] = mutate(members[member], edits, cut) + junk
    path = tmp_path / "fuzz.zip"
    path.write_bytes(zip_bytes(members))
    Job.objects.all().delete()
    run = ingest.execute_run(ingest.create_run(path).pk)
    assert run.status in {IngestRun.Status.SUCCEEDED, IngestRun.Status.PARTIAL, IngestRun.Status.FAILED}
    assert run.jobs_done == run.jobs_created + run.jobs_updated + run.jobs_unchanged
    for error in run.errors:
        assert error["message"] and (error["file"] or error["message"].startswith("ignored")), error
    for job in Job.objects.all():
        assert job.end_time >= job.start_time
        assert job.sample_count == 0 or job.series_file.name  # counted samples come from a stored series
        if job.series_file.name:
            assert job.series_file.storage.exists(job.series_file.name)


@FUZZ
@given(
    rows=st.lists(
        st.fixed_dictionaries(
            {"job_id": st.one_of(st.sampled_from(["j1", "j2", "j 3"]), st.text(max_size=6))},
            optional={name: st.one_of(st.text(max_size=12), JSON_VALUES) for name in _job_fields[1:]},
        ).map(lambda row: {**_VALID_ROW, **row}),
        min_size=1,
        max_size=4,
    )
)
def test_an_import_of_arbitrary_json_job_rows_stores_what_it_accepts(tmp_path, storage_dir, db, rows):
    """Any text and any JSON in any field of a jobs.jsonl row: the row is stored or rejected with a
    named error, on SQLite and PostgreSQL alike (NUL characters, NaN and deep nesting included)."""
    from fleet import ingest
    from fleet.models import IngestRun, Job

    members = valid_members()
    del members["jobs.csv"]
    members["jobs.jsonl"] = "".join(json.dumps(row) + "\n" for row in rows).encode()
    path = tmp_path / "fuzz.zip"
    path.write_bytes(zip_bytes(members))
    Job.objects.all().delete()
    run = ingest.execute_run(ingest.create_run(path).pk)
    assert run.status in {IngestRun.Status.SUCCEEDED, IngestRun.Status.PARTIAL, IngestRun.Status.FAILED}
    for error in run.errors:
        assert error["message"] and error["file"], error
    stored = set(Job.objects.values_list("external_id", flat=True))
    assert stored <= {str(row["job_id"]).strip() for row in rows}
