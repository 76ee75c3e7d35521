"""A finding's figures read as every other figure in the product: a percentage in whole percent with a space
before its sign ("25 %", `fleet.numbers.share_text`), in its summary, its fix and the job page's words around
it. The loader's fix said "(the CPUs ran at 25.0 %)" beside its own "The CPUs ran at 25 %", a small batch's
"peak GPU memory 12.1 %" beside its summary's "peak GPU memory 12 %", a CPU job's summary "GPU util 0.4 %" under
the page's "at a mean GPU utilization of 0 %", and a whole-run cause's stretch "at 30.4 % GPU utilization"."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

from tests.factories import JobFactory
from tests.test_launch_reading import _four_gpus_loading
from tests.test_triage_edge_cases import run, series
from triage.guidance import guidance_for
from triage.rules.model import _peak_text
from triage.taxonomy import Category

# A percentage written with a decimal ("25.0 %", "12.1 %"), or with no space before its sign ("25%").
DECIMAL_PERCENT = re.compile(r"\d\.\d+\s?%|\d%")


def _guide(finding, job):
    return guidance_for(finding.category, finding.sub_cause, finding.numbers, gpu_hours=finding.gpu_hours,
                        price_per_gpu_hour=None, currency="", job=job)  # fmt: skip


def test_a_loader_fix_says_how_busy_the_cpus_were_in_whole_percent_as_its_why_does():
    script = "#!/bin/bash\n#SBATCH --gres=gpu:4 --ntasks-per-gpu=2\n#SBATCH -c 4\nsrun python train.py\n"
    finding = _four_gpus_loading(script, cpu=24.6)
    guide = _guide(finding, {"gpu_count": 4, "node_count": 1, "cpu_count": 32})
    assert guide["change"].endswith("(the CPUs ran at 25 %)."), guide["change"]
    assert "The CPUs ran at 25 % of the job's allocation (32 cores)" in guide["why"]
    for text in (finding.summary, guide["change"], guide["why"]):
        assert not DECIMAL_PERCENT.search(text), text


@pytest.mark.parametrize(("peak", "said"), [(12.1, "12 %"), (35.0, "35 %"), (12.5, "12 %")])
def test_a_small_batchs_fix_gives_its_peak_memory_as_its_summary_does(peak, said):
    numbers = {"training_mean_util": 26.0, "peak_gpu_mem_pct": peak, "batch_size": 8}
    guide = guidance_for(Category.IMPROPER_BATCH_SIZE, "small_batch", numbers, gpu_hours=1.0,
                         price_per_gpu_hour=None, currency="", job={})  # fmt: skip
    assert f"For this job: peak GPU memory {said} leaves room for up to about" in guide["change"], guide["change"]
    assert f"peak GPU memory {_peak_text(peak)}" == f"peak GPU memory {said}"  # as the summary writes it


def test_a_cpu_jobs_summary_gives_its_gpu_util_in_whole_percent():
    frame = series(120, lambda t, g: 1 if t % 3 == 0 else 0, mem=lambda t, g: 0.01, cpu=lambda t: 90)
    _, result = run(120, frame, scripts=[("etl.py", "import pandas as pd\n")], cpu_count=16)
    (found,) = result.findings
    assert found.category == Category.NON_DL_JOB
    assert found.summary.startswith("GPU util 0 % and GPU memory unused for the whole run"), found.summary
    assert not DECIMAL_PERCENT.search(found.summary)
    # and the result's own words, the API's reason
    assert re.fullmatch(r"mean GPU util \d+ %", result.reason), result.reason


@pytest.mark.django_db
def test_a_whole_run_causes_stretch_gives_its_utilization_in_whole_percent(client, operator, team_a):
    from triage.models import Finding, JobTriage, RuleSet

    job = JobFactory(team=team_a)
    result = JobTriage.objects.create(job=job, rule_set=RuleSet.current(), status="classified", is_current=True,
                                      mean_util=30.4)  # fmt: skip
    window = {"start": "2026-11-02T00:10:00Z", "end": "2026-11-02T01:50:00Z", "label": "training and evaluation",
              "minutes": 100.0, "mean_util": 30.4321}  # fmt: skip
    Finding.objects.create(result=result, job=job, rule_set=result.rule_set, category=Category.IMPROPER_BATCH_SIZE,
                           confidence=0.9, summary="s", gpu_hours=1.0, time_located=False,
                           evidence={"windows": [window]}, guidance={})  # fmt: skip
    client.force_login(operator)
    page = client.get(reverse("dashboard:job-detail", args=[job.pk])).content.decode()
    assert "(training and evaluation, at 30\u00a0% GPU utilization on average)" in page
    assert "30.4" not in page


@pytest.mark.django_db
def test_no_finding_of_the_demo_fleet_writes_a_percentage_otherwise(demo_archive, django_capture_on_commit_callbacks):
    """Every finding the demo fleet's jobs get, its summary and its fix's words, in whole percent with a space
    before the sign; the one figure kept to its decimals is an idle allocation's CPU share whose CPU count is
    not known ("CPU 0.05 % of the allocation"), which sits below 1 % and is judged against lines of 1.5 % and
    2 %, so whole percent would say 0 or cross the line it is judged by."""
    from fleet import ingest
    from triage.models import Finding

    with django_capture_on_commit_callbacks(execute=True):
        ingest.execute_run(ingest.create_run(demo_archive).pk)
    findings = list(Finding.objects.all())
    assert findings
    kept = re.compile(r"CPU \d+(\.\d+)? % of the allocation, whose CPU count is unknown")
    for finding in findings:
        g = finding.guidance
        for text in (finding.summary, g.get("change"), g.get("what"), g.get("why"), g.get("expected_effect")):
            assert not DECIMAL_PERCENT.search(kept.sub("", text or "")), (finding.category, text)


def test_a_loaders_busy_cores_are_written_without_a_trailing_zero_as_the_other_core_counts():
    # "about 8.0 cores busy" beside "32 cores" and the unreleased tail's "about 1 of 32 cores": a whole count
    # is written whole, a fraction to its tenth ("about 1.1 cores busy").
    script = "#!/bin/bash\n#SBATCH --gres=gpu:4 --ntasks-per-gpu=2\n#SBATCH -c 4\nsrun python train.py\n"
    finding = _four_gpus_loading(script)
    guide = _guide(finding, {"gpu_count": 4, "node_count": 1, "cpu_count": 32})
    assert "(32 cores), about 8 cores busy: all that 8 training processes" in finding.summary, finding.summary
    assert "about 8 cores busy" in guide["why"] and "8.0" not in guide["why"], guide["why"]


_LOADER_32 = (
    "import torch\nfrom torch.utils.data import DataLoader\n"
    "def main(train_set, model, optimizer):\n"
    "    train_loader = DataLoader(train_set, batch_size=32, pin_memory=True, num_workers=4)\n"
    "    for inputs, targets in train_loader:\n"
    "        loss = model(inputs.cuda(non_blocking=True)).sum()\n"
    "        loss.backward()\n"
    "        optimizer.step()\n"
)
_ZERO_OFFLOAD = (
    '{\n  "train_micro_batch_size_per_gpu": 4,\n  "zero_optimization": {\n    "stage": 3,\n'
    '    "offload_optimizer": {"device": "cpu", "pin_memory": true}\n  }\n}\n'
)
_PEAK = re.compile(r"(?:peak GPU memory|GPU memory peaked at) (\d+ %)")


@pytest.mark.parametrize("mem", [0.1251, 0.3451, 0.1249, 0.35])
def test_a_findings_fix_gives_the_peak_gpu_memory_its_summary_gives(mem):
    """The peak was written in the summary from the measured value ('peak GPU memory 13 %' for 12.51 %) and in
    the fix from the value stored to one decimal (12.5 %: 'For this job: peak GPU memory 12 % leaves room ...'),
    rounded twice, one apart. Both are now written from the stored value: a small batch's and a ZeRO offload's."""
    frame = series(120, lambda t, g: 30, mem=lambda t, g: mem)
    _, result = run(120, frame, scripts=[("train.py", _LOADER_32)])
    batch = next(f for f in result.findings if f.category == Category.IMPROPER_BATCH_SIZE)
    change = _guide(batch, {"gpu_count": 1})["change"]
    (summary,) = _PEAK.findall(batch.summary)
    assert _PEAK.findall(change) == [summary], (batch.summary, change)

    frame = series(120, lambda t, g: 30, gpus=2, mem=lambda t, g: mem)
    scripts = [("train.py", "import torch\nimport deepspeed\n"), ("ds.json", _ZERO_OFFLOAD)]
    _, result = run(120, frame, scripts=scripts, gpu_count=2, command="deepspeed train.py --deepspeed ds.json")
    offload = next(f for f in result.findings if f.category == Category.GPU_MEMORY_BOUND)
    change = _guide(offload, {"gpu_count": 2})["change"]
    (summary,) = _PEAK.findall(offload.summary)
    assert _PEAK.findall(change) == [summary], (offload.summary, change)
