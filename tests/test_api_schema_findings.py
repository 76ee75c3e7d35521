"""The schema documents a job's triage and findings, their evidence and guidance, as the API
serves them (a client generated from it used to see free-form objects)."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from fleet.models import MachineToken
from tests.conftest import EXAMPLE_ARCHIVE

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("upload_dirs")]


@pytest.fixture
def schema(client):
    return client.get("/api/v1/schema/", {"format": "json"}).json()["components"]["schemas"]


def ref(prop: dict) -> str:
    """The component a property points at (drf-spectacular wraps a nullable one in allOf)."""
    target = prop.get("$ref") or prop.get("allOf", [{}])[0].get("$ref") or prop.get("items", {}).get("$ref")
    return target.rsplit("/", 1)[-1] if target else ""


def test_the_triage_and_the_findings_are_their_serializers_shapes(schema):
    job, detail = schema["Job"]["properties"], schema["JobDetail"]["properties"]
    assert ref(job["triage"]) == "Triage" and job["triage"]["nullable"]
    assert ref(detail["triage"]) == "TriageDetail"
    # The revision of the rules' code that made the result (older ones are re-triaged after an upgrade).
    assert schema["Triage"]["properties"]["rules_revision"]["type"] == "integer"
    # The two versions say which is which: the rules' code, and the thresholds (the rule set) it ran with.
    triage = schema["Triage"]["properties"]
    assert "the rules' code" in triage["rules_revision"]["description"]
    assert "not the rules' code" in triage["rule_set_version"]["description"]
    assert "thresholds" in triage["rule_set_version"]["description"]
    assert "thresholds" in schema["Finding"]["properties"]["rule_set_version"]["description"]
    assert detail["findings"]["type"] == "array" and ref(detail["findings"]) == "Finding"
    # The taxonomy's names, listed (they were "any string"): the same enum as a finding's category.
    assert job["categories"]["type"] == "array" and ref(job["categories"]) == "CategoryEnum"
    assert schema["CategoryEnum"]["type"] == "string" and len(schema["CategoryEnum"]["enum"]) == 15
    assert ref(schema["Finding"]["properties"]["category"]) == "CategoryEnum"
    assert ref(schema["Finding"]["properties"]["dimension"]) == "DimensionEnum"
    assert schema["DimensionEnum"]["enum"] == ["job", "model", "data", "library"]
    finding = schema["Finding"]["properties"]
    assert ref(finding["evidence"]) == "Evidence" and ref(finding["guidance"]) == "Guidance"
    evidence = schema["Evidence"]["properties"]
    assert set(evidence) == {"windows", "log_lines", "code", "numbers"}
    assert ref(evidence["log_lines"]) == "EvidenceLogLine"
    assert {"change", "before", "after", "recoverable_gpu_hours"} <= set(schema["Guidance"]["properties"])


def test_what_the_api_serves_has_the_documented_keys(schema, django_capture_on_commit_callbacks):
    _, key = MachineToken.objects.create_key(name="reader", reads_jobs=True)
    script = APIClient()
    script.credentials(HTTP_AUTHORIZATION=f"Api-Key {key}")
    with open(EXAMPLE_ARCHIVE, "rb") as handle, django_capture_on_commit_callbacks(execute=True):
        assert script.post("/api/v1/archives/", {"file": handle}, format="multipart").status_code == 202
    findings = [
        finding
        for job in script.get("/api/v1/jobs/").json()["results"]
        for finding in script.get(f"/api/v1/jobs/{job['id']}/").json()["findings"]
    ]
    assert findings, "the example archive's jobs have findings"
    categories = {c for job in script.get("/api/v1/jobs/").json()["results"] for c in job["categories"]}
    assert categories and categories <= set(schema["CategoryEnum"]["enum"])
    for finding in findings:
        assert set(finding) == set(schema["Finding"]["properties"])
        assert finding["dimension"] in schema["DimensionEnum"]["enum"]
        assert set(finding["evidence"]) <= set(schema["Evidence"]["properties"])
        assert set(finding["guidance"]) <= set(schema["Guidance"]["properties"])
        for line in finding["evidence"]["log_lines"]:
            assert set(line) <= set(schema["EvidenceLogLine"]["properties"])
        for window in finding["evidence"]["windows"]:
            assert set(window) <= set(schema["EvidenceWindow"]["properties"])
        for item in finding["evidence"]["code"]:
            assert set(item) <= set(schema["EvidenceCode"]["properties"]), item


def test_a_log_line_s_time_is_also_iso_8601_like_every_other_time(client, operator, schema):
    """A finding's windows said '2026-11-20T19:07:00Z', its log lines only t: 1795201620.0 (epoch
    seconds), the one time in the API a script had to convert. Each log line also has `time`; `t` stays."""
    from tests.factories import JobFactory
    from triage.models import Finding, JobTriage, RuleSet

    job = JobFactory()
    result = JobTriage.objects.create(job=job, rule_set=RuleSet.current(), status="classified", is_current=True)
    lines = [
        {"kind": "checkpoint_save", "path": "train.log", "line": 7, "t": 1795201620.5, "time_estimated": False},
        {"kind": "epoch", "path": "train.log", "line": 9, "t": None, "time_estimated": False},
        {"kind": "epoch", "path": "old.log", "line": 2, "t": "garbled", "time_estimated": True},  # stored long ago
    ]
    Finding.objects.create(
        result=result, job=job, rule_set=result.rule_set, category="model_checkpointing", confidence=0.9,
        summary="saves", gpu_hours=1.0, evidence={"windows": [], "log_lines": lines, "code": [], "numbers": {}},
    )  # fmt: skip
    client.force_login(operator)
    [finding] = client.get(f"/api/v1/jobs/{job.pk}/").json()["findings"]
    served = finding["evidence"]["log_lines"]
    assert [(line["t"], line["time"]) for line in served] == [
        (1795201620.5, "2026-11-20T19:07:00.500000Z"),
        (None, None),
        ("garbled", None),
    ]
    documented = schema["EvidenceLogLine"]["properties"]["time"]
    assert documented["format"] == "date-time" and documented["nullable"]


# Scripts with a line of every kind of code fact the evidence reads (`triage.evidence.scripts`).
EVERY_KIND_PY = """
import os
os.environ["CUDA_VISIBLE_DEVICES"] = "0,1"
import torch
import deepspeed
from torch.utils.data import DataLoader
from transformers import TrainingArguments, AutoModel, HfArgumentParser
import subprocess
import boto3
s3 = boto3.client("s3")
s3.download_file("bucket", "train.tar", "/local/train.tar")
torch.distributed.init_process_group("nccl")
device = torch.device("cuda:0")
model = AutoModel.from_pretrained("bert-base-uncased")
model = torch.nn.DataParallel(model)
model = torch.nn.parallel.DistributedDataParallel(model)
model.half()
args = TrainingArguments(output_dir="out", per_device_train_batch_size=8, dataloader_num_workers=2)
parser = HfArgumentParser(TrainingArguments)
engine = deepspeed.initialize(model=model)
data = open("s3://bucket/train.csv")
loader = DataLoader(data, batch_size=32, num_workers=0, pin_memory=True, prefetch_factor=None, persistent_workers=False)
with torch.autocast("cuda", dtype=torch.bfloat16):
    pass
for step, batch in enumerate(loader):
    batch = batch.to(device)
    loss = model(batch)
    loss.backward()
    loss.item()
    torch.distributed.all_reduce(loss)
    if step % 100 == 0:
        torch.save(model.state_dict(), "ckpt.pt")
    subprocess.run(["aws", "s3", "cp", "ckpt.pt", "s3://bucket/ckpt.pt"])
"""
EVERY_KIND_SH = """#!/bin/bash
#SBATCH --nodes=1 --ntasks-per-node=8 --cpus-per-task=12 --gpus-per-task=1
#SBATCH --gpu-bind=closest
#SBATCH --ntasks-per-gpu=1
#SBATCH --gpus=8 --gres=gpu:8
export CUDA_VISIBLE_DEVICES=0,1
pip install -r requirements.txt
wget https://example.org/data.tar
jupyter lab --no-browser &
torchrun --nproc_per_node 8 train.py --bf16 --deepspeed ds.json --data s3://bucket/train trainer.precision=32
accelerate launch --config_file a.yaml --mixed_precision no train.py
sleep 600
aws s3 cp out s3://bucket/out
srun python train.py
srun -N 2 accelerate launch --config_file a.yaml train.py
"""


def test_every_key_a_code_fact_carries_is_in_the_schema(schema):
    """A finding's evidence `code[]` items carry their kind's details (a DataLoader's num_workers and
    pin_memory, a copy's in_step_loop, a launch's argv ...), which the schema did not describe: it listed
    kind, path, line and code, so a client generated from it dropped or refused the rest."""
    from triage.evidence.scripts import command_code_facts, extract_script_evidence

    evidence = extract_script_evidence(
        [
            ("train.py", EVERY_KIND_PY),
            ("run.sh", EVERY_KIND_SH),
            ("ds.json", '{"bf16": {"enabled": true}}'),
            (
                "a.yaml",
                "compute_environment: LOCAL_MACHINE\ndistributed_type: MULTI_GPU\nnum_machines: 2\nnum_processes: 8\n",
            ),
            ("ds_auto.json", '{"train_batch_size": 8, "fp16": {"enabled": "auto"}}'),
            ("configs/ft.py", "_base_ = './base.py'\noptim_wrapper = dict(type='OptimWrapper')\n"),
        ]
    )
    facts = [
        fact.as_dict() for fact in [*evidence.facts, *command_code_facts("accelerate launch --config_file a.yaml x.py")]
    ]
    code = schema["EvidenceCode"]["properties"]
    named = {kind.strip(" .") for kind in code["kind"]["description"].split(":", 1)[1].split(",")}
    assert {fact["kind"] for fact in facts} == named  # the corpus has every kind the schema names
    for fact in facts:
        assert set(fact) <= set(code), fact
    assert code["argv"]["type"] == "array" and code["in_step_loop"]["type"] == "boolean"
    assert schema[ref(code["purpose"])]["enum"] == ["read", "write", "unknown"]
