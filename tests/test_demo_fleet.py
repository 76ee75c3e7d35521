"""The demo-fleet generator: archive contract, ground truth, determinism, and planted signals.

Signals are checked from the archive's own bytes (parquet, logs, scripts), the way the importer and
the rules will see them, not from the generator's internals.
"""

from __future__ import annotations

import ast
import csv
import io
import json
import re
import tarfile
import zipfile
from datetime import datetime, timedelta
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from django.core.management import CommandError, call_command
from jsonschema import Draft202012Validator

from fleet.canonical import METRICS
from triage.demo.generator import default_truth_path, generate_demo_fleet
from triage.evidence.scripts import extract_script_evidence
from triage.taxonomy import Category

SCHEMAS = Path(__file__).resolve().parent.parent / "fleet" / "schemas"
IDLE_UTIL = 5.0
PY_LOG_TIME = re.compile(r"(?:\[rank\d+\]:)?(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d),(\d{3}) ")
SH_LOG_TIME = re.compile(r"^\[(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)Z\] ")
DL_FRAMEWORKS = {"torch", "tensorflow", "jax", "mxnet", "paddle", "transformers", "lightning"}


class Fleet:
    """One generated archive, read back the way an importer would."""

    def __init__(self, archive: Path, summary):
        self.archive = archive
        self.summary = summary
        self.zip = zipfile.ZipFile(archive)
        self.names = self.zip.namelist()
        self.manifest = json.loads(self.zip.read("manifest.json"))
        self.job_rows = list(csv.DictReader(io.StringIO(self.zip.read("jobs.csv").decode())))
        self.jobs = {row["job_id"]: row for row in self.job_rows}
        self.truth = json.loads(summary.truth_path.read_text())
        self.categories = {job["job_id"]: job["categories"] for job in self.truth["jobs"]}
        self.metrics_table = pq.read_table(io.BytesIO(self.zip.read("metrics.parquet")))
        self.metrics = self.metrics_table.to_pandas()
        gpu_rows = self.metrics[self.metrics["gpu"].notna()].copy()
        gpu_rows["mem_share"] = gpu_rows["gpu_mem_used_mib"] / gpu_rows["gpu_mem_total_mib"]
        self.gpu_rows = gpu_rows
        self.host_rows = self.metrics[self.metrics["gpu"].isna()]
        self.per_job = gpu_rows.groupby("job_id").agg(mean_util=("gpu_util", "mean"), peak_mem=("mem_share", "max"))

    def with_category(self, category: Category) -> list[str]:
        return [job_id for job_id, categories in self.categories.items() if category.value in categories]

    def text(self, name: str) -> str:
        return self.zip.read(name).decode()

    def start(self, job_id: str) -> pd.Timestamp:
        return pd.Timestamp(self.jobs[job_id]["start_time"])

    def end(self, job_id: str) -> pd.Timestamp:
        return pd.Timestamp(self.jobs[job_id]["end_time"])


@pytest.fixture(scope="module")
def fleet_300(tmp_path_factory) -> Fleet:
    archive = tmp_path_factory.mktemp("fleet300") / "demo.zip"
    return Fleet(archive, generate_demo_fleet(archive, jobs=300, seed=42))


@pytest.fixture(scope="module")
def fleet_40(tmp_path_factory) -> Fleet:
    archive = tmp_path_factory.mktemp("fleet40") / "small.zip"
    return Fleet(archive, generate_demo_fleet(archive, jobs=40, seed=42))


def _log_times(log: str, pattern: str) -> list[pd.Timestamp]:
    """UTC times of the Python-logging lines that contain `pattern`."""
    times = []
    for line in log.splitlines():
        match = PY_LOG_TIME.match(line)
        if match and pattern in line:
            times.append(pd.Timestamp(f"{match.group(1)}.{match.group(2)}", tz="UTC"))
    return times


# --- The archive contract ---------------------------------------------------------------------------


def test_archive_holds_the_v1_members_and_no_truth(fleet_40):
    names = set(fleet_40.names)
    assert fleet_40.names[:3] == ["manifest.json", "jobs.csv", "metrics.parquet"]
    assert len(fleet_40.jobs) == 40
    for job_id in fleet_40.jobs:
        assert f"logs/{job_id}/stdout.log" in names
        assert f"scripts/{job_id}/train.py" in names
        assert f"scripts/{job_id}/run.sh" in names
    assert all(name.startswith(("logs/", "scripts/")) for name in fleet_40.names[3:])
    # The ground truth lives beside the archive, never inside it.
    assert fleet_40.summary.truth_path == fleet_40.archive.with_name("small.truth.json")
    assert fleet_40.summary.truth_path.exists()
    assert not any("truth" in name for name in names)
    assert b"fleet-demo-truth" not in fleet_40.archive.read_bytes()


def test_zip_members_are_regular_files_with_fixed_timestamps(fleet_40):
    infos = fleet_40.zip.infolist()
    assert {info.date_time for info in infos} == {(2026, 11, 23, 0, 0, 0)}
    assert {info.external_attr >> 16 for info in infos} == {0o100644}
    assert fleet_40.zip.getinfo("metrics.parquet").compress_type == zipfile.ZIP_STORED


def test_manifest_and_every_job_row_validate_against_the_schemas(fleet_40):
    manifest_schema = json.loads((SCHEMAS / "manifest.schema.json").read_text())
    job_schema = json.loads((SCHEMAS / "job.schema.json").read_text())
    Draft202012Validator(manifest_schema).validate(fleet_40.manifest)
    assert fleet_40.manifest == {
        "format": "fleet-archive",
        "version": 1,
        "cluster": "alpha",
        "created_at": "2026-11-23T00:00:00Z",
        "generator": "make_demo_fleet",
    }
    validator = Draft202012Validator(job_schema)
    for row in fleet_40.job_rows:
        assert list(validator.iter_errors(row)) == [], row["job_id"]
    assert list(fleet_40.job_rows[0]) == [
        "job_id", "user", "team", "gpu_count", "start_time", "end_time", "name", "cluster", "gpu_model",
        "node_count", "cpu_count", "state", "job_type", "queue", "command", "submit_time",
    ]  # fmt: skip
    for row in fleet_40.job_rows:
        assert row["start_time"].endswith("Z") and row["submit_time"] <= row["start_time"] < row["end_time"]


def test_metrics_parquet_has_the_canonical_wide_schema(fleet_40):
    schema = fleet_40.metrics_table.schema
    assert schema.names == ["job_id", "timestamp", "host", "gpu", *METRICS]
    assert schema.field("job_id").type == pa.string()
    assert schema.field("timestamp").type == pa.timestamp("ms", tz="UTC")
    assert schema.field("host").type == pa.string()
    assert schema.field("gpu").type == pa.int16()
    assert all(schema.field(name).type == pa.float32() for name in METRICS)
    metadata = pq.ParquetFile(io.BytesIO(fleet_40.zip.read("metrics.parquet"))).metadata
    assert metadata.row_group(0).column(0).compression == "ZSTD"


# --- Ground truth -----------------------------------------------------------------------------------


def test_truth_lists_every_job_and_every_category_even_at_40_jobs(fleet_40):
    truth = fleet_40.truth
    assert (truth["format"], truth["version"], truth["seed"], truth["archive"]) == (
        "fleet-demo-truth",
        1,
        42,
        "small.zip",
    )
    assert [job["job_id"] for job in truth["jobs"]] == [row["job_id"] for row in fleet_40.job_rows]
    assert all(job["cluster"] == fleet_40.jobs[job["job_id"]]["cluster"] for job in truth["jobs"])
    planted = [category for job in truth["jobs"] for category in job["categories"]]
    assert set(planted) == {category.value for category in Category}
    assert any(len(job["categories"]) == 2 for job in truth["jobs"])
    assert all(job["notes"] for job in truth["jobs"])


def test_300_jobs_plant_every_category_several_times(fleet_300):
    counts = fleet_300.summary.category_counts
    assert set(counts) == {category.value for category in Category}
    assert min(counts.values()) >= 3, counts
    jobs = fleet_300.truth["jobs"]
    doubles = [job for job in jobs if len(job["categories"]) == 2]
    assert len(doubles) >= 10
    assert all(len(set(job["categories"])) == len(job["categories"]) for job in jobs)
    healthy_share = sum(1 for job in jobs if not job["categories"]) / len(jobs)
    assert 0.58 <= healthy_share <= 0.68


def test_fleet_shape_is_realistic(fleet_300):
    rows = fleet_300.job_rows
    teams = {row["team"] for row in rows}
    assert len(teams) == 8
    for team in teams:
        users = {row["user"] for row in rows if row["team"] == team}
        assert 3 <= len(users) <= 8, team
    assert {row["cluster"] for row in rows} == {"alpha", "beta"}
    assert len({row["gpu_model"] for row in rows}) >= 4
    assert {"1", "2", "4", "8"} <= {row["gpu_count"] for row in rows}
    assert any(int(row["node_count"]) > 1 for row in rows)
    starts = sorted(datetime.fromisoformat(row["start_time"]) for row in rows)
    assert starts[-1] - starts[0] >= timedelta(weeks=4)
    hours = pd.Series([(fleet_300.end(j) - fleet_300.start(j)).total_seconds() / 3600 for j in fleet_300.jobs])
    assert 1.0 <= hours.median() <= 3.5 and hours.max() <= 48
    assert len(fleet_300.metrics) / len(rows) <= 4000  # rows per job stay benchmarkable at 5,000 jobs


# --- Determinism ------------------------------------------------------------------------------------


def test_same_seed_gives_identical_bytes_and_another_seed_does_not(fleet_40, tmp_path):
    again = generate_demo_fleet(tmp_path / "again.zip", jobs=40, seed=42)
    assert again.archive_path.read_bytes() == fleet_40.archive.read_bytes()
    truth_again = json.loads(again.truth_path.read_text())
    assert truth_again["jobs"] == fleet_40.truth["jobs"]
    other = generate_demo_fleet(tmp_path / "other.zip", jobs=40, seed=43)
    assert other.archive_path.read_bytes() != fleet_40.archive.read_bytes()


def test_tar_gz_holds_the_same_members_and_is_deterministic(tmp_path):
    first = generate_demo_fleet(tmp_path / "a" / "fleet.tar.gz", jobs=15, seed=5)
    second = generate_demo_fleet(tmp_path / "b" / "fleet.tar.gz", jobs=15, seed=5)
    assert first.truth_path == tmp_path / "a" / "fleet.truth.json"
    assert first.archive_path.read_bytes() == second.archive_path.read_bytes()
    zipped = generate_demo_fleet(tmp_path / "fleet.zip", jobs=15, seed=5)
    with tarfile.open(first.archive_path) as archive:
        members = archive.getmembers()
        assert all(member.isreg() and member.mtime == members[0].mtime for member in members)
        tar_names = [member.name for member in members]
        tar_jobs = archive.extractfile("jobs.csv").read()
    with zipfile.ZipFile(zipped.archive_path) as archive:
        assert tar_names == archive.namelist()
        assert tar_jobs == archive.read("jobs.csv")


# --- Metrics ----------------------------------------------------------------------------------------


def test_metrics_cover_every_job_and_only_known_jobs(fleet_300):
    assert set(fleet_300.metrics["job_id"]) == set(fleet_300.jobs)
    assert fleet_300.summary.metric_rows.total == len(fleet_300.metrics)
    gpu_rows, host_rows = fleet_300.gpu_rows, fleet_300.host_rows
    host_metrics = ["cpu_util", "host_mem_used_mib", "net_rx_bytes_per_s", "disk_read_bytes_per_s"]
    gpu_metrics = ["gpu_util", "gpu_mem_used_mib", "gpu_mem_total_mib", "sm_active", "pcie_rx_bytes_per_s"]
    assert gpu_rows[host_metrics].isna().all().all() and gpu_rows[gpu_metrics].notna().all().all()
    assert host_rows[gpu_metrics].isna().all().all() and host_rows[host_metrics].notna().all().all()
    assert gpu_rows["gpu_util"].between(0, 100).all()
    assert (gpu_rows["gpu_mem_used_mib"] <= gpu_rows["gpu_mem_total_mib"]).all()
    assert gpu_rows[["sm_active", "tensor_active", "dram_active"]].stack().between(0, 1).all()
    totals = gpu_rows.groupby("job_id")["gpu_mem_total_mib"].first()
    for job_id, total in totals.items():
        assert {"A100-80GB": 81920, "H100-80GB": 81920, "A100-40GB": 40960, "V100-32GB": 32768, "T4": 16384}[
            fleet_300.jobs[job_id]["gpu_model"]
        ] == total
    bounds = fleet_300.metrics.groupby("job_id")["timestamp"].agg(["min", "max"])
    for job_id, row in bounds.iterrows():
        assert fleet_300.start(job_id) <= row["min"] and row["max"] <= fleet_300.end(job_id)
    devices = gpu_rows.groupby("job_id")["gpu"].nunique()
    assert all(
        devices[job_id] == int(row["gpu_count"]) // int(row["node_count"]) for job_id, row in fleet_300.jobs.items()
    )


def test_data_defects_for_the_importer_are_present(fleet_300):
    keys = ["job_id", "host", "gpu", "timestamp"]
    duplicated = fleet_300.metrics[fleet_300.metrics.duplicated(keys, keep=False)]
    assert duplicated["job_id"].nunique() >= 3
    steps = fleet_300.metrics.sort_values(keys).groupby(["job_id", "host", "gpu"], dropna=False)["timestamp"].diff()
    holed = set(fleet_300.metrics.loc[steps > pd.Timedelta(minutes=5), "job_id"])
    assert len(holed) >= 3
    flagged = {job["job_id"] for job in fleet_300.truth["jobs"] if job["defects"]}
    assert holed | set(duplicated["job_id"]) <= flagged


# --- Planted signals --------------------------------------------------------------------------------


def test_healthy_jobs_are_busy(fleet_300):
    healthy = [job_id for job_id, categories in fleet_300.categories.items() if not categories]
    assert (fleet_300.per_job.loc[healthy, "mean_util"] > 50).all()


def test_improper_batch_size_has_low_util_and_low_memory(fleet_300):
    planted = fleet_300.per_job.loc[fleet_300.with_category(Category.IMPROPER_BATCH_SIZE)]
    assert (planted["mean_util"] <= 50).all()
    assert (planted["peak_mem"] <= 0.5).all()


def test_gpu_memory_bound_has_low_util_and_full_memory(fleet_300):
    planted = fleet_300.per_job.loc[fleet_300.with_category(Category.GPU_MEMORY_BOUND)]
    assert (planted["mean_util"] <= 50).all()
    assert (planted["peak_mem"] > 0.8).all()


def test_lengthy_install_idles_ten_minutes_at_start_with_pip_lines(fleet_300):
    for job_id in fleet_300.with_category(Category.LENGTHY_LIBRARY_INSTALL):
        rows = fleet_300.gpu_rows[fleet_300.gpu_rows["job_id"] == job_id]
        first_busy = rows.loc[rows["gpu_util"] > IDLE_UTIL, "timestamp"].min()
        assert first_busy - fleet_300.start(job_id) >= pd.Timedelta(minutes=10), job_id
        stamps = [
            datetime.fromisoformat(match.group(1))
            for line in fleet_300.text(f"logs/{job_id}/stdout.log").splitlines()
            if (match := SH_LOG_TIME.match(line)) and re.search(r"Collecting|Successfully installed|Solving", line)
        ]
        assert max(stamps) - min(stamps) >= timedelta(minutes=10), job_id
        assert re.search(r"\b(pip|conda) install\b", fleet_300.text(f"scripts/{job_id}/run.sh"))


def test_checkpoint_saves_open_idle_gaps(fleet_300):
    saves = idle = 0
    for job_id in fleet_300.with_category(Category.MODEL_CHECKPOINTING):
        rows = fleet_300.gpu_rows[fleet_300.gpu_rows["job_id"] == job_id]
        busiest = rows.groupby("timestamp")["gpu_util"].max()
        for moment in _log_times(fleet_300.text(f"logs/{job_id}/stdout.log"), "Saving model checkpoint to"):
            following = busiest[busiest.index >= moment]
            if following.empty:
                continue
            saves += 1
            idle += following.iloc[0] < IDLE_UTIL
    assert saves >= 30
    assert idle / saves >= 0.9


def test_unreleased_jobs_idle_long_after_training_finished(fleet_300):
    for job_id in fleet_300.with_category(Category.UNRELEASED_JOB):
        (finished,) = _log_times(fleet_300.text(f"logs/{job_id}/stdout.log"), "Training finished")
        assert fleet_300.end(job_id) - finished >= pd.Timedelta(minutes=30), job_id
        rows = fleet_300.gpu_rows[fleet_300.gpu_rows["job_id"] == job_id]
        tail = rows[rows["timestamp"] >= finished + pd.Timedelta(minutes=5)]
        assert (tail["gpu_util"] < IDLE_UTIL).all(), job_id


def test_job_dimension_categories_show_their_shapes(fleet_300):
    gpu_rows = fleet_300.gpu_rows
    for job_id in fleet_300.with_category(Category.GPU_OVERSUBSCRIPTION):
        per_gpu = gpu_rows[gpu_rows["job_id"] == job_id].groupby("gpu")["gpu_util"].mean()
        assert int(fleet_300.jobs[job_id]["gpu_count"]) > 1
        assert per_gpu.min() < IDLE_UTIL and per_gpu.max() > 30, job_id
    for job_id in fleet_300.with_category(Category.INTERACTIVE_JOB):
        util = gpu_rows.loc[gpu_rows["job_id"] == job_id, "gpu_util"]
        assert fleet_300.jobs[job_id]["job_type"] == "interactive"
        assert re.search(r"jupyter|code-server|sleep", fleet_300.jobs[job_id]["command"])
        assert (util < IDLE_UTIL).mean() >= 0.6 and util.max() > 30, job_id
    for job_id in fleet_300.with_category(Category.NON_DL_JOB):
        assert fleet_300.per_job.loc[job_id, "mean_util"] < IDLE_UTIL
        cpu = fleet_300.host_rows.loc[fleet_300.host_rows["job_id"] == job_id, "cpu_util"]
        assert cpu.mean() > 50
        tree = ast.parse(fleet_300.text(f"scripts/{job_id}/train.py"))
        imported = {
            alias.name.split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names
        }
        imported |= {
            node.module.split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.module
        }
        assert not imported & DL_FRAMEWORKS, job_id


def test_data_categories_show_their_shapes(fleet_300):
    for job_id in fleet_300.with_category(Category.DATA_PREPROCESSING):
        cpu = fleet_300.host_rows.loc[fleet_300.host_rows["job_id"] == job_id, "cpu_util"]
        assert cpu.quantile(0.75) > 85, job_id  # the CPU allocation is saturated while the GPU waits
    for job_id in fleet_300.with_category(Category.DATA_EXCHANGE):
        assert int(fleet_300.jobs[job_id]["gpu_count"]) >= 4
        rows = fleet_300.gpu_rows[fleet_300.gpu_rows["job_id"] == job_id]
        wide = rows.pivot_table(index="timestamp", columns=["host", "gpu"], values="gpu_util")
        busy = wide.index[wide.mean(axis=1) > IDLE_UTIL]
        training = wide.loc[busy.min() : busy.max()]
        dips = training.max(axis=1) < 0.5 * training.median(axis=1).median()
        assert dips.mean() > 0.15, job_id  # every GPU dips at the same samples
    for job_id in fleet_300.with_category(Category.REMOTE_DATA_READING):
        assert re.search(r"(s3|hdfs)://", fleet_300.text(f"scripts/{job_id}/train.py"))
        assert re.search(r"opening shard (s3|hdfs)://", fleet_300.text(f"logs/{job_id}/stdout.log"))


def _calls(tree: ast.AST) -> list[ast.Call]:
    return [node for node in ast.walk(tree) if isinstance(node, ast.Call)]


def _call_name(call: ast.Call) -> str:
    return ast.unparse(call.func)


def _keyword(call: ast.Call, name: str) -> str | None:
    return next((ast.unparse(k.value) for k in call.keywords if k.arg == name), None)


def _loops(tree: ast.AST) -> list[ast.For]:
    return [node for node in ast.walk(tree) if isinstance(node, ast.For)]


def test_every_script_parses_and_shows_the_planted_cause(fleet_300):
    for job_id, categories in fleet_300.categories.items():
        source = fleet_300.text(f"scripts/{job_id}/train.py")
        tree = ast.parse(source)  # the evidence extractor reads code with ast
        run_sh = fleet_300.text(f"scripts/{job_id}/run.sh")
        assert run_sh.startswith("#!/bin/bash\n")
        loaders = [call for call in _calls(tree) if _call_name(call) == "DataLoader" and call.keywords]
        step_loops = [loop for outer in _loops(tree) for loop in _loops(outer) if loop is not outer]
        in_step_loop = {_call_name(call) for loop in step_loops for call in _calls(loop)}
        if Category.HOST_GPU_TRANSFER.value in categories:
            assert all(_keyword(call, "pin_memory") != "True" for call in loaders), job_id
            assert "non_blocking" not in source
        elif not categories and "for batch in train_loader" in source:
            assert all(_keyword(call, "pin_memory") == "True" for call in loaders), job_id
            assert not in_step_loop & {"torch.save", "torch.cuda.synchronize", "s3.upload_file"}, job_id
        if Category.MODEL_CHECKPOINTING.value in categories:
            assert "torch.save" in in_step_loop, job_id
        if Category.API_MISUSE.value in categories:
            assert in_step_loop & {"torch.cuda.synchronize", "loss.item"} or ".cpu().numpy()" in source, job_id
        if Category.INTERMEDIATE_UPLOAD.value in categories:
            assert in_step_loop & {"subprocess.run", "s3.upload_file", "mlflow.log_artifacts"}, job_id
        if Category.DATA_PREPROCESSING.value in categories:
            workers = re.search(r'"--num-workers", type=int, default=(\d+)', source)
            assert workers and (
                int(workers.group(1)) <= 4 or int(workers.group(1)) > int(fleet_300.jobs[job_id]["cpu_count"])
            )
        if Category.DATA_EXCHANGE.value in categories:
            assert "nn.DataParallel" in source or "dist.all_reduce" in source, job_id
        if Category.GPU_OVERSUBSCRIPTION.value in categories:
            assert "DistributedDataParallel" not in source and "torchrun" not in run_sh, job_id
        if Category.EXTERNAL_DATA_USAGE.value in categories:
            assert re.search(r"from_pretrained\(MODEL_PATH[,)]|load_dataset|torch\.hub\.load|wget ", source + run_sh)
        if Category.UNRELEASED_JOB.value in categories:
            assert "sleep 12h" in run_sh or "while True" in source, job_id
        # A remote-reading job's Dataset reads each sample from the --data URI its launch line gives (the job page
        # quotes that line); no other job's code reads remotely per sample.
        scripts = [("train.py", source), ("run.sh", run_sh)]
        facts = extract_script_evidence(scripts, command=fleet_300.jobs[job_id]["command"]).of("remote_read")
        reads = [f"{f.path}:{f.line}" for f in facts if f.detail["per_sample"]]
        assert bool(reads) == (Category.REMOTE_DATA_READING.value in categories), (job_id, reads)


# --- The management command -------------------------------------------------------------------------


def test_command_writes_archive_and_truth_and_prints_them(tmp_path):
    out = io.StringIO()
    archive = tmp_path / "out" / "demo.tar.gz"
    truth = tmp_path / "elsewhere" / "labels.json"
    call_command("make_demo_fleet", out=str(archive), jobs=20, seed=7, truth=str(truth), stdout=out)
    printed = out.getvalue()
    assert str(archive) in printed and str(truth) in printed
    assert "Jobs:         20" in printed and "Metric rows:" in printed
    assert all(category.value in printed for category in Category)
    assert archive.exists() and json.loads(truth.read_text())["archive"] == "demo.tar.gz"


@pytest.mark.django_db
def test_command_says_how_many_of_its_metric_rows_an_import_counts_as_samples(tmp_path):
    """The generator printed "Samples: 520965 metric rows" for the demo fleet, and importing it said
    398,584 samples: an import's samples are GPU samples, each (GPU, time) once, and the parquet's rows
    also hold one host row per node and time (CPU, memory, network, disk) and the planted double scrapes."""
    from fleet import ingest

    out = io.StringIO()
    archive = tmp_path / "demo.zip"
    call_command("make_demo_fleet", out=str(archive), jobs=20, seed=7, stdout=out)
    printed = out.getvalue()
    rows = len(pq.read_table(io.BytesIO(zipfile.ZipFile(archive).read("metrics.parquet"))))
    imported = ingest.dry_run(archive).samples
    said = re.search(
        r"^Metric rows: +(\d+) in metrics\.parquet, of which\n"
        r" +(\d+) GPU samples, one per GPU and time: the samples an import counts\n"
        r" +(\d+) host rows, one per node and time \(CPU, memory, network, disk\)\n"
        r" +(\d+) duplicated rows \(planted double scrapes\): an import drops them$",
        printed,
        re.MULTILINE,
    )
    assert said, printed
    total, gpu_samples, host_rows, duplicates = map(int, said.groups())
    assert (total, gpu_samples) == (rows, imported)
    assert duplicates > 0 and gpu_samples + host_rows + duplicates == total


def test_command_and_function_refuse_unknown_archive_types(tmp_path):
    with pytest.raises(CommandError, match=r"\.zip or \.tar\.gz"):
        call_command("make_demo_fleet", out=str(tmp_path / "demo.csv"), stdout=io.StringIO())
    with pytest.raises(ValueError, match="must not overwrite"):
        generate_demo_fleet(tmp_path / "demo.zip", jobs=15, truth_path=tmp_path / "demo.zip")
    assert default_truth_path("/data/fleet.tar.gz") == Path("/data/fleet.truth.json")
    assert not list(tmp_path.iterdir())
