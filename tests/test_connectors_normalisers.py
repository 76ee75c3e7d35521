"""The connectors' pure normalisers, on bytes: Slurm per data_parser version, Prometheus responses,
Kubernetes pod lists, the generic contract, and native files inside a v1 archive."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pytest

from fleet.archive.parser import parse_archive
from fleet.connectors.base import BadData
from fleet.connectors.generic import job_from_object
from fleet.connectors.kubernetes import jobs_from_pods, parse_pod_list, peak_concurrent
from fleet.connectors.prometheus import (
    SeriesRequest,
    dcgm_selectors,
    frame_from_results,
    parse_duration_s,
    parse_query_range,
    windows,
)
from fleet.connectors.slurm import expand_hostlist, gpu_allocation, number, parse_sacct
from tests.conftest import write_zip

FIXTURES = Path(__file__).parent / "fixtures" / "connectors"
T0 = datetime.fromtimestamp(1715000000, tz=UTC)


# -- Slurm ----------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("file", "version"),
    [
        ("sacct_dbv0.0.37.json", "v0.0.37"),
        ("sacct_v0.0.39.json", "v0.0.39"),
        ("sacct_v0.0.40.json", "v0.0.40"),
        ("sacct_v0.0.41.json", "v0.0.41"),
        ("sacct_v0.0.42.json", "v0.0.42"),
    ],
)
def test_sacct_json_of_every_data_parser_version(file, version):
    parsed = parse_sacct((FIXTURES / file).read_bytes(), account_teams={"vision": "Computer Vision"})
    assert parsed.data_parser == version and parsed.errors == []
    assert parsed.unfinished == 2 and parsed.without_gpus == 1  # running + never started; the CPU job
    jobs = {job.external_id: job for job in parsed.jobs}
    assert set(jobs) == {"4242", "4250_3"}  # the array task is job 4250 task 3
    train = jobs["4242"]
    # gres/gpu and gres/gpu:a100 both listed: 8 GPUs, not 16; the model from the typed entry
    assert (train.gpu_count, train.gpu_model, train.cpu_count) == (8, "a100", 64)
    assert train.start_time == T0 and train.end_time == T0 + timedelta(hours=1)  # 21.08's start bug fixed
    assert train.team == "Computer Vision" and train.queue == "gpu" and train.state == "COMPLETED"
    assert train.labels["nodes"] == ["gpu01", "gpu02"] and train.labels["time_limit_s"] == 240 * 60
    sweep = jobs["4250_3"]
    assert (sweep.gpu_count, sweep.gpu_model, sweep.state, sweep.team) == (4, "h100", "FAILED", "nlp")
    assert sweep.labels["slurm_job_id"] == "4251"  # what dcgm-exporter's hpc_job label carries
    if version >= "v0.0.39":
        assert {a.path for a in parsed.artifacts["4242"]} == {"submit_line.txt", "batch_script.sh"}
        assert train.command.startswith("sbatch")
    if version >= "v0.0.41":
        assert train.labels["stdout"].endswith("slurm-4242.out")


def test_sacct_number_wrappers_and_host_lists():
    assert number({"set": True, "infinite": False, "number": 5}) == 5
    assert number({"set": False, "infinite": False, "number": 0}) is None
    assert number({"set": True, "infinite": True, "number": 0}) is None
    assert number(7) == 7 and number(None) is None
    assert expand_hostlist("gpu[01-03,07],login1") == ["gpu01", "gpu02", "gpu03", "gpu07", "login1"]
    assert expand_hostlist("r[1-2]n[1-2]") == ["r1n1", "r1n2", "r2n1", "r2n2"]
    assert expand_hostlist("None assigned") == []
    assert gpu_allocation(
        [{"type": "gres", "name": "gpu:a100", "count": 2}, {"type": "gres", "name": "gpu:v100", "count": 1}]
    ) == (3, "a100")
    assert gpu_allocation([{"type": "gres", "name": "gpumem", "count": 9}]) == (0, "")


def test_sacct_rejects_a_document_without_jobs():
    with pytest.raises(BadData, match="'jobs' list"):
        parse_sacct(b'{"meta": {}, "errors": [{"error": "denied"}]}')
    with pytest.raises(BadData, match="not valid JSON"):
        parse_sacct(b'{"jobs": [')


# -- Prometheus -----------------------------------------------------------------------------------
def matrix(*series) -> bytes:
    return json.dumps({"status": "success", "data": {"resultType": "matrix", "result": list(series)}}).encode()


def test_query_range_placeholders_clipping_host_labels_and_shared_gpus():
    start, end = T0, T0 + timedelta(minutes=2)
    t = [start.timestamp() + 30 * i for i in range(7)]  # the last two are past the end: stale points
    body = matrix(
        {"metric": {"__name__": "DCGM_FI_DEV_GPU_UTIL", "gpu": "0", "Hostname": "n1", "hpc_job": "1"},
         "values": [[x, "50"] for x in t]},
        # the same GPU, shared with job 2: kept once, never summed
        {"metric": {"__name__": "DCGM_FI_DEV_GPU_UTIL", "gpu": "0", "Hostname": "n1", "hpc_job": "2"},
         "values": [[x, "90"] for x in t]},
        {"metric": {"__name__": "DCGM_FI_DEV_GPU_UTIL", "gpu": "1", "hostname": "n2"},
         "values": [[t[0], "NaN"], [t[1], "9223372036854775794"], [t[2], "10"]]},
        {"metric": {"__name__": "DCGM_FI_DEV_FB_USED", "gpu": "0", "Hostname": "n1"}, "values": [[t[0], "1024"]]},
        {"metric": {"__name__": "DCGM_FI_DEV_FB_FREE", "gpu": "0", "Hostname": "n1"}, "values": [[t[0], "3072"]]},
        {"metric": {"__name__": "DCGM_FI_PROF_GR_ENGINE_ACTIVE", "gpu": "0", "Hostname": "n1"},
         "values": [[t[0], "0.5"]]},
        {"metric": {"__name__": "DCGM_FI_DEV_SM_CLOCK", "gpu": "0", "Hostname": "n1"}, "values": [[t[0], "1400"]]},
    )  # fmt: skip
    frame = frame_from_results(((None, s) for s in parse_query_range(body)), start=start, end=end)
    n1 = frame[frame["host"] == "n1"]
    assert len(n1) == 5 and n1["gpu_util"].eq(50).all()  # clipped at the end; 90 never added
    n2 = frame[frame["host"] == "n2"]
    assert n2["gpu_util"].dropna().tolist() == [10.0]  # NaN and the sentinel dropped
    first = n1.iloc[0]
    assert (first["gpu_mem_used_mib"], first["gpu_mem_total_mib"], first["sm_active"]) == (1024, 4096, 0.5)
    assert "SM_CLOCK" not in " ".join(frame.columns)


def test_gpu_util_of_a_mig_instance_comes_from_the_engine_not_from_gpu_util():
    start, end = T0, T0 + timedelta(minutes=1)
    t = [start.timestamp() + 30 * i for i in range(3)]
    mig = {"gpu": "0", "GPU_I_ID": "2", "GPU_I_PROFILE": "3g.40gb", "hostname": "n1", "pod": "p"}
    body = matrix(
        # GPU_UTIL is unsupported on MIG: dcgm-exporter reports 0 however busy the slice is.
        {"metric": {"__name__": "DCGM_FI_DEV_GPU_UTIL", **mig}, "values": [[x, "0"] for x in t]},
        {"metric": {"__name__": "DCGM_FI_PROF_GR_ENGINE_ACTIVE", **mig}, "values": [[x, "0.9"] for x in t]},
        # A whole GPU whose exporter collects only the profiling fields: GR_ENGINE_ACTIVE stands in.
        {"metric": {"__name__": "DCGM_FI_PROF_GR_ENGINE_ACTIVE", "gpu": "1", "hostname": "n1"},
         "values": [[x, "0.25"] for x in t]},
        # A whole GPU with both: GPU_UTIL is kept as it is.
        {"metric": {"__name__": "DCGM_FI_DEV_GPU_UTIL", "gpu": "2", "hostname": "n1"},
         "values": [[x, "70"] for x in t]},
        {"metric": {"__name__": "DCGM_FI_PROF_GR_ENGINE_ACTIVE", "gpu": "2", "hostname": "n1"},
         "values": [[x, "0.6"] for x in t]},
    )  # fmt: skip
    frame = frame_from_results(((None, s) for s in parse_query_range(body)), start=start, end=end)
    util = frame.groupby("gpu")["gpu_util"].agg(["min", "max", "size"])
    assert util.to_dict("index") == {
        0: {"min": 90.0, "max": 90.0, "size": 3},
        1: {"min": 25.0, "max": 25.0, "size": 3},
        2: {"min": 70.0, "max": 70.0, "size": 3},
    }


def test_query_range_errors_are_bad_data():
    error = b'{"status":"error","errorType":"bad_data","error":"exceeded maximum resolution of 11,000 points"}'
    with pytest.raises(BadData, match="11,000"):
        parse_query_range(error)
    with pytest.raises(BadData):
        parse_query_range(b'{"status":"success","data":{"resultType":"matrix","result":[{"metric":{},"values":[[1')


def test_long_jobs_are_split_into_windows_of_at_most_11000_points():
    start = T0
    end = T0 + timedelta(days=8)  # 23,041 points at 30 s
    parts = windows(start, end, 30, 11_000)
    assert len(parts) == 3
    assert all((stop - begin) / 30 + 1 <= 11_000 for begin, stop in parts)
    assert parts[0][0] == start.timestamp() and parts[-1][1] == end.timestamp()
    assert all(b[0] == a[1] + 30 for a, b in zip(parts, parts[1:], strict=False))  # no gap, no overlap
    assert parse_duration_s("1m30s") == 90 and parse_duration_s(15) == 15


def test_selectors_follow_the_label_variant_in_use():
    slurm = SeriesRequest(start=T0, end=T0, hpc_job="42", hosts=("gpu01", "gpu02"))
    assert dcgm_selectors(slurm, {"hpc_job", "hostname"}, ["X"]) == ['{__name__=~"X", hpc_job="42"}']
    assert dcgm_selectors(slurm, {"Hostname", "hostname"}, ["X"]) == [
        '{__name__=~"X", hostname=~"gpu01|gpu02"}',
        '{__name__=~"X", Hostname=~"gpu01|gpu02"}',
    ]
    pod = SeriesRequest(start=T0, end=T0, namespace="ns", pods=("a-0", "a-1"))
    assert dcgm_selectors(pod, {"exported_pod", "pod"}, ["X"]) == [
        '{__name__=~"X", exported_pod=~"a-0|a-1", exported_namespace="ns"}',
        '{__name__=~"X", pod=~"a-0|a-1", namespace="ns"}',
    ]
    assert dcgm_selectors(pod, {"pod_name"}, ["X"]) == ['{__name__=~"X", pod_name=~"a-0|a-1", pod_namespace="ns"}']


# -- Kubernetes -----------------------------------------------------------------------------------
def k8s_pod(name, uid, owner, phase, gpus, start, end, *, init_gpus=0, labels=None):
    iso = lambda t: t.strftime("%Y-%m-%dT%H:%M:%SZ")  # noqa: E731
    return {
        "metadata": {"name": name, "namespace": "vision", "uid": uid, "labels": labels or {},
                     "ownerReferences": [owner] if owner else []},
        "spec": {"nodeName": "n1",
                 "initContainers": [{"name": "init", "resources": {"limits": {"nvidia.com/gpu": init_gpus}}}],
                 "containers": [{"name": "main", "resources": {"limits": {"nvidia.com/gpu": str(gpus)}}}]},
        "status": {"phase": phase, "startTime": iso(start),
                   "containerStatuses": [{"name": "main", "state": {"terminated": {
                       "startedAt": iso(start), "finishedAt": iso(end), "exitCode": 0 if phase == "Succeeded" else 137,
                       "reason": "Completed" if phase == "Succeeded" else "OOMKilled"}}}]},
    }  # fmt: skip


def test_pods_become_jobs_by_owner():
    mpi = {"kind": "MPIJob", "name": "bert", "uid": "mpi-1", "controller": True}
    pods = [
        k8s_pod("bert-launcher", "a", mpi, "Succeeded", 0, T0, T0 + timedelta(hours=1), init_gpus=1),
        k8s_pod("bert-worker-0", "b", mpi, "Succeeded", 4, T0, T0 + timedelta(hours=1)),
        k8s_pod("bert-worker-1", "c", mpi, "Succeeded", 4, T0, T0 + timedelta(hours=1)),
        k8s_pod("bert-worker-1", "c", mpi, "Succeeded", 4, T0, T0 + timedelta(hours=1)),  # listed twice
        k8s_pod("lonely", "d", None, "Failed", 1, T0, T0 + timedelta(minutes=5), labels={"team": "infra"}),
    ]
    parsed = jobs_from_pods(pods, cluster="k1", team_label="team", namespace_teams={"vision": "Vision"})
    jobs = {job.external_id: job for job in parsed.jobs}
    assert jobs["mpi-1"].gpu_count == 9  # two workers of 4 and a launcher whose init container holds 1
    assert jobs["mpi-1"].team == "Vision" and jobs["mpi-1"].name == "bert" and jobs["mpi-1"].cluster == "k1"
    assert jobs["d"].team == "infra" and jobs["d"].state == "Failed" and jobs["d"].labels["reasons"] == ["OOMKilled"]
    assert jobs["d"].labels["owner_kind"] == "Pod"


def test_sequential_retries_do_not_add_up_and_kubectl_lists_parse():
    assert (
        peak_concurrent([(T0, T0 + timedelta(hours=1), 2), (T0 + timedelta(hours=1), T0 + timedelta(hours=2), 2)]) == 2
    )
    assert (
        peak_concurrent([(T0, T0 + timedelta(hours=2), 2), (T0 + timedelta(hours=1), T0 + timedelta(hours=3), 2)]) == 4
    )
    pods, token = parse_pod_list(
        b'{"apiVersion": "v1", "kind": "List", "items": [], "metadata": {"resourceVersion": ""}}'
    )
    assert pods == [] and token == ""
    with pytest.raises(BadData):
        parse_pod_list(b'{"kind": "Status", "status": "Failure"}')


# -- generic --------------------------------------------------------------------------------------
def test_generic_job_objects():
    job = job_from_object(
        {
            "job_id": 7,
            "user": "u",
            "team": "t",
            "gpu_count": 2,
            "start_time": 1715000000,
            "end_time": "2024-05-06T14:00:00Z",
        }
    )
    assert job.external_id == "7" and job.start_time == T0
    with pytest.raises(ValueError, match="gpu_count"):
        job_from_object({"job_id": 7, "user": "u", "team": "t", "gpu_count": -1, "start_time": 1, "end_time": 2})
    with pytest.raises(ValueError, match="field 'user': required field is missing"):
        job_from_object({"job_id": 7, "team": "t", "gpu_count": 1, "start_time": 1, "end_time": 2})


# -- native files in an archive -------------------------------------------------------------------
def test_an_archive_of_native_files_only(tmp_path):
    manifest = json.dumps({"format": "fleet-archive", "version": 1, "cluster": "c1"})
    sacct = (FIXTURES / "sacct_v0.0.40.json").read_bytes()
    times = [T0.timestamp() + 60 * i for i in range(61)]
    prom = matrix(
        *({"metric": {"__name__": "DCGM_FI_DEV_GPU_UTIL", "gpu": str(g), "hostname": "gpu01", "hpc_job": "4242"},
           "values": [[t, "25"] for t in times]}
          for g in range(8))
    )  # fmt: skip
    pods = {"apiVersion": "v1", "kind": "List", "items": [
        k8s_pod("nb", "pod-uid", None, "Succeeded", 1, T0, T0 + timedelta(minutes=30))]}  # fmt: skip
    archive = write_zip(
        tmp_path / "native.zip",
        {
            "manifest.json": manifest,
            "native/slurm/sacct.json": sacct,
            "native/prometheus/4242/gpu.json": prom,
            "native/prometheus/9999/gpu.json": prom,
            "native/kubernetes/pods.json": json.dumps(pods),
        },
    )
    parsed = parse_archive(archive)
    assert sorted(parsed.jobs) == ["4242", "4245", "4250_3", "pod-uid"]  # the CPU job too: an upload keeps all
    frame = parsed.series["4242"]
    assert len(frame) == 8 * 61 and np.allclose(frame["gpu_util"], 25)
    assert {a.path for a in parsed.artifacts["4242"]} == {"submit_line.txt", "batch_script.sh"}
    assert any(e.job_id == "9999" and "no such job" in e.message for e in parsed.errors)


def test_native_prometheus_files_add_series_to_jobs_csv_jobs(tmp_path):
    manifest = json.dumps({"format": "fleet-archive", "version": 1, "cluster": "c1"})
    jobs = (
        "job_id,user,team,gpu_count,start_time,end_time\nj1,alice,vision,1,2024-05-06T12:53:20Z,2024-05-06T13:53:20Z\n"
    )
    prom = matrix(
        {"metric": {"gpu": "0", "hostname": "n1"}, "values": [[T0.timestamp() + 60 * i, "80"] for i in range(61)]}
    )
    archive = write_zip(
        tmp_path / "mixed.zip",
        {"manifest.json": manifest, "jobs.csv": jobs, "native/prometheus/j1/DCGM_FI_DEV_GPU_UTIL.json": prom},
    )
    parsed = parse_archive(archive)
    assert list(parsed.jobs) == ["j1"] and len(parsed.series["j1"]) == 61
    assert parsed.series["j1"]["gpu_util"].eq(80).all()


# -- malformed records (found by tests/test_archive_fuzz.py): reported and skipped, the rest read ----
def test_a_sacct_job_of_the_wrong_shape_is_reported_and_the_others_read():
    doc = json.loads((FIXTURES / "sacct_v0.0.40.json").read_text())
    all_jobs = parse_sacct(doc, cluster="c1", gpu_jobs_only=False).jobs
    doc["jobs"][0]["time"] = [1, 2]  # an object in every Slurm version
    doc["meta"] = {"plugin": True}
    parsed = parse_sacct(doc, cluster="c1", gpu_jobs_only=False, source="sacct.json")
    [error] = parsed.errors
    assert error.file == "sacct.json" and error.row == 1
    assert error.message.startswith(f"job {error.job_id}: unexpected shape, so it was skipped (AttributeError")
    assert [job.external_id for job in parsed.jobs] == [job.external_id for job in all_jobs[1:]]


def test_a_pod_of_the_wrong_shape_is_reported_and_the_others_read():
    good = k8s_pod("ok", "uid-1", None, "Succeeded", 1, T0, T0 + timedelta(minutes=5))
    broken = k8s_pod("bad", "uid-2", None, "Succeeded", 1, T0, T0 + timedelta(minutes=5))
    broken["spec"]["containers"] = [["not", "a", "container"]]
    parsed = jobs_from_pods([broken, "not a pod", good], cluster="k1", source="pods.json")
    assert [job.external_id for job in parsed.jobs] == ["uid-1"]
    messages = sorted(e.message.split(" (")[0] for e in parsed.errors)
    assert messages == [
        "pod 1: 'spec.containers' is not a list of objects, so it was skipped",
        "pod 2: not an object, so it was skipped",
    ]


def test_a_pod_time_outside_the_calendar_in_utc_is_no_time():
    """Year 1 with a positive offset is before year 1 in UTC: Python cannot say it (OverflowError,
    which once failed the whole pull); such a time is read as absent, like any unreadable one."""
    early = k8s_pod("early", "uid-1", None, "Succeeded", 1, T0, T0 + timedelta(minutes=5))
    early["status"]["startTime"] = "0001-01-01T00:00:00+05:00"
    early["status"]["containerStatuses"][0]["state"]["terminated"]["startedAt"] = "0001-01-01T00:00:00+05:00"
    good = k8s_pod("ok", "uid-2", None, "Succeeded", 1, T0, T0 + timedelta(minutes=5))
    parsed = jobs_from_pods([early, good], cluster="k1", source="pods.json")
    assert "uid-2" in [job.external_id for job in parsed.jobs]


def test_prometheus_labels_that_are_not_text_are_bad_data():
    body = matrix({"metric": {"gpu": 0, "hostname": "n1"}, "values": [[T0.timestamp(), "1"]]})
    with pytest.raises(BadData, match="a result's 'metric' is not an object of label names and text values"):
        parse_query_range(body, source="q.json")
    with pytest.raises(BadData, match="expected 'data' to be an object with a 'result' list"):
        parse_query_range(json.dumps({"status": "success", "data": ["matrix"]}), source="q.json")


def test_a_native_file_with_nan_is_not_json():
    with pytest.raises(BadData, match=r"sacct.json: not valid JSON \(NaN is not a JSON value"):
        parse_sacct(b'{"jobs": [], "meta": {"x": NaN}}', source="sacct.json")


def test_a_native_job_with_a_nul_character_is_reported_and_the_others_kept(tmp_path):
    doc = json.loads((FIXTURES / "sacct_v0.0.40.json").read_text())
    doc["jobs"][0]["name"] = "tr\x00ain"
    manifest = json.dumps({"format": "fleet-archive", "version": 1, "cluster": "c1"})
    archive = write_zip(tmp_path / "n.zip", {"manifest.json": manifest, "native/slurm/sacct.json": json.dumps(doc)})
    parsed = parse_archive(archive)
    first = str(doc["jobs"][0]["job_id"])
    [error] = [e for e in parsed.errors if "NUL" in e.message]
    assert (error.file, error.field, error.job_id) == ("native/slurm/sacct.json", "name", first)
    assert first not in parsed.jobs and parsed.jobs


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"start": 10**20}, "time 100000000000000000000 is out of range (from 1970 up to the year 5138)"),
        ({"end": "1e400"}, "time '1e400' is out of range (from 1970 up to the year 5138)"),
        ({"elapsed": 10**20}, "unexpected shape, so it was skipped (OverflowError"),
    ],
)
def test_a_sacct_time_beyond_the_calendar_is_reported_and_the_others_read(change, message):
    """Times and durations too large for a datetime once raised OverflowError, which no guard caught:
    the whole sacct answer failed. Now that job is reported by position and the others are read."""
    doc = json.loads((FIXTURES / "sacct_v0.0.40.json").read_text())
    all_jobs = parse_sacct(doc, cluster="c1", gpu_jobs_only=False).jobs
    doc["jobs"][0]["time"].update(change)
    if "elapsed" in change:  # only used without a start
        doc["jobs"][0]["time"]["start"] = 0
    parsed = parse_sacct(doc, cluster="c1", gpu_jobs_only=False, source="sacct.json")
    [error] = parsed.errors
    assert (error.file, error.row) == ("sacct.json", 1)
    assert message in error.message
    assert [job.external_id for job in parsed.jobs] == [job.external_id for job in all_jobs[1:]]


def test_a_native_file_with_a_number_too_large_for_a_float_is_not_json():
    from fleet.canonical import loads_json

    with pytest.raises(ValueError, match="the number 1e400 is too large to store"):
        loads_json('{"jobs": [{"time": {"end": 1e400}}]}')
    assert loads_json('{"x": 1.5e300, "y": 12}') == {"x": 1.5e300, "y": 12}


@pytest.mark.parametrize(
    ("sample", "message"),
    [
        ({"gpu_util": 150}, "gpu_util value 150 is out of range (must be 0–100 %)"),
        ({"gpu_util": 50, "sm_active": 45}, "sm_active value 45 is out of range (must be 0–1, a ratio)"),
        ({"gpu_util": 50, "gpu_mem_used_mib": 1e39}, "gpu_mem_used_mib value 1e+39 is out of range (must be ≥ 0"),
        ({"gpu_util": 50, "host": "n" * 3_000_000}, "a host name of 3,000,000 characters; host names are at most 255$"),
    ],
)
def test_generic_series_keep_to_the_bounds_archive_samples_keep_to(sample, message):
    """The generic API's series were stored as sent: 150 % utilization, or 1e39 MiB, which float32
    series keep as infinity. Now such a series is bad data, as the same sample in an archive is."""
    from fleet.connectors.generic import frame_from_samples

    samples = [{"timestamp": "2026-10-05T09:00:00Z", "host": "n1", "gpu": 0, "gpu_util": 40}, {"host": "n1", **sample,
               "timestamp": "2026-10-05T09:01:00Z", "gpu": 0}]  # fmt: skip
    with pytest.raises(
        BadData, match="^job-1 series: " + message.replace("(", r"\(").replace(")", r"\)").replace("+", r"\+")
    ):
        frame_from_samples({"samples": samples}, source="job-1 series")
    assert len(frame_from_samples({"samples": samples[:1]}, source="job-1 series")) == 1


# -- an archive's nodes: a shared GPU's replicas, as a live pull reads them ------------------------
def shared_pod(name: str, node: str, resource: str = "nvidia.com/gpu.shared") -> dict:
    """A notebook's pod holding one replica of a time-sliced GPU on `node`, for 30 minutes."""
    pod = k8s_pod(name, f"{name}-uid", None, "Succeeded", 1, T0, T0 + timedelta(minutes=30))
    pod["spec"]["nodeName"] = node
    pod["spec"]["initContainers"] = []
    pod["spec"]["containers"][0]["resources"] = {"limits": {resource: "1"}}
    return pod


def kubectl_node(name: str, **labels) -> dict:
    """A Node as `kubectl get nodes -o json` writes it (items carry their kind), with GPU Feature Discovery's labels."""
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels}, "status": {}}


# An A100 pool renamed and time-sliced 4 ways; an L4 pool not renamed (plain nvidia.com/gpu, product -SHARED) under
# MPS 2 ways; a node whose GPU Feature Discovery gives no replicas.
KUBECTL_NODES = [
    kubectl_node("a100-0", **{"nvidia.com/gpu.product": "NVIDIA-A100-SXM4-80GB", "nvidia.com/gpu.replicas": "4"}),
    kubectl_node("l4-0", **{"nvidia.com/gpu.product": "NVIDIA-L4-SHARED", "nvidia.com/gpu.replicas": "2"}),
    kubectl_node("old-0", **{"nvidia.com/gpu.product": "Tesla-T4"}),
]
SHARED_PODS = [
    shared_pod("nb-a", "a100-0"),
    shared_pod("nb-l4", "l4-0", "nvidia.com/gpu"),
    shared_pod("nb-old", "old-0"),
]


def native_kubernetes(tmp_path, files: dict) -> dict:
    """The jobs of an archive of native Kubernetes files: {name: (gpu_share, gpu_unit, gpu_replicas label)}."""
    manifest = json.dumps({"format": "fleet-archive", "version": 1, "cluster": "c1"})
    members = {"manifest.json": manifest, **{f"native/kubernetes/{n}": d for n, d in files.items()}}
    parsed = parse_archive(write_zip(tmp_path / "k8s.zip", members))
    jobs = {j.name: (j.gpu_share, j.gpu_unit, j.labels.get("gpu_replicas")) for j in parsed.jobs.values()}
    return {"jobs": jobs, "errors": parsed.errors}


def test_an_archives_kubectl_nodes_give_shared_gpus_their_replicas(tmp_path):
    """A `kubectl get pods -o json` file was read without nodes: every time-sliced or MPS replica's replicas were
    unknown and it counted as a whole GPU, where a live pull reads them from each node's
    `nvidia.com/gpu.replicas`. A `kubectl get nodes -o json` file beside it now gives them the same way (the
    connector's own reading), and a plain `nvidia.com/gpu` on a node whose product ends -SHARED is a replica."""
    pods = json.dumps({"apiVersion": "v1", "kind": "List", "items": SHARED_PODS})
    nodes = json.dumps({"apiVersion": "v1", "kind": "List", "items": KUBECTL_NODES})
    got = native_kubernetes(tmp_path, {"pods.json": pods, "nodes.json": nodes})
    assert not got["errors"], got["errors"]
    assert got["jobs"] == {
        "nb-a": (0.25, "shared GPU replica", ["4 on a100-0 (label nvidia.com/gpu.replicas)"]),
        "nb-l4": (0.5, "shared GPU replica", ["2 on l4-0 (label nvidia.com/gpu.replicas)"]),
        "nb-old": (
            1.0,
            "shared GPU replica (replicas unknown, counted whole)",
            ["unknown on old-0 (counted whole: no nvidia.com/gpu.replicas label, and no shared_gpu_replicas)"],
        ),
    }
    # One `kubectl get pods,nodes -o json` file is read the same; so is a NodeList as the API server pages it.
    mixed = json.dumps({"apiVersion": "v1", "kind": "List", "items": SHARED_PODS + KUBECTL_NODES})
    assert native_kubernetes(tmp_path, {"cluster.json": mixed})["jobs"] == got["jobs"]
    api_nodes = [{k: v for k, v in n.items() if k != "kind"} for n in KUBECTL_NODES]
    node_list = json.dumps({"kind": "NodeList", "apiVersion": "v1", "metadata": {}, "items": api_nodes})
    assert native_kubernetes(tmp_path, {"pods.json": pods, "nodes.json": node_list})["jobs"] == got["jobs"]
    # Without the nodes: as before, and the job says why.
    alone = native_kubernetes(tmp_path, {"pods.json": pods})["jobs"]
    assert alone["nb-a"] == (
        1.0,
        "shared GPU replica (replicas unknown, counted whole)",
        ["unknown on a100-0 (counted whole: nodes not read, and no shared_gpu_replicas)"],
    )


def test_a_malformed_nodes_file_is_named_with_its_field_and_the_pods_are_kept(tmp_path):
    """Hostile or broken input: a node of the wrong shape is reported with the file, its position and the field,
    and skipped (its pods counted as on a node not listed); a nodes file that is no node list at all is named and
    its pods' replicas are read as without nodes. The pods' jobs are stored either way."""
    pods = json.dumps({"apiVersion": "v1", "kind": "List", "items": SHARED_PODS})
    broken = [
        kubectl_node("a100-0", **{"nvidia.com/gpu.product": "NVIDIA-A100-SXM4-80GB", "nvidia.com/gpu.replicas": "4"}),
        {**kubectl_node("l4-0"), "metadata": {"name": "l4-0", "labels": ["nvidia.com/gpu.replicas=2"]}},
        kubectl_node("old-0", **{"nvidia.com/gpu.replicas": "four"}),
        {"apiVersion": "v1", "kind": "Node", "metadata": {"name": 7}},
    ]
    got = native_kubernetes(tmp_path, {"pods.json": pods, "nodes.json": json.dumps({"kind": "List", "items": broken})})
    problems = [(e.file, e.row, e.field, e.message) for e in got["errors"]]
    assert problems == [
        ("native/kubernetes/nodes.json", 2, "metadata.labels",
         "node 2 (l4-0): 'metadata.labels' is not an object of text values, so it was skipped"),
        ("native/kubernetes/nodes.json", 3, "metadata.labels.nvidia.com/gpu.replicas",
         "node 3 (old-0): label nvidia.com/gpu.replicas is 'four', not a whole number from 1 to 1024, so it was "
         "not read"),
        ("native/kubernetes/nodes.json", 4, "metadata.name", "node 4: 'metadata.name' is not text, so it was skipped"),
    ]  # fmt: skip
    jobs = got["jobs"]
    assert sorted(jobs) == ["nb-a", "nb-l4", "nb-old"]
    assert jobs["nb-a"][0] == 0.25
    assert jobs["nb-l4"] == (1.0, "", None)  # its node skipped, a plain nvidia.com/gpu is not known to be shared
    assert jobs["nb-old"][0] == 1.0

    for nodes, said in [
        ('{"kind": "NodeList", "items": {"a100-0": {}}}', "expected a NodeList (kubectl get nodes -o json) with an"),
        ('{"kind": "List", "items": [{"kind": "Node", "metadata"', "not valid JSON"),
    ]:
        got = native_kubernetes(tmp_path, {"pods.json": pods, "nodes.json": nodes})
        [error] = got["errors"]
        assert error.file == "native/kubernetes/nodes.json" and said in error.message
        assert sorted(got["jobs"]) == ["nb-a", "nb-l4", "nb-old"]
        assert got["jobs"]["nb-a"][2] == [
            "unknown on a100-0 (counted whole: nodes not read, and no shared_gpu_replicas)"
        ]


def test_a_kubernetes_file_without_items_says_which_list_it_is_not(tmp_path):
    """A broken pods file (an object with no `items`) was reported as "expected a NodeList", because every file in
    native/kubernetes/ was tried as `kubectl get nodes -o json` first. A file is now told by its `kind`: the message
    names the file, the list it was expected to be (a PodList, a NodeList, or either for kubectl's kindless `List`)
    and what it found, with the fields."""
    pods = json.dumps({"apiVersion": "v1", "kind": "List", "items": SHARED_PODS})
    for broken, said in [
        (
            {"apiVersion": "v1", "kind": "PodList", "metadata": {"resourceVersion": "7"}},
            "native/kubernetes/broken.json: expected a PodList (kubectl get pods -o json) with an 'items' list; "
            "found an object of kind 'PodList' with no 'items' (its fields: apiVersion, kind, metadata)",
        ),
        (
            {"kind": "NodeList", "items": {"a100-0": {}}},
            "native/kubernetes/broken.json: expected a NodeList (kubectl get nodes -o json) with an 'items' list; "
            "found an object of kind 'NodeList' whose 'items' is an object (its fields: kind, items)",
        ),
        (
            {"apiVersion": "v1", "kind": "List", "metadata": {}},
            "native/kubernetes/broken.json: expected a PodList (kubectl get pods -o json) or a NodeList (kubectl get "
            "nodes -o json) with an 'items' list; found an object of kind 'List' with no 'items' (its fields: "
            "apiVersion, kind, metadata)",
        ),
        (
            {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {}, "status": {}},
            "native/kubernetes/broken.json: expected a PodList (kubectl get pods -o json) with an 'items' list; "
            "found an object of kind 'Pod' with no 'items' (its fields: apiVersion, kind, metadata, spec, status)",
        ),
        (
            [{"kind": "Pod"}],
            "native/kubernetes/broken.json: expected a PodList (kubectl get pods -o json) or a NodeList (kubectl get "
            "nodes -o json) with an 'items' list; found a list",
        ),
    ]:
        got = native_kubernetes(tmp_path, {"pods.json": pods, "broken.json": json.dumps(broken)})
        assert [(e.file, e.message) for e in got["errors"]] == [("native/kubernetes/broken.json", said)]
        assert sorted(got["jobs"]) == ["nb-a", "nb-l4", "nb-old"]  # the good pods file is read all the same

    # A hostile document's fields are named by their first characters, and only the first few of many.
    many = {"kind": "PodList", **{f"{'f' * 300}{n}": n for n in range(50)}}
    [error] = native_kubernetes(tmp_path, {"pods.json": pods, "broken.json": json.dumps(many)})["errors"]
    assert len(error.message) < 1000, error.message
    assert "'fff" in error.message and "(301 characters)" in error.message and "and 45 more" in error.message


def test_an_archives_job_page_says_truly_why_a_replica_was_counted_whole(tmp_path):
    """The job page's 'Replicas per GPU' says why a replica's share was not read from its node. An archive's pod
    whose node is not in the nodes file said 'node no longer listed' (a live pull's words: the archive lists no
    nodes at a later time); a nodes file whose items list is empty said 'nodes not read' though it was read; and a
    replicas label that was there but no whole number said 'no nvidia.com/gpu.replicas label'."""
    pods = json.dumps({"apiVersion": "v1", "kind": "List", "items": SHARED_PODS})
    only_a100 = json.dumps({"apiVersion": "v1", "kind": "List", "items": KUBECTL_NODES[:1]})
    jobs = native_kubernetes(tmp_path, {"pods.json": pods, "nodes.json": only_a100})["jobs"]
    assert jobs["nb-a"][2] == ["4 on a100-0 (label nvidia.com/gpu.replicas)"]
    assert jobs["nb-old"][2] == [
        "unknown on old-0 (counted whole: node not in the archive's nodes file, and no shared_gpu_replicas)"
    ]

    # An empty `kubectl get nodes -o json` (kubectl's List) or NodeList: read, and listing none of the pods' nodes.
    for empty in ({"apiVersion": "v1", "kind": "List", "items": []}, {"kind": "NodeList", "items": []}):
        jobs = native_kubernetes(tmp_path, {"pods.json": pods, "nodes.json": json.dumps(empty)})["jobs"]
        assert jobs["nb-a"][2] == [
            "unknown on a100-0 (counted whole: node not in the archive's nodes file, and no shared_gpu_replicas)"
        ]

    bad = [kubectl_node("old-0", **{"nvidia.com/gpu.replicas": "four"})]
    got = native_kubernetes(tmp_path, {"pods.json": pods, "nodes.json": json.dumps({"kind": "List", "items": bad})})
    assert got["jobs"]["nb-old"] == (
        1.0,
        "shared GPU replica (replicas unknown, counted whole)",
        [
            "unknown on old-0 (counted whole: label nvidia.com/gpu.replicas is 'four', not a whole number from 1 "
            "to 1024, and no shared_gpu_replicas)"
        ],
    )


def test_an_archives_kubectl_nodes_name_the_gpu_model_of_pods_without_a_node_selector(tmp_path):
    """An archive's pod without a `nvidia.com/gpu.product` node selector was of no GPU model (the cluster's default
    price), though its node in the archive's nodes file carries GPU Feature Discovery's product label. The node's
    label now names it, spelt as a selector's; a selector's own model stays, and a pod whose node the file lacks
    stays of no model."""
    pinned = shared_pod("pinned", "old-0", "nvidia.com/gpu")
    pinned["spec"]["nodeSelector"] = {"nvidia.com/gpu.product": "NVIDIA Tesla T4"}
    pods = [*SHARED_PODS, pinned, shared_pod("gone", "scaled-away-0", "nvidia.com/gpu")]
    files = {
        "pods.json": json.dumps({"apiVersion": "v1", "kind": "List", "items": pods}),
        "nodes.json": json.dumps({"apiVersion": "v1", "kind": "List", "items": KUBECTL_NODES}),
    }
    manifest = json.dumps({"format": "fleet-archive", "version": 1, "cluster": "c1"})
    members = {"manifest.json": manifest, **{f"native/kubernetes/{n}": d for n, d in files.items()}}
    parsed = parse_archive(write_zip(tmp_path / "k8s.zip", members))
    assert not parsed.errors, parsed.errors
    models = {j.name: (j.gpu_model, j.labels.get("gpu_model_from")) for j in parsed.jobs.values()}
    assert models == {
        "nb-a": ("NVIDIA-A100-SXM4-80GB", "label nvidia.com/gpu.product of a100-0"),
        "nb-l4": ("NVIDIA-L4-SHARED", "label nvidia.com/gpu.product of l4-0"),
        "nb-old": ("Tesla-T4", "label nvidia.com/gpu.product of old-0"),
        "pinned": ("NVIDIA Tesla T4", None),
        "gone": ("", None),
    }
