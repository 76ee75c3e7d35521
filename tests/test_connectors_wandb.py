"""The Weights & Biases connector: runs become jobs and their system metrics series, pulled from a
loopback server playing W&B's GraphQL API (runs with MongoDB-style filters and cursors, the events
stream, basic auth with the API key) with faults injected; and the pure mapping of a run on its own."""

from __future__ import annotations

import base64
import json
import re
from datetime import UTC, datetime, timedelta

import pytest

from fleet.connectors import sync
from fleet.connectors.base import BadData, ConfigError, ConnectorSettings, TransientError, parse_time_watermark
from fleet.connectors.http import HttpClient
from fleet.connectors.models import Connector
from fleet.connectors.wandb import WandbConnector, job_from_run, run_program, samples_from_events
from fleet.models import IngestRun, Job
from fleet.series import from_parquet_bytes
from tests.connector_servers import FakePlatform
from tests.test_connectors_sync import _fast_http, make_connector  # noqa: F401  (the fixture, used by name)

NOW = datetime.now(UTC).replace(microsecond=0)
KEY = "wandb-api-key-0123456789"
MIB = 2**20


def stamp(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def node(
    n: int,
    *,
    gpus: int = 2,
    process: tuple[int, ...] = (),
    state: str = "finished",
    team: str | None = "vision",
    user: str = "alice",
    **fields,
):
    """A run as W&B's runs query answers it: stopped 20 + 37n minutes ago after 30 minutes, on a
    machine showing `gpus` GPUs, of which its process used those in `process` (W&B's
    `gpu.process.{i}.*` keys; none: W&B could not tell)."""
    end = NOW - timedelta(minutes=20 + 37 * n)
    system = {f"system.gpu.{i}.gpu": 30.0 for i in range(gpus)}
    system |= {f"system.gpu.{i}.memoryAllocatedBytes": 8e9 for i in range(gpus)}
    system |= {f"system.gpu.process.{i}.gpu": 30.0 for i in process}
    system["system.cpu"] = 60.0
    config = {"lr": {"value": 0.1, "desc": None}}
    if team:
        config["team"] = {"value": team, "desc": None}
    return {
        "name": f"r{n:04d}",
        "displayName": f"resnet-{n}",
        "state": state,
        "createdAt": stamp(end - timedelta(minutes=30)),
        "heartbeatAt": stamp(end),
        "group": "sweep-a",
        "jobType": "train",
        "tags": ["baseline"],
        "commit": "abc123",
        "config": json.dumps(config),
        "systemMetrics": json.dumps(system),
        "user": {"username": user},
    } | fields


class Wandb:
    """W&B's GraphQL endpoint over `runs` ({project: [node]}): two runs a page."""

    def __init__(self, runs: dict[str, list[dict]], storage: str = ""):
        self.runs = runs
        self.storage = storage  # where the runs' files are, at pre-signed addresses
        self.queries: list[dict] = []

    def install(self, server: FakePlatform) -> None:
        server.route("/graphql", self.graphql)

    def graphql(self, path, query):
        expected = "Basic " + base64.b64encode(f"api:{KEY}".encode()).decode()
        if query["_headers"].get("Authorization") != expected:
            return 401, {"errors": [{"message": "user is not logged in"}]}, {}
        body = query["_json"]
        variables = body["variables"]
        self.queries.append(variables)
        if variables["entity"] != "vision-lab" or variables["project"] not in self.runs:
            return 200, {"data": {"project": None}}, {}
        runs = self.runs[variables["project"]]
        if "FleetTriageProject" in body["query"]:
            return 200, {"data": {"project": {"name": variables["project"], "runCount": len(runs)}}}, {}
        if "FleetTriageRunFiles" in body["query"]:
            if variables["name"] == "r0009" and "wandb-metadata.json" in variables["names"]:
                return 200, {"errors": [{"message": "file listing timed out"}]}, {}
            files = [
                {
                    "name": name,
                    "sizeBytes": 100,
                    "directUrl": f"{self.storage}/bucket/{variables['name']}/{name}?sig=s3cr3t",
                }
                for name in variables["names"]
                if name in RUN_FILES[variables["name"][-1] in "02"]  # code saving is on for runs 0, 2, 10…
            ]
            return 200, {"data": {"project": {"run": {"files": {"edges": [{"node": f} for f in files]}}}}}, {}
        if "FleetTriageRunEvents" in body["query"]:
            found = next((r for r in runs if r["name"] == variables["name"]), None)
            return 200, {"data": {"project": {"run": found and {"events": self.events(found)}}}}, {}
        assert variables["order"] == "+heartbeat_at"
        states, low, high = self.window(json.loads(variables["filters"]))
        stopped = sorted(
            (r for r in runs if r["state"] in states and low <= r["heartbeatAt"] < high), key=lambda r: r["heartbeatAt"]
        )
        offset = int(variables.get("cursor") or 0)
        page = stopped[offset : offset + 2]
        more = offset + 2 < len(stopped)
        connection = {
            "edges": [{"node": r, "cursor": str(offset + i)} for i, r in enumerate(page)],
            "pageInfo": {"endCursor": str(offset + 2), "hasNextPage": more},
        }
        return 200, {"data": {"project": {"runs": connection}}}, {}

    @staticmethod
    def window(filters: dict) -> tuple[list[str], str, str]:
        clauses = filters["$and"]
        states = next(c["state"]["$in"] for c in clauses if "state" in c)
        low = next(c["heartbeatAt"]["$gte"] for c in clauses if "$gte" in c.get("heartbeatAt", {}))
        high = next(c["heartbeatAt"]["$lt"] for c in clauses if "$lt" in c.get("heartbeatAt", {}))
        return states, low, high

    @staticmethod
    def events(run: dict) -> list[str]:
        """Every GPU the run's machine shows, as W&B records them: a GPU its process used at 30 %
        (repeated under `gpu.process.{i}`), another job's at 95 %; without process keys, all at 30 %."""
        start = datetime.fromisoformat(run["createdAt"]).timestamp()
        system = json.loads(run["systemMetrics"])
        machine = sorted({int(k.split(".")[2]) for k in system if re.fullmatch(r"system\.gpu\.\d+\.gpu", k)})
        used = {int(k.split(".")[3]) for k in system if k.startswith("system.gpu.process.")} or set(machine)
        lines = []
        for i in range(120):  # every 15 s for the run's 30 minutes
            event = {"_timestamp": start + 15 * i + 0.5, "_runtime": 15 * i, "system.cpu": 60.0}
            # Traffic since the run began: 40 MB a second received, 2 MiB a second read from disk.
            event |= {"system.network.recv": 40e6 * 15 * i, "system.disk.in": 2.0 * 15 * i}
            for g in machine:
                readings = {
                    "gpu": 30.0 if g in used else 95.0,
                    "memoryAllocatedBytes": 8 * 2**30,
                    "memoryAllocated": 10.0,
                    "temp": 60,
                }
                event |= {f"system.gpu.{g}.{what}": value for what, value in readings.items()}
                if g in used and len(used) < len(machine):
                    event |= {f"system.gpu.process.{g}.{what}": value for what, value in readings.items()}
            lines.append(json.dumps(event))
        return lines


# The files W&B lists for a run without code saving, and with it (the program under code/).
RUN_FILES = {
    False: ["output.log", "requirements.txt", "wandb-metadata.json"],
    True: ["output.log", "requirements.txt", "wandb-metadata.json", "code/src/train.py"],
}
TRAIN_PY = b"import webdataset\nshards = webdataset.WebDataset('s3://vision-data/imagenet-{000..146}.tar')\n"


def storage_file(path, query):
    _, _, run, name = path.split("/", 3)
    if run == "r0003" and name == "output.log":
        return 404, b"<Error><Code>NoSuchKey</Code></Error>", {}
    if name == "output.log":
        return 200, f"epoch 1\nWARNING: DataLoader worker in {run} is slow\n".encode(), {}
    if name == "wandb-metadata.json":
        program = "notebooks/explore.ipynb" if run == "r0004" else "src/train.py"  # a notebook is not read
        doc = {"executable": "/opt/conda/bin/python3", "program": program, "codePath": program}
        doc["gpu"] = "NVIDIA A100-SXM4-80GB"  # what nvidia-smi calls the run's GPUs
        return 200, json.dumps(doc | {"args": ["--epochs", "3", "--data", "s3://vision-data/x y"]}).encode(), {}
    if name.startswith("code/"):
        return 200, TRAIN_PY, {}
    return 200, b"torch==2.3.0\n", {}


def wandb_connector(url: str, name: str = "wandb-test", **options) -> Connector:
    return make_connector(
        "wandb",
        url,
        name=name,
        auth=Connector.Auth.BASIC,
        username="api",
        secret_ref="env:FLEET_SECRET_TEST_WANDB_KEY",
        options={"entity": "vision-lab", "projects": ["resnet", "llm"], "window_hours": 1, "initial_days": 0.5}
        | options,
    )


@pytest.mark.django_db
def test_a_wandb_pull_stores_each_stopped_gpu_run_once_with_its_system_metrics(monkeypatch):
    monkeypatch.setenv("FLEET_SECRET_TEST_WANDB_KEY", KEY)
    resnet = [node(n) for n in range(5)]
    resnet.append(node(5, gpus=0))  # no GPU metrics: not a GPU job
    resnet.append(node(6, state="running"))  # not stopped: not asked for
    resnet.append(node(7, team=None, state="crashed", user="bob"))
    resnet.append(node(8, createdAt="soon"))  # broken: recorded, the others stored
    llm = [node(9, gpus=8, state="killed"), node(2)]  # the same run id in another project is another run
    llm.append(node(10, gpus=8, process=(3,)))  # one rank of eight on an 8-GPU machine: GPU 3 is its own
    with FakePlatform() as server, FakePlatform() as storage:
        storage.route("/bucket/", storage_file)
        api = Wandb({"resnet": resnet, "llm": llm}, storage=storage.url.replace("127.0.0.1", "localhost"))
        api.install(server)
        server.fault("/graphql", "500", "ok", "timeout", "429", "ok", "truncated", "ok", "drop")
        storage.fault("/bucket/r0001/output.log", "503")
        connector = wandb_connector(server.url, user_teams={"bob": "Research"})
        Connector.objects.filter(pk=connector.pk).update(headers={"X-Team-Header": "t1"})
        before = datetime.now(UTC)
        result = sync.sync_connector(connector.pk)
        after = datetime.now(UTC)
        storage_headers = [q["_headers"] for _, _, q in storage.requests]
    # The signed addresses were fetched without the API key or the connector's headers.
    assert storage_headers and not any("Authorization" in h or "X-Team-Header" in h for h in storage_headers)
    assert result.status == "partial", result.errors  # r0008 was refused; the others stored
    assert sorted(Job.objects.values_list("external_id", flat=True)) == [
        "vision-lab/llm/r0002",
        "vision-lab/llm/r0009",
        "vision-lab/llm/r0010",
        "vision-lab/resnet/r0000",
        "vision-lab/resnet/r0001",
        "vision-lab/resnet/r0002",
        "vision-lab/resnet/r0003",
        "vision-lab/resnet/r0004",
        "vision-lab/resnet/r0007",
    ]
    job = Job.objects.get(external_id="vision-lab/resnet/r0001")
    assert (job.name, job.user, job.team.name, job.gpu_count, job.state) == (
        "resnet-1",
        "alice",
        "vision",
        2,
        "COMPLETED",
    )
    assert job.end_time - job.start_time == timedelta(minutes=30)
    assert job.labels["wandb_group"] == "sweep-a" and job.labels["git_commit"] == "abc123"
    assert job.mean_gpu_util == pytest.approx(30.0)
    assert job.sample_count == 120 * 2  # GPU samples: two GPUs, 120 each
    with job.series_file.open("rb") as blob:
        series = from_parquet_bytes(blob.read())
    assert series["cpu_util"].dropna().tolist() == [60.0] * 120  # the process's CPU, as a host-level row
    assert series["gpu_mem_used_mib"].dropna().iloc[0] == pytest.approx(8 * 1024)
    assert series["gpu_mem_total_mib"].dropna().iloc[0] == pytest.approx(80 * 1024)  # used over its share
    # The traffic totals became bytes a second on the host's rows, from the second sample on.
    host = series[series["gpu"].isna()]
    assert host["net_rx_bytes_per_s"].iloc[1:].tolist() == pytest.approx([40e6] * 119)
    assert host["disk_read_bytes_per_s"].iloc[1:].tolist() == pytest.approx([2 * 2**20] * 119)
    assert host["net_rx_bytes_per_s"].isna().iloc[0] and host["disk_read_bytes_per_s"].isna().iloc[0]
    assert {a.path: a.kind for a in job.artifacts.all()} == {"output.log": "log", "requirements.txt": "script"}
    saved = Job.objects.get(external_id="vision-lab/resnet/r0002")  # code saving on: its program too
    assert {a.path: a.kind for a in saved.artifacts.all()} == {
        "output.log": "log",
        "requirements.txt": "script",
        "code/src/train.py": "script",
    }
    with saved.artifacts.get(path="code/src/train.py").file.open("rb") as stored:
        assert stored.read() == TRAIN_PY
    # The command line is the metadata's, quoted as a shell would need it.
    assert saved.command == "/opt/conda/bin/python3 src/train.py --epochs 3 --data 's3://vision-data/x y'"
    assert saved.job_type == "batch"
    assert saved.gpu_model == "NVIDIA A100-SXM4-80GB"  # from the metadata: priced by its model's row
    # r0004 ran from a notebook: an interactive session, and no code asked for (notebooks are not read).
    notebook = Job.objects.get(external_id="vision-lab/resnet/r0004")
    assert notebook.job_type == "interactive" and "notebooks/explore.ipynb" in notebook.command
    asked = [q["names"] for q in api.queries if q.get("name") == "r0004" and "names" in q]
    assert asked == [["output.log", "requirements.txt", "wandb-metadata.json"]]  # one listing for both
    saving = [q["names"] for q in api.queries if (q["project"], q.get("name")) == ("resnet", "r0002") and "names" in q]
    assert saving == [["output.log", "requirements.txt", "wandb-metadata.json"], ["code/src/train.py"]]
    log = job.artifacts.get(path="output.log")
    with log.file.open("rb") as stored:
        assert b"DataLoader worker in r0001 is slow" in stored.read()  # after a 503 from storage, retried
    expired = Job.objects.get(external_id="vision-lab/resnet/r0003")
    assert [a.path for a in expired.artifacts.all()] == ["requirements.txt"]  # its log was gone: skipped
    crashed = Job.objects.get(external_id="vision-lab/resnet/r0007")
    assert (crashed.team.name, crashed.state, crashed.user) == ("Research", "FAILED", "bob")
    assert Job.objects.get(external_id="vision-lab/llm/r0009").state == "CANCELLED"
    run = IngestRun.objects.get(pk=result.run_id)
    # The report lists errors as the pull met them, and a loaded machine can meet r0009's before r0008's.
    errors = {e["job_id"]: e["message"] for e in run.errors}
    assert sorted(e["job_id"] for e in run.errors) == ["vision-lab/llm/r0009", "vision-lab/resnet/r0008"]
    assert "createdAt: unparseable timestamp 'soon'" in errors["vision-lab/resnet/r0008"]
    # r0009's metadata could not be listed: said, and the run stored as listed, with its files.
    assert errors["vision-lab/llm/r0009"] == (
        "details: wandb-test metadata of run vision-lab/llm/r0009: W&B answered with an error: file listing timed out"
    )
    killed = Job.objects.get(external_id="vision-lab/llm/r0009")
    assert killed.command == "" and killed.artifacts.count() == 2
    assert (killed.gpu_count, killed.mean_gpu_util) == (8, pytest.approx(30.0))  # W&B could not tell: all 8
    # The rank is one GPU, its own: not the machine's eight, and not its neighbours' 95 %.
    rank = Job.objects.get(external_id="vision-lab/llm/r0010")
    assert (rank.gpu_count, rank.mean_gpu_util, rank.sample_count) == (1, pytest.approx(30.0), 120)
    assert rank.gpu_hours == pytest.approx(0.5)
    with rank.series_file.open("rb") as blob:
        assert from_parquet_bytes(blob.read())["gpu"].dropna().unique().tolist() == [3]
    connector.refresh_from_db()
    watermark = parse_time_watermark(connector.watermark)
    assert before - timedelta(minutes=5, seconds=1) <= watermark <= after - timedelta(minutes=5)

    with FakePlatform() as server:  # the next pull asks only for what stopped since, and stores nothing again
        api.install(server)
        Connector.objects.filter(pk=connector.pk).update(url=server.url)
        again = sync.sync_connector(connector.pk)
    assert again.status == "succeeded" and again.created == again.updated == 0


@pytest.mark.django_db
def test_a_wandb_pull_with_a_wrong_key_fails_and_says_so(monkeypatch):
    monkeypatch.setenv("FLEET_SECRET_TEST_WANDB_KEY", "not-the-key")
    with FakePlatform() as server:
        Wandb({"resnet": [node(0)]}).install(server)
        result = sync.sync_connector(wandb_connector(server.url, projects=["resnet"]).pk)
    assert result.status == "failed" and Job.objects.count() == 0
    assert "HTTP 401" in result.message and "not logged in" in result.message
    assert "not-the-key" not in result.message


@pytest.mark.django_db
def test_an_unknown_project_and_a_graphql_error_are_named(monkeypatch):
    monkeypatch.setenv("FLEET_SECRET_TEST_WANDB_KEY", KEY)
    with FakePlatform() as server:
        Wandb({"resnet": [node(0)]}).install(server)
        result = sync.sync_connector(wandb_connector(server.url, projects=["resnet", "typo"]).pk)
    assert result.status == "failed"
    assert "no project 'typo' in entity 'vision-lab' that this API key can see" in result.message

    with FakePlatform() as server:
        server.route("/graphql", lambda path, query: (200, {"errors": [{"message": "Cannot query field"}]}, {}))
        result = sync.sync_connector(wandb_connector(server.url, "wandb-2", projects=["resnet"], initial_days=0.01).pk)
    assert result.status == "failed" and "W&B answered with an error: Cannot query field" in result.message


def test_a_run_maps_to_a_job_and_a_bad_run_is_refused_by_name():
    job = job_from_run(node(0), entity="vision-lab", project="resnet", cluster="c1")
    assert (job.external_id, job.cluster, job.gpu_count, job.node_count, job.team) == (
        "vision-lab/resnet/r0000",
        "c1",
        2,
        1,
        "vision",
    )
    assert job.labels["wandb_tags"] == ["baseline"] and job.labels["wandb_job_type"] == "train"
    untagged = node(1, team=None)
    assert job_from_run(untagged, entity="vision-lab", project="p", cluster="c1").team == "vision-lab"
    assert job_from_run(untagged, entity="e", project="p", cluster="c1", default_team="ml").team == "ml"
    assert job_from_run(node(2, gpus=0), entity="e", project="p", cluster="c1") is None
    assert job_from_run(node(3, state="running"), entity="e", project="p", cluster="c1") is None
    older_sdk = node(4, systemMetrics=json.dumps({"gpu.0.gpu": 12.0, "gpu.3.gpu": 0.0, "cpu": 5}))
    assert job_from_run(older_sdk, entity="e", project="p", cluster="c1").gpu_count == 2
    # The GPUs its process used, where W&B tells them: two of a shared machine's eight.
    shared = job_from_run(node(6, gpus=8, process=(2, 5)), entity="e", project="p", cluster="c1")
    assert (shared.gpu_count, shared.raw["gpus"]) == (2, [2, 5])
    older_rank = node(7, systemMetrics=json.dumps({"gpu.0.gpu": 9.0, "gpu.1.gpu": 0.0, "gpu.process.1.gpu": 0.0}))
    assert job_from_run(older_rank, entity="e", project="p", cluster="c1").raw["gpus"] == [1]
    for broken, problem in [
        (node(5, heartbeatAt=stamp(NOW - timedelta(days=9))), "before createdAt"),
        (node(5, createdAt="soon"), "createdAt: unparseable timestamp 'soon'"),
        (node(5, name=""), "no name"),
        (node(5, systemMetrics="{not json"), "Expecting property name"),
        (node(5, config="[1, 2]"), "config is not a JSON object"),
    ]:
        with pytest.raises((ValueError, TypeError), match=problem):
            job_from_run(broken, entity="e", project="p", cluster="c1")


def test_system_metrics_become_canonical_series_in_mib_with_the_gpu_s_total_memory():
    at = NOW.timestamp()
    samples = samples_from_events(
        [
            json.dumps(
                {
                    "_timestamp": at,
                    "system.gpu.0.gpu": 35,
                    "system.gpu.0.memoryAllocatedBytes": 20 * 2**30,
                    "system.gpu.0.memoryAllocated": 25.0,
                    "system.gpu.0.powerWatts": 300,
                    "system.cpu": 80.0,
                    "system.network.recv": 10**9,
                }
            ),
            # an older SDK's keys, or a server that decodes the line
            {"_timestamp": at + 15, "gpu.0.gpu": 50, "network.recv": 10**9 + 3 * 10**8, "disk.out": 30.0},
            {"_timestamp": at + 30, "network.recv": 10},  # the host's counters were reset: no rate
        ]
    )
    gpu, host, later, later_host = samples
    assert later_host["gpu"] is None and later_host["timestamp"] == at + 15
    assert later_host["net_rx_bytes_per_s"] == pytest.approx(2e7) and "disk_write_bytes_per_s" not in later_host
    assert gpu["gpu"] == 0 and gpu["gpu_util"] == 35 and gpu["gpu_mem_used_mib"] == pytest.approx(20 * 1024)
    assert gpu["gpu_mem_total_mib"] == pytest.approx(80 * 1024)
    assert host["gpu"] is None and host["cpu_util"] == 80.0 and "gpu_util" not in host
    assert later["gpu_util"] == 50 and later["timestamp"] == at + 15
    # Given the run's GPUs, the machine's others (another job's) are left out; the host row stays.
    own = samples_from_events(
        [{"_timestamp": at, "gpu.0.gpu": 5, "gpu.1.gpu": 90, "gpu.process.1.gpu": 90, "cpu": 3}], [1]
    )
    assert [(row["gpu"], row.get("gpu_util"), row.get("cpu_util")) for row in own] == [
        (1, 90.0, None),
        (None, None, 3.0),
    ]
    with pytest.raises(ValueError, match="is not a number"):
        samples_from_events([{"_timestamp": at, "system.gpu.0.gpu": "high"}])
    with pytest.raises(ValueError, match="no _timestamp"):
        samples_from_events([{"system.gpu.0.gpu": 1}])


@pytest.mark.parametrize(
    ("metadata", "expected"),
    [
        (b'{"codePath": "src/train.py", "program": "/home/alice/src/train.py", "args": ["--lr", "0.1"]}',
         ("/home/alice/src/train.py --lr 0.1", False, "code/src/train.py")),
        (b'{"codePath": "run.sh", "program": "run.sh", "executable": "/usr/bin/python3"}',
         ("/usr/bin/python3 run.sh", False, "code/run.sh")),
        (b'{"codePath": "explore.ipynb", "program": "explore.ipynb"}', ("explore.ipynb", True, None)),
        (b'{"program": "<python with no main file>"}', ("'<python with no main file>'", True, None)),
        (b'{"codePath": "../../etc/cron.py", "program": "x.py"}', ("x.py", False, None)),
        (b'{"codePath": "/etc/cron.py", "program": "x.py"}', ("x.py", False, None)),
        (b'{"codePath": 7, "program": "x.py", "args": "not a list"}', ("x.py", False, None)),
        (b'{"program": "train.py"}', ("train.py", False, None)),  # outside a repository: no code path
        (b'{"codePath": "train.py"}', None),  # no program: nothing ran that it names
        (b'{"program": ""}', None),
        (b"[1, 2]", None),
        (b'{"program": "train', None),  # cut off at the size cap
        (b"\xff\xfe", None),
        (b"[" * 100_000, None),
    ],
)  # fmt: skip
def test_the_command_and_saved_program_come_from_the_run_s_metadata_and_nothing_else(metadata, expected):
    found = run_program(metadata)
    assert (found and (found.command, found.interactive, found.code_file)) == expected


@pytest.mark.parametrize(
    ("options", "problem"),
    [
        ({}, "option 'entity' must name the W&B entity"),
        ({"entity": "e"}, "option 'projects' must be a JSON list"),
        ({"entity": "e", "projects": "resnet"}, "option 'projects' must be a JSON list"),
        ({"entity": "e", "projects": ["p"], "samples": 0}, "option 'samples' must be a whole number"),
        ({"entity": "e", "projects": ["p"], "user_teams": ["bob"]}, "option 'user_teams' must be a JSON object"),
    ],
)
def test_wrong_options_are_named(options, problem):
    settings = ConnectorSettings(name="wb", kind="wandb", url="http://127.0.0.1:9/", options=options)
    with pytest.raises(ConfigError, match=problem):
        WandbConnector(settings, HttpClient(settings))


def test_the_check_names_the_projects_and_their_run_counts():
    with FakePlatform() as server:
        Wandb({"resnet": [node(0), node(1)], "llm": []}).install(server)
        settings = ConnectorSettings(
            name="wb",
            kind="wandb",
            url=server.url,
            basic_auth=("api", KEY),
            options={"entity": "vision-lab", "projects": ["resnet", "llm"]},
        )
        assert WandbConnector(settings, HttpClient(settings)).check() == {
            "entity": "vision-lab",
            "runs": {"resnet": 2, "llm": 0},
        }


def test_a_signed_address_s_signature_stays_out_of_the_messages():
    settings = ConnectorSettings(name="wb", kind="wandb", url="http://127.0.0.1:9/", retries=0, timeout_s=0.5)
    client = HttpClient(settings)
    with FakePlatform() as storage:
        storage.route("/bucket/", lambda path, query: (500, b"", {}))
        for address in (
            f"{storage.url}/bucket/r1/output.log?sig=s3cr3t",
            "http://127.0.0.1:9/r1/output.log?sig=s3cr3t",
        ):
            with pytest.raises(TransientError) as failure:
                client.get_signed_bytes(address, max_bytes=100)
            # The file, or the host that did not answer for it: named, without the signature.
            assert "s3cr3t" not in str(failure.value) and (
                "output.log" in str(failure.value) or "127.0.0.1:9 " in str(failure.value)
            )
    with pytest.raises(BadData, match="is not an http"):
        client.get_signed_bytes("file:///etc/passwd", max_bytes=100)


@pytest.mark.django_db
def test_an_output_log_over_the_limit_keeps_its_end(monkeypatch):
    """A run's output.log longer than `artifact_max_bytes` kept its beginning: the traceback or out-of-memory
    error that ended the run was cut off. Now it is read through and keeps its first and last halves."""
    from tests.test_log_head_tail import OOM_LINE, long_log

    monkeypatch.setenv("FLEET_SECRET_TEST_WANDB_KEY", KEY)

    def files(path, query):
        return (200, long_log(), {}) if path.endswith("/output.log") else storage_file(path, query)

    with FakePlatform() as server, FakePlatform() as storage:
        storage.route("/bucket/", files)
        Wandb({"resnet": [node(0)]}, storage=storage.url.replace("127.0.0.1", "localhost")).install(server)
        sync.sync_connector(wandb_connector(server.url, projects=["resnet"], artifact_max_bytes=8192).pk)
    job = Job.objects.get(external_id="vision-lab/resnet/r0000")
    log = job.artifacts.get(path="output.log")
    with log.file.open("rb") as stored:
        kept = stored.read()
    assert log.truncated and kept.endswith(OOM_LINE.encode() + b"\n") and b"Fleet Triage left out" in kept
    assert job.log_events.get(kind="oom").line_no == 3001
