"""Guidance text in HTML: `names` in backticks show as code, and nothing in it is ever taken as markup."""

from __future__ import annotations

import pytest
from django.test import Client

from triage.templatetags.guidance_format import code_spans


def test_backticked_names_become_code_and_everything_is_escaped():
    assert code_spans("a trailing `sleep` holds the GPUs") == "a trailing <code>sleep</code> holds the GPUs"
    assert code_spans("`<script>alert(1)</script>` & <b>") == (
        "<code>&lt;script&gt;alert(1)&lt;/script&gt;</code> &amp; &lt;b&gt;"
    )
    assert code_spans("an unpaired ` stays") == "an unpaired ` stays"
    assert code_spans(None) == ""


@pytest.mark.django_db
def test_the_causes_pages_show_the_guides_code_as_code(operator):
    client = Client()
    client.force_login(operator)
    listing = client.get("/categories/").content.decode()
    assert "<code>sleep infinity</code>" in listing and "`sleep infinity`" not in listing
    detail = client.get("/categories/unreleased_job/").content.decode()
    assert "a trailing <code>sleep</code>" in detail and "`sleep`" not in detail


@pytest.mark.django_db
def test_a_causes_page_shows_its_code_filled_in_for_an_example_job_never_with_placeholders(operator):
    import re

    from triage.taxonomy import Category

    client = Client()
    client.force_login(operator)
    for category in Category:
        page = client.get(f"/categories/{category.value}/").content.decode()
        code = " ".join(re.findall(r'<pre class="code[^"]*"[^>]*>(.*?)</pre>', page, re.DOTALL))
        assert code, category
        assert not re.search(r"\{[a-z_]+\}", code), f"{category}: {code}"
    page = client.get("/categories/data_preprocessing/").content.decode()
    assert "num_workers=2)" in page and "num_workers=7, prefetch_factor=4" in page
    assert "#SBATCH --cpus-per-task=64" in re.sub(r"<[^>]+>", "", page)  # an option's head in a span of its own
    assert "filled in for an example job: 8 GPUs and 64 CPUs on one node" in page
    page = client.get("/categories/improper_batch_size/").content.decode()
    assert "default=32)" in page and "default=96)" in page
    assert "example job" not in client.get("/categories/unreleased_job/").content.decode()
    # Its per-sample read made local is the same for every job: no example job is named for it.
    page = client.get("/categories/remote_data_reading/").content.decode()
    assert "get_object(Bucket=bucket, Key=self.keys[index])" in page and "example job" not in page


@pytest.mark.parametrize("sub_cause", ["memory_full", "oom_retry"])
def test_a_memory_bound_finding_names_mixed_precision_first(sub_cause):
    """The rule's sub-causes fell back to the default fix, which named activation checkpointing, accumulation
    and sharding but not mixed precision, the first thing to try for a job that trains in fp32."""
    from triage.guidance import guidance_for
    from triage.taxonomy import Category

    guide = guidance_for(
        Category.GPU_MEMORY_BOUND, sub_cause, {}, gpu_hours=1.0, price_per_gpu_hour=None, currency="", job={}
    )
    assert guide["change"].startswith("Train in mixed precision (`torch.autocast` with bf16")
    assert "with torch.autocast('cuda', dtype=torch.bfloat16):" in guide["after"]
    assert "gradient_checkpointing_enable()" in guide["after"]


def test_an_oversubscribed_jobs_fix_requests_the_gpus_it_used_and_launches_on_all_it_has():
    """The snippets were written for 4 GPUs of which 1 was used ('--gres=gpu:4', 'to use all four',
    'torchrun --nproc_per_node=4'), whatever the job: an 8-GPU job that used one read of four."""
    from triage.guidance import category_guide, guidance_for
    from triage.taxonomy import Category

    def oversubscribed(gpus: int, idle: int, nodes: int) -> dict:
        numbers, job = {"idle_gpus": idle, "gpu_count": gpus}, {"gpu_count": gpus, "node_count": nodes}
        return guidance_for(Category.GPU_OVERSUBSCRIPTION, "unused_gpus", numbers, gpu_hours=1.0,
                            price_per_gpu_hour=None, currency="", job=job)  # fmt: skip

    guide = oversubscribed(8, 7, 1)
    assert guide["before"].startswith("#SBATCH --gres=gpu:8\n")
    assert guide["after"].startswith("#SBATCH --gres=gpu:1\npython train.py\n# or, to use all 8:\n")
    assert "torchrun --nproc_per_node=8 train.py" in guide["after"]
    assert guide["change"].endswith("For this job: 1 of its 8 GPUs worked.")
    two_nodes = oversubscribed(16, 8, 2)
    assert two_nodes["before"].startswith("#SBATCH --nodes=2 --gres=gpu:8\n")
    assert two_nodes["after"].startswith("#SBATCH --nodes=1 --gres=gpu:8\n")
    assert "torchrun --nnodes=2 --nproc_per_node=8 train.py" in two_nodes["after"]
    example = category_guide(Category.GPU_OVERSUBSCRIPTION)
    assert (
        example["fixes"]["default"][1].startswith("#SBATCH --gres=gpu:8\n")
        and "7 GPUs left unused" in example["example"]
    )


@pytest.mark.django_db
def test_the_preprocessing_causes_page_says_why_without_claiming_a_measurement(operator):
    # It said "The loader's CPUs are saturated", which is one job's measurement, not the cause's mechanism; a job
    # whose CPUs nobody measured had the same sentence.
    client = Client()
    client.force_login(operator)
    page = client.get("/categories/data_preprocessing/").content.decode()
    assert "saturated" not in page
    assert (
        "The loading processes cannot prepare batches as fast as the GPUs use them (CPU-bound decoding and "
        "augmentation, or too few worker processes to spread them over); each step waits for its batch."
    ) in page


def test_an_interactive_jobs_fix_starts_from_the_gpus_it_held():
    """The snippet's session held 4 GPUs ('srun --gres=gpu:4 ... jupyter lab') whatever the job: the demo's
    2-GPU notebook read of 4 it never asked for. It starts from the job's own request."""
    from triage.guidance import guidance_for
    from triage.taxonomy import Category

    for gpus in (1, 2, 8):
        guide = guidance_for(Category.INTERACTIVE_JOB, "default", {}, gpu_hours=1.0, price_per_gpu_hour=None,
                             currency="", job={"gpu_count": gpus, "node_count": 1})  # fmt: skip
        assert guide["before"] == f"srun --gres=gpu:{gpus} --time=2-00:00:00 --pty jupyter lab", guide["before"]
        assert "--gres=gpu:1g.10gb:1" in guide["after"]


@pytest.mark.parametrize(
    ("job", "numbers", "said"),
    [
        ({"gpu_count": 1, "cpu_count": 8}, {}, "For this job: 8 CPUs for 1 GPU give 8 per training process; "),
        ({"gpu_count": 1, "cpu_count": 1}, {}, "For this job: 1 CPU for 1 GPU gives 1 per training process; "),
        ({"gpu_count": 8, "cpu_count": 64}, {}, "For this job: 64 CPUs for 8 GPUs give 8 per training process; "),
        ({"gpu_count": 4, "cpu_count": 32}, {"tasks_per_gpu": 2},
         "For this job: 32 CPUs for 4 GPUs (2 training processes a GPU, `--ntasks-per-gpu=2`) give 4 per training "
         "process; "),
        # Its CPUs not known: the sizing the advice assumes is said, not "? CPUs ... gives 8".
        ({"gpu_count": 1}, {}, "For this job: its CPU count is not known; at 8 CPUs a GPU, a common sizing, that is "
         "8 per training process; "),
        ({"gpu_count": 4}, {"tasks_per_gpu": 2}, "For this job: its CPU count is not known; at 8 CPUs a GPU, a "
         "common sizing, with 2 training processes a GPU (`--ntasks-per-gpu=2`), that is 4 per training process; "),
    ],
)  # fmt: skip
def test_a_loader_fixs_cpu_sentence_agrees_with_its_counts_and_says_when_they_are_not_known(job, numbers, said):
    """It read "8 CPUs for 1 GPU(s)", "1 CPUs", and "? CPUs for 4 GPU(s) gives 8 per training process" for a job
    whose CPU count the source did not give (the 8 a process from an assumed 8 CPUs a GPU, not said)."""
    from triage.guidance import guidance_for
    from triage.taxonomy import Category

    guide = guidance_for(Category.DATA_PREPROCESSING, "default", {"num_workers": 0, **numbers}, gpu_hours=1.0,
                         price_per_gpu_hour=None, currency="", job=job)  # fmt: skip
    assert said in guide["change"], guide["change"]
    assert "(s)" not in guide["change"] and "?" not in guide["change"]


@pytest.mark.parametrize("cpu_util", [None, 92.0])
def test_a_loader_fix_that_asks_for_more_workers_than_the_job_has_cpus_asks_for_the_cpus_too(cpu_util):
    """1 CPU for 1 GPU: 'use num_workers=7' alone would start 7 workers on one core. The request for
    more CPUs was said only when the CPUs' load was known; it is said whenever the workers need it."""
    from triage.guidance import guidance_for
    from triage.taxonomy import Category

    numbers = {"num_workers": 0} | ({"cpu_util_training": cpu_util} if cpu_util is not None else {})
    guide = guidance_for(Category.DATA_PREPROCESSING, "default", numbers, gpu_hours=1.0, price_per_gpu_hour=None,
                         currency="", job={"gpu_count": 1, "cpu_count": 1})  # fmt: skip
    assert "use `num_workers=7` (now 0) and request `--cpus-per-task=8`" in guide["change"], guide["change"]
    assert ("(the CPUs ran at 92 %)" in guide["change"]) == (cpu_util is not None)


# --- A fix's settings as code -------------------------------------------------------------------------------------


def _loader_guide(job: dict, numbers: dict | None = None) -> dict:
    from triage.guidance import guidance_for
    from triage.taxonomy import Category

    return guidance_for(Category.DATA_PREPROCESSING, "default", {"num_workers": 0, **(numbers or {})}, gpu_hours=1.0,
                        price_per_gpu_hour=None, currency="", job=job)  # fmt: skip


@pytest.mark.parametrize(
    ("job", "numbers", "said"),
    [
        ({"gpu_count": 1, "cpu_count": 8}, {}, "use `num_workers=7` (now 0)."),
        ({"gpu_count": 1, "cpu_count": 1}, {}, "use `num_workers=7` (now 0) and request `--cpus-per-task=8`."),
        ({"gpu_count": 4, "cpu_count": 8, "node_count": 1}, {"tasks_per_node": 4},
         "request `--cpus-per-task=8` with `--ntasks-per-node=4`, 32 CPUs a node."),
        ({"gpu_count": 4, "cpu_count": 8, "node_count": 1}, {"tasks_per_gpu": 2},
         "(2 training processes a GPU, `--ntasks-per-gpu=2`) give 1 per training process; use `num_workers=7` (now 0) "
         "and request `--cpus-per-task=8` with `--ntasks-per-gpu=2`, 64 CPUs a node."),
        ({"gpu_count": 4, "cpu_count": 8, "node_count": 1}, {},
         "request `--cpus-per-task=32` for one task a node; with one task a GPU (`--ntasks-per-node=4`), "
         "`--cpus-per-task=8`."),
    ],
)  # fmt: skip
def test_a_loader_fixs_settings_are_written_as_code(job, numbers, said):
    """The settings sentence wrote `num_workers=7` and `--cpus-per-task=8` as words, where the rest of the guidance
    writes code in backticks, which the pages show as code."""
    change = _loader_guide(job, numbers)["change"]
    assert said in change, change


def test_an_oversubscribed_jobs_binding_is_written_as_code():
    from triage.guidance import guidance_for
    from triage.taxonomy import Category

    numbers = {"idle_gpus": 4, "srun_tasks": 4, "gpu_binding": "--gpus-per-task=1"}
    guide = guidance_for(Category.GPU_OVERSUBSCRIPTION, "default", numbers, gpu_hours=1.0, price_per_gpu_hour=None,
                         currency="", job={"gpu_count": 8, "node_count": 1})  # fmt: skip
    assert "its tasks are bound by `--gpus-per-task=1`." in guide["change"], guide["change"]


@pytest.mark.django_db
def test_the_job_page_shows_a_fixs_settings_as_code(operator, team_a):
    import re

    from tests.test_option_words_browser import _job_with_tasks_per_gpu

    job = _job_with_tasks_per_gpu(team_a)
    client = Client()
    client.force_login(operator)
    page = client.get(f"/jobs/{job.pk}/").content.decode()
    (change,) = re.findall(r'<p class="finding-change">(.*?)</p>', page, re.DOTALL)
    assert "use <code>num_workers=7</code> (now 0)" in change, change
    assert 'request <code><span class="opt">--cpus</span>-per-task=8</code>' in change, change
    assert "`" not in change


# --- A finding's summary and the loader's why: settings as code, as its fix writes them ---------------------------


def test_a_loader_findings_why_writes_its_settings_as_code():
    # The fix wrote "use `num_workers=7` (now 0)" as code beside a why that said "num_workers=0" in words
    why = _loader_guide({"gpu_count": 1, "cpu_count": 8})["why"]
    assert "what was seen: `num_workers=0` (the training process loads every batch itself" in why, why
    why = _loader_guide({"gpu_count": 1, "cpu_count": 8}, {"num_workers": 2})["why"]
    assert "what was seen: `num_workers=2`." in why, why


@pytest.mark.django_db
def test_the_job_page_shows_a_findings_settings_as_code_in_its_summary(operator, team_a):
    import re

    from tests.test_option_words_browser import _job_with_tasks_per_gpu

    job = _job_with_tasks_per_gpu(team_a)
    finding = job.findings.get()
    assert "`num_workers=0`" in finding.summary, finding.summary
    client = Client()
    client.force_login(operator)
    page = client.get(f"/jobs/{job.pk}/").content.decode()
    summary = re.search(r'<div class="finding" id="finding-[^"]+">.*?</h3>\s*<p>(.*?)</p>', page, re.DOTALL)[1]
    assert "<code>num_workers=0</code>" in summary, summary
    assert "`" not in summary
    api = client.get(f"/api/v1/jobs/{job.pk}/").json()
    (found,) = api["findings"]
    assert "`num_workers=0`" in found["summary"]  # the API's words in backticks, as its guidance's


@pytest.mark.django_db
def test_the_cause_page_shows_a_findings_settings_as_code(operator, team_a):
    import re

    from tests.test_option_words_browser import _job_with_tasks_per_gpu
    from triage.taxonomy import Category

    _job_with_tasks_per_gpu(team_a)
    client = Client()
    client.force_login(operator)
    page = client.get(f"/categories/{Category.DATA_PREPROCESSING.value}/?period=all").content.decode()
    (title, cell) = re.findall(r'<td[^>]* class="clip" title="(Data loading[^"]*)">(.*?)</td>', page, re.DOTALL)[0]
    assert "<code>num_workers=0</code>" in cell, cell
    assert "`" not in title and title.endswith("num_workers=0."), title  # the tooltip: words, no backticks
