"""Property-based fuzzing of the archive reader and the CSV/JSONL/Parquet parsers.

Whatever the bytes, parsing ends in records or a clean ArchiveError (with a RecordError naming
the file), never another exception. Example counts are bounded so the default suite stays fast.
"""

from __future__ import annotations

import io
import json
import tarfile
import zipfile

from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from fleet.archive import ArchiveError, ReaderLimits, parse_archive
from fleet.canonical import RecordError

LIMITS = ReaderLimits(max_members=200, max_member_bytes=1 << 20, max_total_bytes=4 << 20, max_ratio=200)
FUZZ = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])

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
    st.sampled_from(["", "0", "1", "-1", "2.0", "1e3", "j1", "a b", "c1", "batch", "interactive", "x" * 201]),
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
